package io.rxe4j.examples.modulepath;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rxe4j.net.udp.UdpTransport;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 19 item 8: a named-module application with rxe4j and Netty on the module path gets native
 * epoll. The test compiles a tiny module that {@code requires io.rxe4j.net} (and nothing of Netty's),
 * runs it with {@code java --module-path ... -m}, and expects its default UDP transport to use
 * {@link UdpTransport.Io#EPOLL}. Skipped where epoll does not load on the class path either.
 */
class ModulePathEpollTest {

    private static final String MAIN = """
            package rxe4j.modapp;

            import io.rxe4j.net.udp.UdpTransport;
            import io.rxe4j.verbs.RdmaDevice;
            import java.net.InetAddress;

            public final class Main {
                public static void main(String[] args) throws Exception {
                    UdpTransport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).bind();
                    System.out.println("module=" + UdpTransport.class.getModule().getName() + " io=" + t.io());
                    // the provider (module io.rxe4j.core) is found through ServiceLoader on the module path
                    try (RdmaDevice dev = RdmaDevice.open(t)) {
                        System.out.println("device=" + dev + " activeMtu=" + dev.queryPort(1).activeMtu());
                        Module core = ModuleLayer.boot().findModule("io.rxe4j.core").orElseThrow();
                        System.out.println("coreNativeAccess=" + core.isNativeAccessEnabled());
                    }
                }
            }
            """;

    @Test
    void aNamedModuleApplicationGetsEpoll(@TempDir Path dir) throws Exception {
        assumeTrue(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
                && UdpTransport.isEpollAvailable(), "native epoll unavailable here, also on the class path");
        List<String> modulePath = modulePath();
        assertThat(modulePath).as("module path from the test class path").anyMatch(e -> e.contains("rxe-net"))
                .anyMatch(e -> e.contains("netty-transport-native-epoll"));
        Path src = dir.resolve("src/rxe4j.modapp");
        Files.createDirectories(src.resolve("rxe4j/modapp"));
        Files.writeString(src.resolve("module-info.java"), "module rxe4j.modapp { requires io.rxe4j.net; }\n");
        Files.writeString(src.resolve("rxe4j/modapp/Main.java"), MAIN);
        Path out = dir.resolve("out");
        String mp = String.join(File.pathSeparator, modulePath);
        ByteArrayOutputStream javac = new ByteArrayOutputStream();
        int rc = ToolProvider.getSystemJavaCompiler().run(null, javac, javac, "--module-path", mp, "-d", out.toString(),
                src.resolve("module-info.java").toString(), src.resolve("rxe4j/modapp/Main.java").toString());
        assertThat(rc).as(javac.toString(StandardCharsets.UTF_8)).isZero();

        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=io.rxe4j.net,io.rxe4j.core,io.netty.common", "-Xmx128m",
                "--module-path", mp + File.pathSeparator + out, "-m", "rxe4j.modapp/rxe4j.modapp.Main"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        byte[] bytes = p.getInputStream().readAllBytes(); // until the process exits
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String output = new String(bytes, StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(output).isZero();
        assertThat(output).as(output).contains("module=io.rxe4j.net io=EPOLL");
        assertThat(output).as("RdmaDevice.open finds the provider of module io.rxe4j.core").contains("activeMtu=MTU_4096");
        assertThat(output).as("the README's flag gives the engine native access").contains("coreNativeAccess=true");
    }

    /**
     * rxe-verbs, rxe-core, rxe-net, Netty and slf4j-api from this test's class path: what an application puts on its
     * module path.
     */
    private static List<String> modulePath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator)).filter(e -> {
            String name = Path.of(e).getFileName().toString();
            return name.startsWith("netty-") || name.startsWith("slf4j-api") || e.contains("rxe-verbs")
                    || e.contains("rxe-core") || e.contains("rxe-net");
        }).collect(Collectors.toList());
    }
}
