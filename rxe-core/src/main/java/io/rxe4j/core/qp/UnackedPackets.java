package io.rxe4j.core.qp;

import io.rxe4j.core.wire.Psn;

/**
 * The request packets a requester has sent and not yet seen acknowledged, oldest first: for each,
 * the last PSN it covers (a READ request covers every PSN of its responses) and when it was sent,
 * in {@link io.rxe4j.verbs.spi.Scheduler#nanoTime()} nanoseconds.
 *
 * <p>It bounds the requester's output ({@code extensions.md} §6, {@code rxe-facts.md} §5.2: at
 * most {@link #CAPACITY} packets unacknowledged per QP) and gives the retransmit timer the send
 * time of the oldest unacknowledged packet. A fixed ring: no allocation per packet. Loop only.
 */
public final class UnackedPackets {
    /** Most request packets a QP keeps unacknowledged: 64 ({@code RXE_INFLIGHT_SKBS_PER_QP_HIGH}). */
    public static final int CAPACITY = 64;

    private final int[] lastPsn = new int[CAPACITY];
    private final long[] sentAt = new long[CAPACITY];
    private final int[] budgetBytes = new int[CAPACITY];
    private final int[] timeoutShift = new int[CAPACITY];
    private int head;
    private int size;
    private long totalBytes;

    /** @return the number of packets sent and not acknowledged */
    public int size() {
        return size;
    }

    /** @return the peer-budget bytes the unacknowledged packets hold, in bytes */
    public long heldBytes() {
        return totalBytes;
    }

    /** @return whether every packet sent was acknowledged */
    boolean isEmpty() {
        return size == 0;
    }

    /** @return whether no further packet may be sent before an acknowledgement */
    public boolean isFull() {
        return size == CAPACITY;
    }

    /**
     * Records a packet just sent.
     *
     * @param packetLastPsn the last PSN the packet covers (its own PSN, or a READ's last response PSN)
     * @param now the send time in nanoseconds
     * @param bytes what the packet holds of the device's per-peer budget ({@code PeerBudget}), in bytes
     * @param shift the packet's retransmit period is the QP's period × 2^shift (0 for all but a TID READ_REQ)
     * @throws IllegalStateException if {@link #isFull()} (the requester checks before it builds a packet)
     */
    public void add(int packetLastPsn, long now, int bytes, int shift) {
        if (size == CAPACITY) {
            throw new IllegalStateException("more than " + CAPACITY + " packets unacknowledged");
        }
        int i = (head + size) % CAPACITY;
        lastPsn[i] = packetLastPsn;
        sentAt[i] = now;
        budgetBytes[i] = bytes;
        timeoutShift[i] = shift;
        totalBytes += bytes;
        size++;
    }

    /**
     * Records PSNs up to {@code packetLastPsn} that were sent before a rewind and are now known to
     * have reached the responder (a response named them): as a packet holding no budget bytes, or,
     * when the ring is full, by extending the newest packet to cover them (so a rewind's resend of
     * {@link #CAPACITY} packets never stops the requester from taking such a response).
     *
     * @param packetLastPsn the last PSN covered, after every PSN recorded so far
     * @param now the time in nanoseconds
     */
    public void addOrCoalesce(int packetLastPsn, long now) {
        if (size < CAPACITY) {
            add(packetLastPsn, now, 0, 0);
            return;
        }
        lastPsn[(head + size - 1) % CAPACITY] = packetLastPsn;
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
            head = (head + 1) % CAPACITY;
            size--;
        }
        totalBytes -= bytes;
        return bytes;
    }

    /** @return the period scale (a power of two exponent) of the oldest unacknowledged packet; undefined when empty */
    int oldestTimeoutShift() {
        return timeoutShift[head];
    }

    /** @return when the oldest unacknowledged packet was sent, in nanoseconds; undefined when empty */
    long oldestSentAt() {
        return sentAt[head];
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
