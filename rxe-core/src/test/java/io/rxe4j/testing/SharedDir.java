package io.rxe4j.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Locates the project's shared reference folder ({@code shared/}: protocol fact sheets, test
 * vectors, kernel captures) for tests.
 *
 * <p>Lookup order: the system property {@value #PROPERTY} (surefire sets it to
 * {@code ${maven.multiModuleProjectDirectory}/../shared}); otherwise, walking up from the working
 * directory, the first {@code shared/} folder that is a child of the working directory or of one of
 * its ancestors (so a sibling of the checkout is found) and contains
 * {@value #MARKER}. Tests that need the folder should start with
 * {@code Assumptions.assumeTrue(SharedDir.present(), SharedDir.MISSING)} so they are skipped, not
 * failed, where it is absent.
 */
public final class SharedDir {
    /** System property naming the shared folder. */
    public static final String PROPERTY = "rxe4j.shared";
    /** File whose presence identifies the shared folder, relative to it. */
    public static final String MARKER = "protocol/rxe-facts.md";
    /** Message for {@code assumeTrue} when the folder cannot be found. */
    public static final String MISSING = "shared reference folder not found: set -D" + PROPERTY
            + "=<path to shared/> or run from a checkout that has shared/" + MARKER
            + " next to it; skipping";

    private static volatile Path cached;
    private static volatile boolean resolved;

    private SharedDir() {}

    private static final java.util.concurrent.atomic.AtomicBoolean WARNED = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * @return whether the shared folder was found; when it is not, says so once on the console,
     *     since Surefire only counts skipped tests there
     */
    public static boolean present() {
        boolean found = find() != null;
        if (!found && WARNED.compareAndSet(false, true)) {
            org.slf4j.LoggerFactory.getLogger(SharedDir.class).warn("Skipping golden-input tests: {}", MISSING);
        }
        return found;
    }

    /**
     * @return the shared folder (absolute, normalised)
     * @throws IllegalStateException if it cannot be found (check {@link #present()} first)
     */
    public static Path path() {
        Path p = find();
        if (p == null) {
            throw new IllegalStateException(MISSING);
        }
        return p;
    }

    /**
     * @param relative a path inside the shared folder, e.g. {@code "pcaps/kernel-rxe"}
     * @return the resolved path (which may not exist)
     * @throws IllegalStateException if the shared folder cannot be found
     */
    public static Path resolve(String relative) {
        return path().resolve(relative);
    }

    private static Path find() {
        if (!resolved) {
            synchronized (SharedDir.class) {
                if (!resolved) {
                    cached = locate(System.getProperty(PROPERTY), Paths.get("").toAbsolutePath());
                    resolved = true;
                }
            }
        }
        return cached;
    }

    /**
     * The lookup itself, without caching (visible for tests).
     *
     * @param property value of {@value #PROPERTY}, may be null or blank
     * @param workingDir where to start walking up
     * @return the shared folder, or null
     */
    static Path locate(String property, Path workingDir) {
        if (property != null && !property.isBlank()) {
            Path p = Paths.get(property.strip()).toAbsolutePath().normalize();
            if (isShared(p)) {
                return p;
            }
        }
        // shared/ as a child of the working directory or of any ancestor; the parent's child is
        // the sibling of the checkout (…/main/rxe-verbs → …/shared)
        for (Path dir = workingDir.toAbsolutePath().normalize(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("shared");
            if (isShared(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private static boolean isShared(Path p) {
        return Files.isDirectory(p) && Files.isRegularFile(p.resolve(MARKER));
    }
}
