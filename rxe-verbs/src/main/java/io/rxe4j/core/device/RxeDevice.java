package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Persistence;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpState;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.TidHeader;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A soft-RoCE device bound to one {@link Transport}: it owns the QP and MR tables, the counters,
 * and the receive path. All protocol work runs on the transport's {@link Scheduler} loop.
 *
 * <p>Receive path ({@code rxe-facts.md} §4.1 "Receive filtering"): structure
 * ({@link PacketView#parse}), ICRC, P_Key (0xFFFF or 0x7FFF), DestQP, QP type, the sender being
 * the QP's peer, QP state (requests need RTR or later, responses RTS or later; nothing in ERR).
 * A packet failing any check is counted by {@link DropReason} and dropped; no exception leaves
 * {@link #onPacket}.
 */
public final class RxeDevice implements PacketReceiver, AutoCloseable {
    /** The first QPN handed out ({@code rxe-facts.md} §6.4: QPNs are pool indices from 16). */
    public static final int FIRST_QPN = 16;
    private static final Logger LOG = LoggerFactory.getLogger(RxeDevice.class);

    private final Transport transport;
    private final Scheduler scheduler;
    private final DeviceConfig config;
    private final InetSocketAddress address;
    private final MrTable mrs;
    /** TID entries and hardware flows of the device's receive context; null without TID RDMA. */
    private final io.rxe4j.core.qp.TidPool tidPool;
    private final DeviceCounters counters = new DeviceCounters();
    private final AtomicReferenceArray<RxeQp> qps;
    /** Counters of destroyed QPs, so device totals never go backwards. */
    private final DeviceCounters retired = new DeviceCounters();
    private final Icrc icrc;
    private final PacketView view = new PacketView();
    private final AtomicInteger pdHandles = new AtomicInteger();
    private final AtomicInteger cqHandles = new AtomicInteger();
    private int nextQpIndex;
    private boolean needFlush;
    private volatile boolean closed;
    /** QPs waiting for a turn to produce output (READ reply batches, a requester after backpressure); loop only. */
    private final java.util.ArrayDeque<RxeQp> serviceQueue = new java.util.ArrayDeque<>();
    private boolean serviceScheduled;
    private final Runnable serviceTask = this::service;
    /** Per-peer budgets of bytes in flight, by peer address; loop only. */
    private final java.util.HashMap<InetSocketAddress, PeerBudget> budgets = new java.util.HashMap<>();
    /** WARN lines about QPs that fail: at most 10 per second, the rest counted. */
    private final RateLimitedLog qpFailureLog = new RateLimitedLog(LOG, 1_000_000_000L, 10);

    /**
     * Creates the device and starts receiving on {@code transport}.
     *
     * @param transport the transport; the device takes ownership and closes it
     * @param config options
     */
    public RxeDevice(Transport transport, DeviceConfig config) {
        this.transport = transport;
        this.scheduler = transport.scheduler();
        this.config = config;
        this.address = transport.localAddress();
        this.mrs = new MrTable(config.maxMr(), config.seed());
        this.tidPool = config.opfn() && config.tid().enabled()
                ? new io.rxe4j.core.qp.TidPool(config.tid(), config.seed() ^ 0x5449445F524D4DL) : null;
        this.qps = new AtomicReferenceArray<>(config.maxQp());
        this.icrc = new Icrc().rxeFlushCompat(config.rxeFlushCompat());
        transport.start(this);
    }

    /** @return the loop the device runs on */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** @return the (IP, UDP port) peers address this device by */
    public InetSocketAddress address() {
        return address;
    }

    /** @return the configuration */
    public DeviceConfig config() {
        return config;
    }

    /** @return the MR key table */
    public MrTable mrs() {
        return mrs;
    }

    /** @return the TID RDMA pools (TID entries, hardware flows), or null without TID RDMA. Loop only. */
    public io.rxe4j.core.qp.TidPool tidPool() {
        return tidPool;
    }

    /**
     * @return the device's own counters: packets sent and received and the receive-path drops
     *     before a packet reaches a QP; see {@link #counterSnapshot()} for the totals
     */
    public DeviceCounters counters() {
        return counters;
    }

    /**
     * @return device totals by rxe-style name: the device's own counters plus those of every QP,
     *     live or destroyed (reads QP counters without synchronisation: a snapshot off the loop may
     *     be slightly stale), and {@code rcv_queue_drops}: datagrams the transport's receive queue
     *     dropped because it was full ({@link Transport#receiveQueueDrops()})
     */
    public java.util.Map<String, Long> counterSnapshot() {
        DeviceCounters total = new DeviceCounters();
        total.add(counters, true);
        synchronized (this) {
            total.add(retired, false);
        }
        for (int i = 0; i < qps.length(); i++) {
            RxeQp qp = qps.get(i);
            if (qp != null) {
                total.add(qp.counters(), false);
            }
        }
        java.util.Map<String, Long> m = total.snapshot();
        m.put("rcv_queue_drops", transport.receiveQueueDrops());
        return m;
    }

    // ------------------------------------------------------------------ resources

    /** @return a new protection domain */
    public RxePd allocPd() {
        checkOpen();
        return new RxePd(pdHandles.incrementAndGet());
    }

    /**
     * Registers {@code segment} as an MR ({@code ibv_reg_mr}).
     *
     * @param arena the arena to close when the MR is deregistered, or null if the caller keeps
     *     ownership of the memory (it must then stay alive until {@link #deregisterMr} returns)
     * @param access {@link Access} bits
     * @throws IllegalArgumentException for a heap segment, REMOTE_WRITE/REMOTE_ATOMIC without
     *     LOCAL_WRITE, FLUSH_PERSISTENT (this overload registers ordinary memory), or unknown access
     *     bits
     * @throws IllegalStateException when the MR table is full
     */
    public RxeMr registerMr(RxePd pd, MemorySegment segment, Arena arena, int access) {
        return registerMr(pd, segment, arena, access, null);
    }

    /**
     * Registers {@code segment} as an MR, persistent when {@code persistence} is given (rxe4j's
     * stand-in for pmem: only such an MR accepts FLUSH_PERSISTENT; {@code extensions.md} §4).
     *
     * @param persistence how the MR's ranges are made durable, or null for ordinary memory
     * @throws IllegalArgumentException as {@link #registerMr(RxePd, MemorySegment, Arena, int)},
     *     and for FLUSH_PERSISTENT without {@code persistence}
     */
    public RxeMr registerMr(RxePd pd, MemorySegment segment, Arena arena, int access,
            Persistence persistence) {
        checkOpen();
        if (!segment.isNative()) {
            throw new IllegalArgumentException("MR memory must be a native (off-heap) segment, got " + segment);
        }
        if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (access & Access.LOCAL_WRITE) == 0) {
            throw new IllegalArgumentException("REMOTE_WRITE or REMOTE_ATOMIC requires LOCAL_WRITE, got "
                    + Access.toString(access));
        }
        if ((access & Access.FLUSH_PERSISTENT) != 0 && persistence == null) {
            throw new IllegalArgumentException("FLUSH_PERSISTENT needs persistent (file-backed) memory; "
                    + "this MR is ordinary memory");
        }
        int supported = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
                | Access.MW_BIND | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT | Access.OPTIONAL_RANGE;
        if ((access & ~supported) != 0) {
            throw new IllegalArgumentException("unsupported MR access flags " + Access.toString(access & ~supported));
        }
        return mrs.register(key -> new RxeMr(pd, segment, arena, access, key, persistence));
    }

    /**
     * Deregisters an MR ({@code ibv_dereg_mr}): later accesses fail (remote: NAK 0x62), and the
     * memory (if the MR owns it) is freed on the device loop after any packet in progress.
     */
    public void deregisterMr(RxeMr mr) {
        mrs.unregister(mr);
        if (closed) {
            mr.release();
            return;
        }
        callOnLoop(() -> {
            mr.release();
            return null;
        });
    }

    /**
     * @param cqe capacity in completions, 1..maxCqe
     * @return a new CQ
     * @throws IllegalArgumentException if {@code cqe} is out of range
     */
    public RxeCq createCq(int cqe) {
        checkOpen();
        if (cqe < 1 || cqe > config.maxCqe()) {
            throw new IllegalArgumentException("cqe must be 1.." + config.maxCqe() + ", got " + cqe);
        }
        return new RxeCq(cqHandles.incrementAndGet(), cqe);
    }

    /**
     * Creates an RC QP in RESET ({@code ibv_create_qp}).
     *
     * @throws IllegalStateException when every QPN is in use
     */
    public synchronized RxeQp createQp(RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll) {
        checkOpen();
        int n = qps.length();
        for (int i = 0; i < n; i++) {
            int idx = (nextQpIndex + i) % n;
            if (qps.get(idx) == null) {
                RxeQp qp = new RxeQp(this, FIRST_QPN + idx, pd, sendCq, recvCq, caps, sqSigAll);
                qps.set(idx, qp);
                nextQpIndex = (idx + 1) % n;
                return qp;
            }
        }
        throw new IllegalStateException("no free QPN: " + n + " QPs exist");
    }

    /** Destroys a QP: it stops on the loop, and its QPN is freed. */
    public void destroyQp(RxeQp qp) {
        if (!closed) {
            callOnLoop(() -> {
                qp.destroyOnLoop();
                return null;
            });
        }
        int idx = qp.qpn() - FIRST_QPN;
        if (idx >= 0 && idx < qps.length() && qps.compareAndSet(idx, qp, null)) {
            synchronized (this) {
                retired.add(qp.counters(), false);
            }
        }
    }

    /** @return the QP with this QPN, or null */
    public RxeQp qp(int qpn) {
        int idx = qpn - FIRST_QPN;
        return idx >= 0 && idx < qps.length() ? qps.get(idx) : null;
    }

    // ------------------------------------------------------------------ loop helpers

    /**
     * Runs {@code task} on the device loop and returns its result; runs it directly when called
     * on the loop. Exceptions of the task are rethrown as they are (unchecked) or wrapped.
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

    /** @return a pooled buffer for an outgoing packet of {@code length} bytes (ICRC included). Loop only. */
    public ByteBuf allocPacket(int length) {
        return transport.allocator().directBuffer(length, length);
    }

    /**
     * Writes the ICRC of a built packet ({@code writerIndex} = length including the ICRC) and
     * hands it to the transport, addressed to the QP's peer. Loop only.
     */
    public void transmit(RxeQp qp, ByteBuf packet) {
        InetSocketAddress peer = qp.av();
        if (config.opfn() && packet.getUnsignedByte(0) != Opcode.CNP.code()) {
            Bth.setExtended(packet, 0); // OPFN: BTH DW1 bit 24 on every RC packet (tid-opfn-facts §1.1)
        }
        icrc.write(packet, 0, packet.writerIndex(), address, peer);
        counters.sentPkts++;
        qp.counters().sentPkts++;
        if (PacketTrace.LOG.isTraceEnabled()) {
            PacketTrace.trace("tx", packet, 0, packet.writerIndex(), address, peer);
        }
        transport.send(packet, peer);
        needFlush = true;
    }

    /**
     * @return the budget of bytes in flight towards {@code peer}, shared by every QP of this device
     *     that talks to it ({@link DeviceConfig#peerBudgetBytes()}, or the transport's {@link
     *     Transport#inFlightBudgetHint()}). Loop only.
     */
    public PeerBudget peerBudget(InetSocketAddress peer) {
        PeerBudget b = budgets.get(peer);
        if (b == null) {
            long limit = config.peerBudgetBytes() == DeviceConfig.DERIVE_BUDGET ? transport.inFlightBudgetHint()
                    : config.peerBudgetBytes();
            b = new PeerBudget(this, limit, config.congestionControl());
            budgets.put(peer, b);
        }
        return b;
    }

    /** @return the datagrams the transport's receive queue dropped ({@link Transport#receiveQueueDrops()}). Any thread. */
    public long receiveQueueDrops() {
        return transport.receiveQueueDrops();
    }

    /** @return whether the transport takes more packets now ({@link Transport#isWritable()}). Loop only. */
    public boolean transportWritable() {
        return transport.isWritable();
    }

    /**
     * {@code qp} stopped producing because the transport is not writable: it gets a turn (see
     * {@link #requestService}) once the transport calls {@link #onWritable()}. Loop only.
     */
    public void awaitWritable(RxeQp qp) {
        counters.txNotWritable++;
        qp.counters().txNotWritable++;
        requestService(qp);
    }

    /**
     * Gives {@code qp} a turn ({@link RxeQp#onService()}) after the QPs already waiting:
     * output that is produced in bounded batches (a READ reply) continues here, round robin across
     * the device's QPs, so that no QP can starve the others. Turns run in a loop task of their own,
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
        if (!serviceScheduled && !serviceQueue.isEmpty() && transport.isWritable() && !closed) {
            serviceScheduled = true;
            try {
                scheduler.execute(serviceTask);
            } catch (java.util.concurrent.RejectedExecutionException shutDown) {
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

    /** The transport can take packets again: the QPs that waited get their turns. */
    @Override
    public void onWritable() {
        scheduleService();
    }

    /**
     * An unexpected exception in the engine while working for {@code qp} (a bug, or a case the
     * engine does not handle): it is never swallowed. The QP enters ERR with an "internal error"
     * reason ({@link RxeQp#errorReason()}), the device counts {@code drop_internal_error}, and a
     * rate-limited WARN names the QP and what it was doing. Loop only.
     *
     * @param what what the engine was doing (e.g. the opcode and PSN of the packet)
     */
    public void internalError(RxeQp qp, String what, RuntimeException e) {
        counters.drop(DropReason.INTERNAL_ERROR);
        qpFailureLog.warn(scheduler.nanoTime(), "QP 0x" + Integer.toHexString(qp.qpn()) + " on " + address
                + ": internal error in " + what + ": " + e + "; the QP enters ERR", e);
        try {
            qp.moveToErrorOnInternalError("internal error in " + what + ": " + e);
        } catch (RuntimeException again) {
            LOG.debug("QP 0x{}: moving to ERR after an internal error failed too", Integer.toHexString(qp.qpn()), again);
        }
        flushTransport();
    }

    /**
     * Called when a QP enters ERR for a reason of its own (not a modify_qp to ERR): a retry count
     * exhausted, a NAK, a CQ overflow, an internal error. Logged at WARN, rate-limited, so that a
     * QP aimed at a dead peer is never silent. Loop only.
     */
    public void onQpError(RxeQp qp, String reason) {
        if (reason.startsWith("modify_qp")) {
            return;
        }
        qpFailureLog.warn(scheduler.nanoTime(), "QP 0x" + Integer.toHexString(qp.qpn()) + " on " + address
                + " enters ERR: " + reason, null);
        QpEvents e = qpEvents;
        if (e != null) {
            e.qpFatal(qp, reason);
        }
    }

    private volatile QpEvents qpEvents;

    /**
     * Where the device reports that a QP entered ERR on its own ({@code IBV_EVENT_QP_FATAL}).
     * Called on the event loop: implementations hand the event to another thread and return.
     */
    public interface QpEvents {
        /** @param reason why, as {@link RxeQp#errorReason()} will say */
        void qpFatal(RxeQp qp, String reason);
    }

    /** Sets where QP events go (null: nowhere but the WARN log). */
    public void qpEvents(QpEvents events) {
        this.qpEvents = events;
    }

    /**
     * Ends a loop task of the device: flushes the packets queued in the transport and schedules
     * the turns of the QPs that asked for one ({@link #requestService}). Loop only.
     */
    public void flushTransport() {
        if (needFlush) {
            needFlush = false;
            transport.flush();
        }
        scheduleService();
    }

    // ------------------------------------------------------------------ receive path

    /** The packet being received was marked CE by the network (loop only, valid during {@link #receive}). */
    private boolean receivedCe;

    /**
     * A packet the network marked CE (Congestion Experienced). With {@link DeviceConfig#ecn()} a
     * request makes its QP's responder send a CNP (at most one per QP per {@code
     * Responder.CNP_INTERVAL_NANOS}); otherwise the mark is ignored.
     */
    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        receivedCe = ceMarked;
        try {
            onPacket(packet, sender, recipient);
        } finally {
            receivedCe = false;
        }
    }

    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        try {
            receive(packet, sender, recipient);
        } catch (RuntimeException e) {
            counters.drop(DropReason.INTERNAL_ERROR);
            if (LOG.isDebugEnabled()) {
                LOG.debug("packet from {} dropped by an unexpected error", sender, e);
            }
        } finally {
            flushTransport();
        }
    }

    private void receive(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        counters.rcvdPkts++;
        if (PacketTrace.LOG.isTraceEnabled()) {
            PacketTrace.trace("rx", packet, packet.readerIndex(), packet.readableBytes(), sender, recipient);
        }
        if (closed) {
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
        RxeQp qp = qp(tid ? TidHeader.verbsQp(packet, view.index(Header.KDETH)) : view.destQp());
        if (qp == null || qp.isDestroyed()) {
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
        qp.counters().rcvdPkts++;
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
        qp.counters().rcvdPkts++;
        qp.counters().cnpRcvd++;
        if (config.ecn()) {
            try {
                qp.onCnp();
            } catch (RuntimeException e) {
                internalError(qp, "CNP", e);
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("device " + address + " is closed");
        }
    }

    /** Stops every QP and closes the transport. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        try {
            callOnLoop(() -> {
                for (int i = 0; i < qps.length(); i++) {
                    RxeQp qp = qps.get(i);
                    if (qp != null) {
                        qp.destroyOnLoop();
                    }
                }
                closed = true;
                return null;
            });
        } catch (RuntimeException e) {
            closed = true;
        }
        transport.close();
    }

    /** @return whether {@link #close()} ran */
    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "RxeDevice{" + address + '}';
    }
}
