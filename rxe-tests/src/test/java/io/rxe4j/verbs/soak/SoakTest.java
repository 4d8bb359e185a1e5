package io.rxe4j.verbs.soak;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The reliability soak ({@code docs/reliability.md}). Defaults: 100,000 operations, seed 1, 5%
 * loss, 5% duplication, 2% reordering and 0.1% corruption of every device's outbound packets
 * (so of every packet, in both directions), on virtual time. Replay or lengthen:
 * {@code -Drxe4j.soak.seed=N -Drxe4j.soak.ops=N -Drxe4j.soak.faults=spec}; run the same soak over
 * real UDP on loopback instead with {@code -Drxe4j.soak.transport=udp} (seeded, not reproducible:
 * see {@link Soak}).
 */
class SoakTest {
    static final String DEFAULT_FAULTS = "drop=0.05,dup=0.05,reorder=0.02,corrupt=0.001,dir=out";

    @Test
    void mixedOperationsSurviveLossDuplicationReorderingAndCorruption() {
        Soak.Result r = runSoak("rxe4j.soak.ops", 100_000, false);
        assertInvariants(r);
    }

    /**
     * The same soak with B's RC QPs on one shared receive queue and UD datagrams from A to B beside the
     * RC traffic, through the same faults: every SEND lands wherever the SRQ put it and is checked there,
     * every datagram that arrives is whole and its own (a corrupted one is caught, a lost one stays lost,
     * a duplicated one arrives twice), and the drops are exactly the corrupted packets.
     * {@code -Drxe4j.soak.srqUdOps=N} lengthens it.
     */
    @Test
    void srqAndUdTrafficSurviveTheSameFaults() {
        Soak.Result r = runSoak("rxe4j.soak.srqUdOps", 30_000, false, true);
        assertInvariants(r);
        Soak.UdStats ud = r.ud();
        assertThat(ud.srqReceives()).as("the SRQ served the SENDs").isGreaterThan(0);
        assertThat(ud.sent()).as("datagrams sent").isGreaterThan(1000);
        assertThat(ud.distinct()).as("no more distinct datagrams than sent").isLessThanOrEqualTo(ud.sent());
        assertThat(ud.received()).as("a duplicated datagram arrives twice").isGreaterThanOrEqualTo(ud.distinct());
        if (r.network() == Soak.Network.SIM) {
            // 5% dropped, 0.1% corrupted on the way: most arrive, none is retried
            assertThat(ud.distinct()).as("most datagrams arrive").isGreaterThan(ud.sent() * 85 / 100);
            assertThat(ud.received()).as("duplicated ones arrive twice").isGreaterThan(ud.distinct());
        }
    }

    /** Runs the soak with the seed, fault spec and transport of the system properties (see the class comment). */
    private static Soak.Result runSoak(String opsProperty, int defaultOps, boolean tid) {
        return runSoak(opsProperty, defaultOps, tid, false);
    }

    private static Soak.Result runSoak(String opsProperty, int defaultOps, boolean tid, boolean srqAndUd) {
        long seed = Long.getLong("rxe4j.soak.seed", 1);
        int ops = Integer.getInteger(opsProperty, defaultOps);
        String faults = System.getProperty("rxe4j.soak.faults", DEFAULT_FAULTS);
        Soak.Network network = Soak.Network.of(System.getProperty("rxe4j.soak.transport", "sim"));
        Soak.Result r = new Soak(seed, ops, faults, network, tid, srqAndUd).run();
        System.out.println(r);
        return r;
    }

    /**
     * The same soak with TID RDMA negotiated on every QP (path MTU 4096) and 6% of the operations
     * large READs and WRITEs carried as TID RDMA: memory and every result checked against the model.
     * {@code -Drxe4j.soak.tidOps=N} lengthens it.
     */
    @Test
    void tidReadsAndWritesSurviveTheSameFaults() {
        Soak.Result r = runSoak("rxe4j.soak.tidOps", 20_000, true);
        assertThat(r.faults()).isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("tid_read_requests", 0L)).as("TID READs ran").isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("tid_write_requests_sent", 0L)).as("TID WRITEs ran").isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("tid_read_segments_done", 0L)).isGreaterThan(0);
        assertThat(r.countersB().getOrDefault("tid_write_segments_rcvd", 0L)).isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("retry_exceeded_err", 0L)).as("no WQE ran out of retries").isZero();
        assertThat(r.countersA().getOrDefault("cq_overflow", 0L) + r.countersB().getOrDefault("cq_overflow", 0L))
                .isZero();
        // every corrupted packet is caught by the receive path; the only other drops are stale TID
        // packets (behind a flow that moved on: drop_other) and requests beyond the bounded queue of
        // requests a responder holds while a READ waits behind a TID WRITE (drop_responder_busy,
        // resent by the requester)
        long drops = drops(r.countersA()) + drops(r.countersB());
        for (String benign : new String[] {"drop_other", "drop_responder_busy"}) {
            drops -= r.countersA().getOrDefault(benign, 0L) + r.countersB().getOrDefault(benign, 0L);
        }
        if (r.network() == Soak.Network.SIM) {
            assertThat(drops).as("drops other than stale = corrupted packets").isEqualTo(r.faultsByKind().get("corrupt"));
        }
    }

    /** What every soak run must show besides the per-operation checks {@link Soak} makes itself. */
    static void assertInvariants(Soak.Result r) {
        assertThat(r.faults()).as("faults were injected").isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("rewinds", 0L)).as("the requester retried").isGreaterThan(0);
        assertThat(r.countersB().getOrDefault("duplicate_request", 0L)).as("the responder saw duplicates")
                .isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("retry_exceeded_err", 0L)).as("no WQE ran out of retries").isZero();
        // the recovery work is bounded by the faults that lose or delay a packet: each such fault
        // starts at most one retry (a sequence NAK, a READ gap or a timeout), and a retry resends at
        // most the 128-PSN window
        long lossy = r.faultsByKind().get("drop") + r.faultsByKind().get("corrupt") + r.faultsByKind().get("reorder")
                + r.faultsByKind().get("delay");
        long rewinds = r.countersA().getOrDefault("rewinds", 0L);
        assertThat(rewinds).as("rewinds <= packets lost, corrupted, reordered or delayed").isLessThanOrEqualTo(lossy);
        assertThat(r.countersA().getOrDefault("retransmit_timeouts", 0L)).as("timeouts <= lossy faults")
                .isLessThanOrEqualTo(lossy);
        assertThat(r.countersA().getOrDefault("resent_pkts", 0L)).as("resent packets <= 128 per rewind")
                .isLessThanOrEqualTo(128 * rewinds);
        // a flipped bit is caught by the receive path (the ICRC, or a header check before it), and
        // nothing else is dropped: every drop_* counted is a corrupted packet and vice versa. On UDP
        // the device counters are read while a corrupted retransmission may still be in flight
        long drops = drops(r.countersA()) + drops(r.countersB());
        // except late network duplicates of READs/atomics whose responder resource was reused since
        // (duplication and reordering faults can deliver one after max_dest_rd_atomic newer requests)
        drops -= r.countersA().getOrDefault("drop_stale_duplicate", 0L)
                + r.countersB().getOrDefault("drop_stale_duplicate", 0L);
        long corrupted = r.faultsByKind().get("corrupt");
        if (r.network() == Soak.Network.SIM) {
            assertThat(drops).as("drops = corrupted packets").isEqualTo(corrupted);
        } else {
            assertThat(drops).as("drops <= corrupted packets").isLessThanOrEqualTo(corrupted);
        }
        assertThat(r.countersA().getOrDefault("cq_overflow", 0L) + r.countersB().getOrDefault("cq_overflow", 0L))
                .as("no completion was lost to a full CQ").isZero();
    }

    private static long drops(java.util.Map<String, Long> counters) {
        return counters.entrySet().stream().filter(e -> e.getKey().startsWith("drop_")).mapToLong(e -> e.getValue())
                .sum();
    }
}
