package io.rxe4j.core.rc;

import io.rxe4j.core.qp.RecvWqe;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.verbs.Counter;
import io.rxe4j.core.wire.DropReason;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import java.lang.invoke.VarHandle;

/**
 * The responder ({@code rxe_resp.c}; {@code rxe-facts.md} §1.3, §4.2, §5.5–§5.7, §6.3, §9.3): a
 * state machine with rxe's named states, one method per state ({@link State}): CHK_PSN →
 * CHK_OP_SEQ → CHK_OP_VALID → CHK_RESOURCE → CHK_LENGTH → CHK_RKEY (the checks, {@link
 * ResponderChecks}) → EXECUTE → COMPLETE → ACKNOWLEDGE, or READ_REPLY / ATOMIC_REPLY /
 * ATOMIC_WRITE_REPLY / PROCESS_FLUSH. Class C errors (the ERR_* states) send a NAK with the
 * packet's PSN and move the QP to ERR; out-of-sequence requests get one PSN-sequence NAK per gap;
 * duplicates are answered without re-executing, a duplicate SEND/WRITE with an ACK of its own PSN
 * ({@code extensions.md} §6). Requests of an extension (TID RDMA) pass the checks and are executed
 * by its {@link ResponderHook}.
 *
 * <p>Size (about 740 lines): one method per state of {@link State}, as {@code rxe_resp.c}; the
 * checks ({@link ResponderChecks}), READ replies ({@link ReadReply}), duplicates ({@link
 * DuplicateRequests}) and packet building ({@link ResponsePackets}) are apart already. What is left
 * writes the responder's own sequence state (ePsn, MSN, the receive WQE in use), which splitting
 * further would spread over several classes.
 *
 * <p>Bounded output ({@code extensions.md} §6): a READ reply (or its replay) is sent from a
 * cursor in its responder resource, at most {@link #REPLY_BATCH} packets per turn, and only while
 * the transport is writable; between turns the device serves its other QPs. Requests that arrive
 * while a reply is under way wait, in order, in a bounded queue ({@link #MAX_WAITING} packets;
 * beyond it they are dropped and counted, and the requester resends them), except a duplicate of
 * the READ being answered, which moves the cursor to the PSN it asks for (as rxe does). A reply
 * whose memory becomes unreadable (MR deregistered) ends with NAK 0x62 carrying the request's PSN.
 * Loop only.
 */
public final class Responder implements ResponderOps {
    /** rxe's {@code enum resp_states}, minus the packet-queue and cleanup states (one packet per call). */
    public enum State {
        /** Classify the PSN against the expected PSN. */
        CHK_PSN,
        /** A FIRST/ONLY outside a message, MIDDLE/LAST inside one. */
        CHK_OP_SEQ,
        /** The QP grants the access the opcode needs. */
        CHK_OP_VALID,
        /** A receive WQE, or a responder resource. */
        CHK_RESOURCE,
        /** The payload rule of the opcode. */
        CHK_LENGTH,
        /** The R_Key, range and alignment of the target. */
        CHK_RKEY,
        /** Place SEND/WRITE data; hand other requests to their state (or to the extension). */
        EXECUTE,
        /** The receive completion of a SEND or WRITE WITH IMMEDIATE, MSN + 1, at a message's end. */
        COMPLETE,
        /** Record a READ and start its reply. */
        READ_REPLY,
        /** Execute an atomic (or answer the OPFN request) and record it. */
        ATOMIC_REPLY,
        /** Store an ATOMIC WRITE and record it. */
        ATOMIC_WRITE_REPLY,
        /** Make earlier placements visible / persistent and record the FLUSH. */
        PROCESS_FLUSH,
        /** Accept the request: ACK if asked, ATOMIC ACKNOWLEDGE, or the empty READ RESPONSE. */
        ACKNOWLEDGE,
        /** Behind the expected PSN: answer again without executing again. */
        DUPLICATE_REQUEST,
        /** Ahead of the expected PSN: one PSN-sequence NAK per gap. */
        ERR_PSN_OUT_OF_SEQ,
        /** MIDDLE or LAST outside a message (NAK 0x61). */
        ERR_MISSING_OPCODE_FIRST,
        /** Not MIDDLE/LAST of the message in progress (NAK 0x61). */
        ERR_MISSING_OPCODE_LAST,
        /** The QP does not grant the access, or the opcode is not valid here (NAK 0x61). */
        ERR_UNSUPPORTED_OPCODE,
        /** READ/atomic/ATOMIC WRITE with max_dest_rd_atomic 0 (NAK 0x61). */
        ERR_TOO_MANY_RDMA_ATM_REQ,
        /** No receive WQE: RNR NAK with min_rnr_timer. */
        ERR_RNR,
        /** A payload or DMA length the request may not have (NAK 0x61). */
        ERR_LENGTH,
        /** A misaligned atomic or ATOMIC WRITE (NAK 0x61; A19.4.2). */
        ERR_MISALIGNED_ATOMIC,
        /** Another invalid request (NAK 0x61; a FLUSH selectivity rxe4j does not know). */
        ERR_INVALID_REQUEST,
        /** The R_Key, its range or rights, or the memory under it (NAK 0x62). */
        ERR_RKEY_VIOLATION,
        /** The receive WQE's SGEs cannot take the data (NAK 0x63). */
        ERR_MALFORMED_WQE,
        /** The receive CQ overflowed: the QP enters ERR. */
        ERR_CQ_OVERFLOW,
        /**
         * A SEND_WITH_INV whose IETH rkey this QP may not invalidate (rxe's class J): the receive WQE
         * completes with REM_INV_REQ_ERR, the packet is acknowledged (no NAK), the QP enters ERR.
         */
        ERR_INVALIDATE_RKEY,
        /** Finished with this packet. */
        DONE
    }

    /** Most READ response packets one turn of a QP produces. */
    static final int REPLY_BATCH = 16;
    /** Most request packets held while a READ reply is under way. */
    static final int MAX_WAITING = 256;

    /** The message in progress (rxe's {@code resp.opcode}). */
    enum InMessage { NONE, SEND, WRITE }

    private final RxeQp qp;
    private final Counters counters;
    private final ResponderResources resources = new ResponderResources();
    private final ResponderChecks checks;
    private ResponderHook hook = ResponderHook.NONE;

    /** Expected PSN (resp.psn). */
    int ePsn;
    /** Message sequence number, 24-bit. */
    private int msn;
    /** A PSN-sequence NAK was sent for the current gap. */
    boolean nakSent;
    InMessage inMessage = InMessage.NONE;
    /** The receive WQE of the SEND / WRITE WITH IMMEDIATE in progress, or null. */
    RecvWqe recv;
    long recvOffset;
    private RxeMr writeMr;
    private long writeVa;
    private long writeResid;
    private long writeLength;
    /** The original value of the atomic being answered (ATOMIC_REPLY → ACKNOWLEDGE). */
    private long atomicOriginal;
    /** The states the last packet passed through, one bit per {@link State} ordinal (for tests and diagnostics). */
    private long path;
    /** The READ reply being sent (rxe's {@code qp->resp.res}). */
    private final ReadReply reply;
    /** Builds and sends ACK/NAK, ATOMIC ACKNOWLEDGE, the empty READ RESPONSE and CNP. */
    private final ResponsePackets packets;
    /** Answers duplicates from the responder resources. */
    private final DuplicateRequests duplicates;
    /** Requests that arrived while the {@link #reply} was under way (retained slices), oldest first. */
    private final java.util.ArrayDeque<ByteBuf> waiting = new java.util.ArrayDeque<>();
    private final PacketView waitingView = new PacketView();
    /** A READ waits for the TID WRITEs being received (the responder half of READ-after-WRITE, §7). */
    private boolean interlocked;
    /** Adaptive recovery ({@code DeviceConfig.adaptiveRecovery}): hold out-of-order requests, NAK late. */
    private final boolean adaptive;
    /** Out-of-order requests held until their gap fills (adaptive recovery; allocated on first use). */
    private io.rxe4j.core.policy.ReorderBuffer held;
    /** The deadline of the current gap: its PSN-sequence NAK (adaptive recovery). */
    private final io.rxe4j.core.policy.GapTimer nakTimer;
    /** The window of a responder whose device has no path to the peer yet (no samples: the default). */
    private final io.rxe4j.core.policy.ReorderWindow ownWindow =
            new io.rxe4j.core.policy.ReorderWindow(new io.rxe4j.core.policy.RttEstimator());
    /** The PSN of the last sequence NAK while it may still turn out spurious, or -1. */
    private int nakPsn = -1;
    /** Held packets are being processed: ACKs of SEND/WRITE packets are coalesced into one at the end. */
    private boolean draining;
    /** The PSN of the last SEND/WRITE packet processed during the drain (its ACK is due), or -1. */
    private int pendingAckPsn = -1;
    private final RcEngines rc;
    /**
     * Held packets are dropped when their gap lasts longer than this: 1 s, in nanoseconds (the time
     * bound of the reorder buffer; its packet and byte bounds are {@code ReorderBuffer}'s).
     */
    static final long HOLD_MAX_NANOS = 1_000_000_000L;

    /** The responder of {@code qp} ({@code rc}: its fellow engines; the responder needs neither today). */
    public Responder(RxeQp qp, RcEngines rc) {
        this.qp = qp;
        this.counters = qp.counters;
        this.checks = new ResponderChecks(this, qp);
        this.reply = new ReadReply(this, qp);
        this.packets = new ResponsePackets(this, qp);
        this.duplicates = new DuplicateRequests(this, qp, resources, reply, packets);
        this.rc = rc;
        this.adaptive = qp.host().config().adaptiveRecovery();
        this.nakTimer = new io.rxe4j.core.policy.GapTimer(qp.scheduler, qp.guard("sequence NAK timer", this::onGapTimeout));
    }

    /** Registers the extension that executes some requests (TID RDMA); {@link ResponderHook#NONE} for none. */
    public void hook(ResponderHook h) {
        this.hook = h;
    }

    ResponderHook hook() {
        return hook;
    }

    /** @return a one-line summary; read without synchronisation (may be slightly inconsistent off the loop) */
    public String debugState() {
        ResponderResources.Entry r = reply.entry();
        return "resp{epsn=0x" + Integer.toHexString(ePsn) + " msn=" + msn + " in=" + inMessage + " nakSent=" + nakSent
                + (r != null ? " reply@0x" + Integer.toHexString(r.curPsn) + " resid=" + r.resid : "")
                + " waiting=" + waiting.size() + (held != null && !held.isEmpty() ? " held=" + held.size() : "") + "}";
    }

    /** @return whether a READ reply is under way or requests wait behind one */
    boolean busy() {
        return reply.entry() != null || !waiting.isEmpty() || interlocked;
    }

    /** Sets the next request PSN expected (modify_qp rq_psn, 24 bits). */
    public void setExpectedPsn(int p) {
        ePsn = p;
    }

    /** Sizes the READ/atomic responder resources to max_dest_rd_atomic ({@code n}, at least 1 kept). */
    public void resizeResources(int n) {
        resources.resize(n);
    }

    /** Back to the state of a new QP (RESET): ePsn = rq_psn, MSN 0, the message in progress and the resources cleared. */
    public void reset() {
        ePsn = qp.attr.rqPsn();
        msn = 0;
        nakSent = false;
        abortMessage();
        resources.clear();
    }

    /** Drops the message in progress, the READ reply under way and the waiting requests (ERR, RESET, destroy). */
    public void abortMessage() {
        interlocked = false;
        inMessage = InMessage.NONE;
        recv = null;
        writeMr = null;
        endReply();
        ByteBuf b;
        while ((b = waiting.poll()) != null) {
            b.release();
        }
        if (held != null) {
            held.clear();
        }
        nakTimer.close();
        draining = false;
        pendingAckPsn = -1;
        nakPsn = -1;
        selectiveHigh = -1;
        namedRanges = 0;
    }

    @Override
    public void endReply() {
        reply.end();
    }

    /**
     * Entry point for a request packet: processed at once, or, while a READ reply is under way,
     * queued behind it (or, for a duplicate of that READ, turned into a new position of its cursor).
     */
    public void onRequest(PacketView pkt) {
        if (hook.actsAtOnce(pkt, ePsn)) {
            // a duplicate TID WRITE request only re-sends WRITE_RESPs of an entry being received
            // (tid_rdma_rcv_error acts at once): it must not wait behind a READ reply or behind a READ
            // that itself waits for this very TID WRITE (the §7 interlock)
            counters.inc(Counter.DUPLICATE_REQUEST);
            hook.duplicate(pkt, pkt.psn());
            return;
        }
        if (!busy() && heldByInterlock(pkt)) {
            interlocked = true;
            counters.inc(Counter.TID_INTERLOCK_WAITS);
        }
        if (busy()) {
            if (reply.entry() != null && reply.retarget(pkt, ePsn)) {
                return;
            }
            if (reply.entry() != null && pkt.opcode() == Opcode.RC_RDMA_READ_REQUEST && Psn.diff(pkt.psn(), ePsn) < 0) {
                ResponderResources.Entry e = resources.find(ResponderResources.Type.READ, pkt.psn());
                if (e != null && reply.repairOther(pkt, e)) {
                    return; // a missing part of an earlier READ: sent within the reply under way
                }
            }
            if (waiting.size() >= MAX_WAITING) {
                counters.drop(DropReason.RESPONDER_BUSY);
                return;
            }
            waiting.add(pkt.buf().retainedSlice(pkt.bthIndex(), pkt.length()));
            return;
        }
        if (held != null && pkt.psn() == ePsn && !held.isEmpty()) {
            observeReorder();
            if (held.holds(Psn.next(ePsn))) {
                draining = true; // the gap fills: one ACK after the held packets
            }
        }
        process(pkt);
        drainHeld();
    }

    /**
     * One turn of this QP's responder output (called by the device, fairly with its other QPs):
     * the next batch of the READ reply, then the requests that waited behind it until another
     * reply starts.
     */
    public void onService() {
        if (reply.entry() != null) {
            reply.sendBatch();
        }
        int n = 0;
        while (reply.entry() == null && !interlocked && !waiting.isEmpty() && n++ < MAX_WAITING) {
            drainHeld(); // held packets now in sequence come before the requests that arrived later
            if (reply.entry() != null || interlocked) {
                break; // a held READ started its reply: the rest waits for it
            }
            ByteBuf b = waiting.peek();
            if (waitingView.parse(b, b.readerIndex(), b.readableBytes()) == null && heldByInterlock(waitingView)) {
                interlocked = true; // it waits on, and everything behind it
                counters.inc(Counter.TID_INTERLOCK_WAITS);
                break;
            }
            waiting.poll();
            try {
                if (waitingView.parse(b, b.readerIndex(), b.readableBytes()) == null) {
                    if (held != null && waitingView.psn() == ePsn && !held.isEmpty()) {
                        observeReorder();
                        if (held.holds(Psn.next(ePsn))) {
                            draining = true;
                        }
                    }
                    process(waitingView);
                } else {
                    counters.drop(DropReason.OTHER);
                }
            } finally {
                b.release();
            }
            drainHeld();
        }
        drainHeld();
        if (busy() && qp.state() != QpState.ERR) {
            qp.host().requestService(qp);
        }
    }

    // ------------------------------------------------------------------ for the extension (ResponderOps)

    @Override
    public ResponderResources resources() {
        return resources;
    }

    @Override
    public void accept(int psn, int npkts) {
        msn = Psn.next(msn);
        ePsn = Psn.add(psn, npkts);
    }

    /** @return the next request PSN expected (resp.psn) */
    @Override
    public int expectedPsn() {
        return ePsn;
    }

    /** @return the current MSN (24 bits), for the AETH of TID responses */
    @Override
    public int msn() {
        return msn;
    }

    /**
     * The TID WRITEs being received are done: READs held by the READ-after-WRITE interlock (§7) and
     * everything queued behind them may go.
     */
    public void releaseInterlock() {
        if (interlocked) {
            interlocked = false;
            qp.host().requestService(qp);
        }
    }

    /** @return whether {@code pkt} is a READ or TID READ that must wait for the TID WRITEs being received (§7) */
    private boolean heldByInterlock(PacketView pkt) {
        return hook.holds(pkt, ePsn);
    }

    private void process(PacketView pkt) {
        if (draining && pendingAckPsn != -1) {
            Opcode.Operation o = pkt.opcode().operation();
            if (o != Opcode.Operation.SEND && o != Opcode.Operation.WRITE) {
                flushPendingAck(); // its response follows the ACK of the SEND/WRITE packets before it
            }
        }
        checks.start(pkt);
        long visited = 0;
        State s = State.CHK_PSN;
        try {
            while (s != State.DONE) {
                visited |= 1L << s.ordinal();
                s = switch (s) {
                    case CHK_PSN -> checks.checkPsn();
                    case CHK_OP_SEQ -> checks.checkOpSeq();
                    case CHK_OP_VALID -> checks.checkOpValid();
                    case CHK_RESOURCE -> checks.checkResource();
                    case CHK_LENGTH -> checks.checkLength();
                    case CHK_RKEY -> checks.checkRkey();
                    case EXECUTE -> execute();
                    case COMPLETE -> complete();
                    case READ_REPLY -> readReply();
                    case ATOMIC_REPLY -> atomicReply();
                    case ATOMIC_WRITE_REPLY -> atomicWriteReply();
                    case PROCESS_FLUSH -> processFlush();
                    case ACKNOWLEDGE -> acknowledge();
                    case DUPLICATE_REQUEST -> duplicateRequest();
                    case ERR_PSN_OUT_OF_SEQ -> errPsnOutOfSeq();
                    case ERR_MISSING_OPCODE_FIRST, ERR_MISSING_OPCODE_LAST, ERR_UNSUPPORTED_OPCODE,
                            ERR_TOO_MANY_RDMA_ATM_REQ, ERR_LENGTH, ERR_MISALIGNED_ATOMIC, ERR_INVALID_REQUEST ->
                            errInvalidRequest();
                    case ERR_RNR -> errRnr();
                    case ERR_RKEY_VIOLATION -> errRkeyViolation();
                    case ERR_MALFORMED_WQE -> errMalformedWqe();
                    case ERR_CQ_OVERFLOW -> errCqOverflow();
                    case ERR_INVALIDATE_RKEY -> errInvalidateRkey();
                    case DONE -> State.DONE;
                };
            }
        } finally {
            path = visited;
            checks.end();
        }
    }

    /** @return whether the last packet processed passed through state {@code s} (tests, diagnostics) */
    boolean passed(State s) {
        return (path & (1L << s.ordinal())) != 0;
    }

    // ------------------------------------------------------------------ execute states

    /** EXECUTE: SEND and WRITE data are placed here; the other requests go to their own state. */
    private State execute() {
        return switch (checks.op.operation()) {
            case SEND -> executeSend();
            case WRITE -> executeWrite();
            case READ -> State.READ_REPLY;
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> State.ATOMIC_REPLY;
            case ATOMIC_WRITE -> State.ATOMIC_WRITE_REPLY;
            case FLUSH -> State.PROCESS_FLUSH;
            default -> {
                if (checks.op.transport() != Opcode.Transport.TID) {
                    yield State.ERR_UNSUPPORTED_OPCODE;
                }
                hook.execute(checks.pkt, checks.psn); // TID READ_REQ / WRITE_REQ: the extension's own states
                yield State.DONE;
            }
        };
    }

    private State executeSend() {
        int n = checks.payload;
        if (recvOffset + n > recv.length) {
            return State.ERR_LENGTH; // receive buffer too small (rxe-facts §5.6)
        }
        PacketView pkt = checks.pkt;
        if (!scatterToRecv(recv, recvOffset, pkt.buf(), pkt.payloadIndex(), n)) {
            return State.ERR_MALFORMED_WQE;
        }
        recvOffset += n;
        return State.COMPLETE;
    }

    /** Records the target of a WRITE from its first packet's RETH (CHK_RKEY). */
    void startWrite(RxeMr mr, long va, long len) {
        writeMr = mr;
        writeVa = va;
        writeResid = len;
        writeLength = len;
    }

    private State executeWrite() {
        Opcode op = checks.op;
        int n = checks.payload;
        int pmtu = checks.pmtu;
        boolean fits = writeResid > pmtu ? (n == pmtu && !op.isLast()) : (n == writeResid && op.isLast());
        if (!fits) {
            return State.ERR_LENGTH;
        }
        if (n > 0) {
            RxeMr mr = writeMr;
            if (mr == null || !mr.isValid()) {
                return State.ERR_RKEY_VIOLATION;
            }
            try {
                MemoryCopy.fromBuf(checks.pkt.buf(), checks.pkt.payloadIndex(), mr.segment(), mr.offset(writeVa), n);
            } catch (IllegalStateException closed) {
                return State.ERR_RKEY_VIOLATION;
            }
            writeVa += n;
            writeResid -= n;
        }
        return State.COMPLETE;
    }

    /** COMPLETE: at the end of a message, MSN + 1 and the receive completion (SEND, WRITE WITH IMMEDIATE). */
    private State complete() {
        PacketView pkt = checks.pkt;
        Opcode op = checks.op;
        boolean send = op.operation() == Opcode.Operation.SEND;
        if (!op.isLast()) {
            inMessage = send ? InMessage.SEND : InMessage.WRITE;
            return State.ACKNOWLEDGE;
        }
        if (send) {
            int flags = WorkCompletion.WC_GRH;
            int imm = 0;
            if (op.hasImmediate()) {
                flags |= WorkCompletion.WC_WITH_IMM;
                imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
            } else if (op.has(Header.IETH)) { // after the payload is placed (rxe_resp.c:execute)
                imm = io.rxe4j.core.wire.Ieth.rkey(pkt.buf(), pkt.index(Header.IETH));
                invalidateFailure = io.rxe4j.core.qp.LocalOps.invalidate(qp, imm);
                if (invalidateFailure != null) {
                    return State.ERR_INVALIDATE_RKEY;
                }
                flags |= WorkCompletion.WC_WITH_INV; // the rkey rides in the CQE's imm slot, as libibverbs' union
            }
            RecvWqe r = recv;
            recv = null;
            inMessage = InMessage.NONE;
            msn = Psn.next(msn);
            long wrId = r.wrId;
            qp.consumeRecv(); // free the slot first (see RxeQp.completeSend)
            if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) recvOffset, flags, imm,
                    Bth.se(pkt.buf(), pkt.bthIndex()))) {
                return State.ERR_CQ_OVERFLOW;
            }
            return State.ACKNOWLEDGE;
        }
        inMessage = InMessage.NONE;
        writeMr = null;
        msn = Psn.next(msn);
        if (op.hasImmediate()) {
            RecvWqe r = recv;
            recv = null;
            int imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
            long wrId = r.wrId;
            qp.consumeRecv();
            if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) writeLength,
                    WorkCompletion.WC_GRH | WorkCompletion.WC_WITH_IMM, imm, Bth.se(pkt.buf(), pkt.bthIndex()))) {
                return State.ERR_CQ_OVERFLOW;
            }
        }
        return State.ACKNOWLEDGE;
    }

    /** READ_REPLY: record the READ in a responder resource and start its reply stream. */
    private State readReply() {
        int p = checks.psn;
        long len = checks.length;
        int npkts = (int) Math.max(1, (len + checks.pmtu - 1) / checks.pmtu);
        ResponderResources.Entry e = resources.allocate(ResponderResources.Type.READ);
        e.firstPsn = p;
        e.lastPsn = Psn.add(p, npkts - 1);
        e.va = checks.va;
        e.length = len;
        e.rkey = checks.rkey;
        msn = Psn.next(msn);
        ePsn = Psn.add(p, npkts);
        startReply(e, checks.mr, checks.va, len, p, true);
        return State.DONE;
    }

    /**
     * ATOMIC_REPLY: execute the atomic on the MR (the original value is cached in a responder
     * resource for a duplicate), or answer the OPFN request ({@code tid-opfn-facts.md} §1.2: it
     * takes a resource too, hands the compare word to {@link io.rxe4j.core.qp.Opfn#onRequest} and
     * answers with this side's word); PSN and MSN advance by one.
     */
    private State atomicReply() {
        PacketView pkt = checks.pkt;
        int p = checks.psn;
        ByteBuf b = pkt.buf();
        if (checks.opfnRequest) {
            long word = AtomicEth.compare(b, pkt.index(Header.ATOMIC_ETH));
            ResponderResources.Entry e = resources.allocate(ResponderResources.Type.OPFN);
            e.original = qp.opfn.onRequest(word, e.original);
            e.firstPsn = p;
            e.lastPsn = p;
            atomicOriginal = e.original;
        } else {
            Opcode op = checks.op;
            RxeMr mr = checks.mr;
            long va = checks.va;
            int at = op == Opcode.RC_MASKED_COMPARE_SWAP ? pkt.index(Header.MASKED_CMP_SWAP_ETH)
                    : pkt.index(Header.ATOMIC_ETH);
            long original;
            try {
                original = switch (op) {
                    case RC_COMPARE_SWAP -> mr.compareAndExchange(va, AtomicEth.compare(b, at), AtomicEth.swapAdd(b, at));
                    case RC_FETCH_ADD -> mr.getAndAdd(va, AtomicEth.swapAdd(b, at));
                    case RC_MASKED_COMPARE_SWAP -> mr.maskedCompareAndSwap(va, MaskedCmpSwapEth.compare(b, at),
                            MaskedCmpSwapEth.compareMask(b, at), MaskedCmpSwapEth.swap(b, at),
                            MaskedCmpSwapEth.swapMask(b, at));
                    default -> mr.maskedFetchAndAdd(va, AtomicEth.swapAdd(b, at), AtomicEth.compare(b, at));
                };
            } catch (IllegalStateException closed) {
                return State.ERR_RKEY_VIOLATION;
            }
            record(ResponderResources.Type.ATOMIC, p).original = original;
            atomicOriginal = original;
        }
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        return State.ACKNOWLEDGE;
    }

    /**
     * ATOMIC_WRITE_REPLY ({@code rxe-facts.md} §7.2, {@code extensions.md} §3): one untorn 64-bit
     * release store. Earlier WRITEs of this QP were placed by this same loop thread before it
     * (program order), so a reader that acquires the new value sees them too.
     */
    private State atomicWriteReply() {
        long raw = checks.pkt.buf().getLong(checks.pkt.payloadIndex()); // the 8 wire bytes, big-endian read
        try {
            checks.mr.setLongRelease(checks.va, NATIVE_LE ? Long.reverseBytes(raw) : raw); // stored byte for byte
        } catch (IllegalStateException closed) {
            return State.ERR_RKEY_VIOLATION;
        }
        record(ResponderResources.Type.ATOMIC_WRITE, checks.psn);
        msn = Psn.next(msn);
        ePsn = Psn.next(checks.psn);
        return State.ACKNOWLEDGE;
    }

    /**
     * PROCESS_FLUSH ({@code rxe-facts.md} §7.3, {@code extensions.md} §4): global visibility is a
     * full fence after every earlier placement; persistence forces the range (or the whole MR) to
     * the storage device. The response is sent only after both returned.
     */
    private State processFlush() {
        VarHandle.fullFence(); // global visibility of every earlier placement
        int plt = Feth.placementType(checks.pkt.buf(), checks.pkt.index(Header.FETH));
        if ((plt & Feth.PLT_PERSISTENT) != 0) {
            try {
                checks.mr.persist(checks.va, checks.length);
            } catch (RuntimeException ioOrReleased) { // UncheckedIOException, or the MR was released
                return State.ERR_RKEY_VIOLATION;
            }
        }
        record(ResponderResources.Type.FLUSH, checks.psn);
        msn = Psn.next(msn);
        ePsn = Psn.next(checks.psn);
        return State.ACKNOWLEDGE;
    }

    /**
     * ACKNOWLEDGE: a SEND/WRITE packet advances the expected PSN and is ACKed if it asks; an
     * atomic is answered with ATOMIC ACKNOWLEDGE, ATOMIC WRITE and FLUSH with one zero-length READ
     * RESPONSE ONLY.
     */
    private State acknowledge() {
        int p = checks.psn;
        switch (checks.op.operation()) {
            case SEND, WRITE -> {
                ePsn = Psn.next(p);
                if (draining) {
                    pendingAckPsn = p; // coalesced: one ACK after the drain names how far it got
                } else if (checks.pkt.ackReq()) {
                    sendAck(Aeth.ACK_UNLIMITED, p);
                }
            }
            case ATOMIC_WRITE, FLUSH -> packets.sendEmptyReadResponse(p);
            default -> packets.sendAtomicAck(p, atomicOriginal);
        }
        return State.DONE;
    }

    /** Records a one-PSN request so that its duplicate is answered without executing it again. */
    private ResponderResources.Entry record(ResponderResources.Type type, int p) {
        ResponderResources.Entry e = resources.allocate(type);
        e.firstPsn = p;
        e.lastPsn = p;
        return e;
    }

    /** Whether a native {@code long} is little-endian. */
    private static final boolean NATIVE_LE = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    // ------------------------------------------------------------------ error states

    /** ERR_PSN_OUT_OF_SEQ: counted; one PSN-sequence NAK with the expected PSN per gap. */
    private State errPsnOutOfSeq() {
        counters.inc(Counter.OUT_OF_SEQ_REQUEST);
        if (adaptive && hold(checks.pkt)) {
            return State.DONE;
        }
        if (!nakSent) {
            nakSent = true;
            sendAck(Aeth.NAK_PSN_SEQ_ERROR, ePsn);
        }
        return State.DONE;
    }

    /** The class C errors answered with NAK 0x61 (invalid request). */
    private State errInvalidRequest() {
        nakError(Aeth.NAK_INVALID_REQUEST, checks.psn);
        return State.DONE;
    }

    /** ERR_RNR: no receive WQE; RNR NAK with this QP's min_rnr_timer. */
    private State errRnr() {
        rnrNak(qp.attr.minRnrTimer(), checks.psn);
        return State.DONE;
    }

    /** ERR_RKEY_VIOLATION: NAK 0x62 (remote access error). */
    private State errRkeyViolation() {
        Opcode.Operation o = checks.op.operation();
        int need = o == Opcode.Operation.READ ? Access.REMOTE_READ
                : o == Opcode.Operation.COMPARE_SWAP || o == Opcode.Operation.FETCH_ADD
                        || o == Opcode.Operation.MASKED_COMPARE_SWAP || o == Opcode.Operation.MASKED_FETCH_ADD
                        ? Access.REMOTE_ATOMIC : Access.REMOTE_WRITE;
        long len = need == Access.REMOTE_ATOMIC ? 8 : checks.length;
        nakDetail = checks.op + " with rkey 0x" + Integer.toHexString(checks.rkey) + ": "
                + qp.host().mrs().whyRefused(checks.rkey, qp.pd, qp.qpn(), checks.va, len, need);
        nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, checks.psn);
        return State.DONE;
    }

    /** What a NAK about to be sent is about (the failed check), or null; {@link #nakError} takes it. */
    private String nakDetail;

    /** ERR_MALFORMED_WQE: NAK 0x63 (remote operational error). */
    private State errMalformedWqe() {
        nakError(Aeth.NAK_REMOTE_OP_ERROR, checks.psn);
        return State.DONE;
    }

    /** Why the last SEND_WITH_INV's invalidation failed, for {@link #errInvalidateRkey}. */
    private String invalidateFailure;

    /**
     * ERR_INVALIDATE_RKEY ({@code verbs-surface-facts.md} §5.6, rxe's {@code RESPST_ERR_INVALIDATE_RKEY}):
     * the message was placed; its receive WQE completes with REM_INV_REQ_ERR, the packet is
     * acknowledged as rxe does (no NAK: the sender's SEND completes successfully), and the QP enters
     * ERR with the reason.
     */
    private State errInvalidateRkey() {
        PacketView pkt = checks.pkt;
        RecvWqe r = recv;
        recv = null;
        inMessage = InMessage.NONE;
        msn = Psn.next(msn);
        String reason = "SEND_WITH_INV at PSN 0x" + Integer.toHexString(checks.psn) + ": " + invalidateFailure;
        invalidateFailure = null;
        qp.noteErrorReason(reason);
        long wrId = r.wrId;
        qp.consumeRecv();
        qp.completeRecv(wrId, WcStatus.REM_INV_REQ_ERR, WcOpcode.RECV, (int) recvOffset, 0, 0);
        ePsn = Psn.next(checks.psn);
        if (pkt.ackReq()) {
            sendAck(Aeth.ACK_UNLIMITED, checks.psn);
        }
        qp.moveToError(reason);
        return State.DONE;
    }

    /** ERR_CQ_OVERFLOW: the receive CQ is full; the QP enters ERR. */
    private State errCqOverflow() {
        qp.moveToError("receive CQ overflow");
        return State.DONE;
    }

    // ------------------------------------------------------------------ duplicates

    /** DUPLICATE_REQUEST: counted, answered again from its record, never executed again. */
    private State duplicateRequest() {
        counters.inc(Counter.DUPLICATE_REQUEST);
        if (nakPsn != -1 && checks.psn == nakPsn) {
            nakPsn = -1; // the NAKed packet arrived twice: the late original and its resend
            window().onSpurious();
            counters.inc(Counter.SPURIOUS_NAKS);
        } else {
            onDuplicateOfNamed(checks.psn);
        }
        duplicates.answer(checks.pkt, checks.op, checks.psn);
        return State.DONE;
    }

    @Override
    public RxeMr remoteMr(int rkey, long va, long len, int access) {
        return qp.host().mrs().remote(rkey, qp.pd, qp.qpn(), va, len, access); // an MR or a memory window
    }

    // ------------------------------------------------------------------ errors

    @Override
    public void rnrNak(int timerIndex, int p) {
        counters.inc(Counter.SEND_RNR_ERR);
        sendAck(Aeth.TYPE_RNR_NAK | (timerIndex & 0x1F), p);
    }

    /** Class C error: NAK with the packet PSN, complete a receive WQE in use, QP → ERR. */
    @Override
    public void nakError(int syndrome, int p) {
        String detail = nakDetail;
        nakDetail = null;
        String reason = "responder sent NAK 0x" + Integer.toHexString(syndrome) + " for PSN 0x"
                + Integer.toHexString(p) + (detail != null ? ": " + detail : "")
                + (inMessage != InMessage.NONE ? " (inside a " + inMessage + " message)" : "");
        qp.noteErrorReason(reason);
        sendAck(syndrome, p);
        RecvWqe r = recv;
        if (r != null) {
            WcStatus st = switch (syndrome) {
                case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                case Aeth.NAK_REMOTE_OP_ERROR -> WcStatus.LOC_QP_OP_ERR;
                default -> WcStatus.REM_INV_REQ_ERR;
            };
            recv = null;
            long wrId = r.wrId;
            qp.consumeRecv();
            qp.completeRecv(wrId, st, WcOpcode.RECV, (int) recvOffset, 0, 0);
        }
        qp.moveToError(reason);
    }

    // ------------------------------------------------------------------ packets out

    private boolean scatterToRecv(RecvWqe r, long msgOffset, ByteBuf b, int index, int len) {
        return SgeCopy.copy(qp.host().mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge, msgOffset, b, index,
                len, false, Access.LOCAL_WRITE);
    }

    /** Sends an ACK or NAK with AETH {@code syndrome} and PSN {@code psn} (after a coalesced ACK still due). */
    public void sendAck(int syndrome, int psn) {
        flushPendingAck();
        packets.sendAck(syndrome, psn);
    }

    private void flushPendingAck() {
        int p = pendingAckPsn;
        if (p != -1) {
            pendingAckPsn = -1;
            packets.sendAck(Aeth.ACK_UNLIMITED, p);
        }
    }

    // ------------------------------------------------------------------ reordering (adaptive recovery)

    /** @return the reordering window of this QP's path ({@code policy.ReorderWindow}) */
    private io.rxe4j.core.policy.ReorderWindow window() {
        io.rxe4j.core.policy.PeerBudget b = rc.requester.budget;
        return b != null ? b.reorder() : ownWindow;
    }

    /**
     * Holds out-of-order request {@code pkt} (ahead of ePsn) until its gap fills; a copy of a held
     * packet that asks for an ACK is the requester's probe: the NAK goes at once.
     *
     * @return false when it cannot be held (too far ahead, the byte bound): the caller NAKs as rxe
     */
    private boolean hold(PacketView pkt) {
        if (held == null) {
            held = new io.rxe4j.core.policy.ReorderBuffer();
        }
        ByteBuf copy = pkt.buf().retainedSlice(pkt.bthIndex(), pkt.length());
        long now = qp.scheduler.nanoTime();
        switch (held.offer(pkt.psn(), ePsn, copy, now)) {
            case HELD -> {
                counters.inc(Counter.REORDER_HELD);
                nakTimer.open(now, window().windowNanos());
                return true;
            }
            case DUPLICATE -> {
                copy.release();
                counters.inc(Counter.DUPLICATE_REQUEST);
                onDuplicateOfNamed(pkt.psn());
                if (pkt.ackReq()) {
                    nakTimer.close();
                    sendGapNak(now); // a probe: the requester waits for exactly this answer
                    nakTimer.open(now, reNakNanos());
                }
                return true;
            }
            default -> {
                copy.release();
                return false;
            }
        }
    }

    /**
     * @return how long a NAKed gap waits before its NAK goes again (the NAK or the repair may be
     *     lost): twice the reordering window, at least the smallest RTT-derived timeout (1 ms)
     */
    private long reNakNanos() {
        return Math.max(2 * window().windowNanos(), io.rxe4j.core.policy.RttEstimator.MIN_RTO_NANOS);
    }

    /** The current gap outlived the reordering window (or was probed): NAK with ePsn. */
    private void sendGapNak(long now) {
        if (held == null || held.isEmpty() || held.holds(ePsn)) {
            return;
        }
        if (nakPsn == -1 || nakPsn != ePsn) {
            window().onVerdict();
        }
        nakSent = true;
        nakPsn = ePsn;
        counters.inc(Counter.REORDER_NAKS);
        sendAck(Aeth.NAK_PSN_SEQ_ERROR, ePsn);
        sendSelectiveNak(now);
        qp.host().flushTransport();
    }

    /** Ranges of a selective NAK: pairs (first PSN, count), at most 64. */
    private final int[] missing = new int[2 * SELECTIVE_NAK_RANGES];
    /** Most ranges in one selective NAK: 64 (256 payload bytes, the smallest path MTU). */
    static final int SELECTIVE_NAK_RANGES = 64;
    /** The last PSN a selective NAK named while its repairs may still be on the way (-1: none). */
    private int selectiveHigh = -1;
    private long selectiveAt;

    /**
     * After a PSN-sequence NAK, towards a peer that agreed {@code EXT_SELECTIVE_NAK}: every PSN range
     * missing before a held packet that arrived a reordering window ago, so that the requester
     * resends all of them in one round trip instead of one hole per round trip. Not sent when the
     * only hole is the NAKed PSN itself.
     */
    private void sendSelectiveNak(long now) {
        if ((qp.peerExtensions() & io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK) == 0) {
            return;
        }
        int n = held.missing(ePsn, now - window().windowNanos(), 256, missing);
        if (n == 0 || (n == 1 && missing[1] == 1)) {
            return;
        }
        packets.sendSelectiveNak(ePsn, missing, n);
        namedRanges = n;
        namedSpurious = false;
        selectiveHigh = Psn.add(missing[2 * n - 2], missing[2 * n - 1] - 1);
        selectiveAt = now;
    }

    /**
     * The expected PSN arrived while later requests are held: unless it was NAKed (then it may be the
     * resend), the path reordered it by as long as the oldest held packet waited, which the
     * reordering window then covers ({@code ReorderWindow.onReorder}).
     */
    private void observeReorder() {
        if (ePsn == nakPsn || namedBySelectiveNak(ePsn)) {
            return;
        }
        window().onReorder(qp.scheduler.nanoTime() - held.oldestArrival());
    }

    /** @return whether the last selective NAK named {@code psn} */
    private boolean namedBySelectiveNak(int psn) {
        for (int i = 0; i < namedRanges; i++) {
            int d = Psn.diff(psn, missing[2 * i]);
            if (d >= 0 && d < missing[2 * i + 1]) {
                return true;
            }
        }
        return false;
    }

    /** The ranges of the last selective NAK (pairs in {@link #missing}), and whether one of them proved spurious. */
    private int namedRanges;
    private boolean namedSpurious;

    /**
     * A second copy of PSN {@code psn} arrived: if the last selective NAK named it, the original was
     * late, not lost (it and the resend both arrived), and the reordering window doubles, once per
     * selective NAK (RFC 8985's DSACK rule).
     */
    private void onDuplicateOfNamed(int psn) {
        if (namedRanges == 0 || namedSpurious || !namedBySelectiveNak(psn)) {
            return;
        }
        namedSpurious = true;
        window().onSpurious();
        counters.inc(Counter.SPURIOUS_NAKS);
    }

    /**
     * @return whether the gap at ePsn was named by a selective NAK whose repairs may still be on the
     *     way (sent less than the re-NAK time ago): the gap is then NAKed already
     */
    private boolean gapNakedBySelectiveNak(long now) {
        return selectiveHigh != -1 && Psn.diff(ePsn, selectiveHigh) <= 0 && now - selectiveAt < reNakNanos();
    }

    private void onGapTimeout() {
        if (held == null || held.isEmpty() || qp.state() == QpState.ERR || qp.state() == QpState.RESET) {
            return;
        }
        long now = qp.scheduler.nanoTime();
        if (now - held.oldestArrival() > HOLD_MAX_NANOS) {
            counters.add(Counter.DROP_OTHER, held.size()); // the gap never filled: the requester resends them
            held.clear();
            return;
        }
        if (!busy()) {
            sendGapNak(now);
        }
        // again one round of the window later (the NAK, or its answer, may be lost)
        nakTimer.open(now, reNakNanos());
    }

    /**
     * After in-order progress: processes the held packets that are now in sequence (while no READ
     * reply is under way), then sends the one coalesced ACK of the SEND/WRITE packets among them, and
     * times the gap that is left.
     */
    private void drainHeld() {
        if (held == null) {
            draining = false;
            flushPendingAck();
            return;
        }
        boolean progressed = false;
        while (!busy() && qp.state() != QpState.ERR) {
            ByteBuf b = held.take(ePsn);
            if (b == null) {
                break;
            }
            progressed = true;
            draining = true;
            try {
                if (waitingView.parse(b, b.readerIndex(), b.readableBytes()) == null) {
                    process(waitingView);
                } else {
                    counters.drop(DropReason.OTHER);
                }
            } finally {
                b.release();
            }
        }
        draining = false;
        flushPendingAck();
        if (held.isEmpty()) {
            nakTimer.close();
            return;
        }
        held.dropBefore(ePsn);
        if (progressed || !nakTimer.isOpen()) {
            nakTimer.close(); // a new gap: its deadline counts from its oldest held packet
            if (!held.isEmpty()) {
                long now = qp.scheduler.nanoTime();
                if (gapNakedBySelectiveNak(now)) {
                    nakTimer.open(now, reNakNanos()); // its repair is on the way: NAK only if it is lost too
                } else {
                    nakTimer.open(held.oldestArrival(), window().windowNanos());
                }
            }
        }
    }

    /**
     * A request arrived marked CE: sends a CNP to the requester, at most one per {@link
     * ResponsePackets#CNP_INTERVAL_NANOS}.
     */
    public void onCongestionExperienced() {
        packets.sendCnp();
    }

    // ------------------------------------------------------------------ the READ reply (ResponderOps)

    /**
     * Starts (or restarts) the READ reply of {@code e} for {@code [va, va+len)} as a new response
     * stream (FIRST … LAST, or ONLY) from PSN {@code psn}.
     *
     * @param sendNow whether to send the first batch at once (else at the QP's next turn)
     */
    @Override
    public void startReply(ResponderResources.Entry e, RxeMr mr, long va, long len, int psn, boolean sendNow) {
        reply.start(e, mr, va, len, psn);
        if (sendNow) {
            reply.sendBatch();
        }
        if (busy()) {
            qp.host().requestService(qp);
        }
    }

    @Override
    public boolean transmitPayload(ResponderResources.Entry e, ByteBuf b, int hdr, int n) {
        return reply.transmitPayload(e, b, hdr, n);
    }

    @Override
    public void readFault(ResponderResources.Entry e) {
        reply.readFault(e);
    }
}
