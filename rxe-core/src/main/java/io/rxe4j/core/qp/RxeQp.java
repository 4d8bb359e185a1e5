package io.rxe4j.core.qp;

import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.verbs.Counter;
import io.rxe4j.core.policy.BudgetWaiter;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A queue pair (RC or UD): its identity, its state, and the wiring of its parts: the attributes
 * ({@link QpAttributes}), the send and receive queues ({@link SendQueue}, {@link RecvQueue}), the
 * post-time checks ({@link WrValidator}), the completions and the ERR flush ({@link
 * Completions}), OPFN ({@link Opfn}), and its engines (requester, completer, responder and the TID
 * RDMA halves, behind one {@link QpEngine}). It reaches its lane and device only through {@link
 * QpHost}. The verbs API reaches it through {@link io.rxe4j.verbs.provider.QpOps}; the device
 * delivers packets through the {@code on*} entry points.
 *
 * <p>Size (about 790 lines, past the ~700 the redesign aims at): most of it is the {@link
 * io.rxe4j.verbs.provider.QpOps} surface (post, modify, query, diagnostics) with its argument and
 * state checks, plus the error path (ERR with its reason, the flush, send refusals) that every
 * part shares; the rings, checks, completions and attributes are already their own classes.
 *
 * <p>Threading: the QP is owned by its device's event loop. {@link #postSend}, {@link #postRecv}
 * and {@link #modify} may be called from any thread: posts copy the WR into a preallocated slot
 * under a producer-side lock and publish it with a release store of the producer index, then
 * wake the loop; modify runs its state change on the loop and waits for it. Everything else runs
 * on the loop and needs no locks.
 */
public final class RxeQp implements io.rxe4j.verbs.provider.QpOps, BudgetWaiter {
    /** The lane (event loop) and device this QP belongs to for its whole life. */
    private final QpHost host;
    public final Scheduler scheduler;
    final int qpn;
    public final RxePd pd;
    final RxeCq sendCq;
    final RxeCq recvCq;
    final QpCaps caps;
    final boolean sqSigAll;
    /** RC, UC or UD, fixed at create_qp. */
    final io.rxe4j.verbs.QpType type;
    /** The shared receive queue the QP takes its receive WQEs from, or null (its own {@link #recvQueue}). */
    final RxeSrq srq;
    /** With an SRQ: the WQE taken from it for the message under way ({@link #peekRecv}), valid while {@link #srqTaken}. */
    private final RecvWqe srqSlot;
    private boolean srqTaken;

    /** The state; volatile for posting threads, written on the loop (modify, errors). */
    volatile QpState state = QpState.RESET;
    /** The modify_qp attributes (written on the loop by modify). */
    public final QpAttributes attr = new QpAttributes();
    final SendQueue sendQueue;
    final RecvQueue recvQueue;
    private final WrValidator validator;
    private final Completions completions;

    @SuppressWarnings("unused")
    private long padReq1, padReq2, padReq3, padReq4, padReq5, padReq6, padReq7;
    /**
     * The next send WQE the requester works on (a send queue index; loop only). Written for every
     * WQE the requester starts, so it has a cache line of its own, away from the fields posting
     * threads read ({@code QueueIndexLayoutTest}).
     */
    long sqReq;
    @SuppressWarnings("unused")
    private long padReq8, padReq9, padReq10, padReq11, padReq12, padReq13, padReq14;
    /**
     * A TID WRITE was ever posted on this QP (sticky). Written by a posting thread before the release
     * store of the SQ producer index that publishes the WQE, read by the loop after its acquire load
     * of that index: until then the requester skips its scans of the send queue for TID WRITEs
     * (issue 13: they cost about a third of a post or an ACK on a QP that never uses TID RDMA).
     */
    boolean tidWritesPosted;

    /** This QP's counters (the device's are their sum plus the device's own receive-path drops). */
    public final Counters counters = new Counters();
    /** OPFN feature negotiation (TID RDMA parameters). */
    public final Opfn opfn;
    /** The engines (requester, completer, responder, TID RDMA halves), built by the device for this QP. */
    private final QpEngine engine;
    private final AtomicBoolean tidKickScheduled = new AtomicBoolean();
    private final Runnable tidKickTask = guard("TID resources", this::onTidKick);

    private final AtomicBoolean kickScheduled = new AtomicBoolean();
    private final Runnable kickTask = guard("post_send", this::onKick);
    /** Queued for a turn on the lane's service queue (loop only; see {@link #enterServiceQueue}). */
    private boolean serviceQueued;
    /** This QP's place in its peer's byte budget (loop only; see {@link io.rxe4j.core.policy.PeerBudget}). */
    private final BudgetWaiter.Place budgetPlace = new BudgetWaiter.Place();
    private volatile boolean destroyed;
    private volatile String errorReason;
    /** The extension bits agreed with the peer ({@link #setPeerExtensions}; written on the loop, read anywhere). */
    private volatile int peerExtensions;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RxeQp.class);
    /** Told of each datagram a UD QP completed, with its sender (the device's GSI QP); null for user QPs. */
    private volatile DatagramListener datagramListener;

    /** What a UD QP tells its owner after each receive completion it pushed. Loop only. */
    @FunctionalInterface
    public interface DatagramListener {
        /** A datagram from {@code sender} completed a receive WQE (its completion is in the receive CQ). */
        void received(InetSocketAddress sender);
    }

    /** Sets the listener of completed datagrams (UD; the device's GSI QP). */
    public void datagramListener(DatagramListener l) {
        this.datagramListener = l;
    }

    /** @return the listener of completed datagrams, or null */
    public DatagramListener datagramListener() {
        return datagramListener;
    }

    /**
     * Creates a QP in RESET, then its engines ({@code engines}, called once, with this QP). Called by
     * {@code io.rxe4j.core.device.RxeDevice#createQp}.
     *
     * @param host the lane (and through it the device) the QP runs on for its whole life
     * @param engines builds the QP's engines ({@code io.rxe4j.core.device.QpRunner})
     */
    public RxeQp(QpHost host, int qpn, RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll, java.util.function.Function<RxeQp, QpEngine> engines) {
        this(host, qpn, pd, sendCq, recvCq, caps, sqSigAll, io.rxe4j.verbs.QpType.RC, engines);
    }

    /**
     * As {@link #RxeQp(QpHost, int, RxePd, RxeCq, RxeCq, QpCaps, boolean, java.util.function.Function)}
     * for a QP of {@code type} (RC or UD).
     */
    public RxeQp(QpHost host, int qpn, RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll, io.rxe4j.verbs.QpType type,
            java.util.function.Function<RxeQp, QpEngine> engines) {
        this(host, qpn, pd, sendCq, recvCq, caps, sqSigAll, type, null, engines);
    }

    /** As the constructor above, taking receive WQEs from {@code srq} when it is not null. */
    public RxeQp(QpHost host, int qpn, RxePd pd, RxeCq sendCq, RxeCq recvCq,
            QpCaps caps, boolean sqSigAll, io.rxe4j.verbs.QpType type, RxeSrq srq,
            java.util.function.Function<RxeQp, QpEngine> engines) {
        this.type = type;
        this.srq = srq;
        this.srqSlot = srq != null ? new RecvWqe(srq.maxSge()) : null;
        this.host = host;
        this.scheduler = host.scheduler();
        this.qpn = qpn;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.caps = caps;
        this.sqSigAll = sqSigAll;
        this.sendQueue = new SendQueue(this, caps);
        this.recvQueue = new RecvQueue(caps.maxRecvWr(), caps.maxRecvSge());
        this.validator = new WrValidator(qpn, caps, pd, host.mrs(), type, host.activeMtu().bytes());
        this.completions = new Completions(this, sendQueue, recvQueue);
        this.opfn = new Opfn(this);
        this.engine = engines.apply(this);
    }

    /** @return this QP's counters, named like the device's ({@code rdma statistic qp} in rdma-core) */
    public Counters counters() {
        return counters;
    }

    /**
     * The lane's service queue takes this QP (loop only).
     *
     * @return false if the QP was queued already (it keeps its place), true if it joins now
     */
    public boolean enterServiceQueue() {
        if (serviceQueued) {
            return false;
        }
        serviceQueued = true;
        return true;
    }

    /** The lane's service queue let this QP go, for its turn (loop only). */
    public void leaveServiceQueue() {
        serviceQueued = false;
    }

    @Override
    public BudgetWaiter.Place budgetPlace() {
        return budgetPlace;
    }

    /** The peer budget gave this QP a turn: it runs on the lane's service queue, after the QPs already there. */
    @Override
    public void onBudgetTurn() {
        host.requestService(this);
    }

    @Override
    public java.util.Map<String, Long> counterSnapshot() {
        return counters.snapshot();
    }

    /** @return the lane (event loop) and device this QP runs on ({@link QpHost}) */
    public QpHost host() {
        return host;
    }

    /** @return this QP's engines (built by the device; {@code io.rxe4j.core.device.QpRunner}) */
    public QpEngine engine() {
        return engine;
    }

    /** @return the 24-bit QPN */
    public int qpn() {
        return qpn;
    }

    /** @return the QP type (RC or UD) */
    public io.rxe4j.verbs.QpType type() {
        return type;
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
        return attr.av;
    }

    /** @return the peer QPN */
    public int destQpn() {
        return attr.destQpn;
    }

    /** @return the path MTU in bytes */
    /** @return the requester's cursor: the next SQ index it works on (loop only) */
    public long sqReq() {
        return sqReq;
    }

    /** Sets the requester's cursor (a rewind or a completion moves it; loop only). */
    public void sqReq(long index) {
        sqReq = index;
    }

    /** Moves the requester's cursor to the next WQE (loop only). */
    public void advanceSqReq() {
        sqReq++;
    }

    /** @return whether a TID WRITE was ever posted (sticky; published by the release store of sqProd) */
    public boolean tidWritesPosted() {
        return tidWritesPosted;
    }

    /** @return the path MTU attribute in bytes (256..4096) */
    public int pmtu() {
        return attr.pathMtu.bytes();
    }

    /** @return the path MTU in bytes (256 until modify_qp sets it) */
    public int pathMtuBytes() {
        return attr.pathMtu.bytes();
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
    /**
     * Applies {@code attr} on the calling thread, for a QP that no loop can reach yet (the device's
     * GSI QP, before it is in the QP table): the same checks and effects as {@link #modify}.
     */
    public void modifyUnpublished(QpAttr attr) {
        applyModify(attr, attr.mask());
    }

    public void modify(QpAttr attr) {
        int mask = attr.mask();
        if (destroyed) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(qpn) + " was destroyed");
        }
        host.callOnLoop(() -> {
            applyModify(attr, mask);
            return null;
        });
    }

    /** Checks and stores the attributes, tells the engines about the new values, then changes state. Loop. */
    private void applyModify(QpAttr a, int mask) {
        QpState from = state;
        QpState to = QpAttributes.check(type, a, mask, from);
        attr.apply(a, mask);
        engine.applyAttributes(attr, mask);
        if (to != from) {
            enterState(to);
        }
        if (state != QpState.RESET && type == io.rxe4j.verbs.QpType.RC) {
            opfn.onModify((mask & QpAttrMask.STATE) != 0 && to == QpState.RTS);
        }
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
        return host.callOnLoop(() -> attr.copyTo(out, state));
    }

    /** Drains everything without completions and returns to RESET ({@code rxe-facts.md} §6.8). */
    private void reset() {
        state = QpState.RESET;
        peerExtensions = 0;
        opfn.reset();
        engine.reset();
        sqReq = sendQueue.reset();
        recvQueue.reset();
        srqTaken = false; // a WQE taken from the SRQ is dropped without a completion, as the RQ's are
    }

    // =====================================================================================
    // posting
    // =====================================================================================

    /**
     * {@code ibv_post_send}: validates the WR ({@link WrValidator#validatePost}) and queues a copy of it.
     *
     * @throws IllegalStateException if the QP's state forbids posting, or the send queue is full (ENOMEM)
     * @throws IllegalArgumentException for an invalid WR, named like {@code bad_wr}
     */
    public void postSend(SendWr wr) {
        if (!tryPostSend(wr)) {
            throw new IllegalStateException("send queue full (" + caps.maxSendWr()
                    + " WRs outstanding) on QP 0x" + Integer.toHexString(qpn));
        }
    }

    /**
     * The checks of {@link #tryPostSend} without posting: the QP's state and the WR's validity
     * ({@link WrValidator}).
     *
     * @throws IllegalStateException if the QP is not in RTS, SQD, SQE or ERR
     * @throws IllegalArgumentException for an invalid WR
     */
    public void validatePost(SendWr wr) {
        validator.validatePost(state, wr);
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
        int posted = sendQueue.postAll(wrs, from, to);
        if (posted > 0) {
            kick();
        }
        return posted;
    }

    /**
     * As {@link #postSend}, but a full send queue returns false instead of throwing (no
     * allocation on that path).
     *
     * @return false if the send queue is full; the WR was not posted
     */
    public boolean tryPostSend(SendWr wr) {
        validator.validatePost(state, wr);
        if (!sendQueue.tryPost(wr)) {
            return false;
        }
        kick();
        return true;
    }

    /**
     * A UD send to {@code peer} without an address handle (the library's own datagrams: the GSI QP's
     * MADs): as {@link #tryPostSend} with the destination given here. Any thread.
     *
     * @return false if the send queue is full
     */
    public boolean tryPostDatagram(SendWr wr, InetSocketAddress peer) {
        if (type != io.rxe4j.verbs.QpType.UD || peer == null) {
            throw new IllegalArgumentException("a datagram needs a UD QP and a peer, QP 0x" + Integer.toHexString(qpn)
                    + " is " + type + ", peer " + peer);
        }
        validator.validatePost(state, wr, peer);
        if (!sendQueue.tryPost(wr, peer)) {
            return false;
        }
        kick();
        return true;
    }

    /**
     * Posts the hidden OPFN request into the reserved SQ slot ({@link SendQueue#postOpfn}). Loop only.
     *
     * @return false if the QP is not in RTS or the reserved slot is in use
     */
    public boolean postOpfn(long word) {
        if (state != QpState.RTS || !sendQueue.postOpfn(word)) {
            return false;
        }
        kick();
        return true;
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
            throw new IllegalStateException("receive queue full (" + recvQueue.capacity()
                    + " WRs outstanding) on QP 0x" + Integer.toHexString(qpn));
        }
    }

    /**
     * As {@link #postRecv}, but a full receive queue returns false instead of throwing.
     *
     * @return false if the receive queue is full; the WR was not posted
     */
    public boolean tryPostRecv(RecvWr wr) {
        if (srq != null) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(qpn) + " takes its receive WQEs from its SRQ");
        }
        long total = validator.validateRecv(state, wr);
        if (!recvQueue.tryPost(wr, total)) {
            return false;
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
    public void kick() {
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
                host.internalError(this, what, e);
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
        engine.onService();
    }

    private void onKick() {
        kickScheduled.set(false);
        if (destroyed) {
            return;
        }
        if (state == QpState.ERR) {
            flushQueues();
        } else {
            engine.run();
        }
        host.flushTransport();
    }

    /**
     * Sends the WQEs posted but not yet started, now rather than on the queued kick: a device that
     * closes from its own loop thread (virtual time) sends the MADs its connection manager queued
     * while closing (DREQ, REJ) before QP1 is destroyed. Does nothing once destroyed or in ERR. Loop only.
     */
    public void sendPendingNow() {
        if (destroyed || state == QpState.ERR) {
            return;
        }
        engine.run();
        host.flushTransport();
    }

    /** @return the SQ producer index (acquire: every WQE before it is fully written). Loop. */
    public long sqProducer() {
        return sendQueue.producer();
    }

    /** @return the SQ consumer index: the oldest send WQE not yet completed. Loop. */
    public long sqCompleted() {
        return sendQueue.completed();
    }

    /** Publishes the SQ consumer index {@code v}. Loop. */
    public void advanceSqCompleted(long v) {
        sendQueue.advanceCompleted(v);
    }

    /** Retires the send WQE at the SQ consumer index ({@link SendQueue#retireHead}). Loop. */
    public void retireSqHead(SendWqe w, long v) {
        sendQueue.retireHead(w, v);
    }

    /** @return the send WQE of SQ index {@code index}. Loop. */
    public SendWqe sqAt(long index) {
        return sendQueue.at(index);
    }

    /**
     * @return the next receive WQE without consuming it, or null if there is none. With an SRQ the WQE
     *     is taken from it now (copied into this QP and removed from the SRQ, {@code
     *     verbs-surface-facts.md} §4.2 rule 5) and stays this QP's until {@link #consumeRecv()}. Loop.
     */
    public RecvWqe peekRecv() {
        if (srq == null) {
            return recvQueue.peek();
        }
        if (!srqTaken) {
            if (!srq.takeInto(srqSlot)) {
                return null;
            }
            srqTaken = true;
        }
        return srqSlot;
    }

    /** Consumes the receive WQE returned by {@link #peekRecv()}. Loop. */
    public void consumeRecv() {
        if (srq == null) {
            recvQueue.consume();
        } else {
            srqTaken = false;
        }
    }

    /** @return whether this QP takes its receive WQEs from a shared receive queue */
    public boolean hasSrq() {
        return srq != null;
    }

    /** With an SRQ: the WQE taken for the message under way, or null (the ERR flush completes it). Loop. */
    public RecvWqe takenSrqWqe() {
        return srq != null && srqTaken ? srqSlot : null;
    }

    /** The taken SRQ WQE was completed by the flush. Loop. */
    public void clearTakenSrqWqe() {
        srqTaken = false;
    }

    /**
     * Posts a completion for a send WQE ({@link Completions#completeSend}); on CQ overflow the
     * caller moves the QP to ERR. Loop.
     *
     * @return false if the CQ overflowed
     */
    public boolean completeSend(long wrId, WrOpcode op, int sendFlags, long length, int immData, WcStatus status,
            int vendorErr) {
        return completions.completeSend(wrId, op, sendFlags, length, immData, status, vendorErr);
    }

    /**
     * Posts a receive completion for a consumed receive WQE ({@link Completions#completeRecv}). Loop.
     *
     * @return false if the CQ overflowed
     */
    public boolean completeRecv(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int flags, int imm) {
        return completions.completeRecv(wrId, status, opcode, byteLen, flags, imm, false);
    }

    /**
     * As {@link #completeRecv(long, WcStatus, WcOpcode, int, int, int)}; {@code solicited} is the
     * SE bit of the message's last packet (for a solicited-only armed CQ).
     */
    public boolean completeRecv(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int flags, int imm,
            boolean solicited) {
        return completions.completeRecv(wrId, status, opcode, byteLen, flags, imm, solicited);
    }

    /**
     * A UD receive completion: as {@link #completeRecv(long, WcStatus, WcOpcode, int, int, int,
     * boolean)} with the sender's QPN ({@code wc.src_qp}, the DETH source QP). Loop.
     */
    public boolean completeDatagram(long wrId, int byteLen, int flags, int imm, boolean solicited, int srcQp) {
        return completions.completeDatagram(wrId, byteLen, flags, imm, solicited, srcQp);
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
            host.onQpError(this, reason);
        }
        state = QpState.ERR;
        engine.stop();
        flushQueues();
        if (srq != null) {
            host.onLastWqeReached(this, reason); // it takes nothing more from its SRQ (§4.3)
        }
    }

    /**
     * Moves the QP to ERR after an unexpected exception in the engine (see {@link
     * QpHost#internalError}): the WQE being worked on completes with its real status if one was
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

    /** The ERR flush of both queues ({@link Completions#flush}). Loop. */
    private void flushQueues() {
        completions.flush();
    }

    /**
     * @return a one-line snapshot of the engine state (PSNs, queue indices, the head send WQE), for
     *     diagnostics; read without synchronisation, so it may be slightly inconsistent off the loop
     */
    public String debugState() {
        long comp = sqCompleted();
        StringBuilder sb = new StringBuilder("QP 0x").append(Integer.toHexString(qpn)).append(' ').append(state);
        engine.appendSenderState(sb);
        sb.append(" sq[comp=").append(comp).append(" req=").append(sqReq).append(" prod=").append(sqProducer())
                .append(']').append(' ');
        engine.appendReceiverState(sb);
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
    io.rxe4j.verbs.TidRdmaParams tidRdmaLocal() {
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
     * @return {@link #EXT_HOLDS_OUT_OF_ORDER} and {@link #EXT_SELECTIVE_NAK} when the device runs
     *     adaptive recovery (its responder holds out-of-order requests and can name what it misses), else 0
     */
    @Override
    public int localExtensions() {
        return host.config().adaptiveRecovery() ? EXT_HOLDS_OUT_OF_ORDER | EXT_SELECTIVE_NAK : 0;
    }

    /**
     * Stores the extensions agreed with the peer (on the loop, so the engines see them with the
     * next packet). The requester then treats the peer as holding out-of-order requests from the
     * first NAK on, without learning it ({@code RequesterRepair}).
     *
     * @throws IllegalArgumentException if {@code bits} holds a bit {@link #localExtensions()} lacks
     * @throws IllegalStateException if the QP was destroyed
     */
    @Override
    public void setPeerExtensions(int bits) {
        if ((bits & ~localExtensions()) != 0) {
            throw new IllegalArgumentException("peer extensions 0x" + Integer.toHexString(bits)
                    + " include bits this device does not offer (0x" + Integer.toHexString(localExtensions()) + ")");
        }
        if (destroyed) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(qpn) + " was destroyed");
        }
        host.callOnLoop(() -> {
            peerExtensions = bits;
            engine.onPeerExtensions();
            return null;
        });
    }

    @Override
    public int peerExtensions() {
        return peerExtensions;
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
            return host.callOnLoop(() -> {
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
        }
        engine.failOnSendRefused(response, psn, why);
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
        engine.stop();
        state = QpState.RESET;
    }

    /** @return whether {@link #destroyOnLoop()} ran */
    public boolean isDestroyed() {
        return destroyed;
    }

    /** Entry point for a request packet addressed to this QP. Loop only. */
    public void onRequest(PacketView pkt) {
        engine.onRequest(pkt);
    }

    /**
     * Entry point for a UD datagram addressed to this QP, from {@code sender} to {@code recipient}
     * (the GRH of the receive buffer names both). Loop only.
     */
    public void onDatagram(PacketView pkt, InetSocketAddress sender, InetSocketAddress recipient) {
        engine.onDatagram(pkt, sender, recipient);
    }

    /** A request to this QP arrived marked CE (ECN on): the responder may send a CNP. Loop only. */
    public void onCongestionExperienced() {
        if (state == QpState.RTR || state == QpState.RTS || state == QpState.SQD || state == QpState.SQE) {
            engine.onCongestionExperienced();
        }
    }

    /** An rxe4j selective NAK for this QP's requester (the peer agreed EXT_SELECTIVE_NAK). Loop only. */
    public void onSelectiveNak(PacketView pkt) {
        engine.onSelectiveNak(pkt);
    }

    /** A CNP for this QP's requester arrived (ECN on): its congestion window shrinks. Loop only. */
    public void onCnp() {
        engine.onCnp();
    }

    /** Entry point for a response packet addressed to this QP. Loop only. */
    public void onResponse(PacketView pkt) {
        engine.onResponse(pkt);
    }

    /** Entry point for a TID READ_RESP addressed (by verbs_qp) to this QP. Loop only. */
    public void onTidReadResponse(PacketView pkt) {
        engine.onTidReadResponse(pkt);
    }

    /** Entry point for TID WRITE_DATA(_LAST) and RESYNC (they bypass the RC request queue). Loop only. */
    public void onTidWriteData(PacketView pkt) {
        engine.onTidWriteData(pkt);
    }

    /** Entry point for a TID WRITE_RESP or TID ACK addressed to this QP. Loop only. */
    public void onTidWriteResponse(PacketView pkt) {
        engine.onTidWriteResponse(pkt);
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
        engine.onTidKick();
        host.flushTransport();
    }

    /** Frees every TID entry, flow and timer of this QP (ERR, RESET, destroy). Loop only. */
    public void releaseTid() {
        engine.releaseTid();
    }

    @Override
    public String toString() {
        return "QP{qpn=0x" + Integer.toHexString(qpn) + ", state=" + state + ", " + pd + '}';
    }
}
