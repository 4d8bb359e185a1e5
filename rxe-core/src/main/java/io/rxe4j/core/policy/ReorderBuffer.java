package io.rxe4j.core.policy;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.wire.Psn;

/**
 * Out-of-order request packets a responder holds until the gap before them fills (adaptive
 * recovery, {@code docs/reliability.md}): indexed by PSN, for PSNs after the expected PSN (ePsn), less
 * than {@link #MAX_PACKETS} ahead, bounded by {@link #MAX_BYTES} in total, each with its arrival time
 * (nanoseconds of the injected clock). The buffer owns what it holds (retained slices) and releases
 * it when the packet is taken, found stale, or the buffer is cleared. The ring grows by doubling up
 * to its bound when a packet lies beyond it, never per packet. Loop only.
 */
public final class ReorderBuffer {
    /** The PSN bound: a packet may be held less than this many PSNs ahead of ePsn (4096: at most 4095 ahead). */
    public static final int MAX_PACKETS = 4096;
    /** Most bytes held: 8 MiB. */
    public static final long MAX_BYTES = 8L << 20;

    /** Bytes a held packet may take beyond its payload (BTH, RETH, ImmDt, ICRC): 64, a generous bound. */
    public static final int HEADER_ALLOWANCE_BYTES = 64;

    /**
     * @return the most request packets of path MTU {@code pmtu} (bytes) that may lie ahead of a gap and
     *     all be held: the PSN bound {@link #MAX_PACKETS} − 1 or the byte bound {@link #MAX_BYTES} in
     *     packets of {@code pmtu} + {@link #HEADER_ALLOWANCE_BYTES}, whichever is smaller (4095 at
     *     path MTU 1024, 2016 at 4096). A requester that keeps its window within this span towards an
     *     rxe4j responder never has a loss cost more than the lost packets: beyond it, the responder
     *     must drop what follows a gap, and the requester then learns of each drop one NAK at a time.
     */
    public static int spanPackets(int pmtu) {
        return (int) Math.min(MAX_PACKETS - 1, MAX_BYTES / (Math.max(1, pmtu) + HEADER_ALLOWANCE_BYTES));
    }

    /** What became of an offered packet. */
    public enum Offer {
        /** Held (the buffer owns it now). */
        HELD,
        /** A packet with that PSN is held already (the caller keeps its own). */
        DUPLICATE,
        /** Too far ahead of ePsn, or the byte bound is reached (the caller drops it). */
        FULL
    }

    private ByteBuf[] slots = new ByteBuf[64];
    private int[] psns = new int[64];
    private long[] arrived = new long[64];
    private int count;
    private long bytes;

    /** @return packets held */
    public int size() {
        return count;
    }

    /** @return whether nothing is held */
    public boolean isEmpty() {
        return count == 0;
    }

    /** @return bytes held */
    public long bytes() {
        return bytes;
    }

    /**
     * Offers packet {@code pkt} with PSN {@code psn}, ahead of {@code ePsn}, arrived at {@code now}.
     *
     * @param pkt a retained slice the buffer takes over on {@link Offer#HELD} (else the caller releases it)
     */
    public Offer offer(int psn, int ePsn, ByteBuf pkt, long now) {
        int d = Psn.diff(psn, ePsn);
        if (d <= 0 || d >= MAX_PACKETS || bytes + pkt.readableBytes() > MAX_BYTES) {
            return Offer.FULL;
        }
        while (d >= slots.length) {
            grow(ePsn);
        }
        int i = psn & (slots.length - 1);
        if (slots[i] != null) {
            if (psns[i] == psn) {
                return Offer.DUPLICATE;
            }
            release(i); // stale: a PSN before ePsn that was never taken
        }
        slots[i] = pkt;
        psns[i] = psn;
        arrived[i] = now;
        count++;
        bytes += pkt.readableBytes();
        return Offer.HELD;
    }

    private void grow(int ePsn) {
        int n = slots.length * 2;
        ByteBuf[] s = new ByteBuf[n];
        int[] p = new int[n];
        long[] a = new long[n];
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                if (Psn.diff(psns[i], ePsn) < 0) {
                    release(i);
                    continue;
                }
                int j = psns[i] & (n - 1);
                s[j] = slots[i];
                p[j] = psns[i];
                a[j] = arrived[i];
            }
        }
        slots = s;
        psns = p;
        arrived = a;
    }

    /** @return whether a packet with PSN {@code psn} is held */
    public boolean holds(int psn) {
        int i = psn & (slots.length - 1);
        return slots[i] != null && psns[i] == psn;
    }

    /**
     * Takes the packet with PSN {@code psn} (the new ePsn) if held; the caller owns and releases it.
     *
     * @return the packet, or null
     */
    public ByteBuf take(int psn) {
        int i = psn & (slots.length - 1);
        if (slots[i] == null || psns[i] != psn) {
            return null;
        }
        ByteBuf b = slots[i];
        slots[i] = null;
        count--;
        bytes -= b.readableBytes();
        return b;
    }

    /**
     * Releases every packet behind {@code ePsn} (answered some other way: a READ moved ePsn past it).
     */
    public void dropBefore(int ePsn) {
        if (count == 0) {
            return;
        }
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null && Psn.diff(psns[i], ePsn) < 0) {
                release(i);
            }
        }
    }

    /**
     * The PSN ranges missing after {@code ePsn} that a later held packet shows lost: every PSN from
     * {@code ePsn} up to the newest held packet that arrived at or before {@code lostBefore} (a
     * packet sent after a hole that arrived a reordering window ago, after RACK, RFC 8985) that is
     * not held itself. Ranges are written to {@code out} as pairs (first PSN, count), ascending, at
     * most {@code out.length / 2} of them and each at most {@code maxRun} PSNs long (a longer run is
     * split). Allocation-free.
     *
     * @return the number of ranges written (0 when nothing held arrived by {@code lostBefore})
     */
    public int missing(int ePsn, long lostBefore, int maxRun, int[] out) {
        if (count == 0) {
            return 0;
        }
        int limit = -1; // offset from ePsn of the newest held packet old enough
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null && arrived[i] - lostBefore <= 0) {
                int d = Psn.diff(psns[i], ePsn);
                if (d > limit) {
                    limit = d;
                }
            }
        }
        int n = 0;
        int runStart = -1;
        for (int d = 0; d < limit && n < out.length / 2; d++) {
            int psn = Psn.add(ePsn, d);
            boolean miss = !holds(psn);
            if (miss && runStart == -1) {
                runStart = d;
            }
            boolean end = runStart != -1 && (!miss || d - runStart + 1 == maxRun || d == limit - 1);
            if (end) {
                int last = miss ? d : d - 1;
                out[2 * n] = Psn.add(ePsn, runStart);
                out[2 * n + 1] = last - runStart + 1;
                n++;
                runStart = -1;
            }
        }
        return n;
    }

    /** @return the earliest arrival time of a held packet in nanoseconds, or {@link Long#MAX_VALUE} when empty */
    public long oldestArrival() {
        long t = Long.MAX_VALUE;
        if (count == 0) {
            return t;
        }
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null && (t == Long.MAX_VALUE || arrived[i] - t < 0)) {
                t = arrived[i];
            }
        }
        return t;
    }

    /** Releases everything held (QP error, reset, destroy). */
    public void clear() {
        if (count == 0) {
            return;
        }
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                release(i);
            }
        }
    }

    private void release(int i) {
        ByteBuf b = slots[i];
        slots[i] = null;
        count--;
        bytes -= b.readableBytes();
        b.release();
    }
}
