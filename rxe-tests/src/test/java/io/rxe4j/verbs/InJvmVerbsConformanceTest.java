package io.rxe4j.verbs;

/** {@link VerbsConformanceSuite} over the in-JVM fabric (each device on its own event loop). */
class InJvmVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return inJvm();
    }
}
