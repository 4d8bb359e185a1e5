package io.rxe4j.verbs;

/** {@link WireFormatSuite} over the in-JVM fabric. */
class InJvmWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return inJvm();
    }
}
