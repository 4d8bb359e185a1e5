package io.rxe4j.core.device;

import io.rxe4j.core.stats.Counters;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.provider.CqOps;
import io.rxe4j.verbs.provider.DeviceOps;
import io.rxe4j.verbs.provider.MrOps;
import io.rxe4j.verbs.provider.PdOps;
import io.rxe4j.verbs.provider.QpOps;
import io.rxe4j.verbs.spi.Persistence;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpState;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.tid.TidPool;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A soft-RoCE device bound to one {@link Transport}: it owns the QP and MR tables and the
 * counters, and runs on one or more event loops, its lanes ({@link RxeLane}, one per {@link
 * Transport#lanes() transport lane}). Each QP belongs to one lane for its whole life and all its
 * protocol work runs there; a QP goes to the lane of its send CQ, and CQs are spread over the lanes
 * round robin unless a completion vector is asked for ({@link #createCq(int, int)}), as {@code
 * comp_vector} picks a CQ's interrupt vector, and so a core, on an RNIC.
 *
 * <p>Receive path ({@code rxe-facts.md} §4.1 "Receive filtering"; see {@link RxeLane}): steering
 * to the QP's lane, structure ({@link PacketView#parse}), ICRC, P_Key (0xFFFF or 0x7FFF), DestQP,
 * QP type, the sender being the QP's peer, QP state (requests need RTR or later, responses RTS or
 * later; nothing in ERR). A packet failing any check is counted by {@link DropReason} and dropped;
 * no exception leaves {@link #onPacket}.
 */
public final class RxeDevice implements DeviceOps, PacketReceiver, AutoCloseable {
    /** The first QPN handed out ({@code rxe-facts.md} §6.4: QPNs are pool indices from 16). */
    public static final int FIRST_QPN = QpTable.FIRST_QPN;
    static final Logger LOG = LoggerFactory.getLogger(RxeDevice.class);

    private final Transport transport;
    private final DeviceConfig config;
    private final InetSocketAddress address;
    private final MrTable mrs;
    private final RxeLane[] lanes;
    private final QpTable qps;
    /** QP1, the device's own UD QP for MADs. */
    private final GsiQp gsi;
    /** Counters of destroyed QPs, so device totals never go backwards. */
    private final Counters retired = new Counters();
    private final AtomicInteger pdHandles = new AtomicInteger();
    private final AtomicInteger cqHandles = new AtomicInteger();
    private int nextQpIndex;
    private volatile boolean closed;
    /** WARN lines about QPs that fail: at most 10 per second, the rest counted. */
    private final RateLimitedLog qpFailureLog = new RateLimitedLog(LOG, 1_000_000_000L, 10);
    /** WARN lines about packets the transport refused to send: at most 10 per second, the rest counted. */
    private final RateLimitedLog sendFailureLog = new RateLimitedLog(LOG, 1_000_000_000L, 10);

    /**
     * Creates the device and starts receiving on every lane of {@code transport}.
     *
     * @param transport the transport; the device takes ownership and closes it
     * @param config options
     * @throws IllegalArgumentException if the transport's lanes are malformed (none, more than 64,
     *     or a lane whose address differs from the transport's)
     */
    public RxeDevice(Transport transport, DeviceConfig config) {
        this.transport = transport;
        this.config = config;
        this.address = transport.localAddress();
        // one MR index more than the applications may use: the GSI QP's receive buffers
        this.mrs = new MrTable(Math.min(config.maxMr() + 1, MrTable.MAX_MR_INDEX), config.seed(),
                Math.min(config.maxMr(), io.rxe4j.core.memory.MwTable.MAX_MW));
        this.qps = new QpTable(config.maxQp());
        java.util.List<? extends Transport> ts = transport.lanes();
        if (ts.isEmpty() || ts.size() > 64) {
            throw new IllegalArgumentException("a transport needs 1..64 lanes, got " + ts.size() + " from " + transport);
        }
        this.lanes = new RxeLane[ts.size()];
        for (int i = 0; i < lanes.length; i++) {
            Transport t = ts.get(i);
            if (ts.size() > 1 && (t.lanes().size() != 1 || !t.localAddress().equals(address))) {
                throw new IllegalArgumentException("lane " + i + " of " + transport + " is " + t
                        + ": a lane must be single-loop and have the transport's address " + address);
            }
            lanes[i] = new RxeLane(this, i, t, config, qps);
        }
        for (RxeLane l : lanes) {
            l.start(lanes);
        }
        this.gsi = new GsiQp(lanes[0], mrs);
        qps.gsi(gsi.qp());
    }

    /** @return QP1 itself, the UD QP under {@link #gsi()} (tests, diagnostics) */
    public RxeQp gsiQp() {
        return gsi.qp();
    }

    /** @return the device's GSI QP, QP1 ({@link io.rxe4j.verbs.provider.GsiOps}) */
    @Override
    public io.rxe4j.verbs.provider.GsiOps gsi() {
        return gsi;
    }

    /** @return the first lane's loop (the only one of a single-loop device) */
    public Scheduler scheduler() {
        return lanes[0].scheduler();
    }

    /** @return the device's lanes (event loops), in transport order; do not modify */
    public RxeLane[] lanes() {
        return lanes;
    }

    /** @return the (IP, UDP port) peers address this device by */
    public InetSocketAddress address() {
        return address;
    }

    /**
     * @return the IP MTU of the link the device sends on ({@link Transport#linkMtu()} of its first
     *     lane), in bytes, or -1 when the transport knows no limit. Any thread.
     */
    public int linkMtu() {
        return lanes[0].transport().linkMtu();
    }

    /**
     * @return the port's active MTU: {@link io.rxe4j.verbs.Mtu#activeForLinkMtu} of {@link #linkMtu()}
     *     (1024 on a 1500-byte Ethernet, 4096 on loopback, a jumbo-frame link or a transport without a
     *     limit). Any thread.
     */
    public io.rxe4j.verbs.Mtu activeMtu() {
        return io.rxe4j.verbs.Mtu.activeForLinkMtu(linkMtu());
    }

    /** @return the configuration */
    public DeviceConfig config() {
        return config;
    }

    /** @return the MR key table */
    public MrTable mrs() {
        return mrs;
    }

    /** @return the first lane's TID RDMA pools (TID entries, hardware flows), or null without TID RDMA. Loop only. */
    public io.rxe4j.core.tid.TidPool tidPool() {
        return lanes[0].tidPool();
    }

    /**
     * @return the first lane's own counters (the only lane of a single-loop device): packets sent
     *     and received and the receive-path drops before a packet reaches a QP; see {@link
     *     #counterSnapshot()} for the totals
     */
    public Counters counters() {
        return lanes[0].counters();
    }

    /**
     * @return device totals by rxe-style name: the lanes' own counters plus those of every QP,
     *     live or destroyed (reads counters without synchronisation: a snapshot off the loops may
     *     be slightly stale), and from the transport: {@code rcv_queue_drops} (datagrams dropped for
     *     the device's sockets, full buffer or bad UDP checksum: {@link Transport#receiveQueueDrops()}),
     *     {@code udp_rcvbuf_errors} and {@code udp_in_csum_errors} (the namespace's split of such drops:
     *     {@link Transport#receiveBufferErrors()}, {@link Transport#receiveChecksumErrors()})
     */
    public java.util.Map<String, Long> counterSnapshot() {
        Counters total = new Counters();
        for (RxeLane l : lanes) {
            total.add(l.counters(), true);
        }
        synchronized (this) {
            total.add(retired, false);
        }
        for (int i = 0; i < qps.capacity(); i++) {
            RxeQp qp = qps.at(i);
            if (qp != null) {
                total.add(qp.counters(), false);
            }
        }
        total.add(gsi.qp().counters(), false);
        java.util.Map<String, Long> m = total.snapshot();
        m.put("rcv_queue_drops", receiveQueueDrops());
        // namespace-wide counts: every lane's socket sees the same, so the first lane's only
        m.put("udp_rcvbuf_errors", lanes[0].transport().receiveBufferErrors());
        m.put("udp_in_csum_errors", lanes[0].transport().receiveChecksumErrors());
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
    @Override
    public RxeMr registerMr(PdOps pdOps, MemorySegment segment, Arena arena, int access,
            Persistence persistence) {
        RxePd pd = own(pdOps, RxePd.class, "PD");
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
     * memory (if the MR owns it) is freed once every lane has finished the packet it may be working
     * on (a task boundary on each lane's loop: no lane can still hold the MR after its key is gone).
     */
    @Override
    public void deregisterMr(MrOps mr) {
        deregisterMr(own(mr, RxeMr.class, "MR"));
    }

    /**
     * {@link #deregisterMr(MrOps)} of one of this device's MRs.
     *
     * @throws IllegalStateException while memory windows are bound to it ({@code
     *     verbs-surface-facts.md} §5.7 rule 1: rxe's EINVAL)
     */
    public void deregisterMr(RxeMr mr) {
        int bound = mr.boundWindows();
        if (bound > 0) {
            throw new IllegalStateException(mr + " has " + bound + " memory window(s) bound (EINVAL, IBA 10.6.7.2.6): "
                    + "unbind, invalidate or deallocate them first");
        }
        mrs.unregister(mr);
        if (!closed) {
            for (int i = 1; i < lanes.length; i++) {
                try {
                    lanes[i].callOnLoop(() -> null);
                } catch (java.util.concurrent.RejectedExecutionException gone) {
                    // that lane's loop has shut down: it runs nothing any more
                }
            }
        }
        if (closed) {
            mr.release();
            return;
        }
        lanes[0].callOnLoop(() -> {
            mr.release();
            return null;
        });
    }

    @Override
    public io.rxe4j.verbs.provider.MwOps allocMw(io.rxe4j.verbs.provider.PdOps pd, int type) {
        if (type != 1 && type != 2) {
            throw new IllegalArgumentException("memory window type must be 1 or 2, got " + type + " (EINVAL)");
        }
        return mrs.windows().allocate(own(pd, RxePd.class, "PD"), type == 1 ? io.rxe4j.core.memory.RxeMw.Type.TYPE_1
                : io.rxe4j.core.memory.RxeMw.Type.TYPE_2B);
    }

    @Override
    public void deallocMw(io.rxe4j.verbs.provider.MwOps mw) {
        mrs.windows().deallocate(own(mw, io.rxe4j.core.memory.RxeMw.class, "MW"));
    }

    /**
     * Creates a CQ on the next lane, round robin ({@link #createCq(int, int)}).
     *
     * @param cqe capacity in completions, 1..maxCqe
     * @return a new CQ
     * @throws IllegalArgumentException if {@code cqe} is out of range
     */
    public RxeCq createCq(int cqe) {
        return createCq(cqe, -1);
    }

    /**
     * Creates a CQ ({@code ibv_create_cq}). Its completion vector picks the lane (event loop) of
     * the QPs whose send CQ it is, as {@code comp_vector} picks an interrupt vector on an RNIC.
     *
     * @param cqe capacity in completions, 1..maxCqe
     * @param compVector 0..{@code lanes().length - 1}, or -1 for the next lane round robin
     * @return a new CQ
     * @throws IllegalArgumentException if {@code cqe} or {@code compVector} is out of range
     */
    public RxeCq createCq(int cqe, int compVector) {
        checkOpen();
        if (cqe < 1 || cqe > config.maxCqe()) {
            throw new IllegalArgumentException("cqe must be 1.." + config.maxCqe() + ", got " + cqe);
        }
        if (compVector < -1 || compVector >= lanes.length) {
            throw new IllegalArgumentException("comp_vector must be 0.." + (lanes.length - 1) + " (the device has "
                    + lanes.length + " event loop(s)), got " + compVector);
        }
        int handle = cqHandles.incrementAndGet();
        RxeCq cq = new RxeCq(handle, cqe);
        cq.bindLane(compVector >= 0 ? compVector : (handle - 1) % lanes.length);
        return cq;
    }

    /**
     * Creates an RC QP in RESET ({@code ibv_create_qp}) on the lane of its send CQ. The QPN is
     * one whose pool index is that lane's index modulo the lane count ({@code (qpn - 16) % lanes}),
     * so that a transport can steer by QPN. When the receive CQ is on another lane, that CQ takes
     * completions from two loops from then on ({@link RxeCq#shareWithAnotherLane}).
     *
     * @throws IllegalStateException when every QPN of that lane is in use
     */
    @Override
    public RxeQp createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll) {
        return createQp(own(pd, RxePd.class, "PD"), own(sendCq, RxeCq.class, "send CQ"),
                own(recvCq, RxeCq.class, "receive CQ"), caps, sqSigAll);
    }

    /**
     * As {@link #createQp(PdOps, CqOps, CqOps, QpCaps, boolean)} for a QP of {@code type}: RC, UC
     * ({@code verbs-surface-facts.md} §3; engine {@link io.rxe4j.core.uc.UcEngine}) or UD (§2; engine
     * {@link io.rxe4j.core.ud.UdEngine}).
     */
    @Override
    public RxeQp createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll,
            io.rxe4j.verbs.QpType type) {
        return createQp(own(pd, RxePd.class, "PD"), own(sendCq, RxeCq.class, "send CQ"),
                own(recvCq, RxeCq.class, "receive CQ"), caps, sqSigAll, type);
    }

    /** {@link #createQp(PdOps, CqOps, CqOps, QpCaps, boolean)} with this device's objects. */
    public RxeQp createQp(RxePd pd, RxeCq sendCq, RxeCq recvCq, QpCaps caps, boolean sqSigAll) {
        return createQp(pd, sendCq, recvCq, caps, sqSigAll, io.rxe4j.verbs.QpType.RC);
    }

    /** {@link #createQp(PdOps, CqOps, CqOps, QpCaps, boolean, io.rxe4j.verbs.QpType)} with this device's objects. */
    public RxeQp createQp(RxePd pd, RxeCq sendCq, RxeCq recvCq, QpCaps caps, boolean sqSigAll,
            io.rxe4j.verbs.QpType type) {
        return createQp(pd, sendCq, recvCq, caps, sqSigAll, type, null);
    }

    /** As above, taking receive WQEs from {@code srq} (of {@code pd}) when it is not null. */
    public synchronized RxeQp createQp(RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll, io.rxe4j.verbs.QpType type, io.rxe4j.core.qp.RxeSrq srq) {
        checkOpen();
        if (type == null) {
            throw new IllegalArgumentException("QP type is null");
        }
        RxeLane lane = lanes[sendCq.lane()];
        if (recvCq.lane() != lane.index() && !recvCq.sharedAcrossLanes()) {
            recvCq.shareWithAnotherLane();
            // the CQ's own lane may be inside an unlocked push right now: let it end that task, so
            // that every push from here on, on any lane, takes the producer lock
            lanes[recvCq.lane()].callOnLoop(() -> null);
        }
        int n = qps.capacity();
        for (int i = 0; i < n; i++) {
            int idx = (nextQpIndex + i) % n;
            if (idx % lanes.length == lane.index() && qps.isFree(idx)) {
                TidPool pool = lane.tidPool();
                java.util.function.Function<RxeQp, io.rxe4j.core.qp.QpEngine> engines = switch (type) {
                    case UD -> io.rxe4j.core.ud.UdEngine::new;
                    case UC -> io.rxe4j.core.uc.UcEngine::new;
                    case RC -> q -> new QpRunner(q, pool);
                };
                RxeQp qp = new RxeQp(lane, FIRST_QPN + idx, pd, sendCq, recvCq, caps, sqSigAll, type, srq, engines);
                qps.put(idx, qp);
                nextQpIndex = (idx + 1) % n;
                return qp;
            }
        }
        throw new IllegalStateException("no free QPN: " + n + " QPs exist"
                + (lanes.length > 1 ? " (or every QPN of event loop " + lane.index() + " is in use)" : ""));
    }

    /** Destroys a QP: it stops on its lane's loop, and its QPN is freed. */
    @Override
    public void destroyQp(QpOps qp) {
        destroyQp(own(qp, RxeQp.class, "QP"));
    }

    /** {@link #destroyQp(QpOps)} of one of this device's QPs. */
    public void destroyQp(RxeQp qp) {
        if (!closed) {
            qp.host().callOnLoop(() -> {
                qp.destroyOnLoop();
                return null;
            });
        }
        // its type 2B windows go back to FREE before its QPN can name another QP
        mrs.windows().releaseQp(qp.qpn());
        if (qps.remove(qp)) {
            synchronized (this) {
                retired.add(qp.counters(), false);
            }
        }
    }

    /** @return the QP with this QPN, or null. Any thread. */
    public RxeQp qp(int qpn) {
        return qps.get(qpn);
    }

    // ------------------------------------------------------------------ loop helpers

    /**
     * Runs {@code task} on the first lane's loop and returns its result ({@link RxeLane#callOnLoop});
     * work for a QP runs on {@code qp.host()}, its lane.
     */
    public <T> T callOnLoop(Callable<T> task) {
        return lanes[0].callOnLoop(task);
    }

    /** @return the datagrams the transport's receive queues dropped ({@link Transport#receiveQueueDrops()}). Any thread. */
    public long receiveQueueDrops() {
        long sum = 0; // a single-loop transport is its own only lane
        for (RxeLane l : lanes) {
            sum += l.transport().receiveQueueDrops();
        }
        return sum;
    }

    /**
     * Logs an unexpected exception in the engine while working for {@code qp} (a bug, or a case the
     * engine does not handle), which is never swallowed: the QP enters ERR with an "internal error"
     * reason ({@link RxeQp#errorReason()}) and a rate-limited WARN names the QP and what it was
     * doing. Called by {@link RxeLane#internalError}, which counts {@code drop_internal_error}. Loop only.
     */
    void reportInternalError(RxeQp qp, String what, RuntimeException e) {
        qpFailureLog.warn(qp.scheduler.nanoTime(), "QP 0x" + Integer.toHexString(qp.qpn()) + " on "
                + address + ": internal error in " + what + ": " + e + "; the QP enters ERR", e);
        try {
            qp.moveToErrorOnInternalError("internal error in " + what + ": " + e);
        } catch (RuntimeException again) {
            LOG.debug("QP 0x{}: moving to ERR after an internal error failed too", Integer.toHexString(qp.qpn()), again);
        }
    }

    /** Logs a refused send at WARN (rate-limited with the other refusals). Loop only. */
    void reportSendFailure(long now, String why, RxeQp qp, boolean permanent) {
        sendFailureLog.warn(now, (qp != null ? "QP 0x" + Integer.toHexString(qp.qpn()) : "a packet") + " on " + address
                + ": " + why + (qp == null ? "; no QP of this device sent it"
                        : permanent ? "; the QP fails (LOC_QP_OP_ERR)" : "; taken as lost: the QP's timers resend it"),
                null);
    }

    /**
     * Called when a QP enters ERR for a reason of its own (not a modify_qp to ERR): a retry count
     * exhausted, a NAK, a CQ overflow, an internal error. Logged at WARN, rate-limited, so that a
     * QP aimed at a dead peer is never silent. On the QP's loop.
     */
    public void onQpError(RxeQp qp, String reason) {
        if (reason.startsWith("modify_qp")) {
            return;
        }
        qpFailureLog.warn(qp.scheduler.nanoTime(), "QP 0x" + Integer.toHexString(qp.qpn()) + " on "
                + address + " enters ERR: " + reason, null);
        QpFatalListener e = qpFatal;
        if (e != null) {
            e.qpFatal(qp.qpn(), reason);
        }
    }

    private volatile QpFatalListener qpFatal;
    private volatile QpFatalListener lastWqe;
    private final java.util.concurrent.atomic.AtomicInteger srqHandles = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public void onQpFatal(QpFatalListener listener) {
        this.qpFatal = listener;
    }

    @Override
    public void onLastWqeReached(QpFatalListener listener) {
        this.lastWqe = listener;
    }

    /** SRQ-attached {@code qp} entered ERR: {@code IBV_EVENT_QP_LAST_WQE_REACHED}. On the QP's loop. */
    void onLastWqeReached(RxeQp qp, String reason) {
        QpFatalListener l = lastWqe;
        if (l != null) {
            l.qpFatal(qp.qpn(), reason);
        }
    }

    /**
     * {@code ibv_create_srq} ({@code verbs-surface-facts.md} §4.1).
     *
     * @throws IllegalArgumentException for a size out of range
     */
    @Override
    public io.rxe4j.core.qp.RxeSrq createSrq(PdOps pd, int maxWr, int maxSge, int srqLimit) {
        checkOpen();
        return new io.rxe4j.core.qp.RxeSrq(srqHandles.incrementAndGet(), own(pd, RxePd.class, "PD"), mrs, maxWr, maxSge,
                srqLimit);
    }

    @Override
    public RxeQp createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll,
            io.rxe4j.verbs.QpType type, io.rxe4j.verbs.provider.SrqOps srq) {
        io.rxe4j.core.qp.RxeSrq s = srq == null ? null : own(srq, io.rxe4j.core.qp.RxeSrq.class, "SRQ");
        RxePd p = own(pd, RxePd.class, "PD");
        if (s != null && s.pd() != p) {
            throw new IllegalArgumentException(s + " belongs to " + s.pd() + ", not to " + p + " (" + address + ")");
        }
        return createQp(p, own(sendCq, RxeCq.class, "send CQ"), own(recvCq, RxeCq.class, "receive CQ"), caps,
                sqSigAll, type, s);
    }

    @Override
    public int numCompVectors() {
        return lanes.length;
    }

    /** The object {@code o} as this provider's {@code type}; an API handle only ever passes its own. */
    private static <T> T own(Object o, Class<T> type, String what) {
        if (!type.isInstance(o)) {
            throw new IllegalArgumentException(what + " " + o + " is not an object of the rxe provider");
        }
        return type.cast(o);
    }

    /** Ends a loop task of the first lane ({@link RxeLane#flushTransport()}). First lane's loop only. */
    public void flushTransport() {
        lanes[0].flushTransport();
    }

    // ------------------------------------------------------------------ receive path

    /** Receives a packet on the first lane (which steers it to its QP's lane). First lane's loop only. */
    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        lanes[0].onPacket(packet, sender, recipient, ceMarked);
    }

    @Override
    public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        lanes[0].onPacket(packet, sender, recipient, false);
    }

    /**
     * Ends a batch of packets given to {@link #onPacket} (the first lane flushes its replies, see
     * {@link RxeLane#onReadComplete()}). Callers that feed packets to the device directly must call
     * it after each batch when the first lane's transport {@linkplain Transport#signalsReadComplete()
     * signals read batches}, or the replies wait for the next flush. First lane's loop only.
     */
    @Override
    public void onReadComplete() {
        lanes[0].onReadComplete();
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("device " + address + " is closed");
        }
    }

    /** Stops every QP (each on its lane) and closes the transport. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        for (RxeLane lane : lanes) {
            try {
                lane.callOnLoop(() -> {
                    for (int i = 0; i < qps.capacity(); i++) {
                        RxeQp qp = qps.at(i);
                        if (qp != null && qp.host() == lane) {
                            qp.destroyOnLoop();
                        }
                    }
                    if (gsi.qp().host() == lane) {
                        gsi.qp().sendPendingNow(); // the CM's last DREQs and REJs, queued as it closed
                        gsi.qp().destroyOnLoop();
                    }
                    return null;
                });
            } catch (RuntimeException e) {
                LOG.debug("closing {}: lane {} did not stop its QPs", address, lane.index(), e);
            }
        }
        closed = true;
        transport.close();
        for (RxeLane lane : lanes) {
            lane.releaseInboxes();
        }
        gsi.release();
    }

    /** @return whether {@link #close()} ran */
    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "RxeDevice{" + address + (lanes.length > 1 ? ", " + lanes.length + " lanes" : "") + '}';
    }
}
