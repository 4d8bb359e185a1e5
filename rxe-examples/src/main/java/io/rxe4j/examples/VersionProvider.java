package io.rxe4j.examples;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/**
 * What {@code -V} / {@code --version} prints for the tools ({@code rxe-demo}, {@code rxe-perf},
 * {@code rxe-pingpong}, {@code rxe-ops}): the command, the rxe4j version and the JVM.
 *
 * <p>The version is the Maven project version, read from {@code version.properties} (filtered at
 * build time, so it is in {@code target/classes} as well as in the jar), else from the jar
 * manifest's {@code Implementation-Version}, else {@code unknown}.
 */
public final class VersionProvider implements IVersionProvider {
    /** Resource beside this class that the build fills in. */
    static final String RESOURCE = "version.properties";

    @Override
    public String[] getVersion() {
        return new String[] {
            "${COMMAND-FULL-NAME} " + version(),
            "JVM: ${java.version} (${java.vendor} ${java.vm.name} ${java.vm.version})",
            "OS: ${os.name} ${os.version} ${os.arch}",
        };
    }

    /** @return the rxe4j version these classes were built as, or {@code unknown} */
    public static String version() {
        try (InputStream in = VersionProvider.class.getResourceAsStream(RESOURCE)) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version", "").trim();
                if (!v.isEmpty() && !v.startsWith("${")) {
                    return v;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String v = VersionProvider.class.getPackage().getImplementationVersion();
        return v != null ? v : "unknown";
    }
}
