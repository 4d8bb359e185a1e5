package io.rxe4j.examples.interop;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * Two rxe-pingpong processes' worth (server and client in one JVM, UDP 4791 on 127.0.0.1 and
 * 127.0.0.2) run the ibv_rc_pingpong exchange and, with {@code --uc} and {@code --ud}, ibv_uc_pingpong's and
 * ibv_ud_pingpong's; the
 * tool checks every message's length, GRH flag, sender and bytes itself and exits 0 only then. The
 * kernel peer runs them in scripts/interop-live.sh (cases a*, b*, f*).
 */
class RxePingpongTest {
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"rc", "uc", "ud", "srq"})
    @Timeout(120)
    void aServerAndAClientPingPong(String mode) throws Exception {
        int tcp = switch (mode) {
            case "ud" -> 18770;
            case "uc" -> 18771;
            case "srq" -> 18773;
            default -> 18772;
        };
        String[] common = switch (mode) {
            case "ud" -> new String[] {"--ud", "-s", "1000"};
            case "uc" -> new String[] {"--uc", "-s", "3000"};
            case "srq" -> new String[] {"--srq", "-q", "4", "-s", "3000"};
            default -> new String[] {"-s", "3000"};
        };
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> run(concat(common, "--ip", "127.0.0.2",
                "-p", String.valueOf(tcp), "-n", "200", "--tcp-timeout", "60")));
        int client = run(concat(common, "--ip", "127.0.0.1", "-p", String.valueOf(tcp), "-n", "200", "127.0.0.2"));
        assertThat(client).as("client exit code").isZero();
        assertThat(server.get(60, TimeUnit.SECONDS)).as("server exit code").isZero();
    }

    private static int run(String... args) {
        return new CommandLine(new RxePingpong()).setCaseInsensitiveEnumValuesAllowed(true).execute(args);
    }

    private static String[] concat(String[] a, String... b) {
        String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
