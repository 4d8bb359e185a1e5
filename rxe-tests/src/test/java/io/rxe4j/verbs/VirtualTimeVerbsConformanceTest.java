package io.rxe4j.verbs;

/**
 * {@link VerbsConformanceSuite} over the in-JVM fabric with both devices on one {@link
 * io.rxe4j.net.sim.VirtualScheduler} and 10 us of one-way latency: no loop thread, the test thread
 * drives the scheduler inside every wait, and timers (ACK timeout, RNR timer) take virtual time
 * only. Deterministic: every run executes the same tasks in the same order.
 */
class VirtualTimeVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return virtualTime(10_000);
    }
}
