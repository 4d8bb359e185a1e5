package io.rxe4j.verbs;

/** {@link WireFormatSuite} over the in-JVM fabric with both devices on one virtual-time scheduler. */
class VirtualTimeWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return virtualTime(10_000);
    }

    @Override
    boolean repeatsAllowed() {
        return false;
    }
}
