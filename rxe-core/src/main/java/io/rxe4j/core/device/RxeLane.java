package io.rxe4j.core.device;

import io.rxe4j.core.stats.Counters;
import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.tid.TidPool;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.TidHeader;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One event loop of a {@link RxeDevice} and everything that belongs to it: the lane's transport
 * ({@link Transport#lanes()}), its scheduler, the receive path, the per-peer byte budgets, the
 * service queue, the TID RDMA receive context ({@link TidPool}: entries and hardware flows, as one
 * hfi1 receive context has its own) and the lane's device counters. Every QP of the device belongs
 * to exactly one lane, for its whole life, and all of its protocol work runs on that lane's loop
 * ({@code docs/architecture.md}, "Threads"); a device with one lane is the single-loop device.
 *
 * <p><b>Steering.</b> A multi-loop transport may deliver any packet on any lane (a UDP socket of
 * an {@code SO_REUSEPORT} group, say). The receiving lane reads the packet's DestQP (for TID RDMA,
 * the KDETH's verbs QP), and when the QP belongs to another lane it hands the packet over through
 * that lane's {@link LaneInbox} from this lane (one bounded ring per pair of lanes), without
 * checking or parsing it further: all checks run on the owning lane. The owner's loop is woken once
 * per batch, when the receiving lane ends its task ({@link #flushTransport()}). A full ring drops
 * the packet and counts {@code drop_steer_queue_full} (the peer resends it). Packets of unknown QPs
 * and malformed packets stay on the lane they arrived on, which drops and counts them.
 *
 * <p>Threading: everything here runs on the lane's loop, except {@link #callOnLoop} and the
 * counters' stale reads.
 */
public final class RxeLane implements PacketReceiver {
    /** Slots of each steering ring (packets in flight from one lane to another). */
    static final int STEER_RING_SLOTS = 4096;

    private final RxeDevice device;
    private final int index;
    private final Transport transport;
    private final Scheduler scheduler;
    private final DeviceConfig config;
    private final InetSocketAddress address;
    private final TidPool tidPool;
    private final Counters counters = new Counters();
    private final Icrc icrc;
    private final PacketView view = new PacketView();
    private boolean needFlush;
    /** QPs waiting for a turn to produce output (READ reply batches, a requester after backpressure); loop only. */
    private final ArrayDeque<RxeQp> serviceQueue = new ArrayDeque<>();
    private boolean serviceScheduled;
    private final Runnable serviceTask = this::service;
    /** Per-peer budgets of bytes in flight, by peer address; loop only. */
    private final HashMap<InetSocketAddress, PeerBudget> budgets = new HashMap<>();
    /** inboxes[i]: packets lane i hands to this lane (consumer: this lane). Null for a one-lane device. */
    private LaneInbox[] inboxes;
    /** Set while a drain task of this lane is queued or running; any lane sets it, this lane clears it. */
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drainInboxes;
    /** Receives a packet another lane handed over, then drops the reference that lane took for the ring. */
    private final LaneInbox.Sink inboxSink = (p, s, r, c) -> {
        try {
            receiveOwned(p, s, r, c);
        } finally {
            p.release();
        }
    };
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
    private RxeLane[] all;
    /** The transport calls {@link #onReadComplete()} after each read batch: flush once per batch then. */
    private boolean deferFlush;

    RxeLane(RxeDevice device, int index, Transport transport, DeviceConfig config) {
        this.device = device;
        this.index = index;
        this.transport = transport;
        this.scheduler = transport.scheduler();
        this.config = config;
        this.address = device.address();
        this.tidPool = config.opfn() && config.tid().enabled()
                ? new TidPool(config.tid(), config.seed() ^ 0x5449445F524D4DL ^ ((long) index << 32)) : null;
        this.icrc = new Icrc().rxeFlushCompat(config.rxeFlushCompat());
    }

    /** Wires the lanes to each other (steering rings) and starts the lane's transport. */
    void start(RxeLane[] lanes) {
        this.all = lanes;
        if (lanes.length > 1) {
            inboxes = new LaneInbox[lanes.length];
            for (int i = 0; i < lanes.length; i++) {
                if (i != index) {
                    inboxes[i] = new LaneInbox(STEER_RING_SLOTS);
                }
            }
        }
        deferFlush = transport.signalsReadComplete();
        transport.start(this);
    }

    /** @return this lane's position in the device, 0-based */
    public int index() {
        return index;
    }

    /** @return the device */
    public RxeDevice device() {
        return device;
    }

    /** @return the loop the lane (and each of its QPs) runs on */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** @return the lane's transport */
    Transport transport() {
        return transport;
    }

    /** @return the lane's own device counters (packets, receive-path drops); see {@link RxeDevice#counterSnapshot()} */
    public Counters counters() {
        return counters;
    }

    /** @return the TID RDMA receive context of this lane (entries, hardware flows), or null without TID RDMA. Loop only. */
    public TidPool tidPool() {
        return tidPool;
    }

    /**
     * Runs {@code task} on the lane's loop and returns its result; runs it directly when called on
     * the loop. Exceptions of the task are rethrown as they are (unchecked) or wrapped.
     */
    public <T> T callOnLoop(Callable<T> task) {
        if (scheduler.inLoop()) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        scheduler.execute(() -> {
            try {
                f.complete(task.call());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the device loop", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw new CompletionException(e.getCause());
        }
    }

    // ------------------------------------------------------------------ output

    /** @return a pooled buffer for an outgoing packet of {@code length} bytes (ICRC included). Loop only. */
    public ByteBuf allocPacket(int length) {
        return transport.allocator().directBuffer(length, length);
    }

    /**
     * Writes the ICRC of a built packet ({@code writerIndex} = length including the ICRC) and
     * hands it to the lane's transport, addressed to the QP's peer. Loop only.
     */
    public void transmit(RxeQp qp, ByteBuf packet) {
        InetSocketAddress peer = qp.av();
        if (config.opfn() && packet.getUnsignedByte(0) != Opcode.CNP.code()) {
            Bth.setExtended(packet, 0); // OPFN: BTH DW1 bit 24 on every RC packet (tid-opfn-facts §1.1)
        }
        icrc.write(packet, 0, packet.writerIndex(), address, peer);
        counters.inc(Counter.SENT_PKTS);
        qp.counters().inc(Counter.SENT_PKTS);
        if (PacketTrace.LOG.isTraceEnabled()) {
            PacketTrace.trace("tx", packet, 0, packet.writerIndex(), address, peer);
        }
        transport.send(packet, peer);
        needFlush = true;
    }

    /**
     * @return the budget of bytes in flight towards {@code peer}, shared by every QP of this lane
     *     that talks to it ({@link DeviceConfig#peerBudgetBytes()} per lane, or the lane transport's
     *     {@link Transport#inFlightBudgetHint()} divided by the number of lanes: the peer may have one
     *     receive buffer for all of them). Loop only.
     */
    public PeerBudget peerBudget(InetSocketAddress peer) {
        PeerBudget b = budgets.get(peer);
        if (b == null) {
            // the derived budget is shared by the lanes: a peer may have one receive buffer for all of
            // them (kernel rdma_rxe, a single-loop device, or NIO sockets hashed by address)
            long hint = transport.inFlightBudgetHint();
            long limit = config.peerBudgetBytes() == DeviceConfig.DERIVE_BUDGET
                    ? (hint == Long.MAX_VALUE ? hint : Math.max(1, hint / all.length)) : config.peerBudgetBytes();
            b = new PeerBudget(this, limit, config.congestionControl());
            budgets.put(peer, b);
        }
        return b;
    }

    /** @return whether the lane's transport takes more packets now ({@link Transport#isWritable()}). Loop only. */
    public boolean transportWritable() {
        return transport.isWritable();
    }

    /**
     * {@code qp} stopped producing because the transport is not writable: it gets a turn (see
     * {@link #requestService}) once the transport calls {@link #onWritable()}. Loop only.
     */
    public void awaitWritable(RxeQp qp) {
        counters.inc(Counter.TX_NOT_WRITABLE);
        qp.counters().inc(Counter.TX_NOT_WRITABLE);
        requestService(qp);
    }

    /**
     * Gives {@code qp} a turn ({@link RxeQp#onService()}) after the QPs already waiting:
     * output that is produced in bounded batches (a READ reply) continues here, round robin across
     * the lane's QPs, so that no QP can starve the others. Turns run in a loop task of their own,
     * scheduled when the current loop task ends ({@link #flushTransport()}), after the packets
     * already received, and only while the transport is writable. Loop only.
     */
    public void requestService(RxeQp qp) {
        if (!qp.serviceQueued) {
            qp.serviceQueued = true;
            serviceQueue.add(qp);
        }
    }

    private void scheduleService() {
        if (!serviceScheduled && !serviceQueue.isEmpty() && transport.isWritable() && !device.isClosed()) {
            serviceScheduled = true;
            try {
                scheduler.execute(serviceTask);
            } catch (RejectedExecutionException shutDown) {
                serviceScheduled = false; // the loop is gone (the device is closing)
            }
        }
    }

    /** One round: each QP queued when it starts gets one turn, while the transport is writable. */
    private void service() {
        serviceScheduled = false;
        for (int n = serviceQueue.size(); n > 0 && transport.isWritable(); n--) {
            RxeQp qp = serviceQueue.poll();
            qp.serviceQueued = false;
            if (qp.isDestroyed()) {
                continue;
            }
            try {
                qp.onService();
            } catch (RuntimeException e) {
                internalError(qp, "service turn", e);
            }
        }
        flushTransport(); // and the next round, if QPs still wait
    }

    /** Parses refused packets (not {@link #view}: a refusal may be reported while a received packet is in it). */
    private PacketView refusedView;

    /**
     * The transport refused to send a packet ({@link PacketReceiver#onSendFailed}): finds the QP that
     * sent it (the one whose peer and destination QPN the packet names), logs a rate-limited WARN with
     * the datagram's size and the link and path MTUs, and tells that QP from a task of its own ({@link
     * RxeQp#onSendRefused}): a datagram larger than the link carries ({@link
     * io.rxe4j.verbs.spi.DatagramTooLargeException}) fails it with LOC_QP_OP_ERR, never a peer
     * timeout; any other refusal (a link down, no buffer space) is a transient loss that its timers
     * recover, named in its RETRY_EXC_ERR reason if they do not. Counted in {@code send_err} (the
     * QP's, or this lane's when no QP matches). Loop only; never throws.
     */
    @Override
    public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
        try {
            int at = packet.readerIndex();
            int len = packet.readableBytes();
            int opcode = len >= Bth.LENGTH ? packet.getUnsignedByte(at) : -1;
            Opcode op = opcode >= 0 ? Opcode.of(opcode) : null;
            int destQpn = -1;
            int psn = 0;
            if (op != null) {
                psn = Bth.psn(packet, at);
                destQpn = Bth.destQp(packet, at);
                if (op.transport() == Opcode.Transport.TID) {
                    PacketView v = refusedView != null ? refusedView : (refusedView = new PacketView());
                    destQpn = v.parse(packet, at, len) == null ? TidHeader.verbsQp(packet, v.index(Header.KDETH)) : -1;
                }
            }
            RxeQp qp = destQpn < 0 ? null : device.qpSendingTo(peer, destQpn, this);
            String why = describeRefusal(len, peer, cause, qp);
            boolean permanent = io.rxe4j.verbs.spi.DatagramTooLargeException.isTooLarge(cause);
            device.reportSendFailure(scheduler.nanoTime(), why, qp, permanent);
            if (qp == null) {
                counters.inc(Counter.SEND_ERR);
                return;
            }
            boolean response = op.isResponse();
            int refusedPsn = psn;
            scheduler.execute(() -> {
                try {
                    qp.onSendRefused(response, refusedPsn, why, permanent);
                } catch (RuntimeException e) {
                    internalError(qp, "a refused send", e);
                    return;
                }
                flushTransport();
            });
        } catch (RuntimeException e) {
            counters.inc(Counter.SEND_ERR);
            RxeDevice.LOG.warn("{}: a send failure could not be handled: {}", address, e.toString(), e);
        }
    }

    /** @return e.g. "the transport refused a 4124-byte UDP payload (4152-byte IP datagram) to X: Message too long (path MTU 4096 > the port's active MTU 1024 of link MTU 1500)" */
    private String describeRefusal(int len, InetSocketAddress peer, Throwable cause, RxeQp qp) {
        int ipHeader = peer.getAddress() instanceof java.net.Inet6Address ? 40 : 20;
        String said = cause == null ? "unknown error"
                : cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName();
        int linkMtu = transport.linkMtu();
        io.rxe4j.verbs.Mtu active = io.rxe4j.verbs.Mtu.activeForLinkMtu(linkMtu);
        StringBuilder b = new StringBuilder("the transport refused to send a ").append(len).append("-byte UDP payload (")
                .append(len + 8 + ipHeader).append("-byte IP datagram) to ").append(peer).append(": ").append(said)
                .append(" (");
        if (qp != null) {
            b.append("path MTU ").append(qp.pathMtuBytes());
            b.append(qp.pathMtuBytes() > active.bytes() ? " > " : ", ");
        }
        b.append("the port's active MTU ").append(active.bytes());
        b.append(linkMtu > 0 ? " for link MTU " + linkMtu : " (link MTU unknown)").append(')');
        return b.toString();
    }

    /** The transport can take packets again: the QPs that waited get their turns. */
    @Override
    public void onWritable() {
        scheduleService();
    }

    /**
     * An unexpected exception in the engine while working for {@code qp}: see {@link
     * RxeDevice#reportInternalError}. Loop only.
     */
    public void internalError(RxeQp qp, String what, RuntimeException e) {
        counters.drop(DropReason.INTERNAL_ERROR);
        device.reportInternalError(qp, what, e);
        flushTransport();
    }

    /**
     * Ends a loop task of the lane: flushes the packets queued in the transport, wakes the lanes
     * this lane handed packets to, and schedules the turns of the QPs that asked for one ({@link
     * #requestService}). Loop only.
     */
    public void flushTransport() {
        if (needFlush) {
            needFlush = false;
            transport.flush();
        }
        if (steeredTo != 0) {
            wakeSteeredLanes();
        }
        scheduleService();
    }

    // ------------------------------------------------------------------ receive path

    /** The packet being received was marked CE by the network (loop only, valid during {@link #receive}). */
    private boolean receivedCe;

    /**
     * A packet the network marked CE (Congestion Experienced). With {@link DeviceConfig#ecn()} a
     * request makes its QP's responder send a CNP (at most one per QP per {@code
     * rc.ResponsePackets.CNP_INTERVAL_NANOS}); otherwise the mark is ignored.
     */
    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        if (inboxes == null || !steer(packet, sender, recipient, ceMarked)) {
            receiveOwned(packet, sender, recipient, ceMarked);
        }
        if (!deferFlush) {
            flushTransport(); // replies out, steered packets' owners woken
        }
    }

    /**
     * The end of a read batch ({@link Transport#signalsReadComplete()}): one flush for the replies
     * to every packet of the batch, and one wake-up per lane that packets were handed to.
     */
    @Override
    public void onReadComplete() {
        flushTransport();
    }

    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        onPacket(packet, sender, recipient, false);
    }

    /** Receives a packet whose QP (if any) belongs to this lane; the caller flushes. */
    private void receiveOwned(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        receivedCe = ceMarked;
        try {
            receive(packet, sender, recipient);
        } catch (RuntimeException e) {
            counters.drop(DropReason.INTERNAL_ERROR);
            RxeDevice.LOG.debug("packet from {} dropped by an unexpected error", sender, e);
        } finally {
            receivedCe = false;
        }
    }

    /**
     * Hands the packet to the lane of its QP when that is another lane.
     *
     * @return whether the packet left this lane (handed over, or dropped because the ring was full)
     */
    private boolean steer(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        if (len < Bth.LENGTH + Icrc.LENGTH) {
            return false; // dropped here, as too short
        }
        int qpn;
        int opcode = packet.getUnsignedByte(at);
        Opcode op = Opcode.of(opcode);
        if (op != null && op.transport() == Opcode.Transport.TID) {
            if (view.parse(packet, at, len) != null) {
                return false; // malformed: dropped here
            }
            qpn = TidHeader.verbsQp(packet, view.index(Header.KDETH)); // tid-opfn-facts §3.2
        } else {
            qpn = Bth.destQp(packet, at);
        }
        RxeQp qp = device.qp(qpn);
        if (qp == null || device.isClosed()) {
            return false; // dropped here (no QP, or the device is closing)
        }
        int owner = qp.lane().index;
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

    /** Wakes each lane this lane handed packets to since the last wake-up (once per batch). */
    private void wakeSteeredLanes() {
        long mask = steeredTo;
        steeredTo = 0;
        // the tails published with release stores must be visible before we read (CAS) each
        // owner's drainScheduled flag: the other half of drainInboxes' "clear, fence, read tails"
        java.lang.invoke.VarHandle.fullFence();
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
        java.lang.invoke.VarHandle.fullFence(); // clear the flag before reading the tails (see wakeSteeredLanes)
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
        flushTransport();
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

    private void receive(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        counters.inc(Counter.RCVD_PKTS);
        if (PacketTrace.LOG.isTraceEnabled()) {
            PacketTrace.trace("rx", packet, packet.readerIndex(), packet.readableBytes(), sender, recipient);
        }
        if (device.isClosed()) {
            return;
        }
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        DropReason reason = view.parse(packet, at, len);
        if (reason != null) {
            counters.drop(reason);
            return;
        }
        if (config.checkIcrc() && !icrc.check(packet, at, len, sender, recipient)) {
            counters.drop(DropReason.BAD_ICRC);
            return;
        }
        if ((view.pkey() & 0x7FFF) != 0x7FFF) {
            counters.drop(DropReason.BAD_PKEY);
            return;
        }
        Opcode op = view.opcode();
        boolean tid = op.transport() == Opcode.Transport.TID;
        if (tid && tidPool == null) {
            counters.drop(DropReason.WRONG_TRANSPORT); // TID RDMA is off on this device
            return;
        }
        // a TID packet's BTH DestQP is a KDETH QPN: the QP is named by verbs_qp (tid-opfn-facts §3.2, §9.1)
        RxeQp qp = device.qp(tid ? TidHeader.verbsQp(packet, view.index(Header.KDETH)) : view.destQp());
        if (qp == null || qp.isDestroyed() || qp.lane() != this) {
            counters.drop(DropReason.NO_QP);
            return;
        }
        if (op == Opcode.CNP) {
            onCnp(qp, sender);
            return;
        }
        if (op.transport() != Opcode.Transport.RC && !tid) {
            counters.drop(DropReason.WRONG_TRANSPORT);
            return;
        }
        if (tid && (Kdeth.jkey(packet, view.index(Header.KDETH)) & Kdeth.JKEY_DRIVER_MASK)
                != io.rxe4j.verbs.TidRdmaParams.DEFAULT_JKEY) {
            counters.drop(DropReason.BAD_JKEY); // the receive context's J_KEY (tid-opfn-facts §9.7)
            return;
        }
        // rxe-facts §4.1: the packet's IP source must be the QP's peer; the UDP source port is
        // not checked (a kernel rdma_rxe peer sends from a hashed port to 4791)
        InetSocketAddress av = qp.av();
        if (av == null || !sender.getAddress().equals(av.getAddress())) {
            counters.drop(DropReason.WRONG_PEER);
            return;
        }
        qp.counters().inc(Counter.RCVD_PKTS);
        QpState s = qp.state();
        boolean sending = s == QpState.RTS || s == QpState.SQD || s == QpState.SQE;
        if (!(sending || (op.isRequest() && s == QpState.RTR))) {
            counters.drop(DropReason.QP_STATE); // requests need RTR or later, responses RTS or later
            return;
        }
        if (config.opfn() && op.transport() == Opcode.Transport.RC && Bth.extended(packet, at)) {
            qp.onExtendedBit(); // before the packet is handled, requests and responses alike (hfi1_rc_rcv)
        }
        if (receivedCe && config.ecn() && op.isRequest()) {
            qp.onCongestionExperienced();
        }
        try {
            if (op.operation() == Opcode.Operation.TID_WRITE_DATA || op == Opcode.TID_RDMA_RESYNC) {
                qp.onTidWriteData(view); // the flow table's path, not the ordered request queue
            } else if (op.isRequest()) {
                qp.onRequest(view);
            } else if (op == Opcode.TID_RDMA_READ_RESP) {
                qp.onTidReadResponse(view);
            } else if (tid) {
                qp.onTidWriteResponse(view); // WRITE_RESP, TID ACK
            } else {
                qp.onResponse(view);
            }
        } catch (RuntimeException e) {
            internalError(qp, op + " PSN 0x" + Integer.toHexString(view.psn()), e);
        }
    }

    /** A CNP for {@code qp}'s requester (RoCEv2 ECN): from its peer only, and acted on only with ECN on. */
    private void onCnp(RxeQp qp, InetSocketAddress sender) {
        InetSocketAddress av = qp.av();
        if (av == null || !sender.getAddress().equals(av.getAddress())) {
            counters.drop(DropReason.WRONG_PEER);
            return;
        }
        qp.counters().inc(Counter.RCVD_PKTS);
        qp.counters().inc(Counter.CNP_RCVD);
        if (config.ecn()) {
            try {
                qp.onCnp();
            } catch (RuntimeException e) {
                internalError(qp, "CNP", e);
            }
        }
    }

    @Override
    public String toString() {
        return "RxeLane{" + address + " #" + index + '}';
    }
}
