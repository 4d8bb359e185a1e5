package io.rxe4j.core.qp;

import io.rxe4j.core.rc.Completer;
import io.rxe4j.core.rc.Requester;
import io.rxe4j.core.rc.Responder;
import io.rxe4j.core.tid.HwFlow;
import io.rxe4j.core.tid.TidPool;
import io.rxe4j.core.tid.TidReadRequester;
import io.rxe4j.core.tid.TidReadResponder;
import io.rxe4j.core.tid.TidResponderHook;
import io.rxe4j.core.tid.TidSendHook;
import io.rxe4j.core.tid.TidWriteRequester;
import io.rxe4j.core.tid.TidWriteResponder;

import io.rxe4j.verbs.Counter;

import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.device.RxeLane;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.Psn;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An RC queue pair: its state machine and attributes, its send and receive queues, and its three
 * engines ({@link Requester}, {@link Completer}, {@link Responder}).
 *
 * <p>Threading: the QP is owned by its device's event loop. {@link #postSend}, {@link #postRecv}
 * and {@link #modify} may be called from any thread: posts copy the WR into a preallocated slot
 * under a producer-side lock and publish it with a release store of the producer index, then
 * wake the loop; modify runs its state change on the loop and waits for it. Everything else runs
 * on the loop and needs no locks.
 */
public final class RxeQp implements io.rxe4j.verbs.provider.QpOps {
    private static final VarHandle SQ_PROD;
    private static final VarHandle SQ_COMP;
    private static final VarHandle RQ_PROD;
    private static final VarHandle RQ_CONS;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SQ_PROD = l.findVarHandle(RxeQp.class, "sqProd", long.class);
            SQ_COMP = l.findVarHandle(RxeQp.class, "sqComp", long.class);
            RQ_PROD = l.findVarHandle(RxeQp.class, "rqProd", long.class);
            RQ_CONS = l.findVarHandle(RxeQp.class, "rqCons", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public final RxeDevice device;
    /** The device lane (event loop) this QP belongs to for its whole life. */
    public final RxeLane lane;
    public final Scheduler scheduler;
    final int qpn;
    public final RxePd pd;
    final RxeCq sendCq;
    final RxeCq recvCq;
    final QpCaps caps;
    final boolean sqSigAll;

    // ---- attributes (written on the loop by modify; state is volatile for posting threads) ----
    public volatile QpState state = QpState.RESET;
    public int accessFlags;
    InetSocketAddress av;
    public Mtu pathMtu = Mtu.MTU_256;
    public int timeout;
    public int retryCnt;
    public int rnrRetry;
    public int rqPsn;
    int sqPsn;
    public int maxRdAtomic;
    public int maxDestRdAtomic;
    public int minRnrTimer;
    public int destQpn;

    // ---- send and receive queues ----
    // The ring indices written by posting threads (sqProd, rqProd) and by the loop (sqComp, sqReq,
    // rqCons) sit on separate 64-byte cache lines, so that a thread posting and the loop consuming do
    // not invalidate each other's line on every WR. HotSpot lays out fields of one size in declaration
    // order, so the seven longs between them are the padding (QueueIndexLayoutTest checks the offsets).
    final SendWqe[] sq;
    private final Object sqLock = new Object();
    final RecvWqe[] rq;
    private final Object rqLock = new Object();
    @SuppressWarnings("unused")
    private long sqProd; // next slot users fill; published with release
    @SuppressWarnings("unused")
    private long padSq1, padSq2, padSq3, padSq4, padSq5, padSq6, padSq7;
    @SuppressWarnings("unused")
    private long rqProd; // next slot users fill; published with release
    @SuppressWarnings("unused")
    private long padRq1, padRq2, padRq3, padRq4, padRq5, padRq6, padRq7;
    @SuppressWarnings("unused")
    private long sqComp; // oldest uncompleted WQE (completer); published with release
    public long sqReq; // next WQE the requester works on (loop only)
    /**
     * A TID WRITE was ever posted on this QP (sticky). Written by a posting thread before the release
     * store of sqProd that publishes the WQE, read by the loop after its acquire load of sqProd: until
     * then the requester skips its scans of the send queue for TID WRITEs (issue 13: they cost about a
     * third of a post or an ACK on a QP that never uses TID RDMA).
     */
    public boolean tidWritesPosted;
    @SuppressWarnings("unused")
    private long rqCons; // oldest unconsumed receive WQE (responder); published with release
    @SuppressWarnings("unused")
    private long padLoop1, padLoop2, padLoop3, padLoop4, padLoop5, padLoop6, padLoop7;

    /** This QP's counters (the device's are their sum plus the device's own receive-path drops). */
    public final Counters counters = new Counters();
    public final Requester requester;
    public final Completer completer;
    public final Responder responder;
    /** OPFN feature negotiation (TID RDMA parameters). */
    public final Opfn opfn;
    /** The hardware flow of this QP's data-destination roles (TID READ requester, TID WRITE responder). */
    public final HwFlow hwFlow;
    /** TID RDMA READ, data-destination half (flow, segments, placement). */
    public final TidReadRequester tidRead;
    /** TID RDMA WRITE, data-source half (WRITE_RESP, data, TID ACK, RESYNC). */
    public final TidWriteRequester tidWrite;
    /** TID RDMA WRITE, data-destination half (entries, allocation, WRITE_RESP, placement, TID ACK). */
    public final TidWriteResponder tidWriteResp;
    private final AtomicBoolean tidKickScheduled = new AtomicBoolean();
    private final Runnable tidKickTask = guard("TID resources", this::onTidKick);
    /** The reserved SQ slot holds the hidden OPFN WQE (1) or not (0); guarded by {@link #sqLock}. */
    private int reservedInUse;

    private final AtomicBoolean kickScheduled = new AtomicBoolean();
    private final Runnable kickTask = guard("post_send", this::onKick);
    /** Queued for a turn on the device's service queue (loop only; see {@link io.rxe4j.core.device.RxeLane#requestService}). */
    public boolean serviceQueued;
    /** Waiting for its peer's byte budget (loop only; see {@link io.rxe4j.core.device.PeerBudget}). */
    public boolean budgetQueued;
    /** Holds a turn of its peer's byte budget (loop only; see {@link io.rxe4j.core.device.PeerBudget}). */
    public boolean budgetTurn;
    private volatile boolean destroyed;
    private volatile String errorReason;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RxeQp.class);

    /**
     * Creates a QP in RESET. Called by {@link RxeDevice#createQp}.
     */
    public RxeQp(RxeLane lane, int qpn, RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll) {
        this.device = lane.device();
        this.lane = lane;
        this.scheduler = lane.scheduler();
        this.qpn = qpn;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.caps = caps;
        this.sqSigAll = sqSigAll;
        // one slot more than users may fill: rdmavt's reserved operation (the hidden OPFN request)
        this.sq = new SendWqe[caps.maxSendWr() + 1];
        for (int i = 0; i < sq.length; i++) {
            sq[i] = new SendWqe(caps.maxSendSge(), caps.maxInlineData());
        }
        this.rq = new RecvWqe[caps.maxRecvWr()];
        for (int i = 0; i < rq.length; i++) {
            rq[i] = new RecvWqe(caps.maxRecvSge());
        }
        this.requester = new Requester(this);
        this.completer = new Completer(this);
        this.responder = new Responder(this);
        this.opfn = new Opfn(this);
        this.hwFlow = new HwFlow(this);
        this.tidRead = new TidReadRequester(this);
        this.tidWrite = new TidWriteRequester(this);
        this.tidWriteResp = new TidWriteResponder(this);
        requester.hook(new TidSendHook(this, tidRead, tidWrite));
        responder.hook(new TidResponderHook(this, new TidReadResponder(this), tidWriteResp));
    }

    /** @return this QP's counters, named like the device's ({@code rdma statistic qp} in rdma-core) */
    public Counters counters() {
        return counters;
    }

    @Override
    public java.util.Map<String, Long> counterSnapshot() {
        return counters.snapshot();
    }

    /** @return the lane (event loop) of the device this QP runs on */
    public RxeLane lane() {
        return lane;
    }

    /** @return the 24-bit QPN */
    public int qpn() {
        return qpn;
    }

    /** @return the PD */
    public RxePd pd() {
        return pd;
    }

    /** @return the current state */
    public QpState state() {
        return state;
    }

    /** @return the send CQ */
    public RxeCq sendCq() {
        return sendCq;
    }

    /** @return the receive CQ */
    public RxeCq recvCq() {
        return recvCq;
    }

    /** @return the capacities */
    public QpCaps caps() {
        return caps;
    }

    /** @return the peer's (IP, UDP port), or null before RTR */
    public InetSocketAddress av() {
        return av;
    }

    /** @return the peer QPN */
    public int destQpn() {
        return destQpn;
    }

    /** @return the path MTU in bytes */
    public int pmtu() {
        return pathMtu.bytes();
    }

    /** @return the path MTU in bytes (256 until modify_qp sets it) */
    public int pathMtuBytes() {
        return pathMtu.bytes();
    }

    // =====================================================================================
    // modify / query
    // =====================================================================================

    /**
     * {@code ibv_modify_qp}. Checks the transition and attributes against the RC table and rxe's
     * attribute limits, then applies them on the device loop.
     *
     * @throws IllegalArgumentException for an illegal transition, a missing required attribute,
     *     a disallowed attribute, or a value out of range (each named)
     * @throws IllegalStateException if the QP was destroyed
     */
    public void modify(QpAttr attr) {
        int mask = attr.mask();
        if (destroyed) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(qpn) + " was destroyed");
        }
        lane.callOnLoop(() -> {
            applyModify(attr, mask);
            return null;
        });
    }

    private void applyModify(QpAttr a, int mask) {
        QpState from = state;
        QpState to = (mask & QpAttrMask.STATE) != 0 ? a.state() : from;
        if ((mask & QpAttrMask.CUR_STATE) != 0 && a.curState() != from) {
            throw new IllegalArgumentException("CUR_STATE " + a.curState() + " does not match the QP state " + from);
        }
        ModifyTable.check(from, to, mask);
        if ((mask & QpAttrMask.PKEY_INDEX) != 0 && a.pkeyIndex() != 0) {
            throw new IllegalArgumentException("pkey_index must be 0 (the P_Key table has one entry), got " + a.pkeyIndex());
        }
        if ((mask & QpAttrMask.PORT) != 0 && a.port() != 1) {
            throw new IllegalArgumentException("port must be 1, got " + a.port());
        }
        if ((mask & QpAttrMask.TIMEOUT) != 0 && (a.timeout() < 0 || a.timeout() > 31)) {
            throw new IllegalArgumentException("timeout must be 0..31, got " + a.timeout());
        }
        if ((mask & QpAttrMask.RETRY_CNT) != 0 && (a.retryCnt() < 0 || a.retryCnt() > 7)) {
            throw new IllegalArgumentException("retry_cnt must be 0..7, got " + a.retryCnt());
        }
        if ((mask & QpAttrMask.RNR_RETRY) != 0 && (a.rnrRetry() < 0 || a.rnrRetry() > 7)) {
            throw new IllegalArgumentException("rnr_retry must be 0..7, got " + a.rnrRetry());
        }
        if ((mask & QpAttrMask.MIN_RNR_TIMER) != 0 && (a.minRnrTimer() < 0 || a.minRnrTimer() > 31)) {
            throw new IllegalArgumentException("min_rnr_timer must be 0..31, got " + a.minRnrTimer());
        }
        if ((mask & QpAttrMask.MAX_QP_RD_ATOMIC) != 0 && (a.maxRdAtomic() < 0 || a.maxRdAtomic() > 128)) {
            throw new IllegalArgumentException("max_rd_atomic must be 0..128, got " + a.maxRdAtomic());
        }
        if ((mask & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0 && (a.maxDestRdAtomic() < 0 || a.maxDestRdAtomic() > 128)) {
            throw new IllegalArgumentException("max_dest_rd_atomic must be 0..128, got " + a.maxDestRdAtomic());
        }
        if ((mask & QpAttrMask.AV) != 0 && (a.av() == null || a.av().isUnresolved())) {
            throw new IllegalArgumentException("AV must be a resolved (IP, UDP port), got " + a.av());
        }
        if ((mask & QpAttrMask.PATH_MTU) != 0 && a.pathMtu() == null) {
            throw new IllegalArgumentException("path_mtu must not be null");
        }
        if ((mask & QpAttrMask.DEST_QPN) != 0 && (a.destQpNum() & ~Psn.MASK) != 0) {
            throw new IllegalArgumentException("dest_qp_num must be 24-bit, got 0x" + Integer.toHexString(a.destQpNum()));
        }
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            Psn.check(a.sqPsn(), "sq_psn");
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            Psn.check(a.rqPsn(), "rq_psn");
        }
        if ((mask & QpAttrMask.ACCESS_FLAGS) != 0 && (a.accessFlags() & ~(Access.LOCAL_WRITE | Access.REMOTE_WRITE
                | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.MW_BIND | Access.FLUSH_GLOBAL
                | Access.FLUSH_PERSISTENT | Access.OPTIONAL_RANGE)) != 0) {
            throw new IllegalArgumentException("unsupported QP access flags " + Access.toString(a.accessFlags()));
        }
        // --- apply ---
        if ((mask & QpAttrMask.ACCESS_FLAGS) != 0) {
            accessFlags = a.accessFlags();
        }
        if ((mask & QpAttrMask.AV) != 0) {
            av = a.av();
            requester.setPeer(av);
        }
        if ((mask & QpAttrMask.PATH_MTU) != 0) {
            pathMtu = a.pathMtu();
        }
        if ((mask & QpAttrMask.TIMEOUT) != 0) {
            timeout = a.timeout();
            requester.setTimeout(timeout);
        }
        if ((mask & QpAttrMask.RETRY_CNT) != 0) {
            retryCnt = a.retryCnt();
            requester.resetRetryCounters();
        }
        if ((mask & QpAttrMask.RNR_RETRY) != 0) {
            rnrRetry = a.rnrRetry();
            requester.resetRetryCounters();
        }
        if ((mask & QpAttrMask.MIN_RNR_TIMER) != 0) {
            minRnrTimer = a.minRnrTimer();
        }
        if ((mask & QpAttrMask.MAX_QP_RD_ATOMIC) != 0) {
            maxRdAtomic = roundUpPow2(a.maxRdAtomic());
            requester.resetCredits(maxRdAtomic);
        }
        if ((mask & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0) {
            maxDestRdAtomic = roundUpPow2(a.maxDestRdAtomic());
            responder.resizeResources(maxDestRdAtomic);
        }
        if ((mask & QpAttrMask.DEST_QPN) != 0) {
            destQpn = a.destQpNum();
        }
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            sqPsn = a.sqPsn();
            requester.setPsn(sqPsn);
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            rqPsn = a.rqPsn();
            responder.setExpectedPsn(rqPsn);
        }
        if (to != from) {
            enterState(to);
        }
        if (state != QpState.RESET) {
            opfn.onModify((mask & QpAttrMask.STATE) != 0 && to == QpState.RTS);
        }
    }

    private static int roundUpPow2(int n) {
        return n <= 1 ? n : Integer.highestOneBit(n - 1) << 1;
    }

    private void enterState(QpState to) {
        switch (to) {
            case RESET -> reset();
            case ERR -> moveToError("modify_qp to ERR", false);
            default -> {
                state = to;
                if (to == QpState.RTS) {
                    kick();
                }
            }
        }
    }

    /**
     * {@code ibv_query_qp}: copies the current attributes into {@code out} (its mask is set to
     * every attribute written).
     *
     * @return {@code out}
     */
    public QpAttr query(QpAttr out) {
        return lane.callOnLoop(() -> {
            out.clearMask();
            out.state(state).curState(state).accessFlags(accessFlags).pkeyIndex(0).port(1).pathMtu(pathMtu)
                    .timeout(timeout).retryCnt(retryCnt).rnrRetry(rnrRetry).rqPsn(rqPsn).sqPsn(sqPsn)
                    .maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic).minRnrTimer(minRnrTimer)
                    .destQpNum(destQpn);
            if (av != null) {
                out.av(av);
            }
            return out;
        });
    }

    /** Drains everything without completions and returns to RESET ({@code rxe-facts.md} §6.8). */
    private void reset() {
        state = QpState.RESET;
        opfn.reset();
        requester.reset();
        completer.reset();
        responder.reset();
        synchronized (sqLock) {
            long p = (long) SQ_PROD.getAcquire(this);
            sqReq = p;
            reservedInUse = 0;
            SQ_COMP.setRelease(this, p);
        }
        RQ_CONS.setRelease(this, (long) RQ_PROD.getAcquire(this));
    }

    // =====================================================================================
    // posting
    // =====================================================================================

    /**
     * {@code ibv_post_send}: validates the WR and queues a copy of it.
     *
     * @throws IllegalStateException if the QP is not in RTS, SQD, SQE or ERR (posting in ERR is
     *     accepted and completes with WR_FLUSH_ERR, as rxe), or the send queue is full (ENOMEM)
     * @throws IllegalArgumentException for an opcode not supported on RC, too many SGEs, an
     *     unknown lkey or an SGE outside its MR, a wrong atomic length or alignment, or inline
     *     data larger than max_inline_data (each named, like {@code bad_wr})
     */
    public void postSend(SendWr wr) {
        if (!tryPostSend(wr)) {
            throw new IllegalStateException("send queue full (" + caps.maxSendWr()
                    + " WRs outstanding) on QP 0x" + Integer.toHexString(qpn));
        }
    }

    /**
     * As {@link #postSend}, but a full send queue returns false instead of throwing (no
     * allocation on that path).
     *
     * @return false if the send queue is full; the WR was not posted
     */
    /**
     * The checks of {@link #tryPostSend} without posting: the QP's state and the WR's validity.
     *
     * @throws IllegalStateException if the QP is not in RTS, SQD, SQE or ERR
     * @throws IllegalArgumentException for an invalid WR
     */
    public void validatePost(SendWr wr) {
        QpState s = state;
        if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR) {
            throw new IllegalStateException("post_send requires the QP in RTS (or SQD/ERR), QP 0x"
                    + Integer.toHexString(qpn) + " is in " + s);
        }
        validateSend(wr);
    }

    /**
     * Posts {@code wrs[from, to)}, already checked by {@link #validatePost}, under one producer lock
     * with one publication of the producer index and one wake-up of the loop (a WR list of {@code
     * ibv_post_send}).
     *
     * @return how many were posted, from {@code from} on; fewer than {@code to - from} when the send
     *     queue filled up
     */
    public int postValidated(java.util.List<SendWr> wrs, int from, int to) {
        int posted = 0;
        synchronized (sqLock) {
            long prod = (long) SQ_PROD.getOpaque(this);
            long comp = (long) SQ_COMP.getAcquire(this);
            for (int i = from; i < to; i++) {
                if (prod - comp - reservedInUse >= caps.maxSendWr()) {
                    break;
                }
                fill(sq[(int) (prod % sq.length)], wrs.get(i));
                prod++;
                posted++;
            }
            if (posted > 0) {
                SQ_PROD.setRelease(this, prod);
            }
        }
        if (posted > 0) {
            kick();
        }
        return posted;
    }

    public boolean tryPostSend(SendWr wr) {
        QpState s = state;
        if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR) {
            throw new IllegalStateException("post_send requires the QP in RTS (or SQD/ERR), QP 0x"
                    + Integer.toHexString(qpn) + " is in " + s);
        }
        validateSend(wr);
        synchronized (sqLock) {
            long prod = (long) SQ_PROD.getOpaque(this);
            long comp = (long) SQ_COMP.getAcquire(this);
            if (prod - comp - reservedInUse >= caps.maxSendWr()) {
                return false;
            }
            fill(sq[(int) (prod % sq.length)], wr);
            SQ_PROD.setRelease(this, prod + 1);
        }
        kick();
        return true;
    }

    /**
     * Posts the hidden OPFN request into the reserved SQ slot ({@code IB_WR_OPFN}, {@code
     * RVT_OPERATION_USE_RESERVE}): a COMPARE_SWAP to VA 0xFFFFFFFFFFFFFFFF, rkey 0, swap 0, with the
     * negotiation word as compare data, behind the WQEs already queued; it never produces a CQE
     * ({@code tid-opfn-facts.md} §1.2). Loop only.
     *
     * @return false if the QP is not in RTS or the reserved slot is in use
     */
    boolean postOpfn(long word) {
        if (state != QpState.RTS) {
            return false;
        }
        synchronized (sqLock) {
            long prod = (long) SQ_PROD.getOpaque(this);
            long comp = (long) SQ_COMP.getAcquire(this);
            if (reservedInUse != 0 || prod - comp >= sq.length) {
                return false;
            }
            SendWqe w = sq[(int) (prod % sq.length)];
            w.wrId = 0;
            w.opcode = WrOpcode.ATOMIC_CMP_AND_SWP;
            w.sendFlags = 0;
            w.immData = 0;
            w.remoteAddr = -1L;
            w.rkey = 0;
            w.compareAdd = word;
            w.swap = 0;
            w.compareAddMask = 0;
            w.swapMask = 0;
            w.numSge = 0;
            w.inlineLength = 0;
            w.length = 8;
            w.tid = false;
            w.posted(true);
            reservedInUse = 1;
            SQ_PROD.setRelease(this, prod + 1);
        }
        kick();
        return true;
    }

    private void validateSend(SendWr wr) {
        WrOpcode op = wr.opcode;
        if (op == null) {
            throw new IllegalArgumentException("send WR opcode is null");
        }
        switch (op) {
            case SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_CMP_AND_SWP,
                    ATOMIC_FETCH_AND_ADD, MASKED_ATOMIC_CMP_AND_SWP, MASKED_ATOMIC_FETCH_AND_ADD -> { }
            case ATOMIC_WRITE, FLUSH -> {
                if (wr.numSge != 0) {
                    throw new IllegalArgumentException(op + " takes no SGEs (its operand is in the WR), got num_sge "
                            + wr.numSge);
                }
                if (op == WrOpcode.FLUSH) {
                    if (wr.flushType == 0 || (wr.flushType & ~(Flush.GLOBAL | Flush.PERSISTENT)) != 0) {
                        throw new IllegalArgumentException("FLUSH type must be GLOBAL and/or PERSISTENT (1, 2 or 3), got "
                                + wr.flushType);
                    }
                    if (wr.flushLevel != Flush.RANGE && wr.flushLevel != Flush.MR) {
                        throw new IllegalArgumentException("FLUSH level must be RANGE (0) or MR (1), got "
                                + wr.flushLevel);
                    }
                    if (wr.flushLength < 0 || wr.flushLength > 0xFFFF_FFFFL) {
                        throw new IllegalArgumentException("FLUSH length must be 0..2^32-1 bytes, got " + wr.flushLength);
                    }
                }
                return; // the responder checks alignment and range (NAK 0x61 / 0x62), as rxe
            }
            default -> throw new IllegalArgumentException("WR opcode " + op + " is not supported on an RC QP");
        }
        if (wr.inlineData != null) {
            if (op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM && op != WrOpcode.RDMA_WRITE
                    && op != WrOpcode.RDMA_WRITE_WITH_IMM) {
                throw new IllegalArgumentException("inline data is allowed with SEND and RDMA WRITE only, not " + op);
            }
            if (wr.numSge != 0) {
                throw new IllegalArgumentException("a WR with inlineData takes no SGEs, got num_sge " + wr.numSge);
            }
            if (wr.inlineData.byteSize() > caps.maxInlineData()) {
                throw new IllegalArgumentException("inline data " + wr.inlineData.byteSize()
                        + " bytes exceeds max_inline_data " + caps.maxInlineData());
            }
            return;
        }
        if (wr.numSge < 0 || wr.numSge > caps.maxSendSge() || wr.numSge > wr.sgList.length) {
            throw new IllegalArgumentException("num_sge " + wr.numSge + " exceeds max_send_sge " + caps.maxSendSge()
                    + " or the SGE array (" + wr.sgList.length + ")");
        }
        boolean inline = (wr.sendFlags & SendFlags.INLINE) != 0;
        if (inline && (op == WrOpcode.RDMA_READ || op.isAtomic())) {
            throw new IllegalArgumentException("IBV_SEND_INLINE is not allowed with " + op);
        }
        long total = 0;
        for (int i = 0; i < wr.numSge; i++) {
            Sge sge = wr.sgList[i];
            if (sge == null) {
                throw new IllegalArgumentException("sg_list[" + i + "] is null");
            }
            if (sge.length < 0) {
                throw new IllegalArgumentException("sg_list[" + i + "].length " + sge.length + " is negative");
            }
            total += sge.length;
            if (inline && sge.length > 0) {
                RxeMr mr = device.mrs().lookup(sge.lkey);
                if (mr == null || !mr.contains(sge.addr, sge.length)) {
                    throw new IllegalArgumentException("inline sg_list[" + i + "] " + sge
                            + " must lie in a registered MR of this device (rxe4j reads inline data from MRs only)");
                }
            }
            if (!inline && sge.length > 0) {
                int need = (op == WrOpcode.RDMA_READ || op.isAtomic()) ? Access.LOCAL_WRITE : 0;
                RxeMr mr = device.mrs().lookup(sge.lkey);
                if (mr == null || mr.pd() != pd) {
                    throw new IllegalArgumentException("sg_list[" + i + "].lkey 0x" + Integer.toHexString(sge.lkey)
                            + " is not a registered MR of " + pd);
                }
                if (!mr.allows(sge.addr, sge.length, need)) {
                    throw new IllegalArgumentException("sg_list[" + i + "] " + sge + " is outside " + mr
                            + (need != 0 ? " or lacks LOCAL_WRITE" : ""));
                }
            }
        }
        if (total > (1L << 31)) {
            throw new IllegalArgumentException("message length " + total + " exceeds 2^31 bytes");
        }
        if (inline && total > caps.maxInlineData()) {
            throw new IllegalArgumentException("inline data " + total + " bytes exceeds max_inline_data "
                    + caps.maxInlineData());
        }
        if (op.isAtomic()) {
            if (total != 8) {
                throw new IllegalArgumentException(op + " needs exactly 8 bytes of local SGE, got " + total);
            }
            if ((wr.remoteAddr & 7) != 0) {
                throw new IllegalArgumentException(op + " remote_addr 0x" + Long.toHexString(wr.remoteAddr)
                        + " is not 8-byte aligned");
            }
        }
    }

    private void fill(SendWqe w, SendWr wr) {
        w.wrId = wr.wrId;
        w.opcode = wr.opcode;
        w.sendFlags = wr.sendFlags;
        w.immData = wr.immData;
        w.remoteAddr = wr.remoteAddr;
        w.rkey = wr.rkey;
        w.compareAdd = wr.compareAdd;
        w.swap = wr.swap;
        w.compareAddMask = wr.compareAddMask;
        w.swapMask = wr.swapMask;
        w.atomicWriteValue = wr.atomicWriteValue;
        w.flushType = wr.flushType;
        w.flushLevel = wr.flushLevel;
        long total = 0;
        boolean inline = (wr.sendFlags & SendFlags.INLINE) != 0 || wr.inlineData != null;
        w.inlineLength = 0;
        w.numSge = inline ? 0 : wr.numSge;
        if (wr.inlineData != null) { // checked by validateSend: numSge 0, within max_inline_data
            int n = (int) wr.inlineData.byteSize();
            if (n > 0) {
                MemorySegment.copy(wr.inlineData, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, w.inline, 0, n);
            }
            w.inlineLength = n;
            w.sendFlags |= SendFlags.INLINE;
            total = n;
        }
        for (int i = 0; i < wr.numSge; i++) {
            Sge sge = wr.sgList[i];
            if (inline) {
                if (sge.length > 0) {
                    RxeMr mr = device.mrs().lookup(sge.lkey); // checked by validateSend
                    MemorySegment.copy(mr.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, mr.offset(sge.addr),
                            w.inline, w.inlineLength, sge.length);
                }
                w.inlineLength += sge.length;
            } else {
                w.sgeAddr[i] = sge.addr;
                w.sgeLength[i] = sge.length;
                w.sgeLkey[i] = sge.lkey;
            }
            total += sge.length;
        }
        w.length = switch (wr.opcode) {
            case ATOMIC_WRITE -> 8;
            case FLUSH -> wr.flushLength;
            default -> total;
        };
        w.tid = false;
        if (wr.opcode == WrOpcode.RDMA_WRITE && !inline) {
            // a qualifying WRITE (not WRITE_WITH_IMM) on a QP that negotiated TID RDMA is a TID WRITE
            io.rxe4j.verbs.TidRdmaParams remote = opfn.tidWriteQualifies(total, wr.remoteAddr);
            if (remote != null) {
                TidSegment.toTidWrite(w, remote, pmtu());
                tidWritesPosted = true; // published to the loop by the release store of sqProd
            }
        }
        if (wr.opcode == WrOpcode.RDMA_READ && !inline) {
            // hfi1_setup_wqe: a qualifying READ on a QP that negotiated TID RDMA is carried as TID READ
            io.rxe4j.verbs.TidRdmaParams remote = opfn.tidReadQualifies(total, w.sgeAddr, w.sgeLength, w.numSge);
            if (remote != null) {
                TidSegment.toTidRead(w, remote, pmtu());
            }
        }
        w.posted(false);
    }

    /**
     * {@code ibv_post_recv}: validates the WR and queues a copy of it.
     *
     * @throws IllegalStateException if the QP is in RESET, or the receive queue is full
     * @throws IllegalArgumentException for too many SGEs, an unknown lkey, an SGE outside its MR
     *     or an MR without LOCAL_WRITE
     */
    public void postRecv(RecvWr wr) {
        if (!tryPostRecv(wr)) {
            throw new IllegalStateException("receive queue full (" + rq.length + " WRs outstanding) on QP 0x"
                    + Integer.toHexString(qpn));
        }
    }

    /**
     * As {@link #postRecv}, but a full receive queue returns false instead of throwing.
     *
     * @return false if the receive queue is full; the WR was not posted
     */
    public boolean tryPostRecv(RecvWr wr) {
        if (state == QpState.RESET) {
            throw new IllegalStateException("post_recv requires the QP in INIT or later, QP 0x"
                    + Integer.toHexString(qpn) + " is in RESET");
        }
        if (wr.numSge < 0 || wr.numSge > caps.maxRecvSge() || wr.numSge > wr.sgList.length) {
            throw new IllegalArgumentException("num_sge " + wr.numSge + " exceeds max_recv_sge " + caps.maxRecvSge()
                    + " or the SGE array (" + wr.sgList.length + ")");
        }
        long total = 0;
        for (int i = 0; i < wr.numSge; i++) {
            Sge sge = wr.sgList[i];
            if (sge == null || sge.length < 0) {
                throw new IllegalArgumentException("sg_list[" + i + "] is null or has a negative length");
            }
            total += sge.length;
            if (sge.length > 0) {
                RxeMr mr = device.mrs().lookup(sge.lkey);
                if (mr == null || mr.pd() != pd) {
                    throw new IllegalArgumentException("sg_list[" + i + "].lkey 0x" + Integer.toHexString(sge.lkey)
                            + " is not a registered MR of " + pd);
                }
                if (!mr.allows(sge.addr, sge.length, Access.LOCAL_WRITE)) {
                    throw new IllegalArgumentException("sg_list[" + i + "] " + sge + " is outside " + mr
                            + " or lacks LOCAL_WRITE");
                }
            }
        }
        synchronized (rqLock) {
            long prod = (long) RQ_PROD.getOpaque(this);
            long cons = (long) RQ_CONS.getAcquire(this);
            if (prod - cons >= rq.length) {
                return false;
            }
            RecvWqe w = rq[(int) (prod % rq.length)];
            w.wrId = wr.wrId;
            w.numSge = wr.numSge;
            for (int i = 0; i < wr.numSge; i++) {
                w.sgeAddr[i] = wr.sgList[i].addr;
                w.sgeLength[i] = wr.sgList[i].length;
                w.sgeLkey[i] = wr.sgList[i].lkey;
            }
            w.length = total;
            RQ_PROD.setRelease(this, prod + 1);
        }
        if (state == QpState.ERR) {
            kick();
        }
        return true;
    }

    // =====================================================================================
    // loop-side helpers used by the engines
    // =====================================================================================

    /** Wakes the loop to run the requester (and flush in ERR). Coalesces concurrent wakes. */
    void kick() {
        if (kickScheduled.compareAndSet(false, true)) {
            try {
                scheduler.execute(kickTask);
            } catch (RuntimeException e) {
                kickScheduled.set(false);
            }
        }
    }

    /**
     * Wraps a loop task of this QP so that an unexpected exception in the engine is loud: the QP
     * enters ERR with an "internal error" reason and the device logs a rate-limited WARN, instead
     * of the exception vanishing into the event loop.
     */
    public Runnable guard(String what, Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                lane.internalError(this, what, e);
            }
        };
    }

    /**
     * One turn of this QP on the device's service queue (loop only): the next batch of a READ
     * reply, the requests waiting behind it, then the requester (e.g. after the transport became
     * writable again).
     */
    public void onService() {
        if (destroyed || state == QpState.RESET || state == QpState.ERR) {
            return;
        }
        responder.onService();
        requester.run();
    }

    private void onKick() {
        kickScheduled.set(false);
        if (destroyed) {
            return;
        }
        if (state == QpState.ERR) {
            flushQueues();
        } else {
            requester.run();
        }
        lane.flushTransport();
    }

    public long sqProducer() {
        return (long) SQ_PROD.getAcquire(this);
    }

    public long sqCompleted() {
        return (long) SQ_COMP.getOpaque(this);
    }

    void advanceSqCompleted(long v) {
        SQ_COMP.setRelease(this, v);
    }

    /**
     * Retires the WQE at the SQ consumer index: advances it to {@code v}; for the hidden OPFN WQE
     * the reserved slot is freed in the same step, so a posting thread never counts it twice.
     */
    public void retireSqHead(SendWqe w, long v) {
        if (w.opfn) {
            synchronized (sqLock) {
                reservedInUse = 0;
                SQ_COMP.setRelease(this, v);
            }
        } else {
            SQ_COMP.setRelease(this, v);
        }
    }

    public SendWqe sqAt(long index) {
        return sq[(int) (index % sq.length)];
    }

    /** @return the next receive WQE without consuming it, or null if the RQ is empty */
    public RecvWqe peekRecv() {
        long cons = (long) RQ_CONS.getOpaque(this);
        if (cons == (long) RQ_PROD.getAcquire(this)) {
            return null;
        }
        return rq[(int) (cons % rq.length)];
    }

    /** Consumes the receive WQE returned by {@link #peekRecv()}. */
    public void consumeRecv() {
        RQ_CONS.setRelease(this, (long) RQ_CONS.getOpaque(this) + 1);
    }

    /**
     * Posts a completion for a send WQE from values the caller copied out of its slot, so the slot
     * can be handed back to posting threads first: a user who polls this completion and posts again
     * at once must find the room it freed (as in rxe). On CQ overflow the caller moves the QP to ERR.
     *
     * @return false if the CQ overflowed
     */
    public boolean completeSend(long wrId, WrOpcode op, int sendFlags, long length, int immData, WcStatus status,
            int vendorErr) {
        if (status != WcStatus.SUCCESS || sqSigAll || (sendFlags & SendFlags.SIGNALED) != 0) {
            int flags = op.hasImmediate() ? WorkCompletion.WC_WITH_IMM : 0;
            int byteLen = switch (op) {
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, MASKED_ATOMIC_CMP_AND_SWP,
                        MASKED_ATOMIC_FETCH_AND_ADD -> 8;
                default -> (int) length;
            };
            if (!sendCq.push(wrId, status, wcOpcode(op), byteLen, qpn, flags, immData, vendorErr)) {
                counters.inc(Counter.CQ_OVERFLOW);
                return false;
            }
        }
        return true;
    }

    /**
     * Posts a receive completion for the receive WQE with {@code wrId}, which the caller has
     * already consumed (see {@link #completeSend}).
     *
     * @return false if the CQ overflowed
     */
    public boolean completeRecv(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int flags, int imm) {
        return completeRecv(wrId, status, opcode, byteLen, flags, imm, false);
    }

    /**
     * As {@link #completeRecv(long, WcStatus, WcOpcode, int, int, int)}; {@code solicited} is the
     * SE bit of the message's last packet (for a solicited-only armed CQ).
     */
    public boolean completeRecv(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int flags, int imm,
            boolean solicited) {
        if (!recvCq.push(wrId, status, opcode, byteLen, qpn, flags, imm, 0, solicited)) {
            counters.inc(Counter.CQ_OVERFLOW);
            return false;
        }
        return true;
    }

    static WcOpcode wcOpcode(WrOpcode op) {
        return switch (op) {
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> WcOpcode.SEND;
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WcOpcode.RDMA_WRITE;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> WcOpcode.FETCH_ADD;
            case MASKED_ATOMIC_CMP_AND_SWP -> WcOpcode.MASKED_COMP_SWAP;
            case MASKED_ATOMIC_FETCH_AND_ADD -> WcOpcode.MASKED_FETCH_ADD;
            case LOCAL_INV -> WcOpcode.LOCAL_INV;
            case BIND_MW -> WcOpcode.BIND_MW;
            case FLUSH -> WcOpcode.FLUSH;
            case ATOMIC_WRITE -> WcOpcode.ATOMIC_WRITE;
        };
    }

    /**
     * Moves the QP to ERR: stops the engines and completes every outstanding send and receive
     * WQE with WR_FLUSH_ERR, in order, signaled or not ({@code rxe-facts.md} §6.8). Loop only.
     */
    public void moveToError(String reason) {
        moveToError(reason, true);
    }

    /**
     * As {@link #moveToError(String)}; {@code own} says whether the QP fails for a reason of its
     * own (logged at WARN, {@code IBV_EVENT_QP_FATAL}) or is moved there on request (a modify_qp, a
     * disconnect), which is neither. Loop only.
     */
    private void moveToError(String reason, boolean own) {
        if (state == QpState.ERR) {
            return;
        }
        errorReason = reason;
        if (LOG.isDebugEnabled()) {
            LOG.debug("QP 0x{} enters ERR: {}", Integer.toHexString(qpn), reason);
        }
        if (own) {
            device.onQpError(this, reason);
        }
        state = QpState.ERR;
        requester.stop();
        responder.abortMessage();
        flushQueues();
    }

    /**
     * Moves the QP to ERR after an unexpected exception in the engine (see {@link
     * io.rxe4j.core.device.RxeLane#internalError}): the WQE being worked on completes with its real status if one was
     * set, every other one with WR_FLUSH_ERR. Loop only.
     */
    public void moveToErrorOnInternalError(String reason) {
        moveToError(reason);
    }

    /**
     * Records why the QP is about to enter ERR before the failing WQE's completion becomes
     * visible, so that a thread that polls that completion finds the reason. Loop only.
     */
    public void noteErrorReason(String reason) {
        if (state != QpState.ERR) {
            errorReason = reason;
        }
    }

    private void flushQueues() {
        long prod = sqProducer();
        boolean cqOk = true;
        for (long comp = sqCompleted(); comp != prod; ) {
            SendWqe w = sqAt(comp);
            long wrId = w.wrId;
            WrOpcode op = w.opcode;
            WcStatus st = w.failStatus != null ? w.failStatus : WcStatus.WR_FLUSH_ERR;
            w.state = SendWqe.State.DONE;
            comp++;
            boolean hidden = w.opfn;
            retireSqHead(w, comp); // slot free before its CQE is visible (see completeSend)
            sqReq = comp;
            if (hidden) {
                continue; // the reserved OPFN WQE never produces a CQE
            }
            if (cqOk) {
                cqOk = sendCq.push(wrId, st, wcOpcode(op), 0, qpn, 0, 0, 0);
            }
        }
        cqOk = true;
        RecvWqe r;
        while ((r = peekRecv()) != null) {
            long wrId = r.wrId;
            consumeRecv();
            if (cqOk) {
                cqOk = recvCq.push(wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, qpn, 0, 0, 0);
            }
        }
    }

    /**
     * @return a one-line snapshot of the engine state (PSNs, queue indices, the head send WQE), for
     *     diagnostics; read without synchronisation, so it may be slightly inconsistent off the loop
     */
    public String debugState() {
        long comp = sqCompleted();
        StringBuilder sb = new StringBuilder("QP 0x").append(Integer.toHexString(qpn)).append(' ').append(state)
                .append(" req.psn=0x").append(Integer.toHexString(requester.psn))
                .append(' ').append(completer.debugState())
                .append(" unacked=").append(requester.unackedPackets()).append(' ').append(requester.budgetState())
                .append(" sq[comp=").append(comp).append(" req=").append(sqReq).append(" prod=").append(sqProducer())
                .append(']').append(' ').append(responder.debugState()).append(' ').append(tidRead.debugState())
                .append(' ').append(tidWrite.debugState()).append(' ').append(tidWriteResp.debugState());
        if (comp != sqProducer()) {
            SendWqe w = sqAt(comp);
            sb.append(" head{").append(w.opcode).append(' ').append(w.state).append(" psn=0x")
                    .append(Integer.toHexString(w.firstPsn)).append("..0x").append(Integer.toHexString(w.lastPsn))
                    .append(" len=").append(w.length).append(" sent=").append(w.sentBytes).append(" read=")
                    .append(w.readBytes).append(" credit=").append(w.creditHeld).append('}');
        }
        return sb.toString();
    }

    /**
     * @return the peer's TID RDMA parameters as negotiated through OPFN, or null while TID RDMA is
     *     off for this QP (not negotiated, peer or device without it, path MTU not 4096); any thread
     */
    public io.rxe4j.verbs.TidRdmaParams tidRdmaRemote() {
        return opfn.remote();
    }

    /** @return this QP's own TID RDMA parameters (sent to the peer), or null; any thread */
    public io.rxe4j.verbs.TidRdmaParams tidRdmaLocal() {
        return opfn.local();
    }

    /**
     * @return the OPFN state as {@code extended=… requested=… completed=… curr=…}
     *     ({@code hfi1_opfn_data}), for diagnostics and tests; any thread
     */
    public String opfnState() {
        return "extended=" + opfn.extended() + " requested=" + opfn.requested() + " completed=" + opfn.completed()
                + " curr=" + opfn.curr();
    }

    /** The peer's packet carried BTH DW1 bit 24 (OPFN on at this device). Loop only. */
    public void onExtendedBit() {
        opfn.onExtendedBit();
    }

    /**
     * Moves the QP to ERR because its connection ended (the connection manager's disconnect),
     * recording {@code reason} as {@link #errorReason()}; unlike a {@code modify_qp} to ERR this
     * is a no-op, never an error, when the QP is in RESET or ERR already or was destroyed (a QP
     * that the application reset or destroyed stays as it is; one that failed on its own keeps its
     * own reason). The check and the move are one task on the QP's loop, so a concurrent destroy
     * or reset cannot slip in between. No QP_FATAL event and no WARN: the caller reports the
     * disconnect. Any thread.
     *
     * @return whether the QP moved to ERR (false if it was in RESET or ERR, destroyed, or its
     *     device's loop has shut down)
     */
    public boolean disconnectToError(String reason) {
        if (destroyed) {
            return false;
        }
        try {
            return lane.callOnLoop(() -> {
                if (destroyed || state == QpState.RESET || state == QpState.ERR) {
                    return false;
                }
                moveToError(reason, false);
                return true;
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return false; // the device closed: its QPs are gone
        }
    }

    /**
     * The transport refused to send one of this QP's packets (e.g. a datagram larger than the
     * interface MTU: {@link io.rxe4j.verbs.spi.PacketReceiver#onSendFailed}). As {@code rdma_rxe}
     * does for a transmit failure ({@code rxe-facts.md} §6.5: LOC_QP_OP_ERR), the QP fails at once
     * instead of waiting for ACK timeouts that would blame the peer: a refused response (READ
     * response, ACK, atomic acknowledgement) makes the responder NAK "remote operational error" with
     * that PSN, so that the peer's WQE fails at once too; the oldest outstanding send WQE, if any,
     * completes with LOC_QP_OP_ERR and {@code why} as its reason; the QP enters ERR. Counted in
     * {@code send_err}. Nothing more happens once the QP is in ERR or destroyed. Loop only.
     *
     * <p>That is for a packet that can never be sent as it is ({@code permanent}: larger than the link
     * carries). Any other refusal (a link that is down, no buffer space) is taken as a transient
     * loss: the QP's timers resend the packet as for a loss on the wire, and {@code why} is kept as
     * {@link #lastSendFailure()}, which the RETRY_EXC_ERR reason names if the outage outlasts the
     * retry budget.
     *
     * @param response whether the refused packet was a response (sent by this QP's responder)
     * @param psn the refused packet's PSN
     * @param why the cause, for {@link #errorReason()} and the completion
     * @param permanent whether resending the same packet cannot succeed
     */
    public void onSendRefused(boolean response, int psn, String why, boolean permanent) {
        counters.inc(Counter.SEND_ERR);
        if (destroyed || state == QpState.ERR || state == QpState.RESET) {
            return;
        }
        if (!permanent) {
            lastSendFailure = why;
            return;
        }
        if (response) {
            noteErrorReason(why);
            responder.sendAck(io.rxe4j.core.wire.Aeth.NAK_REMOTE_OP_ERROR, psn);
        }
        SendWqe w = completer.head();
        if (w != null) {
            completer.failHead(w, io.rxe4j.verbs.WcStatus.LOC_QP_OP_ERR, 0, why);
        }
        moveToError(why);
    }

    /** The last transient send refusal since the last valid response, or null ({@link #onSendRefused}). */
    private volatile String lastSendFailure;

    /** @return the last transient send refusal since the last valid response, or null. Any thread. */
    public String lastSendFailure() {
        return lastSendFailure;
    }

    /** A valid response arrived: earlier transient send refusals are history. Loop only. */
    public void clearSendFailure() {
        if (lastSendFailure != null) {
            lastSendFailure = null;
        }
    }

    /** @return why the QP last entered ERR (null if it never did): for diagnostics */
    public String errorReason() {
        return errorReason;
    }

    /** Marks the QP destroyed; it handles nothing afterwards. Loop only (called by the device). */
    public void destroyOnLoop() {
        destroyed = true;
        requester.stop();
        responder.abortMessage();
        state = QpState.RESET;
    }

    /** @return whether {@link #destroyOnLoop()} ran */
    public boolean isDestroyed() {
        return destroyed;
    }

    /** Entry point for a request packet addressed to this QP. Loop only. */
    public void onRequest(PacketView pkt) {
        responder.onRequest(pkt);
    }

    /** A request to this QP arrived marked CE (ECN on): the responder may send a CNP. Loop only. */
    public void onCongestionExperienced() {
        if (state == QpState.RTR || state == QpState.RTS || state == QpState.SQD || state == QpState.SQE) {
            responder.onCongestionExperienced();
        }
    }

    /** A CNP for this QP's requester arrived (ECN on): its congestion window shrinks. Loop only. */
    public void onCnp() {
        requester.onCnp();
    }

    /** Entry point for a response packet addressed to this QP. Loop only. */
    public void onResponse(PacketView pkt) {
        completer.onResponse(pkt);
    }

    /** Entry point for a TID READ_RESP addressed (by verbs_qp) to this QP. Loop only. */
    public void onTidReadResponse(PacketView pkt) {
        tidRead.onResponse(pkt);
    }

    /** Entry point for TID WRITE_DATA(_LAST) and RESYNC (they bypass the RC request queue). Loop only. */
    public void onTidWriteData(PacketView pkt) {
        if (pkt.opcode() == io.rxe4j.core.wire.Opcode.TID_RDMA_RESYNC) {
            tidWriteResp.onResync(pkt);
        } else {
            tidWriteResp.onData(pkt);
        }
    }

    /** Entry point for a TID WRITE_RESP or TID ACK addressed to this QP. Loop only. */
    public void onTidWriteResponse(PacketView pkt) {
        if (pkt.opcode() == io.rxe4j.core.wire.Opcode.TID_RDMA_WRITE_RESP) {
            tidWrite.onWriteResp(pkt);
        } else {
            tidWrite.onTidAck(pkt);
        }
    }

    /** TID resources may be free again: the TID WRITE responder allocates, the requester runs (coalesced). */
    public void kickTid() {
        if (tidKickScheduled.compareAndSet(false, true)) {
            scheduler.execute(tidKickTask);
        }
    }

    private void onTidKick() {
        tidKickScheduled.set(false);
        if (destroyed || (state != QpState.RTS && state != QpState.SQD && state != QpState.RTR)) {
            return;
        }
        tidWriteResp.allocateAndRespond();
        requester.run();
        lane.flushTransport();
    }

    /** Frees every TID entry, flow and timer of this QP (ERR, RESET, destroy). Loop only. */
    public void releaseTid() {
        tidRead.releaseAll();
        tidWrite.releaseAll();
        tidWriteResp.releaseAll();
        hwFlow.reset();
        TidPool pool = lane.tidPool();
        if (pool != null) {
            pool.forget(this);
        }
    }

    @Override
    public String toString() {
        return "QP{qpn=0x" + Integer.toHexString(qpn) + ", state=" + state + ", " + pd + '}';
    }
}
