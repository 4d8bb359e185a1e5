package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;

/**
 * A bounded single-producer, single-consumer ring of received packets that one lane (loop) of a
 * device hands to another: the producer is the lane the packet arrived on, the consumer the lane
 * that owns the packet's QP. No allocation per packet (the slots are parallel arrays, reused) and
 * no lock.
 *
 * <p>Memory ordering: the producer writes a slot and then publishes it with a release store of
 * {@code tail}; the consumer reads {@code tail} with acquire semantics before it reads the slots,
 * so it sees every slot written before the tail it read. The consumer frees slots with a release
 * store of {@code head}; the producer reads {@code head} with acquire semantics before it reuses a
 * slot. The wake-up of the consumer's loop is its owner's business ({@link RxeLane}).
 */
final class LaneInbox {
    private static final VarHandle HEAD;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(LaneInbox.class, "head", long.class);
            TAIL = l.findVarHandle(LaneInbox.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int mask;
    private final ByteBuf[] packets;
    private final InetSocketAddress[] senders;
    private final InetSocketAddress[] recipients;
    private final boolean[] ce;
    /** Consumer's position; written by the consumer only. Padded away from {@link #tail}. */
    @SuppressWarnings("unused")
    private long head;
    @SuppressWarnings("unused")
    private long p1, p2, p3, p4, p5, p6, p7;
    /** Producer's position; written by the producer only. */
    @SuppressWarnings("unused")
    private long tail;
    @SuppressWarnings("unused")
    private long q1, q2, q3, q4, q5, q6, q7;
    /** The producer's last view of {@link #head} (producer only), so that it reads head rarely. */
    private long headCache;

    /** @param capacity slots, a power of two */
    LaneInbox(int capacity) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("capacity must be a power of two, got " + capacity);
        }
        this.mask = capacity - 1;
        this.packets = new ByteBuf[capacity];
        this.senders = new InetSocketAddress[capacity];
        this.recipients = new InetSocketAddress[capacity];
        this.ce = new boolean[capacity];
    }

    /**
     * Producer: appends one packet (ownership passes to the ring).
     *
     * @return false when the ring is full (the caller keeps ownership)
     */
    boolean offer(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        long t = (long) TAIL.getOpaque(this);
        if (t - headCache > mask) {
            headCache = (long) HEAD.getAcquire(this);
            if (t - headCache > mask) {
                return false;
            }
        }
        int i = (int) t & mask;
        packets[i] = packet;
        senders[i] = sender;
        recipients[i] = recipient;
        ce[i] = ceMarked;
        TAIL.setRelease(this, t + 1);
        return true;
    }

    /** Consumer: what the ring hands over. */
    interface Sink {
        void accept(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked);
    }

    /**
     * Consumer: passes every packet published so far to {@code sink}, in order, and frees the slots.
     *
     * @return the number of packets drained
     */
    int drain(Sink sink) {
        long h = (long) HEAD.getOpaque(this);
        long t = (long) TAIL.getAcquire(this);
        for (long p = h; p < t; p++) {
            int i = (int) p & mask;
            ByteBuf b = packets[i];
            InetSocketAddress s = senders[i];
            InetSocketAddress r = recipients[i];
            boolean c = ce[i];
            packets[i] = null;
            senders[i] = null;
            recipients[i] = null;
            HEAD.setRelease(this, p + 1); // the slot is free before the sink runs (it may throw)
            sink.accept(b, s, r, c);
        }
        return (int) (t - h);
    }

    /** @return whether no packet is waiting (a snapshot; any thread) */
    boolean isEmpty() {
        return (long) TAIL.getAcquire(this) == (long) HEAD.getAcquire(this);
    }
}
