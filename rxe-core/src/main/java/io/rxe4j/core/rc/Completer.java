package io.rxe4j.core.rc;

import io.rxe4j.core.policy.GapTimer;
import io.rxe4j.core.policy.PsnSet;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.SgeCopy;

import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import java.lang.foreign.ValueLayout;

/**
 * The completer ({@code rxe_comp.c}; {@code rxe-facts.md} §5.2–§5.3, §5.8, §6.5, §9.2): matches
 * every response (ACK, NAK, RNR NAK, READ response, ATOMIC ACKNOWLEDGE) against the oldest
 * uncompleted send WQE, scatters READ data and atomic results, posts send completions and starts
 * retries.
 *
 * <p>A state machine with rxe's named states, one method per state; {@link #onResponse} runs it
 * for one packet from {@link State#GET_WQE} until {@link State#DONE}. Every response passes the
 * same {@link State#CHECK_PSN}: behind comp.psn it is stale (counted, dropped), at comp.psn it is
 * processed, beyond it a READ/atomic waits for the missing packet (a READ re-requests its missing
 * tail at once, once per gap: {@code extensions.md} §6), and past a pending READ/atomic's last PSN
 * its response was lost (retry). The one exception to "stale is dropped" is an error NAK carrying
 * the PSN of a READ whose response stream had already begun ({@code extensions.md} §6).
 * Acknowledgements are cumulative also across a rewind: a response naming a PSN that was sent
 * before the rewind but not resent yet first moves the requester forward to it ({@link
 * Requester#fastForward}), then runs the same states. Loop only.
 */
public final class Completer implements CompleterOps {
    /** rxe's {@code enum comp_state}, minus the packet-queue states (packets arrive one call at a time). */
    enum State {
        /** Find the oldest uncompleted WQE the response could belong to. */
        GET_WQE,
        /** Classify the response's PSN against the WQE and comp.psn. */
        CHECK_PSN,
        /** Check the opcode sequence and the AETH syndrome. */
        CHECK_ACK,
        /** Scatter READ response data. */
        READ,
        /** Store an atomic's original value. */
        ATOMIC,
        /** An ACK (or the empty response of ATOMIC WRITE / FLUSH): complete if it covers the WQE. */
        WRITE_SEND,
        /** Complete the WQE this response finished. */
        COMP_ACK,
        /** Complete a SEND/WRITE WQE that a later response acknowledged implicitly. */
        COMP_WQE,
        /** Advance comp.psn and comp.opcode. */
        UPDATE_COMP,
        /** Sequence NAK, lost response or READ gap: retry from comp.psn. */
        ERROR_RETRY,
        /** RNR NAK: wait, then retry. */
        RNR_RETRY,
        /** Complete the WQE with an error status; the QP enters ERR. */
        ERROR,
        /** Finished with this packet. */
        DONE
    }

    private final RxeQp qp;
    private final Counters counters;

    /** Next expected response PSN (comp.psn). */
    private int compPsn;
    /** comp.opcode: the last READ response of a message still in progress (FIRST or MIDDLE), else null. */
    private Opcode compOpcode;
    /** comp.psn at which a READ response gap already triggered a re-request, or -1. */
    private int gapRetryPsn = -1;

    // ---- the packet being processed (valid while onResponse runs) ----
    private PacketView pkt;
    private Opcode op;
    private int psn;
    private int syndrome;
    private SendWqe wqe;
    private WcStatus status;
    private Requester.RetryCause retryCause;
    /** A valid response was processed: the requester runs again afterwards. */
    private boolean valid;

    private final RcEngines rc;

    // ---- adaptive recovery (DeviceConfig.adaptiveRecovery; docs/reliability.md) ----
    private final boolean adaptive;
    /** READ response PSNs beyond comp.psn already placed by their offset. */
    private final PsnSet placed = new PsnSet();
    /** The head WQE's responses are missing while later ones arrived: re-request after the reordering window. */
    private final GapTimer gapTimer;
    /** The newest PSN an ACK named beyond a pending READ/atomic (its ACK is asked for again later), or -1. */
    private int ackedBeyond = -1;
    /** The PSN of the last READ part re-requested, and when (at most once per round trip each). */
    private int reRequestPsn = -1;
    private long reRequestAt;

    /** The completer of {@code qp}; {@code rc} holds its requester. */
    public Completer(RxeQp qp, RcEngines rc) {
        this.qp = qp;
        this.rc = rc;
        this.counters = qp.counters;
        this.adaptive = qp.host().config().adaptiveRecovery();
        this.gapTimer = new GapTimer(qp.scheduler, qp.guard("READ gap timer", this::onGapTimeout));
    }

    /** @return comp.psn, the next response PSN expected */
    @Override
    public int compPsn() {
        return compPsn;
    }

    /** Sets comp.psn with req.psn (modify_qp SQ_PSN). */
    void setPsn(int p) {
        compPsn = p;
        compOpcode = null;
        gapRetryPsn = -1;
        placed.clearAll();
        gapTimer.close();
        ackedBeyond = -1;
        reRequestPsn = -1;
    }

    /** Moves comp.psn forward to {@code p} if it is behind (never backwards); used by the requester's rewind. */
    void advanceTo(int p) {
        if (Psn.diff(p, compPsn) > 0) {
            placed.clearRange(compPsn, p);
            compPsn = p;
        }
    }

    /** Back to the state of a new QP (RESET): expects the requester's PSN next. */
    public void reset() {
        setPsn(rc.requester.psn);
    }

    /** @return the oldest uncompleted WQE that the requester has started, or null */
    @Override
    public SendWqe head() {
        long comp = qp.sqCompleted();
        if (comp == qp.sqProducer()) {
            return null;
        }
        SendWqe w = qp.sqAt(comp);
        return w.state == SendWqe.State.POSTED && comp == qp.sqReq() ? null : w;
    }

    /** When the response before the one being processed arrived, and when that one did (nanoseconds). */
    private long previousResponseAt = Long.MIN_VALUE;
    private long responseAt = Long.MIN_VALUE;

    /** @return when the response before the one being processed arrived, in nanoseconds (RTT sampling) */
    long previousResponseAt() {
        return previousResponseAt;
    }

    /** Runs the state machine for one response packet. Loop only. */
    public void onResponse(PacketView p) {
        previousResponseAt = responseAt;
        responseAt = qp.scheduler.nanoTime();
        op = p.opcode();
        psn = p.psn();
        if (Psn.diff(psn, rc.requester.psn) >= 0) {
            if (Psn.diff(psn, rc.requester.sendHighWater()) >= 0) {
                counters.drop(DropReason.OTHER); // a response to a PSN never sent
                return;
            }
            // to a packet sent before a rewind and not sent again yet: acknowledgements are
            // cumulative, so the requester moves up to what the response covers (a sequence NAK
            // covers the PSNs before its own) and the response is processed as any other
            int upTo = isSequenceNak(p) ? Psn.add(psn, -1) : psn;
            if (Psn.diff(upTo, rc.requester.psn) >= 0 && !rc.requester.fastForward(upTo)) {
                counters.inc(Counter.DUPLICATE_RESPONSE);
                return;
            }
        }
        pkt = p;
        int compBefore = compPsn;
        syndrome = op.has(Header.AETH) ? Aeth.syndrome(p.buf(), p.index(Header.AETH)) : Aeth.ACK_UNLIMITED;
        status = null;
        retryCause = null;
        valid = false;
        State s = State.GET_WQE;
        try {
            while (s != State.DONE) {
                s = switch (s) {
                    case GET_WQE -> getWqe();
                    case CHECK_PSN -> checkPsn();
                    case CHECK_ACK -> checkAck();
                    case READ -> read();
                    case ATOMIC -> atomic();
                    case WRITE_SEND -> writeSend();
                    case COMP_ACK -> compAck();
                    case COMP_WQE -> compWqe();
                    case UPDATE_COMP -> updateComp();
                    case ERROR_RETRY -> errorRetry();
                    case RNR_RETRY -> rnrRetry();
                    case ERROR -> error();
                    case DONE -> State.DONE;
                };
            }
        } finally {
            pkt = null;
            wqe = null;
        }
        // a valid response, or a NAK that acknowledged PSNs before its own, frees the requester's
        // window: it runs again. (A sequence NAK at req.psn after a rewind acknowledges everything
        // sent, and the retry it asks for may find one under way and do nothing: without this run a
        // requester stopped by its output bound then waited for good, nothing unacknowledged and no
        // timer running.)
        if ((valid || compPsn != compBefore) && qp.state() != io.rxe4j.verbs.QpState.ERR) {
            rc.requester.run();
        }
    }

    // ------------------------------------------------------------------ states

    /** GET_WQE: the head WQE; a response when none is outstanding is stale. */
    private State getWqe() {
        wqe = head();
        // a TID WRITE whose WRITE_RESPs all arrived waits only for TID ACKs: responses go to the next
        long i = qp.sqCompleted();
        while (wqe != null && (wqe.isTidWrite() && Psn.diff(compPsn, wqe.lastPsn) > 0
                || wqe.state == SendWqe.State.PENDING && wqe.isLocal())) {
            i++;
            wqe = i == qp.sqProducer() ? null : qp.sqAt(i);
            if (wqe != null && wqe.state == SendWqe.State.POSTED && !(wqe.isTidWrite() && wqe.tidStarted)) {
                wqe = null; // never sent
            }
        }
        if (wqe == null || wqe.state == SendWqe.State.DONE) {
            counters.inc(Counter.DUPLICATE_RESPONSE);
            return State.DONE;
        }
        return State.CHECK_PSN;
    }

    /** CHECK_PSN ({@code rxe-facts.md} §5.8; rxe's {@code check_psn}). */
    private State checkPsn() {
        if (Psn.diff(psn, wqe.lastPsn) > 0) {
            if (wqe.state != SendWqe.State.PENDING) {
                counters.inc(Counter.OUT_OF_SEQ_RESPONSE); // beyond a WQE that is still being sent
                return State.DONE;
            }
            if (adaptive && wqe.isReadOrAtomic() && !wqe.tid) {
                if (isSequenceNak(pkt)) {
                    // the responder has every request before PSN psn, the head READ/atomic included (its
                    // response is late or lost), and misses the one at psn
                    counters.inc(Counter.RCVD_SEQ_ERR);
                    openGap();
                    if (rc.requester.repair.onSequenceNak(psn)) {
                        return State.DONE; // that request alone goes again; the head's part after the window
                    }
                    rc.requester.repair.nakBeyond(psn);
                    retryCause = Requester.RetryCause.LOST_RESPONSE; // go-back-N, as rdma_rxe
                    return State.ERROR_RETRY;
                }
                if (!isErrorNak()) {
                    return beyondPendingResponse(); // reordered, or the head's response lost: decided after the window
                }
            }
            if (wqe.isReadOrAtomic() || wqe.isTidWrite()) {
                retryCause = Requester.RetryCause.LOST_RESPONSE; // only its own response completes it
                return State.ERROR_RETRY;
            }
            return State.COMP_WQE; // a SEND/WRITE implicitly acknowledged by a later response
        }
        int d = Psn.diff(psn, compPsn);
        if (d > 0 && adaptive && wqe.opcode == WrOpcode.RDMA_READ && !wqe.tid
                && op.operation() == Opcode.Operation.READ_RESPONSE) {
            return place(wqe); // ahead of comp.psn: placed by its offset now, counted in when the gap fills
        }
        if (d < 0) {
            if (adaptive && op.operation() == Opcode.Operation.READ_RESPONSE && asked.clear(psn)) {
                spuriousReRequest(); // the re-requested part arrived twice: the original was late
            }
            if (isErrorNak() && compOpcode != null && wqe.opcode == WrOpcode.RDMA_READ
                    && Psn.diff(psn, wqe.firstPsn) >= 0) {
                return State.CHECK_ACK; // a READ that failed mid-stream (extensions §6)
            }
            counters.inc(Counter.DUPLICATE_RESPONSE);
            return State.DONE;
        }
        if (d > 0 && (wqe.isReadOrAtomic() || wqe.isTidWrite())) {
            counters.inc(Counter.OUT_OF_SEQ_RESPONSE);
            if (wqe.opcode == WrOpcode.RDMA_READ && op.operation() == Opcode.Operation.READ_RESPONSE
                    && gapRetryPsn != compPsn) {
                gapRetryPsn = compPsn; // once per gap
                retryCause = Requester.RetryCause.READ_GAP;
                return State.ERROR_RETRY;
            }
            return State.DONE; // wait for the missing response
        }
        return State.CHECK_ACK;
    }

    private static boolean isSequenceNak(PacketView p) {
        return p.opcode() == Opcode.RC_ACKNOWLEDGE
                && Aeth.syndrome(p.buf(), p.index(Header.AETH)) == Aeth.NAK_PSN_SEQ_ERROR;
    }

    private boolean isErrorNak() {
        return op == Opcode.RC_ACKNOWLEDGE && Aeth.type(syndrome) == Aeth.TYPE_NAK
                && syndrome != Aeth.NAK_PSN_SEQ_ERROR;
    }

    /** CHECK_ACK ({@code rxe-facts.md} §5.8, §6.5; rxe's {@code check_ack}). */
    private State checkAck() {
        // the opcode sequence (adaptive recovery: a READ's responses are checked by position instead)
        boolean byPosition = adaptive && op.operation() == Opcode.Operation.READ_RESPONSE
                && wqe.opcode == WrOpcode.RDMA_READ && !wqe.tid;
        if (byPosition) {
            // any READ response opcode at a PSN of the READ; read() checks its length for that position
        } else if (compOpcode == null) {
            if (!op.isFirst()) {
                return badResponse(); // only FIRST, ONLY, ACKNOWLEDGE or ATOMIC ACKNOWLEDGE start
            }
        } else if (op != Opcode.RC_RDMA_READ_RESPONSE_MIDDLE && op != Opcode.RC_RDMA_READ_RESPONSE_LAST
                && op != Opcode.RC_ACKNOWLEDGE) {
            boolean restart = (op == Opcode.RC_RDMA_READ_RESPONSE_FIRST && psn == wqe.firstPsn)
                    || (op == Opcode.RC_RDMA_READ_RESPONSE_ONLY && wqe.firstPsn == wqe.lastPsn);
            if (!restart) {
                return badResponse();
            }
        }
        switch (op.operation()) {
            case READ_RESPONSE -> {
                if (op.has(Header.AETH) && Aeth.type(syndrome) != Aeth.TYPE_ACK) {
                    return badResponse();
                }
                if (wqe.opcode == WrOpcode.ATOMIC_WRITE || wqe.opcode == WrOpcode.FLUSH) {
                    // answered by one zero-length READ RESPONSE ONLY (rxe-facts §1.3, §5.8)
                    if (op != Opcode.RC_RDMA_READ_RESPONSE_ONLY || pkt.payloadLength() != 0) {
                        return badResponse();
                    }
                    validResponse();
                    return State.WRITE_SEND;
                }
                if (wqe.opcode != WrOpcode.RDMA_READ || wqe.tid) {
                    status = WcStatus.FATAL_ERR; // a READ response for a WQE that is not a READ (§5.8)
                    return State.ERROR;
                }
                validResponse();
                return State.READ;
            }
            case ATOMIC_ACKNOWLEDGE -> {
                if (Aeth.type(syndrome) != Aeth.TYPE_ACK || !wqe.opcode.isAtomic()) {
                    return badResponse();
                }
                validResponse();
                return State.ATOMIC;
            }
            case ACKNOWLEDGE -> {
                switch (Aeth.type(syndrome)) {
                    case Aeth.TYPE_ACK -> {
                        validResponse();
                        return State.WRITE_SEND;
                    }
                    case Aeth.TYPE_RNR_NAK -> {
                        return State.RNR_RETRY;
                    }
                    case Aeth.TYPE_NAK -> {
                        switch (syndrome) {
                            case Aeth.NAK_PSN_SEQ_ERROR -> {
                                counters.inc(Counter.RCVD_SEQ_ERR);
                                advance(psn); // a NAK implicitly acknowledges every PSN before its own
                                retryCause = Requester.RetryCause.SEQUENCE_NAK;
                                return State.ERROR_RETRY;
                            }
                            case Aeth.NAK_INVALID_REQUEST -> status = WcStatus.REM_INV_REQ_ERR;
                            case Aeth.NAK_REMOTE_ACCESS_ERROR -> status = WcStatus.REM_ACCESS_ERR;
                            default -> status = WcStatus.REM_OP_ERR; // 0x63 and unknown codes (§6.5)
                        }
                        return State.ERROR;
                    }
                    default -> {
                        return badResponse(); // reserved AETH type
                    }
                }
            }
            default -> {
                return badResponse();
            }
        }
    }

    /**
     * A response the responder should not have sent here (IBTA "bad response": an unexpected
     * opcode or syndrome): the WQE completes with BAD_RESP_ERR and the QP enters ERR.
     */
    private State badResponse() {
        status = WcStatus.BAD_RESP_ERR;
        return State.ERROR;
    }

    /** READ: scatter the payload; complete on the last packet once every byte arrived. */
    private State read() {
        if (adaptive && !wqe.tid) {
            return readByPosition();
        }
        int pmtu = qp.pmtu();
        long remaining = wqe.length - wqe.readBytes;
        int n = pkt.payloadLength();
        boolean fits = op.isLast() ? n == remaining : (n == pmtu && remaining > pmtu);
        return takeReadPayload(fits, op.isLast());
    }

    /**
     * The READ response at comp.psn: dropped (counted) unless {@code fits}, else copied to the WQE's
     * SGEs at readBytes.
     *
     * @param last whether it completes the READ
     */
    private State takeReadPayload(boolean fits, boolean last) {
        int n = pkt.payloadLength();
        if (!fits) {
            counters.drop(DropReason.OTHER); // a length the request did not ask for: ignore it
            return State.DONE;
        }
        if (n > 0 && !SgeCopy.copy(qp.host().mrs(), qp.pd, wqe.sgeAddr, wqe.sgeLength, wqe.sgeLkey, wqe.numSge,
                wqe.readBytes, pkt.buf(), pkt.payloadIndex(), n, false, Access.LOCAL_WRITE)) {
            status = WcStatus.LOC_PROT_ERR;
            return State.ERROR;
        }
        wqe.readBytes += n;
        return last ? State.COMP_ACK : State.UPDATE_COMP;
    }

    /** ATOMIC: store the original value into the local SGE, in host byte order (as rxe). */
    private State atomic() {
        if (psn != wqe.firstPsn) {
            return badResponse();
        }
        long original = AtomicAckEth.originalData(pkt.buf(), pkt.index(Header.ATOMIC_ACK_ETH));
        if (wqe.opfn) {
            qp.opfn.onReply(original); // the peer's negotiation word: nothing goes to user memory
            return State.COMP_ACK;
        }
        RxeMr mr = qp.host().mrs().lookup(wqe.sgeLkey[0]);
        if (mr == null || mr.pd() != qp.pd || !mr.allows(wqe.sgeAddr[0], 8, Access.LOCAL_WRITE)) {
            status = WcStatus.LOC_PROT_ERR;
            return State.ERROR;
        }
        try {
            mr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, mr.offset(wqe.sgeAddr[0]), original);
        } catch (IllegalStateException closed) {
            status = WcStatus.LOC_PROT_ERR;
            return State.ERROR;
        }
        return State.COMP_ACK;
    }

    /** WRITE_SEND: an ACK completes the WQE when it carries the WQE's last PSN. */
    private State writeSend() {
        if (wqe.isReadOrAtomic() || wqe.isTidWrite()) {
            return State.DONE; // an ACK never completes a READ/atomic (rxe-facts §5.2)
        }
        if (wqe.state == SendWqe.State.PENDING && psn == wqe.lastPsn) {
            return State.COMP_ACK;
        }
        return State.UPDATE_COMP;
    }

    /** COMP_ACK: complete the WQE this response finished, then advance comp.psn past it. */
    private State compAck() {
        if (!finish(wqe, WcStatus.SUCCESS, 0)) {
            return State.DONE;
        }
        if (Psn.diff(psn, compPsn) >= 0) {
            return State.UPDATE_COMP;
        }
        if (adaptive) {
            afterProgress();
        }
        return State.DONE;
    }

    /** COMP_WQE: a SEND/WRITE implicitly acknowledged; then look at the next WQE with the same packet. */
    private State compWqe() {
        advance(Psn.next(wqe.lastPsn));
        compOpcode = null;
        if (!finish(wqe, WcStatus.SUCCESS, 0)) {
            return State.DONE;
        }
        validResponse();
        return State.GET_WQE;
    }

    /** UPDATE_COMP: comp.opcode follows the READ stream; comp.psn moves past this packet. */
    private State updateComp() {
        if (adaptive && op.operation() == Opcode.Operation.READ_RESPONSE) {
            observeReorder(psn);
        }
        compOpcode = op.isLast() || op.operation() != Opcode.Operation.READ_RESPONSE ? null : op;
        advance(Psn.next(psn));
        if (adaptive) {
            absorbPlaced();
        }
        return State.DONE;
    }

    // ------------------------------------------------------------------ adaptive recovery: READ placement

    /** @return the reordering window of this QP's path */
    private io.rxe4j.core.policy.ReorderWindow reorder() {
        io.rxe4j.core.policy.PeerBudget b = rc.requester.budget;
        return b != null ? b.reorder() : ownWindow;
    }

    /** The window of a completer whose QP has no path yet (no samples: the default); per QP, loop only. */
    private final io.rxe4j.core.policy.ReorderWindow ownWindow =
            new io.rxe4j.core.policy.ReorderWindow(new io.rxe4j.core.policy.RttEstimator());

    /**
     * @return the byte offset within READ {@code w} of the response with PSN {@code p}: PSNs map to
     *     offsets for good when the READ is first requested (a re-request from comp.psn keeps the map)
     */
    private long readOffset(SendWqe w, int p) {
        int base = Psn.diff(compPsn, w.firstPsn) > 0 && Psn.diff(compPsn, w.lastPsn) <= 0 ? compPsn : w.firstPsn;
        return w.readBytes + (long) Psn.diff(p, base) * qp.pmtu();
    }

    /** @return the payload the response with PSN {@code p} of READ {@code w} must carry */
    private long expectedReadLength(SendWqe w, int p) {
        long rest = w.length - readOffset(w, p);
        return p == w.lastPsn ? rest : Math.min(rest, qp.pmtu());
    }

    /** READ response at comp.psn: placed at its offset, then the responses placed before it are counted in. */
    private State readByPosition() {
        int n = pkt.payloadLength();
        return takeReadPayload(n == expectedReadLength(wqe, psn) && (psn == wqe.lastPsn || n == qp.pmtu()),
                psn == wqe.lastPsn);
    }

    /**
     * A READ response ahead of comp.psn (reordered, or a packet before it lost), for READ {@code w}:
     * its payload goes to its offset at once; comp.psn passes it when the gap fills. The gap's
     * missing part is re-requested once the reordering window is over ({@link #onGapTimeout}).
     */
    private State place(SendWqe w) {
        if (!PsnSet.inWindow(psn, compPsn)) {
            counters.inc(Counter.OUT_OF_SEQ_RESPONSE); // too far ahead to remember: re-requested later
            openGap();
            return State.DONE;
        }
        if (placed.contains(psn)) {
            counters.inc(Counter.DUPLICATE_RESPONSE);
            if (asked.clear(psn)) {
                spuriousReRequest();
            }
            return State.DONE;
        }
        int n = pkt.payloadLength();
        long expected = expectedReadLength(w, psn);
        if (n != expected || (psn != w.lastPsn && n != qp.pmtu())
                || (op.has(Header.AETH) && Aeth.type(syndrome) != Aeth.TYPE_ACK)) {
            counters.drop(DropReason.OTHER);
            return State.DONE;
        }
        if (n > 0 && !SgeCopy.copy(qp.host().mrs(), qp.pd, w.sgeAddr, w.sgeLength, w.sgeLkey, w.numSge,
                readOffset(w, psn), pkt.buf(), pkt.payloadIndex(), n, false, Access.LOCAL_WRITE)) {
            status = WcStatus.LOC_PROT_ERR;
            wqe = w;
            return State.ERROR;
        }
        observeReorder(psn);
        if (placed.size() == 0 || Psn.diff(psn, maxPlaced) > 0) {
            maxPlaced = psn;
        }
        placed.add(psn);
        if (placedAt == null) {
            placedAt = new long[PsnSet.WINDOW];
        }
        placedAt[psn & (PsnSet.WINDOW - 1)] = qp.scheduler.nanoTime();
        rc.requester.repair.onResponseAt(psn);
        counters.inc(Counter.READ_RESPONSES_PLACED);
        validResponse();
        openGap();
        return State.DONE;
    }

    /**
     * A response beyond the pending READ/atomic at the head: a READ response of a later READ is
     * placed; an ACK or ATOMIC ACKNOWLEDGE is remembered and asked for again once the head
     * completes. Either way the head's own response is late or lost: decided after the window.
     */
    private State beyondPendingResponse() {
        if (op.operation() == Opcode.Operation.READ_RESPONSE) {
            for (long i = qp.sqCompleted() + 1; i != qp.sqReq(); i++) {
                SendWqe w = qp.sqAt(i);
                if (Psn.diff(psn, w.firstPsn) >= 0 && Psn.diff(psn, w.lastPsn) <= 0) {
                    if (w.opcode == WrOpcode.RDMA_READ && !w.tid && w.state == SendWqe.State.PENDING) {
                        return place(w);
                    }
                    break;
                }
            }
            counters.inc(Counter.OUT_OF_SEQ_RESPONSE);
            openGap();
            return State.DONE;
        }
        counters.inc(Counter.OUT_OF_SEQ_RESPONSE);
        if (ackedBeyond == -1 || Psn.diff(psn, ackedBeyond) > 0) {
            ackedBeyond = psn;
        }
        openGap();
        return State.DONE;
    }

    private void openGap() {
        gapTimer.open(qp.scheduler.nanoTime(), reorder().windowNanos());
    }

    /**
     * A READ response at {@code p} arrived after later ones were placed, without being asked for
     * again: the path reordered it by as long as the first response placed after it waited, which
     * the reordering window then covers ({@code ReorderWindow.onReorder}).
     */
    private void observeReorder(int p) {
        if (placed.size() == 0 || placedAt == null || asked.contains(p) || Psn.diff(p, maxPlaced) >= 0) {
            return;
        }
        int q = Psn.next(p);
        for (int k = 0; k < 64 && !placed.contains(q) && Psn.diff(q, maxPlaced) < 0; k++) {
            q = Psn.next(q);
        }
        if (placed.contains(q)) {
            reorder().onReorder(qp.scheduler.nanoTime() - placedAt[q & (PsnSet.WINDOW - 1)]);
        }
    }

    /** Counts in the responses placed earlier that are next in sequence; completes the READs they finish. */
    private void absorbPlaced() {
        while (placed.contains(compPsn)) {
            SendWqe w = head();
            if (w == null || w.opcode != WrOpcode.RDMA_READ || w.tid
                    || Psn.diff(compPsn, w.firstPsn) < 0 || Psn.diff(compPsn, w.lastPsn) > 0) {
                placed.clear(compPsn);
                continue; // not a READ PSN (any more): forget it
            }
            int p = compPsn;
            if (Psn.diff(p, rc.requester.psn) >= 0 && !rc.requester.fastForward(p)) {
                return; // sent before a rewind and not again yet, and the requester cannot move up to it
            }
            placed.clear(p);
            w.readBytes += expectedReadLength(w, p);
            if (p == w.lastPsn) {
                compOpcode = null;
                if (!finish(w, WcStatus.SUCCESS, 0)) {
                    return;
                }
            } else {
                compOpcode = Opcode.RC_RDMA_READ_RESPONSE_MIDDLE;
            }
            advance(Psn.next(p));
        }
        afterProgress();
    }

    /** After comp.psn moved: the gap is over, or its timer keeps running for the part still missing. */
    private void afterProgress() {
        SendWqe h = head();
        if (ackedBeyond != -1 && (h == null || !h.isReadOrAtomic() || Psn.diff(ackedBeyond, h.firstPsn) < 0)) {
            int p = ackedBeyond;
            ackedBeyond = -1;
            if (Psn.diff(p, compPsn) >= 0) {
                rc.requester.repair.resend(p); // that ACK was dropped while the READ/atomic waited: ask again
            }
        }
        if (placed.size() == 0 && ackedBeyond == -1) {
            gapTimer.close();
        }
    }

    /**
     * The reordering window passed with the head's responses still missing: re-request the READ's
     * missing part (from comp.psn up to the next placed response), or resend the atomic (answered
     * from the responder's record), at most once per round trip; then wait one more round trip.
     */
    private void onGapTimeout() {
        SendWqe h = head();
        if (h == null || qp.state() == io.rxe4j.verbs.QpState.ERR || (placed.size() == 0 && ackedBeyond == -1)) {
            return;
        }
        long now = qp.scheduler.nanoTime();
        io.rxe4j.core.policy.RttEstimator rtt = rc.requester.pathRtt();
        long round = rtt != null && rtt.hasSample() ? Math.max(rtt.srttNanos(), reorder().windowNanos())
                : reorder().windowNanos() * 4;
        if (now - askedAt >= round) {
            asked.clearAll(); // a new round: every hole may be asked for once more
            askedAt = now;
        }
        if (h.state == SendWqe.State.PENDING && h.isReadOrAtomic() && !h.tid && h.opcode != WrOpcode.RDMA_READ
                && !asked.contains(h.firstPsn) && rc.requester.repair.resend(h.firstPsn)) {
            asked.add(h.firstPsn);
            counters.inc(Counter.SELECTIVE_REPAIRS); // the atomic's response: answered again from its record
        }
        long window = reorder().windowNanos();
        long youngest = reRequestHoles(now, window);
        qp.host().flushTransport();
        if (placed.size() > 0 || ackedBeyond != -1) {
            // the next hole to come of age, or one more window for holes that open later
            gapTimer.open(youngest == Long.MAX_VALUE ? now : youngest, window);
        }
    }

    /**
     * Re-requests every hole of the READs under way that lies before a placed response (from
     * comp.psn up to the newest placed PSN) and has been known for a reordering window (the response
     * after it arrived that long ago), each at most once per round ({@link #asked}). Towards a peer
     * not known to hold out-of-order requests ({@link RequesterRepair.PeerKind}) only the hole at
     * comp.psn is asked for: kernel {@code rdma_rxe} moves a READ resource's start to each
     * re-request and drops any later one that starts before it, so its re-requests must never go
     * backwards.
     *
     * @return the arrival time of the response after the youngest hole left for later, or {@link
     *     Long#MAX_VALUE}
     */
    private long reRequestHoles(long now, long window) {
        long youngest = Long.MAX_VALUE;
        if (placed.size() == 0) {
            return youngest;
        }
        int q = compPsn;
        int budget = PsnSet.WINDOW;
        boolean onlyAtComp = rc.requester.repair.kind() != RequesterRepair.PeerKind.HOLDS;
        long i = qp.sqCompleted();
        long req = qp.sqReq();
        while (Psn.diff(q, maxPlaced) < 0 && budget-- > 0 && i != req) {
            SendWqe w = qp.sqAt(i);
            if (Psn.diff(q, w.lastPsn) > 0) {
                i++;
                continue;
            }
            if (Psn.diff(q, w.firstPsn) < 0) {
                q = w.firstPsn;
            }
            if (w.opcode != WrOpcode.RDMA_READ || w.tid || w.state != SendWqe.State.PENDING) {
                q = Psn.next(w.lastPsn);
                i++;
                continue;
            }
            if (onlyAtComp && q != compPsn) {
                break;
            }
            if (placed.contains(q) || asked.contains(q)) {
                q = Psn.next(q);
                continue;
            }
            int next = q;
            while (Psn.diff(next, maxPlaced) < 0 && !placed.contains(next)) {
                next = Psn.next(next);
            }
            long seen = placedAt[next & (PsnSet.WINDOW - 1)];
            if (now - seen < window) {
                youngest = Math.min(youngest, seen); // not a window old yet: it may still arrive
                q = next;
                continue;
            }
            int end = reRequest(w, q);
            if (end == -1) {
                q = Psn.next(q);
                continue;
            }
            for (int k = q; Psn.diff(k, end) <= 0; k = Psn.next(k)) {
                asked.add(k);
            }
            q = Psn.next(end);
        }
        return youngest;
    }

    /** A re-requested READ response arrived twice: the window widens, once per round. */
    private void spuriousReRequest() {
        if (spuriousRound != askedAt) {
            spuriousRound = askedAt;
            reorder().onSpurious();
        }
        counters.inc(Counter.SPURIOUS_NAKS);
    }

    private long spuriousRound = Long.MIN_VALUE;
    private long verdictRound = Long.MIN_VALUE;

    /** PSNs of holes re-requested in the current round, and when the round began. */
    private final PsnSet asked = new PsnSet();
    private long askedAt = Long.MIN_VALUE / 2;
    /** The newest PSN placed (valid while {@link #placed} is not empty). */
    private int maxPlaced;
    /** When each placed PSN arrived (indexed as {@link PsnSet}; allocated at the first placement). */
    private long[] placedAt;

    /**
     * Re-requests the part of READ {@code w} that starts at PSN {@code p} (or at comp.psn if later)
     * and ends before the next response already placed: a READ request with that PSN, VA and length,
     * which the responder answers as a duplicate from its record ({@code rxe-facts.md} §5.5). At most
     * once per smoothed RTT for the same PSN.
     *
     * @return the last PSN of the part asked for, or -1 if nothing was sent
     */
    int reRequest(SendWqe w, int p) {
        int q = p;
        if (Psn.diff(compPsn, q) > 0 && Psn.diff(compPsn, w.lastPsn) <= 0) {
            q = compPsn;
        }
        if (Psn.diff(q, w.firstPsn) < 0) {
            q = w.firstPsn;
        }
        long now = qp.scheduler.nanoTime();
        io.rxe4j.core.policy.RttEstimator rtt = rc.requester.pathRtt();
        long guard = rtt != null && rtt.hasSample() ? rtt.srttNanos() : 0;
        if (q == reRequestPsn && now - reRequestAt < guard) {
            return -1;
        }
        int end = q;
        while (Psn.diff(end, w.lastPsn) < 0 && !placed.contains(Psn.next(end))) {
            end = Psn.next(end);
        }
        long offset = readOffset(w, q);
        long len = Math.min(w.length - offset, (long) (Psn.diff(end, q) + 1) * qp.pmtu());
        if (end == w.lastPsn) {
            len = w.length - offset;
        }
        if (len < 0 || offset > w.length) {
            return -1;
        }
        ByteBuf b = rc.requester.packets.read(w, q, offset, len);
        reRequestPsn = q;
        reRequestAt = now;
        if (verdictRound != askedAt) {
            verdictRound = askedAt; // one verdict per round of re-requests
            reorder().onVerdict();
        }
        counters.inc(Counter.SELECTIVE_REPAIRS);
        rc.requester.repair.transmitRepair(b, q);
        return end;
    }

    /** ERROR_RETRY: sequence NAK, lost response or READ gap ({@code rxe-facts.md} §5.3–§5.4). */
    private State errorRetry() {
        rc.requester.retry(retryCause);
        return State.DONE;
    }

    /** RNR_RETRY: the responder had no receive WQE; wait its RNR time, then retry. */
    private State rnrRetry() {
        advance(psn); // a NAK implicitly acknowledges every PSN before its own
        rc.requester.onRnrNak(syndrome & 0x1F, wqe.isTidWrite());
        return State.DONE;
    }

    /** ERROR: complete the WQE with its error status; the QP enters ERR and flushes the rest. */
    private State error() {
        boolean nak = op.has(Header.AETH) && (syndrome & Aeth.TYPE_MASK) == Aeth.TYPE_NAK;
        boolean vendorErr = op == Opcode.RC_ACKNOWLEDGE; // failHead names the NAK code then: not twice
        failHead(wqe, status, vendorErr ? syndrome : 0,
                (nak ? (vendorErr ? "" : "NAK 0x" + Integer.toHexString(syndrome) + ": ") + nakName(syndrome)
                        : "response " + op)
                        + " for PSN 0x" + Integer.toHexString(psn) + " from " + qp.av());
        return State.DONE;
    }

    // ------------------------------------------------------------------ helpers

    /** @return what NAK {@code syndrome} means ({@code rxe-facts.md} §2.3) */
    private static String nakName(int syndrome) {
        return switch (syndrome) {
            case Aeth.NAK_PSN_SEQ_ERROR -> "PSN sequence error";
            case Aeth.NAK_INVALID_REQUEST -> "invalid request: the responder refused the request itself";
            case Aeth.NAK_REMOTE_ACCESS_ERROR -> "remote access error: the responder refused the rkey, its range or "
                    + "rights; the responder's QP says which";
            case Aeth.NAK_REMOTE_OP_ERROR -> "remote operational error";
            default -> "syndrome 0x" + Integer.toHexString(syndrome);
        };
    }

    /** A valid ACK, READ response or ATOMIC ACKNOWLEDGE: retry counts start over (rxe-facts §5.3). */
    private void validResponse() {
        valid = true;
        rc.requester.resetRetryCounters();
    }

    /** Moves comp.psn forward to {@code next} and tells the requester what is acknowledged now. */
    @Override
    public void advance(int next) {
        if (Psn.diff(next, compPsn) > 0) {
            if (placed.size() > 0) {
                placed.clearRange(compPsn, next); // passed: a bit never outlives its PSN (the ring aliases)
            }
            compPsn = next;
            rc.requester.onAcknowledged(compPsn);
        }
    }

    /** Whether {@link #completeLocalOps} is running (a completion it makes does not start it again). */
    private boolean completingLocalOps;

    /**
     * Completes the executed local WQEs (BIND_MW, LOCAL_INV) at the head of the send queue: they
     * wait for no response, only for every WQE before them to complete ({@code rxe_comp.c}: a WQE in
     * {@code wqe_state_done} at the head completes at once).
     */
    public void completeLocalOps() {
        if (completingLocalOps) {
            return;
        }
        completingLocalOps = true;
        try {
            while (qp.sqCompleted() != qp.sqReq() && qp.state() != io.rxe4j.verbs.QpState.ERR) {
                SendWqe w = qp.sqAt(qp.sqCompleted());
                if (w.state != SendWqe.State.PENDING || !w.isLocal()
                        || !finish0(w, WcStatus.SUCCESS, 0)) {
                    return;
                }
            }
        } finally {
            completingLocalOps = false;
        }
    }

    /** Completes {@code w} (the head), advances the SQ consumer index, then the local WQEs behind it. */
    private boolean finish(SendWqe w, WcStatus st, int vendorErr) {
        boolean ok = finish0(w, st, vendorErr);
        if (ok && st == WcStatus.SUCCESS) {
            completeLocalOps();
        }
        return ok;
    }

    private boolean finish0(SendWqe w, WcStatus st, int vendorErr) {
        if (w.creditHeld) {
            w.creditHeld = false;
            rc.requester.returnCredit();
        }
        w.state = SendWqe.State.DONE;
        // copy what the CQE needs, free the slot, then publish the CQE (see RxeQp.completeSend)
        long wrId = w.wrId;
        WrOpcode wop = w.opcode;
        int sendFlags = w.sendFlags;
        long length = w.length;
        int imm = w.immData;
        boolean hidden = w.opfn;
        long comp = qp.sqCompleted() + 1;
        qp.retireSqHead(w, comp);
        if (qp.sqReq() - comp < 0) {
            qp.sqReq(comp);
        }
        if (hidden) {
            return true; // the reserved OPFN WQE never produces a CQE, whatever its status
        }
        if (!qp.completeSend(wrId, wop, sendFlags, length, imm, st, vendorErr)) {
            qp.moveToError("send CQ overflow");
            return false;
        }
        return true;
    }

    @Override
    public void onValidResponse() {
        validResponse();
        compOpcode = null;
    }

    @Override
    public boolean complete(SendWqe w) {
        return finish(w, WcStatus.SUCCESS, 0);
    }

    /**
     * The hidden OPFN request at the head ran out of retries ({@code hfi1_restart_rc}): it is
     * completed without a CQE, comp.psn moves past it, and the QP stays up; TID RDMA stays off.
     */
    void closeOutOpfn(SendWqe w) {
        qp.opfn.onRetriesExhausted();
        advance(Psn.next(w.lastPsn));
        compOpcode = null;
        finish(w, WcStatus.SUCCESS, 0);
    }

    /**
     * Completes the head WQE with an error status and moves the QP to ERR, which flushes every
     * later WQE ({@code rxe-facts.md} §6.8).
     *
     * @param why what happened, for {@link RxeQp#errorReason()}
     */
    @Override
    public void failHead(SendWqe w, WcStatus st, int vendorErr, String why) {
        String reason = "send WQE " + w.wrId + " (" + w.opcode + ") failed: " + st
                + (vendorErr != 0 ? ", NAK 0x" + Integer.toHexString(vendorErr) : "") + ": " + why;
        if (qp.sqCompleted() == qp.sqProducer() || qp.sqAt(qp.sqCompleted()) != w) {
            // not the oldest (it follows TID WRITEs waiting for TID ACKs): flushed in order with its status
            w.failStatus = st;
            qp.moveToError(reason);
            return;
        }
        qp.noteErrorReason(reason);
        finish(w, st, vendorErr);
        qp.moveToError(reason);
    }

    /** A local failure: {@link #failHead(SendWqe, WcStatus, int, String)} without a remote cause. */
    public void failHead(SendWqe w, WcStatus st, int vendorErr) {
        failHead(w, st, vendorErr, "local error");
    }

    /** @return a short description of the completer state, for diagnostics */
    public String debugState() {
        return "comp{psn=0x" + Integer.toHexString(compPsn) + " opcode=" + compOpcode + "}";
    }
}
