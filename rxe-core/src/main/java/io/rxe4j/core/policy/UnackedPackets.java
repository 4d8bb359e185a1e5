package io.rxe4j.core.policy;

import io.rxe4j.core.wire.Psn;

/**
 * The request packets a requester has sent and not yet seen acknowledged, oldest first: for each,
 * the last PSN it covers (a READ request covers every PSN of its responses) and when it was sent,
 * in {@link io.rxe4j.verbs.spi.Scheduler#nanoTime()} nanoseconds.
 *
 * <p>It bounds the requester's output ({@code extensions.md} §6, {@code rxe-facts.md} §5.2: at
 * most {@link #CAPACITY} packets unacknowledged per QP, or under adaptive recovery a larger {@link
 * #limit(int) limit} the congestion window sets, up to {@link #MAX_CAPACITY}) and gives the
 * retransmit timer the send time of the oldest unacknowledged packet, and the RTT estimator the send
 * time of an acknowledged packet that was sent only once (Karn's rule: each packet records whether
 * it is a retransmission). A ring that grows by doubling when the limit rises above its size (never
 * per packet). Loop only.
 */
public final class UnackedPackets {
    /** Most request packets a QP keeps unacknowledged by default: 64 ({@code RXE_INFLIGHT_SKBS_PER_QP_HIGH}). */
    public static final int CAPACITY = 64;
    /** Largest limit adaptive recovery may set: 16384 packets. */
    public static final int MAX_CAPACITY = 16384;

    private int[] firstPsn = new int[CAPACITY];
    private int[] lastPsn = new int[CAPACITY];
    private long[] sentAt = new long[CAPACITY];
    private int[] budgetBytes = new int[CAPACITY];
    private byte[] timeoutShift = new byte[CAPACITY];
    /** Per packet: bit 0 retransmission (or covered by a repair), bit 1 its RTT was sampled. */
    private byte[] flags = new byte[CAPACITY];
    private int mask = CAPACITY - 1;
    private int head;
    private int size;
    private int limit = CAPACITY;
    private long totalBytes;

    private static final byte RETRANSMITTED = 1;
    private static final byte SAMPLED = 2;

    /** @return the number of packets sent and not acknowledged */
    public int size() {
        return size;
    }

    /** @return the most packets that may be unacknowledged now */
    public int limit() {
        return limit;
    }

    /**
     * Sets the most packets that may be unacknowledged (the window in packets).
     *
     * @param packets {@link #CAPACITY}..{@link #MAX_CAPACITY}; clamped into that range
     */
    public void limit(int packets) {
        limit = Math.max(CAPACITY, Math.min(MAX_CAPACITY, packets));
    }

    /** @return the peer-budget bytes the unacknowledged packets hold, in bytes */
    public long heldBytes() {
        return totalBytes;
    }

    /** @return whether every packet sent was acknowledged */
    public boolean isEmpty() {
        return size == 0;
    }

    /** @return whether no further packet may be sent before an acknowledgement */
    public boolean isFull() {
        return size >= limit;
    }

    /**
     * Records a packet just sent that covers one PSN (or, for a READ request, PSNs up to {@code
     * packetLastPsn}, its first PSN then being unknown to the RTT sample of its first response).
     *
     * @see #add(int, int, long, int, int, boolean)
     */
    public void add(int packetLastPsn, long now, int bytes, int shift) {
        add(packetLastPsn, packetLastPsn, now, bytes, shift, false);
    }

    /**
     * Records a packet just sent.
     *
     * @param packetFirstPsn the packet's own PSN
     * @param packetLastPsn the last PSN the packet covers (its own PSN, or a READ's last response PSN)
     * @param now the send time in nanoseconds
     * @param bytes what the packet holds of the device's per-peer budget ({@code PeerBudget}), in bytes
     * @param shift the packet's retransmit period is the QP's period × 2^shift (0 for all but a TID READ_REQ)
     * @param retransmitted whether the packet was sent before (no RTT sample from it: Karn's rule)
     * @throws IllegalStateException if {@link #isFull()} (the requester checks before it builds a packet)
     */
    public void add(int packetFirstPsn, int packetLastPsn, long now, int bytes, int shift, boolean retransmitted) {
        if (size >= limit) {
            throw new IllegalStateException("more than " + limit + " packets unacknowledged");
        }
        if (size == mask + 1) {
            grow();
        }
        int i = (head + size) & mask;
        firstPsn[i] = packetFirstPsn;
        lastPsn[i] = packetLastPsn;
        sentAt[i] = now;
        budgetBytes[i] = bytes;
        timeoutShift[i] = (byte) shift;
        flags[i] = retransmitted ? RETRANSMITTED : 0;
        totalBytes += bytes;
        size++;
    }

    private void grow() {
        int n = (mask + 1) * 2;
        int[] f = new int[n];
        int[] l = new int[n];
        long[] t = new long[n];
        int[] b = new int[n];
        byte[] sh = new byte[n];
        byte[] fl = new byte[n];
        for (int k = 0; k < size; k++) {
            int i = (head + k) & mask;
            f[k] = firstPsn[i];
            l[k] = lastPsn[i];
            t[k] = sentAt[i];
            b[k] = budgetBytes[i];
            sh[k] = timeoutShift[i];
            fl[k] = flags[i];
        }
        firstPsn = f;
        lastPsn = l;
        sentAt = t;
        budgetBytes = b;
        timeoutShift = sh;
        flags = fl;
        mask = n - 1;
        head = 0;
    }

    /**
     * Records PSNs up to {@code packetLastPsn} that were sent before a rewind and are now known to
     * have reached the responder (a response named them): as a packet holding no budget bytes, or,
     * when the ring is full, by extending the newest packet to cover them (so a rewind's resend of
     * a full window never stops the requester from taking such a response).
     *
     * @param packetLastPsn the last PSN covered, after every PSN recorded so far
     * @param now the time in nanoseconds
     */
    public void addOrCoalesce(int packetLastPsn, long now) {
        if (size < limit) {
            add(packetLastPsn, packetLastPsn, now, 0, 0, true);
            return;
        }
        lastPsn[(head + size - 1) & mask] = packetLastPsn;
    }

    /**
     * Forgets every packet whose last PSN is before {@code compPsn} (acknowledged, comp.psn moved past it).
     *
     * @return the budget bytes those packets held
     */
    public long acknowledgeBefore(int compPsn) {
        long bytes = 0;
        while (size > 0 && Psn.diff(lastPsn[head], compPsn) < 0) {
            bytes += budgetBytes[head];
            head = (head + 1) & mask;
            size--;
        }
        totalBytes -= bytes;
        return bytes;
    }

    /**
     * The send time for an RTT sample when comp.psn moves to {@code compPsn} (call before {@link
     * #acknowledgeBefore}): the newest packet it acknowledges whole (unless that is a READ, whose end
     * comes after all its data), or else the oldest packet when the move reaches into it (the first
     * response of a READ), provided that packet was sent only
     * once and not sampled before (Karn's rule). The packet is marked sampled. A READ's first
     * response gives a sample only if no other response arrived since the READ was sent ({@code
     * lastResponseAt} before its send time): otherwise it waited behind other READs' data at the
     * responder, which is queueing, not the path.
     *
     * @param lastResponseAt when the response before this one arrived, in nanoseconds
     * @return the send time in nanoseconds, or {@link Long#MIN_VALUE} for no sample
     */
    public long sampleSentAt(int compPsn, long lastResponseAt) {
        int newest = -1;
        int k = 0;
        for (; k < size; k++) {
            int i = (head + k) & mask;
            if (Psn.diff(lastPsn[i], compPsn) >= 0) {
                break;
            }
            newest = i;
        }
        if (newest >= 0 && firstPsn[newest] != lastPsn[newest]) {
            return Long.MIN_VALUE; // a READ ends after all its data: sampled at its first response only
        }
        if (newest < 0 && size > 0 && Psn.diff(compPsn, firstPsn[head]) > 0) {
            if (lastResponseAt != Long.MIN_VALUE && lastResponseAt - sentAt[head] > 0) {
                return Long.MIN_VALUE; // queued behind other responses
            }
            newest = head; // comp.psn moved into the oldest packet: a READ's first response
        }
        if (newest < 0 || (flags[newest] & (RETRANSMITTED | SAMPLED)) != 0) {
            return Long.MIN_VALUE;
        }
        flags[newest] |= SAMPLED;
        return sentAt[newest];
    }

    /**
     * Marks the packet that covers {@code psn} as retransmitted (a repair or probe resent it): its
     * acknowledgement gives no RTT sample.
     */
    public void markRetransmitted(int psn) {
        for (int k = 0; k < size; k++) {
            int i = (head + k) & mask;
            if (Psn.diff(lastPsn[i], psn) >= 0) {
                flags[i] |= RETRANSMITTED;
                return;
            }
        }
    }

    /** @return the period scale (a power of two exponent) of the oldest unacknowledged packet; undefined when empty */
    public int oldestTimeoutShift() {
        return timeoutShift[head];
    }

    /** @return when the oldest unacknowledged packet was sent, in nanoseconds; undefined when empty */
    public long oldestSentAt() {
        return sentAt[head];
    }

    /** @return the last PSN the newest unacknowledged packet covers; undefined when empty */
    public int newestLastPsn() {
        return lastPsn[(head + size - 1) & mask];
    }

    /** @return the first PSN of the newest unacknowledged packet; undefined when empty */
    public int newestFirstPsn() {
        return firstPsn[(head + size - 1) & mask];
    }

    /**
     * Forgets every packet (a rewind: they are sent again and recorded anew; or the QP stops).
     *
     * @return the budget bytes they held
     */
    public long clear() {
        long bytes = totalBytes;
        head = 0;
        size = 0;
        totalBytes = 0;
        return bytes;
    }
}
