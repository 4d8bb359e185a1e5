package io.rxe4j.core.device;

import io.rxe4j.core.stats.Counters;
import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.policy.PeerBudget;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.qp.QpHost;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.tid.TidPool;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * One event loop of a {@link RxeDevice} and everything that belongs to it: the lane's transport
 * ({@link Transport#lanes()}), its scheduler, its output path, the per-peer byte budgets, the TID
 * RDMA receive context ({@link TidPool}: entries and hardware flows, as one hfi1 receive context
 * has its own) and the lane's device counters. Every QP of the device belongs to exactly one lane,
 * for its whole life, and all of its protocol work runs on that lane's loop ({@code
 * docs/architecture.md}, "Threads"); a device with one lane is the single-loop device.
 *
 * <p>Its parts: {@link ReceiveChecks} (the receive path, {@code rxe_recv.c}), {@link LaneSteering}
 * (packets that arrived on this lane for another lane's QP), {@link ServiceQueue} (round-robin
 * output turns); QPs are found in the device's {@link QpTable}.
 *
 * <p>It is the {@link QpHost} of each of its QPs: what the QP and its engines need of the loop and
 * of the device (the device-wide parts delegate to {@link RxeDevice}).
 *
 * <p>Threading: everything here runs on the lane's loop, except {@link #callOnLoop} and the
 * counters' stale reads.
 */
public final class RxeLane implements PacketReceiver, QpHost {
    private final RxeDevice device;
    private final int index;
    private final Transport transport;
    private final Scheduler scheduler;
    private final DeviceConfig config;
    private final InetSocketAddress address;
    private final TidPool tidPool;
    private final Counters counters = new Counters();
    private final QpTable qps;
    private final ReceiveChecks checks;
    private final LaneSteering steering;
    private final ServiceQueue service;
    private final Icrc icrc;
    private boolean needFlush;
    /** Per-peer budgets of bytes in flight, by peer address; loop only. */
    private final HashMap<InetSocketAddress, PeerBudget> budgets = new HashMap<>();
    private int laneCount = 1;
    /** The transport calls {@link #onReadComplete()} after each read batch: flush once per batch then. */
    private boolean deferFlush;

    RxeLane(RxeDevice device, int index, Transport transport, DeviceConfig config, QpTable qps) {
        this.device = device;
        this.index = index;
        this.transport = transport;
        this.scheduler = transport.scheduler();
        this.config = config;
        this.address = device.address();
        this.qps = qps;
        this.tidPool = config.opfn() && config.tid().enabled()
                ? new TidPool(config.tid(), config.seed() ^ 0x5449445F524D4DL ^ ((long) index << 32)) : null;
        this.checks = new ReceiveChecks(this, qps, device::isClosed, config, tidPool, counters);
        this.icrc = checks.icrc();
        this.steering = new LaneSteering(this, index, scheduler, qps, device::isClosed, counters);
        this.service = new ServiceQueue(this, transport, scheduler, device::isClosed);
    }

    /** Wires the lanes to each other (steering rings) and starts the lane's transport. */
    void start(RxeLane[] lanes) {
        this.laneCount = lanes.length;
        LaneSteering[] all = new LaneSteering[lanes.length];
        for (int i = 0; i < lanes.length; i++) {
            all[i] = lanes[i].steering;
        }
        steering.start(all);
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

    /** @return the lane of {@code qp}, a QP of an {@link RxeDevice} (its {@link RxeQp#host()}) */
    public static RxeLane of(RxeQp qp) {
        return (RxeLane) qp.host();
    }

    /** @return the device's MR key table ({@link RxeDevice#mrs()}). Any thread. */
    @Override
    public MrTable mrs() {
        return device.mrs();
    }

    /** @return the device's configuration. Any thread. */
    @Override
    public DeviceConfig config() {
        return config;
    }

    /** @return the port's active MTU ({@link RxeDevice#activeMtu()}). Any thread. */
    @Override
    public io.rxe4j.verbs.Mtu activeMtu() {
        return device.activeMtu();
    }

    /** {@code qp} enters ERR for a reason of its own ({@link RxeDevice#onQpError}). Loop only. */
    @Override
    public void onQpError(RxeQp qp, String reason) {
        device.onQpError(qp, reason);
    }

    @Override
    public void onLastWqeReached(RxeQp qp, String reason) {
        device.onLastWqeReached(qp, reason);
    }

    /** @return the loop the lane (and each of its QPs) runs on */
    @Override
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
    @Override
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
    @Override
    public ByteBuf allocPacket(int length) {
        return transport.allocator().directBuffer(length, length);
    }

    /** @return a buffer for a packet {@link #transmit} sends to {@code qp}'s peer ({@code Transport.packetBuffer}). Loop only. */
    @Override
    public ByteBuf allocPacket(RxeQp qp, int length) {
        return transport.packetBuffer(qp.av(), length);
    }

    /**
     * Writes the ICRC of a built packet ({@code writerIndex} = length including the ICRC) and
     * hands it to the lane's transport, addressed to the QP's peer. Loop only.
     */
    @Override
    public void transmit(RxeQp qp, ByteBuf packet) {
        InetSocketAddress peer = qp.av();
        if (config.opfn() && packet.getUnsignedByte(0) != Opcode.CNP.code()) {
            Bth.setExtended(packet, 0); // OPFN: BTH DW1 bit 24 on every RC packet (tid-opfn-facts §1.1)
        }
        send(qp, packet, peer);
    }

    @Override
    public void transmitTo(RxeQp qp, ByteBuf packet, InetSocketAddress peer) {
        send(qp, packet, peer);
    }

    private void send(RxeQp qp, ByteBuf packet, InetSocketAddress peer) {
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
    /**
     * The derived budget towards a peer that holds out-of-order requests, under congestion control
     * with adaptive recovery: 4 × the transport's hint (for UDP the whole smaller socket buffer
     * instead of a quarter of it), so that one QP can keep a long path's bandwidth-delay product in
     * flight (a 1 Gbit/s, 20 ms path needs 2.5 MB). Towards any other peer (kernel {@code rdma_rxe},
     * whose responder discards everything after a gap) the hint stays.
     */
    static final long HINT_SCALE = 4;

    @Override
    public PeerBudget peerBudget(InetSocketAddress peer) {
        PeerBudget b = budgets.get(peer);
        if (b == null) {
            // the derived budget is shared by the lanes: a peer may have one receive buffer for all of
            // them (kernel rdma_rxe, a single-loop device, or NIO sockets hashed by address)
            long hint = transport.inFlightBudgetHint();
            long limit = config.peerBudgetBytes() == DeviceConfig.DERIVE_BUDGET
                    ? (hint == Long.MAX_VALUE ? hint : Math.max(1, hint / laneCount)) : config.peerBudgetBytes();
            long holdingLimit = limit;
            if (config.peerBudgetBytes() == DeviceConfig.DERIVE_BUDGET && hint != Long.MAX_VALUE
                    && config.congestionControl() && config.adaptiveRecovery()) {
                // towards a peer that holds out-of-order requests the window keeps its buffer from
                // overflowing (a queue there raises the RTT, and a loss with a queue shrinks it), and what
                // overflows is repaired one packet each: the static budget only caps the window, at
                // HINT_SCALE x the hint (a long path needs its bandwidth-delay product in flight)
                holdingLimit = limit > Long.MAX_VALUE / HINT_SCALE ? Long.MAX_VALUE : limit * HINT_SCALE;
            }
            b = new PeerBudget(limit, holdingLimit, config.congestionControl());
            budgets.put(peer, b);
        }
        return b;
    }

    /** @return whether the lane's transport takes more packets now ({@link Transport#isWritable()}). Loop only. */
    @Override
    public boolean transportWritable() {
        return transport.isWritable();
    }

    /** @return whether the lane's transport may hold received datagrams not read yet. Loop only. */
    @Override
    public boolean receiveBacklogged() {
        return transport.receiveBacklogged();
    }

    /**
     * {@code qp} stopped producing because the transport is not writable: it gets a turn (see
     * {@link #requestService}) once the transport calls {@link #onWritable()}. Loop only.
     */
    @Override
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
    @Override
    public void requestService(RxeQp qp) {
        service.request(qp);
    }

    /** Parses refused packets (not the receive path's view: a refusal may be reported while a received packet is in it). */
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
                    destQpn = v.parse(packet, at, len) == null ? ReceiveChecks.verbsQpn(packet, at, op, v) : -1;
                }
            }
            RxeQp qp = destQpn < 0 ? null : qps.sendingTo(peer, destQpn, this);
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
        service.schedule();
    }

    /**
     * An unexpected exception in the engine while working for {@code qp}: see {@link
     * RxeDevice#reportInternalError}. Loop only.
     */
    @Override
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
    @Override
    public void flushTransport() {
        if (needFlush) {
            needFlush = false;
            transport.flush();
        }
        steering.wakeSteeredLanes();
        service.schedule();
    }

    // ------------------------------------------------------------------ receive path

    /**
     * A packet the network marked CE (Congestion Experienced). With {@link DeviceConfig#ecn()} a
     * request makes its QP's responder send a CNP (at most one per QP per {@code
     * rc.ResponsePackets.CNP_INTERVAL_NANOS}); otherwise the mark is ignored.
     */
    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        if (!steering.active() || !steering.steer(packet, sender, recipient, ceMarked)) {
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
    void receiveOwned(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        try {
            checks.receive(packet, sender, recipient, ceMarked);
        } catch (RuntimeException e) {
            counters.drop(DropReason.INTERNAL_ERROR);
            RxeDevice.LOG.debug("packet from {} dropped by an unexpected error", sender, e);
        }
    }

    /**
     * Releases what waits in this lane's inboxes, at close (any thread); see {@link
     * LaneSteering#releaseInboxes()}.
     */
    void releaseInboxes() {
        steering.releaseInboxes();
    }

    @Override
    public String toString() {
        return "RxeLane{" + address + " #" + index + '}';
    }
}
