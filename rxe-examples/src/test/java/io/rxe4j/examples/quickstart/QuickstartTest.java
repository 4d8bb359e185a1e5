package io.rxe4j.examples.quickstart;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Runs every quick-start program, and checks that they use the public API only. */
class QuickstartTest {
    @TempDir
    Path dir;

    private static String run(ThrowingMain main) throws Exception {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            main.run();
        } finally {
            System.setOut(old);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        old.print(out);
        return out;
    }

    interface ThrowingMain {
        void run() throws Exception;
    }

    @Test
    @Timeout(60)
    void oneJvm() throws Exception {
        assertThat(run(() -> OneJvm.main(new String[0])))
                .contains("server received: hello", "WRITE 42, READ 42, FETCH_AND_ADD 8: returned 42, now 50", "OK");
    }

    @Test
    @Timeout(60)
    void events() throws Exception {
        assertThat(run(() -> Events.main(new String[0])))
                .contains("server woke once for the solicited SEND; receive completions polled: 2",
                        "WRITE future completed: SUCCESS", "server event: DISCONNECTED", "OK");
    }

    @Test
    @Timeout(60)
    void persistence() throws Exception {
        Path file = dir.resolve("pmem.bin");
        assertThat(run(() -> Persistence.main(new String[] {file.toString()})))
                .contains("FLUSH completed: FLUSH SUCCESS", "\"a durable record\"", "OK");
        byte[] all = Files.readAllBytes(file);
        assertThat(new String(all, 4096, 16, StandardCharsets.US_ASCII)).isEqualTo("a durable record");
    }

    /** @param explicit whether both sides are given their addresses (as across hosts), or use the loopback defaults */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    @Timeout(120)
    void twoProcesses(boolean explicit) throws Exception {
        String udp = String.valueOf(freeUdpPort());
        // explicit: a device port of our choosing, as on a host where kernel rdma_rxe holds 4791; else 4791
        Process server = explicit ? start("server", "0", "127.0.0.1", udp) : start("server", "0");
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String first = out.readLine();
            assertThat(first).startsWith("LISTENING ");
            String to = "127.0.0.1:" + first.substring("LISTENING ".length());
            Process client = explicit ? start("client", to, "127.0.0.1", udp) : start("client", to);
            String clientOut = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(client.waitFor(60, TimeUnit.SECONDS)).isTrue();
            System.out.print(clientOut);
            assertThat(client.exitValue()).as("client exit code; output:%n%s", clientOut).isZero();
            List<String> rest = new ArrayList<>();
            for (String l; (l = out.readLine()) != null; ) {
                rest.add(l);
            }
            assertThat(server.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(server.exitValue()).as("server exit code; output %s", rest).isZero();
            assertThat(rest).contains("server: the client wrote \"" + TwoProcess.MESSAGE + "\"");
            assertThat(rest).anySatisfy(l -> assertThat(l).startsWith("server: the peer at /127.0.0.1:")
                    .endsWith(" disconnected"));
        } finally {
            server.destroyForcibly();
        }
    }

    private static int freeUdpPort() throws java.io.IOException {
        try (java.net.DatagramSocket s = new java.net.DatagramSocket(0, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static Process start(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                TwoProcess.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    @Test
    void theQuickStartProgramsImportOnlyThePublicApi() throws Exception {
        Path src = Path.of("src/main/java/io/rxe4j/examples/quickstart");
        List<String> bad = new ArrayList<>();
        try (Stream<Path> files = Files.list(src)) {
            for (Path f : files.toList()) {
                Matcher m = java.util.regex.Pattern.compile("(?m)^import (?:static )?([\\w.]+)").matcher(Files.readString(f));
                while (m.find()) {
                    String imp = m.group(1);
                    if (!imp.startsWith("java.") && !imp.startsWith("io.rxe4j.verbs.") && !imp.startsWith("io.rxe4j.net.")) {
                        bad.add(f.getFileName() + ": " + imp);
                    }
                }
            }
        }
        assertThat(bad).as("imports outside io.rxe4j.verbs, io.rxe4j.net and java.*").isEmpty();
    }
}
