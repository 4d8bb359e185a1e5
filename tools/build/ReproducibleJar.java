import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Rewrites jars so that two builds of the same sources give the same bytes: entries sorted by name,
 * every entry's time {@code project.build.outputTimestamp}, the manifest without the lines that
 * name the build machine (Built-By, Build-Jdk, Build-Jdk-Spec, Created-By), pom.properties without
 * its date comment. maven-jar-plugin 3.0.2 (which this build keeps: later versions post-process
 * modular jars with the jar tool of Maven's own JDK, which cannot read Java 25 classes) predates
 * outputTimestamp; the sources and Javadoc jars honour it themselves.
 *
 * <p>Usage (bound to {@code verify} in the parent pom): {@code java ReproducibleJar.java
 * <ISO-8601 instant> <jar>...}; a jar that does not exist is skipped (pom modules).
 */
public final class ReproducibleJar {
    public static void main(String[] args) throws IOException {
        // DOS time fields from the UTC wall clock: the same bytes in every time zone
        java.time.LocalDateTime time = java.time.LocalDateTime.ofInstant(Instant.parse(args[0]), java.time.ZoneOffset.UTC);
        for (int i = 1; i < args.length; i++) {
            Path jar = Path.of(args[i]);
            if (Files.isRegularFile(jar)) {
                rewrite(jar, time);
            }
        }
    }

    private static void rewrite(Path jar, java.time.LocalDateTime time) throws IOException {
        Path tmp = jar.resolveSibling(jar.getFileName() + ".tmp");
        try (ZipFile in = new ZipFile(jar.toFile());
                OutputStream fo = Files.newOutputStream(tmp);
                ZipOutputStream out = new ZipOutputStream(fo)) {
            List<? extends ZipEntry> entries = in.stream().sorted(Comparator.comparing(ReproducibleJar::rank)
                    .thenComparing(ZipEntry::getName)).collect(Collectors.toCollection(ArrayList::new));
            for (ZipEntry e : entries) {
                byte[] data;
                try (InputStream is = in.getInputStream(e)) {
                    data = is.readAllBytes();
                }
                if (e.getName().equals("META-INF/MANIFEST.MF")) {
                    data = filterLines(data, l -> !l.startsWith("Built-By:") && !l.startsWith("Build-Jdk")
                            && !l.startsWith("Created-By:"));
                } else if (e.getName().startsWith("META-INF/maven/") && e.getName().endsWith("/pom.properties")) {
                    data = filterLines(data, l -> !l.startsWith("#"));
                }
                ZipEntry o = new ZipEntry(e.getName());
                o.setTimeLocal(time);
                out.putNextEntry(o);
                out.write(data);
                out.closeEntry();
            }
        }
        Files.move(tmp, jar, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The manifest first (java.util.jar.JarInputStream looks for it there), then the rest by name. */
    private static int rank(ZipEntry e) {
        return e.getName().equals("META-INF/") ? 0 : e.getName().equals("META-INF/MANIFEST.MF") ? 1 : 2;
    }

    private static byte[] filterLines(byte[] data, java.util.function.Predicate<String> keep) {
        String s = new String(data, StandardCharsets.UTF_8);
        String eol = s.contains("\r\n") ? "\r\n" : "\n";
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (String line : s.split("\r?\n", -1)) {
            if (keep.test(line)) {
                b.writeBytes(line.getBytes(StandardCharsets.UTF_8));
                b.writeBytes(eol.getBytes(StandardCharsets.UTF_8));
            }
        }
        byte[] r = b.toByteArray();
        // split(-1) gives a trailing empty string: one end of line too many
        return java.util.Arrays.copyOf(r, Math.max(0, r.length - eol.length()));
    }
}
