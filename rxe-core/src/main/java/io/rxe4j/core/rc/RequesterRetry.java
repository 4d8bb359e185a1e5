package io.rxe4j.core.rc;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;

/**
 * The requester's retries ({@code rxe-facts.md} §5.3–§5.5; {@code extensions.md} §6; rxe's
 * {@code req_retry} and the retry half of {@code rxe_comp.c}): what starts one (the retransmit
 * timeout, a sequence NAK, a lost or gapped response, a TID restart), the retry_cnt budget and its
 * end (RETRY_EXC_ERR, or the OPFN request closed out silently), the rewind to comp.psn, and the
 * fast-forward of a cumulative acknowledgement that names PSNs sent before a rewind. Works on the
 * {@link Requester}'s position (req.psn, credits, unacknowledged packets); the RNR wait stays with
 * the requester. Loop only.
 */
final class RequesterRetry {
    private final Requester r;
    private final RxeQp qp;
    private final Counters counters;

    private final RcEngines rc;

    RequesterRetry(Requester r, RxeQp qp, RcEngines rc) {
        this.r = r;
        this.rc = rc;
        this.qp = qp;
        this.counters = qp.counters;
    }

    /**
     * A response names PSN {@code upTo}, which was sent before a rewind and has not been sent again
     * yet ({@code req.psn ≤ upTo < sendHighWater}): the responder has every request up to it, so the
     * requester moves forward as if it had resent them, and the completer can then take the
     * response. RC acknowledgements are cumulative: kernel {@code rdma_rxe} answers every duplicate
     * SEND/WRITE with an ACK of its latest PSN, ePSN − 1 ({@code rxe-facts.md} §5.5), which lies
     * beyond what a rewind has resent so far; ignoring it would resend the same range until
     * RETRY_EXC_ERR. The WQEs keep the PSNs they had (a SEND/WRITE is marked sent up to {@code upTo},
     * a READ or atomic whose PSNs reach {@code upTo} as requested); the PSNs are recorded as
     * unacknowledged, holding no r.budget, so the retransmit timer still covers a READ whose
     * responses then stop.
     *
     * @return false if a TID RDMA WQE lies in the way (its segments keep their own state: the
     *     response is then dropped as before) or the send queue ends first
     */
    boolean fastForward(int upTo) {
        int pmtu = qp.pmtu();
        long prod = qp.sqProducer();
        long now = qp.scheduler.nanoTime();
        while (Psn.diff(upTo, r.psn) >= 0) {
            if (qp.sqReq() == prod) {
                return false;
            }
            SendWqe w = qp.sqAt(qp.sqReq());
            if (w.tid || w.isTidWrite()) {
                return false;
            }
            if (w.isLocal()) { // executed before the rewind, in order: no PSN
                if (!w.localDone) {
                    return false;
                }
                w.state = SendWqe.State.PENDING;
                qp.advanceSqReq();
                continue;
            }
            if (w.state == SendWqe.State.POSTED && w.needsCredit() && !w.creditHeld) {
                if (r.credits <= 0) {
                    return false;
                }
                r.credits--;
                w.creditHeld = true;
            }
            int last;
            switch (w.opcode) {
                case SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                    if (w.state == SendWqe.State.POSTED) {
                        w.firstPsn = r.psn;
                        w.lastPsn = Psn.add(r.psn, (int) Math.max(1, (w.length + pmtu - 1) / pmtu) - 1);
                        w.sentBytes = 0;
                        w.state = SendWqe.State.PROCESSING;
                    }
                    last = Psn.diff(upTo, w.lastPsn) >= 0 ? w.lastPsn : upTo;
                    w.sentBytes = Math.min(w.length, w.sentBytes + (long) (Psn.diff(last, r.psn) + 1) * pmtu);
                }
                case RDMA_READ -> {
                    long remaining = w.length - w.readBytes;
                    w.firstPsn = r.psn;
                    w.lastPsn = Psn.add(r.psn, (int) Math.max(1, (remaining + pmtu - 1) / pmtu) - 1);
                    last = w.lastPsn;
                }
                default -> { // atomics, ATOMIC WRITE, FLUSH: one PSN
                    w.firstPsn = r.psn;
                    w.lastPsn = r.psn;
                    last = r.psn;
                }
            }
            if (last == w.lastPsn) {
                w.state = SendWqe.State.PENDING;
                qp.advanceSqReq();
            }
            r.unacked.addOrCoalesce(last, now);
            r.onRecordedUnsent(now);
            r.psn = Psn.next(last);
        }
        r.noAckPkts = 0;
        counters.inc(Counter.ACK_FAST_FORWARDS);
        r.repair.onFastForward(upTo);
        return true;
    }

    /** The retransmit deadline passed with packets unacknowledged. */
    void onRetransmitTimeout() {
        if (qp.state() != QpState.RTS && qp.state() != QpState.SQD) {
            return;
        }
        if (r.rnrWaiting()) {
            return; // the RNR timer restarts the requester (rxe-facts §5.3)
        }
        counters.inc(Counter.RETRANSMIT_TIMEOUTS);
        retry(Requester.RetryCause.TIMEOUT);
        qp.host().flushTransport();
    }

    /**
     * Starts a retry from comp.psn, charging retry_cnt ({@code rxe-facts.md} §5.3). Unlike rxe,
     * retry_cnt 7 is seven retries, not infinite ({@code extensions.md} §6): when no retry is left
     * the head WQE completes with RETRY_EXC_ERR and the QP enters ERR. Only a timeout may start a
     * retry while another one is under way (rxe's {@code started_retry}).
     */
    void retry(Requester.RetryCause cause) {
        SendWqe head = rc.completer.head();
        if (head == null) {
            return; // nothing was sent that a retry could resend
        }
        if (cause == Requester.RetryCause.SEQUENCE_NAK && r.repair.onSequenceNak(rc.completer.compPsn())) {
            return; // repaired selectively: the peer holds what followed the gap
        }
        if (cause != Requester.RetryCause.TIMEOUT && r.retryStarted) {
            return; // one retry sequence at a time: wait for progress or the timer
        }
        if (r.retryLeft <= 0 && head.opfn) {
            // hfi1_restart_rc: an OPFN request out of retries ends silently, TID RDMA off, QP up
            rc.completer.closeOutOpfn(head);
            r.resetRetryCounters();
            if (r.outstanding()) {
                rewind();
            }
            r.run();
            return;
        }
        if (r.retryLeft <= 0) {
            counters.inc(Counter.RETRY_EXCEEDED_ERR);
            String local = qp.lastSendFailure();
            rc.completer.failHead(head, WcStatus.RETRY_EXC_ERR, 0, "retry_cnt " + qp.attr.retryCnt()
                    + " exhausted (" + cause + "): no acknowledgement from " + qp.av() + " QPN 0x"
                    + Integer.toHexString(qp.destQpn()) + " for PSN 0x" + Integer.toHexString(rc.completer.compPsn())
                    + (local != null ? "; this side could not send either, the last refusal: " + local : ""));
            return;
        }
        r.retryLeft--;
        r.retryStarted = true;
        if (cause != Requester.RetryCause.TIMEOUT) {
            counters.inc(Counter.COMPLETER_RETRY_ERR);
        }
        if (cause == Requester.RetryCause.TIMEOUT) {
            r.onTimeoutSignal(qp.scheduler.nanoTime(), r.retransmitPeriodNanos()); // nothing came back for a whole timeout
        } else {
            r.onLossSignal(); // a NAK, a READ gap, a lost response: congestion only if the path shows a queue
        }
        if (!r.outstanding()) {
            return; // everything the requester sent was acknowledged meanwhile
        }
        int nakBeyond = r.repair.takeNakBeyond();
        rewind();
        if (cause == Requester.RetryCause.SEQUENCE_NAK) {
            r.repair.onNakRewind(rc.completer.compPsn());
        } else if (nakBeyond != -1) {
            r.repair.onNakRewind(nakBeyond);
        } else {
            r.repair.onOtherRewind();
        }
        r.run();
    }

    /**
     * A RESYNC renumbered this QP's hardware flow while TID READ segments of it were asked for
     * (the TID READ requester renumbered its segments): goes back to comp.psn and sends again, so the
     * READ_REQs name the new flow sequences. Nothing was lost on this side's account, so retry_cnt
     * is not charged and a retry already under way does not hold it back.
     */
    void restartAfterResync() {
        if ((qp.state() != QpState.RTS && qp.state() != QpState.SQD) || r.rnrWaiting() || !r.outstanding()) {
            return; // (the RNR timer rewinds anyway)
        }
        counters.inc(Counter.TID_RESTARTS);
        rewind();
        r.run();
    }

    /**
     * Goes back to the oldest uncompleted WQE and PSN comp.psn ({@code rxe-facts.md} §5.4): a
     * SEND/WRITE resumes after its acknowledged packets, a READ re-requests only the missing tail,
     * later WQEs are resent whole.
     */
    void rewind() {
        r.repair.cancelLearning();
        int pmtu = qp.pmtu();
        long from = qp.sqCompleted();
        if (from != qp.sqProducer()) {
            // never restart before the head WQE's own first PSN: PSNs once given must stay given,
            // or the responder would see every later request shifted
            SendWqe head = qp.sqAt(from);
            if (head.state != SendWqe.State.POSTED) {
                rc.completer.advanceTo(head.firstPsn);
            }
        }
        int compPsn = rc.completer.compPsn();
        long prod = qp.sqProducer();
        long resendFrom = from;
        for (long i = from; i != prod; i++) {
            SendWqe w = qp.sqAt(i);
            if (w.state == SendWqe.State.POSTED) {
                break;
            }
            if (w.isTidWrite()) {
                if (w.respSeg == w.totalSegs) {
                    if (i == resendFrom) {
                        resendFrom = i + 1; // every WRITE_RESP arrived: it only waits for TID ACKs
                    }
                    continue;
                }
                w.state = SendWqe.State.POSTED; // its WRITE_REQ goes again for the segments without WRITE_RESP
                continue;
            }
            if (i == from && (w.opcode == WrOpcode.SEND || w.opcode == WrOpcode.SEND_WITH_IMM
                    || w.opcode == WrOpcode.RDMA_WRITE || w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM)) {
                int acked = Psn.diff(compPsn, w.firstPsn);
                if (acked > 0) {
                    w.sentBytes = (long) acked * pmtu;
                    w.state = SendWqe.State.PROCESSING;
                    continue;
                }
            }
            w.state = SendWqe.State.POSTED;
            w.sentBytes = 0;
            if (r.hook.carries(w)) {
                r.hook.onRewind(w); // e.g. a TID READ resends from its oldest incomplete segment, same flows
                continue;
            }
            if (i != from) {
                w.readBytes = 0;
            }
        }
        qp.sqReq(resendFrom);
        r.psn = compPsn;
        r.noAckPkts = 0;
        r.outputStalled = false;
        r.releaseBudget(r.unacked.clear(), false); // everything from comp.psn on is sent again and recorded anew
        counters.inc(Counter.REWINDS);
    }
}
