package io.rxe4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.examples.demo.RxeDemo;
import io.rxe4j.examples.interop.RxeOpsPeer;
import io.rxe4j.examples.interop.RxePingpong;
import io.rxe4j.examples.perf.RxePerf;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class VersionProviderTest {

    @Test
    void versionIsTheFilteredProjectVersion() {
        assertThat(VersionProvider.version()).matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
    }

    @Test
    void everyToolPrintsItsVersion() {
        assertThat(versionOutput(new CommandLine(new RxePerf()))).startsWith("rxe-perf " + VersionProvider.version());
        assertThat(versionOutput(new CommandLine(new RxePingpong())))
                .startsWith("rxe-pingpong " + VersionProvider.version());
        assertThat(versionOutput(new CommandLine(new RxeOpsPeer()))).startsWith("rxe-ops " + VersionProvider.version());
        assertThat(versionOutput(new CommandLine(new io.rxe4j.examples.interop.RxeRping())))
                .startsWith("rxe-rping " + VersionProvider.version());
        CommandLine demo = new CommandLine(new RxeDemo());
        assertThat(versionOutput(demo)).startsWith("rxe-demo " + VersionProvider.version()).contains("JVM: ");
        for (String sub : new String[] {"demo", "server", "client"}) {
            assertThat(versionOutput(demo.getSubcommands().get(sub)))
                    .startsWith("rxe-demo " + sub + " " + VersionProvider.version());
        }
    }

    private static String versionOutput(CommandLine cl) {
        StringWriter out = new StringWriter();
        cl.printVersionHelp(new PrintWriter(out, true));
        return out.toString();
    }
}
