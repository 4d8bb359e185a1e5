package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import java.util.Random;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Adaptive recovery on virtual time ({@code docs/reliability.md}, "Recovery on real networks"):
 * streams of RDMA WRITEs and READs over a link with a one-way delay and seeded loss or reordering,
 * with the bounds that need no wall clock: IB local ACK timeouts per loss, re-requests per READ,
 * bytes the responder sends per byte delivered, and that every byte arrives.
 */
class AdaptiveRecoveryTest {
    private static final long LATENCY = 150_000; // one way: 150 µs, as the netlab wire
    private static final int MSG = 64 * 1024;
    private static final int DEPTH = 16;
    private static final long RUN = 2_000_000_000L; // 2 s of virtual time
    /** For streams that run at link speed (little to slow them in virtual time): 0.2 s. */
    private static final long SHORT_RUN = 200_000_000L;

    record Result(long bytes, long responderSent, long ibTimeouts, long rewinds, long repairs, long placed,
            long selectiveNaks, String countersA, String countersB) {}

    static Result stream(WrOpcode op, Predicate<VirtualRcPair.Pkt> dropper, DeviceConfig config) {
        return stream(op, dropper, config, LATENCY, DEPTH);
    }

    static Result stream(WrOpcode op, Predicate<VirtualRcPair.Pkt> dropper, DeviceConfig config, long latency,
            int depth) {
        return stream(op, dropper, config, latency, depth, false);
    }

    /** @param negotiate agree on the extensions first, as the connection manager does between rxe4j peers */
    static Result stream(WrOpcode op, Predicate<VirtualRcPair.Pkt> dropper, DeviceConfig config, long latency,
            int depth, boolean negotiate) {
        return stream(op, dropper, config, latency, depth, negotiate, RUN);
    }

    /** @param run how long to stream, in virtual nanoseconds */
    static Result stream(WrOpcode op, Predicate<VirtualRcPair.Pkt> dropper, DeviceConfig config, long latency,
            int depth, boolean negotiate, long run) {
        return stream(op, dropper, null, config, latency, depth, negotiate, run);
    }

    /** @param delayer extra one-way delay per packet (reordering), or null */
    static Result streamDelayed(WrOpcode op, java.util.function.ToLongFunction<VirtualRcPair.Pkt> delayer,
            DeviceConfig config, long latency, int depth, boolean negotiate, long run) {
        return stream(op, null, delayer, config, latency, depth, negotiate, run);
    }

    private static Result stream(WrOpcode op, Predicate<VirtualRcPair.Pkt> dropper,
            java.util.function.ToLongFunction<VirtualRcPair.Pkt> delayer, DeviceConfig config, long latency,
            int depth, boolean negotiate, long run) {
        try (VirtualRcPair p = new VirtualRcPair((long) depth * MSG * 2, new VirtualRcPair.Params(Mtu.MTU_1024, 14, 7,
                0x100, 0x200), VirtualRcPair.ALL_REMOTE, latency, config)) {
            if (negotiate) {
                assertThat(p.negotiateExtensions()).as("extensions agreed")
                        .isEqualTo(io.rxe4j.verbs.provider.QpOps.EXT_HOLDS_OUT_OF_ORDER
                                | io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK);
            }
            p.dropper = dropper;
            p.delayer = delayer;
            for (int i = 0; i < depth; i++) {
                p.a.qp.postSend(wr(p, op, i));
            }
            long bytes = 0;
            WorkCompletion[] wc = {new WorkCompletion()};
            long end = p.vs.nanoTime() + run;
            while (p.vs.nanoTime() < end && p.vs.runNext()) {
                while (p.a.cq.poll(wc) == 1) {
                    assertThat(wc[0].status).as("WR %d", wc[0].wrId).isEqualTo(WcStatus.SUCCESS);
                    bytes += MSG;
                    p.a.qp.postSend(wr(p, op, (int) wc[0].wrId));
                }
            }
            return new Result(bytes, p.b.dev.counter("sent_pkts"), p.a.dev.counter("retransmit_timeouts"),
                    p.a.dev.counter("rewinds"), p.a.dev.counter("selective_repairs"),
                    p.a.dev.counter("read_responses_placed"), p.b.dev.counter("selective_naks"),
                    p.a.dev.counters().toString() + " " + p.a.qp.debugState(),
                    p.b.dev.counters().toString());
        }
    }

    private static SendWr wr(VirtualRcPair p, WrOpcode op, int slot) {
        long local = p.a.mr.addr() + (long) slot * MSG;
        long remote = p.b.mr.addr() + (long) slot * MSG;
        return new SendWr().set(slot, op, SendFlags.SIGNALED, new Sge(local, MSG, p.a.mr.lkey()))
                .remote(remote, p.b.mr.rkey());
    }

    static Predicate<VirtualRcPair.Pkt> loss(double rate, long seed) {
        Random r = new Random(seed);
        return x -> r.nextDouble() < rate;
    }

    private static final DeviceConfig ADAPTIVE = DeviceConfig.defaults().withSeed(1);
    private static final DeviceConfig RXE = DeviceConfig.defaults().withSeed(1).withAdaptiveRecovery(false);

    /**
     * READ under 1 % loss both ways: lost responses are re-requested part by part, never by a local
     * ACK timeout, and the responder sends at most 1.5× the READ's packets (issue 21's bound; about
     * 1.02× here). rdma_rxe's recovery on the same seed moves a small fraction of it.
     */
    @Test
    void readUnderLossIsRepairedPartByPartWithoutAmplification() {
        Result r = stream(WrOpcode.RDMA_READ, loss(0.01, 21), ADAPTIVE);
        Result old = stream(WrOpcode.RDMA_READ, loss(0.01, 21), RXE);
        long delivered = r.bytes() / 1024;
        assertThat(r.ibTimeouts()).as("IB local ACK timeouts: %s", r.countersA()).isZero();
        assertThat(r.placed()).as("responses placed by offset").isPositive();
        assertThat(r.repairs()).as("parts re-requested").isPositive();
        assertThat((double) r.responderSent() / delivered).as("responder packets per READ packet delivered")
                .isLessThanOrEqualTo(1.5);
        assertThat(r.bytes()).as("adaptive vs rdma_rxe's recovery: %s vs %s", r, old).isGreaterThan(5 * old.bytes());
    }

    /** WRITE under 1 % loss: repairs and probes, no IB local ACK timeout, little resent. */
    @Test
    void writeUnderLossIsRepairedWithoutIbTimeouts() {
        Result w = stream(WrOpcode.RDMA_WRITE, loss(0.01, 22), ADAPTIVE);
        Result old = stream(WrOpcode.RDMA_WRITE, loss(0.01, 22), RXE);
        assertThat(w.ibTimeouts()).as("IB local ACK timeouts: %s", w.countersA()).isZero();
        assertThat(w.repairs()).isPositive();
        assertThat(w.bytes()).as("adaptive vs rdma_rxe's recovery: %s vs %s", w, old).isGreaterThan(2 * old.bytes());
        assertThat(old.ibTimeouts()).as("rdma_rxe's recovery waits for the IB timer").isPositive();
    }

    /**
     * One QP on a long clean path (10 ms each way): the window follows the congestion window instead
     * of 64 packets per round trip.
     */
    @Test
    void oneQpFillsALongPath() {
        Result w = streamOver(WrOpcode.RDMA_WRITE, 10_000_000, ADAPTIVE);
        Result old = streamOver(WrOpcode.RDMA_WRITE, 10_000_000, RXE);
        // 64 packets of 1 KiB per 20 ms round trip: at most about 6.6 MB in 2 s
        assertThat(old.bytes()).isLessThanOrEqualTo(8L << 20);
        assertThat(w.bytes()).as("%s", w.countersA()).isGreaterThan(10 * old.bytes());
    }

    /**
     * READ on the same long path: towards a peer not known to hold out-of-order requests a READ
     * keeps rdma_rxe's 128-PSN window (the kernel's READ responder stalls beyond it, docs/networks.md),
     * at most 128 KiB per 20 ms round trip; towards an rxe4j peer that said so at connection setup
     * ({@code EXT_HOLDS_OUT_OF_ORDER}) the window follows the congestion window from the start.
     */
    @Test
    void readFillsALongPathOnlyTowardsAPeerThatSaidItHolds() {
        Result unknown = stream(WrOpcode.RDMA_READ, null, ADAPTIVE, 10_000_000, 64, false);
        Result agreed = stream(WrOpcode.RDMA_READ, null, ADAPTIVE, 10_000_000, 64, true);
        assertThat(unknown.bytes()).as("128 PSNs per round trip: %s", unknown.countersA())
                .isLessThanOrEqualTo(14L << 20);
        assertThat(agreed.bytes()).as("%s", agreed.countersA()).isGreaterThan(5 * unknown.bytes());
        assertThat(agreed.ibTimeouts()).isZero();
    }

    /**
     * Towards a peer that said it holds, the first sequence NAK is already repaired selectively:
     * no go-back-N is needed to learn it (fewer rewinds than when it is learnt, same seed).
     */
    @Test
    void aNegotiatedPeerIsRepairedSelectivelyFromTheFirstNak() {
        Result learnt = stream(WrOpcode.RDMA_WRITE, loss(0.01, 23), ADAPTIVE, LATENCY, DEPTH, false, SHORT_RUN);
        Result agreed = stream(WrOpcode.RDMA_WRITE, loss(0.01, 23), ADAPTIVE, LATENCY, DEPTH, true, SHORT_RUN);
        assertThat(agreed.repairs()).isPositive();
        assertThat(agreed.ibTimeouts()).isZero();
        assertThat(agreed.rewinds()).as("go-back-N: %s vs learnt %s", agreed.countersA(), learnt.countersA())
                .isLessThan(learnt.rewinds());
    }

    /**
     * WRITE under 5 % loss both ways: towards a peer that agreed EXT_SELECTIVE_NAK the responder
     * names every hole before a packet a reordering window old in one selective NAK, and the requester
     * resends them all in one round trip instead of one hole per round trip (on this seed 1.27× the
     * bytes).
     */
    @Test
    void aSelectiveNakRepairsEveryHoleOfAWindowInOneRoundTrip() {
        Result oneByOne = stream(WrOpcode.RDMA_WRITE, loss(0.05, 24), ADAPTIVE, LATENCY, DEPTH, false);
        Result selective = stream(WrOpcode.RDMA_WRITE, loss(0.05, 24), ADAPTIVE, LATENCY, DEPTH, true);
        assertThat(selective.ibTimeouts()).isZero();
        assertThat(oneByOne.selectiveNaks()).as("not agreed: none sent").isZero();
        assertThat(selective.selectiveNaks()).as("selective NAKs sent").isPositive();
        assertThat(selective.bytes()).as("%s vs %s", selective.countersA(), oneByOne.countersA())
                .isGreaterThan(oneByOne.bytes() * 5 / 4);
    }

    /**
     * READ over a path where 5 % of the datagrams overtake the rest by 1 ms (netem's delay with
     * reordering), towards a peer that agreed on the extensions: the completer re-requests every hole
     * a reordering window old, and the window grows to the reordering it observes (a response that
     * fills a hole unasked), so the responder sends at most 1.1× the READ's bytes (3.3× before the
     * window learnt the reordering) while the stream keeps the link.
     */
    @Test
    void readUnderReorderingIsNotReRequested() {
        Random r = new Random(5);
        Result res = streamDelayed(WrOpcode.RDMA_READ, x -> r.nextDouble() < 0.05 ? 0 : 1_000_000, ADAPTIVE, LATENCY,
                DEPTH, true, SHORT_RUN);
        long delivered = res.bytes() / 1024;
        assertThat((double) res.responderSent() / delivered).as("READ amplification: %s", res.countersA())
                .isLessThanOrEqualTo(1.1);
        assertThat(res.ibTimeouts()).isZero();
        assertThat(res.bytes()).as("%s", res.countersA()).isGreaterThan(50L << 20);
    }

    static Result streamOver(WrOpcode op, long latency, DeviceConfig config) {
        return stream(op, null, config, latency, 64);
    }
}
