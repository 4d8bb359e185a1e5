package io.rxe4j.verbs;

import io.rxe4j.verbs.provider.VerbsProvider;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * Finds the verbs provider once ({@link ServiceLoader}, as libibverbs loads its provider drivers at
 * the first {@code ibv_get_device_list}). With several on the path, the one named by the system
 * property {@value #PROPERTY} wins; otherwise {@code rxe}; otherwise the first.
 */
final class Providers {
    /** System property naming the provider to use ({@link VerbsProvider#name()}). */
    static final String PROPERTY = "rxe4j.provider";
    /** What to add when there is none. */
    static final String MISSING = "no rxe4j verbs provider found: add the soft-RoCE engine, artifact "
            + "io.rxe4j:rxe-core (module io.rxe4j.core), to the class or module path beside rxe-verbs "
            + "(the BOM io.rxe4j:rxe4j-bom manages its version; see the README)";

    private static volatile VerbsProvider cached;

    private Providers() {
    }

    static VerbsProvider provider() {
        VerbsProvider p = cached;
        if (p == null) {
            synchronized (Providers.class) {
                p = cached;
                if (p == null) {
                    p = find(ServiceLoader.load(VerbsProvider.class, Providers.class.getClassLoader()),
                            System.getProperty(PROPERTY));
                    cached = p;
                }
            }
        }
        return p;
    }

    /** The provider of {@code loader} to use; package-private for the provider-lookup test. */
    static VerbsProvider find(Iterable<VerbsProvider> loader, String wanted) {
        VerbsProvider first = null;
        VerbsProvider rxe = null;
        StringBuilder names = new StringBuilder();
        try {
            for (VerbsProvider p : loader) {
                if (wanted != null && wanted.equals(p.name())) {
                    return p;
                }
                names.append(names.isEmpty() ? "" : ", ").append(p.name());
                if (first == null) {
                    first = p;
                }
                if (rxe == null && "rxe".equals(p.name())) {
                    rxe = p;
                }
            }
        } catch (ServiceConfigurationError e) {
            throw new IllegalStateException("a verbs provider failed to load: " + e.getMessage(), e);
        }
        if (wanted != null) {
            throw new IllegalStateException("no verbs provider named '" + wanted + "' (system property " + PROPERTY
                    + "); found: " + (names.isEmpty() ? "none" : names));
        }
        if (first == null) {
            throw new IllegalStateException(MISSING);
        }
        return rxe != null ? rxe : first;
    }
}
