package io.rxe4j.verbs;

/**
 * {@link WireFormatSuite} over the in-JVM fabric with every endpoint wrapped in a {@link
 * io.rxe4j.net.fault.FaultInjectingTransport} that has no rule. (Not run with loss: the suite
 * checks the exact packets of each operation.)
 */
class FaultInjectingWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return faultInjecting(inJvm(), "", seed(1));
    }
}
