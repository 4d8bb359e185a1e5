package io.rxe4j.verbs;

/**
 * {@link VerbsConformanceSuite} over the in-JVM fabric with every endpoint wrapped in a {@link
 * io.rxe4j.net.fault.FaultInjectingTransport} that has no rule: the wrapper alone (its send,
 * receive and writability paths) must change nothing.
 */
class FaultInjectingVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return faultInjecting(inJvm(), "", seed(1));
    }
}
