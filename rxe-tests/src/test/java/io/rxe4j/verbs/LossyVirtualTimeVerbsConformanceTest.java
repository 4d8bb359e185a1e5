package io.rxe4j.verbs;

/**
 * {@link VerbsConformanceSuite} on virtual time (as {@link VirtualTimeVerbsConformanceTest}) with
 * every endpoint wrapped in a {@link io.rxe4j.net.fault.FaultInjectingTransport} that drops 1% of
 * the packets it sends: 1% loss each way, as {@link LossyVerbsConformanceTest} (the same tests are
 * skipped, for the reason given there), but exactly reproducible from the seed ({@code
 * -Drxe4j.conformance.seed=N} picks another than the default): one thread runs every task in a
 * fixed order, so the same packets are dropped in every run, and retransmission timeouts cost no
 * real time.
 */
class LossyVirtualTimeVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return faultInjecting(virtualTime(10_000), "drop=0.01,dir=out", seed(20261201));
    }
}
