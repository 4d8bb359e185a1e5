package io.rxe4j.verbs;

/**
 * {@link VerbsConformanceSuite} on multi-core devices: each device runs 3 event loops over the
 * in-JVM fabric, so the suite's QPs and CQs are spread over loops, and packets sent by one loop
 * arrive on the peer's loop of the same index, often not their QP's (the device steers them).
 */
class MultiLoopVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return inJvmMultiLoop(3);
    }
}
