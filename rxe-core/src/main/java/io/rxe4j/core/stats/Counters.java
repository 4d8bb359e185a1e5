package io.rxe4j.core.stats;

import io.rxe4j.core.wire.DropReason;
import io.rxe4j.verbs.Counter;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Device, lane or QP counters: one {@code long} per {@link Counter} (the API's enum is the one
 * definition: name, rxe-style name, Javadoc), indexed by its ordinal, as {@code rdma_rxe} keeps
 * {@code rxe_hw_counters.h}'s enum and one name array. Drops by {@link DropReason} are the {@code
 * DROP_<reason>} counters. Written only by the owning event loop; reads from other threads may be
 * slightly stale (plain 64-bit elements, no tearing on a 64-bit JVM).
 */
public final class Counters {
    private static final Counter[] ALL = Counter.values();
    /** Kept by the transport, not by the engine: a device's snapshot adds them (see {@link #snapshot()}). */
    public static final Set<Counter> FROM_TRANSPORT = EnumSet.of(Counter.RCV_QUEUE_DROPS,
            Counter.UDP_RCVBUF_ERRORS, Counter.UDP_IN_CSUM_ERRORS);
    /** {@link DropReason} ordinal → {@link Counter} ordinal. */
    private static final int[] DROP = new int[DropReason.values().length];

    static {
        for (DropReason r : DropReason.values()) {
            DROP[r.ordinal()] = Counter.valueOf("DROP_" + r.name()).ordinal();
        }
    }

    private final long[] values = new long[ALL.length];

    /** Creates zeroed counters. */
    public Counters() {
    }

    /** Adds one to {@code c}. */
    public void inc(Counter c) {
        values[c.ordinal()]++;
    }

    /** Adds {@code n} to {@code c}. */
    public void add(Counter c, long n) {
        values[c.ordinal()] += n;
    }

    /** Counts one packet dropped for {@code reason}. */
    public void drop(DropReason reason) {
        values[DROP[reason.ordinal()]]++;
    }

    /** @return the value of {@code c} */
    public long get(Counter c) {
        return values[c.ordinal()];
    }

    /** @return how many packets were dropped for {@code reason} */
    public long drops(DropReason reason) {
        return values[DROP[reason.ordinal()]];
    }

    /**
     * Adds every counter of {@code o} to this one.
     *
     * @param withPackets whether to add sent_pkts and rcvd_pkts too (false when {@code o} is a
     *     QP's counters being folded into a device total that already counts its packets)
     */
    public void add(Counters o, boolean withPackets) {
        for (int i = 0; i < values.length; i++) {
            values[i] += o.values[i];
        }
        if (!withPackets) {
            values[Counter.SENT_PKTS.ordinal()] -= o.values[Counter.SENT_PKTS.ordinal()];
            values[Counter.RCVD_PKTS.ordinal()] -= o.values[Counter.RCVD_PKTS.ordinal()];
        }
    }

    /**
     * @return every engine counter by its rxe-style name ({@link Counter#rxeName()}), in the enum's
     *     order; the {@link #FROM_TRANSPORT} ones are left out
     */
    public Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Counter c : ALL) {
            if (!FROM_TRANSPORT.contains(c)) {
                m.put(c.rxeName(), values[c.ordinal()]);
            }
        }
        return m;
    }
}
