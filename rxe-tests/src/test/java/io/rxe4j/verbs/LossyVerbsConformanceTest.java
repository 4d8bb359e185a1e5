package io.rxe4j.verbs;

/**
 * {@link VerbsConformanceSuite} over the in-JVM fabric (real time, one loop per device) with every
 * endpoint wrapped in a {@link io.rxe4j.net.fault.FaultInjectingTransport} that drops 1% of the
 * packets it sends, seeded ({@code -Drxe4j.conformance.seed=N} picks another seed than the
 * default): 1% loss each way. Connections use a local ACK timeout of 4.096 us * 2^12 = 16.8 ms
 * ({@link ConformanceFixture#LOSSY_TIMEOUT}), so that a lost packet is resent soon, and the full
 * retry_cnt 7. Every assertion of the suite is kept; a test whose outcome is itself changed by
 * loss is skipped (JUnit assumption, marked {@link NotOnLossyNet}):
 *
 * <ul>
 *   <li>{@code remoteErrorFailsTheWrLeavesMemoryAndFlushes} (all 48 cases),
 *       {@code receiveBufferTooSmallIsInvalidRequestOnBothSides} (4),
 *       {@code misalignedAtomicWriteReachesTheWireAndIsAnInvalidRequest} (3),
 *       {@code flushTypeViolationIsRemoteAccessError}, {@code
 *       flushWithoutQpFlushGlobalIsInvalidRequest} and {@code
 *       flushRangeOutsideTheMrIsRemoteAccessError} (4): 61 of the 174 cases. Each asserts the
 *       status a fatal NAK (0x61 or 0x62) gives the requester. The responder sends that NAK once
 *       and enters ERR ({@code rxe-facts.md} §5.6); when the NAK is lost, the retransmitted
 *       request is dropped by the responder in ERR and the WQE ends, as it should, with
 *       RETRY_EXC_ERR after retry_cnt retries. With 1% loss that happens in about one run in two.
 * </ul>
 *
 * <p>Everything else, exact counters included (e.g. {@code rnrRetryExhaustedIsRnrRetryExcErr}
 * counts exactly rnr_retry + 1 RNR NAKs received: a lost RNR NAK or SEND costs a timeout and a
 * retry_cnt retry, not an RNR retry), holds with loss.
 */
class LossyVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return faultInjecting(inJvm(), "drop=0.01,dir=out", seed(20261201));
    }
}
