package io.rxe4j.core.rc;

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

    /** The completer of {@code qp}; {@code rc} holds its requester. */
    public Completer(RxeQp qp, RcEngines rc) {
        this.qp = qp;
        this.rc = rc;
        this.counters = qp.counters;
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
    }

    /** Moves comp.psn forward to {@code p} if it is behind (never backwards); used by the requester's rewind. */
    void advanceTo(int p) {
        if (Psn.diff(p, compPsn) > 0) {
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

    /** Runs the state machine for one response packet. Loop only. */
    public void onResponse(PacketView p) {
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
        if (valid && qp.state() != io.rxe4j.verbs.QpState.ERR) {
            rc.requester.run();
        }
    }

    // ------------------------------------------------------------------ states

    /** GET_WQE: the head WQE; a response when none is outstanding is stale. */
    private State getWqe() {
        wqe = head();
        // a TID WRITE whose WRITE_RESPs all arrived waits only for TID ACKs: responses go to the next
        long i = qp.sqCompleted();
        while (wqe != null && wqe.isTidWrite() && Psn.diff(compPsn, wqe.lastPsn) > 0) {
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
            if (wqe.isReadOrAtomic() || wqe.isTidWrite()) {
                retryCause = Requester.RetryCause.LOST_RESPONSE; // only its own response completes it
                return State.ERROR_RETRY;
            }
            return State.COMP_WQE; // a SEND/WRITE implicitly acknowledged by a later response
        }
        int d = Psn.diff(psn, compPsn);
        if (d < 0) {
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
        // the opcode sequence
        if (compOpcode == null) {
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
        int pmtu = qp.pmtu();
        long remaining = wqe.length - wqe.readBytes;
        int n = pkt.payloadLength();
        boolean fits = op.isLast() ? n == remaining : (n == pmtu && remaining > pmtu);
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
        return op.isLast() ? State.COMP_ACK : State.UPDATE_COMP;
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
        return Psn.diff(psn, compPsn) >= 0 ? State.UPDATE_COMP : State.DONE;
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
        compOpcode = op.isLast() || op.operation() != Opcode.Operation.READ_RESPONSE ? null : op;
        advance(Psn.next(psn));
        return State.DONE;
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
        failHead(wqe, status, op == Opcode.RC_ACKNOWLEDGE ? syndrome : 0,
                "response " + op + " PSN 0x" + Integer.toHexString(psn) + " from " + qp.av());
        return State.DONE;
    }

    // ------------------------------------------------------------------ helpers

    /** A valid ACK, READ response or ATOMIC ACKNOWLEDGE: retry counts start over (rxe-facts §5.3). */
    private void validResponse() {
        valid = true;
        rc.requester.resetRetryCounters();
    }

    /** Moves comp.psn forward to {@code next} and tells the requester what is acknowledged now. */
    @Override
    public void advance(int next) {
        if (Psn.diff(next, compPsn) > 0) {
            compPsn = next;
            rc.requester.onAcknowledged(compPsn);
        }
    }

    /** Completes {@code w} (the head) and advances the SQ consumer index. */
    private boolean finish(SendWqe w, WcStatus st, int vendorErr) {
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
