package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.spi.Scheduler;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * Cross-lane hand-off of received packets. A multi-loop transport may deliver any packet on any
 * lane (a UDP socket of an {@code SO_REUSEPORT} group, say). The receiving lane reads the packet's
 * QPN ({@link ReceiveChecks#verbsQpn}: BTH DestQP, for TID RDMA the KDETH's verbs QP), and when the
 * QP belongs to another lane it hands the packet over through that lane's {@link LaneInbox} (one
 * bounded ring per pair of lanes), without checking it further: all checks run on the owning lane.
 * The owner's loop is woken once per batch ({@link #wakeSteeredLanes()}, from the receiving lane's
 * flush). A full ring drops the packet and counts {@code drop_steer_queue_full} (the peer resends
 * it). Packets of unknown QPs and malformed packets stay on the lane they arrived on.
 *
 * <p>Threading: {@link #steer} and {@link #wakeSteeredLanes} run on this lane's loop; the drain task
 * on this lane's loop; {@link #releaseInboxes} on any thread, at close (the fence protocol is in
 * {@link LaneInbox} and the comments here). A one-lane device has no inboxes and never steers.
 */
final class LaneSteering {
    /** Slots of each steering ring (packets in flight from one lane to another). */
    static final int STEER_RING_SLOTS = 4096;

    private final RxeLane lane;
    private final int index;
    private final Scheduler scheduler;
    private final QpTable qps;
    private final BooleanSupplier closed;
    private final Counters counters;
    /** Parses TID packets for their KDETH verbs QP (not the receive path's view). */
    private final PacketView view = new PacketView();
    /** inboxes[i]: packets lane i hands to this lane (consumer: this lane). Null for a one-lane device. */
    private LaneInbox[] inboxes;
    private LaneSteering[] all;
    /** Set while a drain task of this lane is queued or running; any lane sets it, this lane clears it. */
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drainInboxes;
    /** Receives a packet another lane handed over, then drops the reference that lane took for the ring. */
    private final LaneInbox.Sink inboxSink;
    private static final LaneInbox.Sink RELEASE = (p, s, r, c) -> p.release();
    /**
     * The one consumer token of this lane's inboxes: the drain task holds it while it drains, and
     * {@link #releaseInboxes()} takes it at close, so that the rings never have two consumers.
     */
    private final AtomicBoolean consuming = new AtomicBoolean();
    /** Set at close: what is drained from now on is released, not received. */
    private volatile boolean discard;
    /** Bit i: this lane handed packets to lane i since it last woke lane i; loop only. */
    private long steeredTo;

    LaneSteering(RxeLane lane, int index, Scheduler scheduler, QpTable qps, BooleanSupplier closed, Counters counters) {
        this.lane = lane;
        this.index = index;
        this.scheduler = scheduler;
        this.qps = qps;
        this.closed = closed;
        this.counters = counters;
        this.inboxSink = (p, s, r, c) -> {
            try {
                lane.receiveOwned(p, s, r, c);
            } finally {
                p.release();
            }
        };
    }

    /** Wires the lanes' steering to each other: with more than one lane, one inbox per other lane. */
    void start(LaneSteering[] lanes) {
        this.all = lanes;
        if (lanes.length > 1) {
            inboxes = new LaneInbox[lanes.length];
            for (int i = 0; i < lanes.length; i++) {
                if (i != index) {
                    inboxes[i] = new LaneInbox(STEER_RING_SLOTS);
                }
            }
        }
    }

    /** @return whether packets may be handed between lanes (more than one lane) */
    boolean active() {
        return inboxes != null;
    }

    /**
     * Hands the packet to the lane of its QP when that is another lane.
     *
     * @return whether the packet left this lane (handed over, or dropped because the ring was full)
     */
    boolean steer(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        if (len < Bth.LENGTH + Icrc.LENGTH) {
            return false; // dropped here, as too short
        }
        Opcode op = Opcode.of(packet.getUnsignedByte(at));
        if (op != null && op.transport() == Opcode.Transport.TID && view.parse(packet, at, len) != null) {
            return false; // malformed: dropped here
        }
        RxeQp qp = qps.get(ReceiveChecks.verbsQpn(packet, at, op, view));
        if (qp == null || closed.getAsBoolean()) {
            return false; // dropped here (no QP, or the device is closing)
        }
        int owner = RxeLane.of(qp).index();
        if (owner == index) {
            return false;
        }
        counters.inc(Counter.STEERED_PKTS); // rcvd_pkts is counted once, by the owner
        if (all[owner].inboxes[index].offer(packet.retain(), sender, recipient, ceMarked)) {
            steeredTo |= 1L << owner;
        } else {
            packet.release();
            counters.drop(DropReason.STEER_QUEUE_FULL);
        }
        return true;
    }

    /** Wakes each lane this lane handed packets to since the last wake-up (once per batch). Loop only. */
    void wakeSteeredLanes() {
        long mask = steeredTo;
        if (mask == 0) {
            return;
        }
        steeredTo = 0;
        // the tails published with release stores must be visible before we read (CAS) each
        // owner's drainScheduled flag: the other half of drainInboxes' "clear, fence, read tails"
        VarHandle.fullFence();
        while (mask != 0) {
            int owner = Long.numberOfTrailingZeros(mask);
            mask &= mask - 1;
            all[owner].wake();
        }
    }

    private void wake() {
        if (drainScheduled.compareAndSet(false, true)) {
            try {
                scheduler.execute(drainTask);
            } catch (RejectedExecutionException shutDown) {
                drainScheduled.set(false);
                releaseInboxes(); // the loop is gone (the device is closing): a consumer token keeps it safe
            }
        }
    }

    /** The drain task: receives what the other lanes handed over, in each ring's order. */
    private void drainInboxes() {
        drainScheduled.set(false);
        VarHandle.fullFence(); // clear the flag before reading the tails (see wakeSteeredLanes)
        if (!consuming.compareAndSet(false, true)) {
            return; // close is releasing what waits (releaseInboxes)
        }
        try {
            LaneInbox.Sink sink = discard ? RELEASE : inboxSink;
            for (LaneInbox inbox : inboxes) {
                if (inbox != null) {
                    inbox.drain(sink);
                }
            }
        } finally {
            consuming.set(false);
        }
        lane.flushTransport();
    }

    /**
     * Releases what waits in this lane's inboxes, at close (any thread): it takes the consumer
     * token, waiting for a drain task that holds it, so the rings keep one consumer; drain tasks
     * that run later release what they find.
     */
    void releaseInboxes() {
        if (inboxes == null) {
            return;
        }
        discard = true;
        while (!consuming.compareAndSet(false, true)) {
            Thread.onSpinWait(); // a drain task is running on the loop: it ends soon
        }
        try {
            for (LaneInbox inbox : inboxes) {
                if (inbox != null) {
                    inbox.drain(RELEASE);
                }
            }
        } finally {
            consuming.set(false);
        }
    }
}
