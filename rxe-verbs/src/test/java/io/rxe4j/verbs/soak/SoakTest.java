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
        long seed = Long.getLong("rxe4j.soak.seed", 1);
        int ops = Integer.getInteger("rxe4j.soak.ops", 100_000);
        String faults = System.getProperty("rxe4j.soak.faults", DEFAULT_FAULTS);
        Soak.Network network = Soak.Network.of(System.getProperty("rxe4j.soak.transport", "sim"));
        Soak.Result r = new Soak(seed, ops, faults, network).run();
        System.out.println(r);
        assertInvariants(r);
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
