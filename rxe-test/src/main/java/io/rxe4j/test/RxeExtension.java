package io.rxe4j.test;

import java.lang.reflect.AnnotatedElement;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * The JUnit 5 extension behind {@link RxeTest}: resolves {@link RxeFabric} parameters of test
 * methods (one fabric per test, made on first use, configured by the method's {@code @RxeTest} or
 * else its class's), adds the fabric's seed and settings to a failing test's exception (and prints
 * them), and closes the fabric after the test, which fails the test if it left objects open.
 * Register it with {@code @RxeTest} (or {@code @ExtendWith(RxeExtension.class)}, which takes {@code
 * @RxeTest}'s defaults).
 */
public final class RxeExtension implements ParameterResolver, AfterEachCallback, TestExecutionExceptionHandler {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(RxeExtension.class);
    private static final String KEY = "fabric";

    /** Settings and seed of a fabric, attached to a failing test's exception so that the run can be replayed. */
    public static final class FabricSettings extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FabricSettings(String description) {
            super(description, null, false, false);
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext c) throws ParameterResolutionException {
        return p.getParameter().getType() == RxeFabric.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext c) throws ParameterResolutionException {
        if (c.getTestMethod().isEmpty()) {
            throw new ParameterResolutionException("an RxeFabric is made per test method; "
                    + p.getDeclaringExecutable() + " is not one (take it as a parameter of the @Test method)");
        }
        return c.getStore(NS).getOrComputeIfAbsent(KEY, k -> RxeFabric.builder(settings(c)).build(), RxeFabric.class);
    }

    /** The method's {@code @RxeTest}, else the nearest class's, else the defaults. */
    private static RxeTest settings(ExtensionContext c) {
        Optional<RxeTest> m = c.getTestMethod().map(x -> x.getAnnotation(RxeTest.class));
        if (m.isPresent()) {
            return m.get();
        }
        for (Optional<Class<?>> k = c.getTestClass(); k.isPresent(); k = Optional.ofNullable(k.get().getEnclosingClass())) {
            RxeTest a = find(k.get());
            if (a != null) {
                return a;
            }
        }
        return Defaults.class.getAnnotation(RxeTest.class);
    }

    private static RxeTest find(AnnotatedElement e) {
        return e.getAnnotation(RxeTest.class); // @Inherited: superclasses too
    }

    @RxeTest
    private static final class Defaults {}

    @Override
    public void handleTestExecutionException(ExtensionContext c, Throwable t) throws Throwable {
        RxeFabric f = c.getStore(NS).get(KEY, RxeFabric.class);
        if (f != null) {
            String d = f.describe();
            System.err.println("[rxe4j] " + c.getDisplayName() + " failed; " + d);
            t.addSuppressed(new FabricSettings(d));
        }
        throw t;
    }

    @Override
    public void afterEach(ExtensionContext c) {
        RxeFabric f = c.getStore(NS).remove(KEY, RxeFabric.class);
        if (f != null) {
            f.close(); // throws AssertionError naming the leaks: JUnit fails the test with it
        }
    }
}
