package io.rxe4j.core.qp;

import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;

/**
 * Builds a QP's work completions ({@code rxe_comp.c:make_send_cqe}, {@code
 * rxe_resp.c:do_complete}) and the ERR flush ({@code rxe-facts.md} §6.8): every send and
 * receive completion of the QP goes through here. The send completion's opcode, byte_len and
 * WITH_IMM flag come from {@link WrOpcodeInfo}.
 *
 * <p>A CQ overflow is counted in {@code cq_overflow} and reported as false; the caller moves the
 * QP to ERR. Threading: the QP's loop only.
 */
final class Completions {
    private final RxeQp qp;
    private final int qpn;
    private final RxeCq sendCq;
    private final RxeCq recvCq;
    private final boolean sqSigAll;
    private final Counters counters;
    private final SendQueue sq;
    private final RecvQueue rq;

    Completions(RxeQp qp, SendQueue sq, RecvQueue rq) {
        this.qp = qp;
        this.qpn = qp.qpn;
        this.sendCq = qp.sendCq;
        this.recvCq = qp.recvCq;
        this.sqSigAll = qp.sqSigAll;
        this.counters = qp.counters;
        this.sq = sq;
        this.rq = rq;
    }

    /**
     * Posts a completion for a send WQE from values the caller copied out of its slot, so the slot
     * can be handed back to posting threads first: a user who polls this completion and posts again
     * at once must find the room it freed (as in rxe). A successful WQE completes only if it was
     * signaled or the QP has sq_sig_all; a failed one always does ({@code rxe-facts.md} §6.5).
     *
     * @param length the WQE's message length in bytes (byte_len, except 8 for the atomics)
     * @return false if the CQ overflowed
     */
    boolean completeSend(long wrId, WrOpcode op, int sendFlags, long length, int immData, WcStatus status,
            int vendorErr) {
        if (status != WcStatus.SUCCESS || sqSigAll || (sendFlags & SendFlags.SIGNALED) != 0) {
            WrOpcodeInfo info = WrOpcodeInfo.of(op);
            int flags = info.immediateData() ? WorkCompletion.WC_WITH_IMM : 0;
            if (!sendCq.push(wrId, status, info.wcOpcode(), info.completionByteLen(length), qpn, flags, immData,
                    vendorErr)) {
                counters.inc(Counter.CQ_OVERFLOW);
                return false;
            }
        }
        return true;
    }

    /**
     * Posts a receive completion for the receive WQE with {@code wrId}, which the caller has
     * already consumed (see {@link #completeSend}); {@code solicited} is the SE bit of the
     * message's last packet (for a solicited-only armed CQ).
     *
     * @param byteLen bytes placed (RECV) or the RETH DMA length (RECV_RDMA_WITH_IMM)
     * @return false if the CQ overflowed
     */
    boolean completeRecv(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int flags, int imm,
            boolean solicited) {
        if (!recvCq.push(wrId, status, opcode, byteLen, qpn, flags, imm, 0, solicited)) {
            counters.inc(Counter.CQ_OVERFLOW);
            return false;
        }
        return true;
    }

    /**
     * Posts the receive completion of a UD datagram ({@code rxe_resp.c:do_complete}; {@code
     * verbs-surface-facts.md} §2.7): RECV, SUCCESS, the GRH flag and the sender's QPN.
     *
     * @param byteLen 40 (the GRH) + the payload, in bytes
     * @return false if the CQ overflowed
     */
    boolean completeDatagram(long wrId, int byteLen, int flags, int imm, boolean solicited, int srcQp) {
        if (!recvCq.push(wrId, io.rxe4j.verbs.WcStatus.SUCCESS, WcOpcode.RECV, byteLen, qpn, flags, imm, 0, solicited,
                srcQp)) {
            counters.inc(Counter.CQ_OVERFLOW);
            return false;
        }
        return true;
    }

    /**
     * The ERR flush: completes every outstanding send WQE (with its recorded failure status, else
     * WR_FLUSH_ERR; the hidden OPFN WQE silently) and every receive WQE with WR_FLUSH_ERR, in
     * order, signaled or not, byte_len 0. After a CQ overflow the rest of that queue is retired
     * without completions.
     */
    void flush() {
        long prod = sq.producer();
        boolean cqOk = true;
        for (long comp = sq.completed(); comp != prod; ) {
            SendWqe w = sq.at(comp);
            long wrId = w.wrId;
            WrOpcode op = w.opcode;
            WcStatus st = w.failStatus != null ? w.failStatus : WcStatus.WR_FLUSH_ERR;
            w.state = SendWqe.State.DONE;
            comp++;
            boolean hidden = w.opfn;
            sq.retireHead(w, comp); // slot free before its CQE is visible (see completeSend)
            qp.sqReq = comp;
            if (hidden) {
                continue; // the reserved OPFN WQE never produces a CQE
            }
            if (cqOk) {
                cqOk = sendCq.push(wrId, st, WrOpcodeInfo.of(op).wcOpcode(), 0, qpn, 0, 0, 0);
            }
        }
        cqOk = true;
        RecvWqe taken = qp.takenSrqWqe();
        if (taken != null) { // the SRQ's other WQEs stay for its other QPs (verbs-surface-facts §4.3)
            long wrId = taken.wrId;
            qp.clearTakenSrqWqe();
            cqOk = recvCq.push(wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, qpn, 0, 0, 0);
        }
        RecvWqe r;
        while ((r = rq.peek()) != null) {
            long wrId = r.wrId;
            rq.consume();
            if (cqOk) {
                cqOk = recvCq.push(wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, qpn, 0, 0, 0);
            }
        }
    }
}
