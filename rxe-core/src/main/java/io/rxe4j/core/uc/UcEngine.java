package io.rxe4j.core.uc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.qp.QpAttributes;
import io.rxe4j.core.qp.RecvWqe;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;

/**
 * The engine of a UC QP ({@code verbs-surface-facts.md} §3; {@code rxe_req.c} and {@code
 * rxe_resp.c} for {@code IB_QPT_UC}).
 *
 * <p>Sender (§3.2): a SEND or RDMA WRITE (with or without immediate) is segmented by the QP's path
 * MTU as on RC (FIRST/MIDDLE of a full MTU, LAST of 1..MTU, ONLY of 0..MTU) with the UC opcodes
 * (0x20 + the RC one), RETH on a WRITE's first packet, ImmDt and SE on the last; AckReq never; one
 * PSN per packet. The WQE completes as soon as its last packet is handed to the transport: nothing
 * acknowledges it and nothing resends it. At most {@link #PACKETS_PER_TURN} packets go per turn, then
 * the QP waits for its next turn on the lane's service queue, so a long message does not hold the loop.
 *
 * <p>Receiver (§3.3–§3.4): a packet whose PSN is not the expected one, or any packet while the
 * message is being dropped, is dropped unless it starts a message (FIRST or ONLY), which resumes the
 * stream; a half-received SEND leaves its receive WQE untouched for the next message (class D1: no
 * completion). Out of sequence opcodes, a WRITE without REMOTE_WRITE, a bad R_Key or range, a
 * length error and a missing receive WQE drop the rest of the message; none of them sends anything
 * or moves the QP to ERR. A receive WQE whose memory cannot be written completes with LOC_QP_OP_ERR
 * and the QP enters ERR (class A). Completions: SEND → RECV (byte_len the message length, GRH flag
 * as {@code rdma_rxe} sets on every receive, WITH_IMM with the immediate); WRITE_WITH_IMM →
 * RECV_RDMA_WITH_IMM (byte_len the RETH DMA length). Loop only; nothing allocated per packet.
 */
public final class UcEngine extends io.rxe4j.core.qp.UnreliableEngine {
    /** Most packets one QP sends per turn of the loop: 64 (the bounded output rule, {@code extensions.md} §6). */
    public static final int PACKETS_PER_TURN = 64;

    /** The next PSN to send (sq_psn; +1 per packet). */
    private int psn;

    /** What message the responder is in the middle of. */
    private enum InMessage { NONE, SEND, WRITE }

    /** The expected PSN (rq_psn; +1 per packet processed). */
    private int ePsn;
    /** Drop packets until the next FIRST or ONLY ({@code resp.drop_msg}). */
    private boolean dropMsg;
    private InMessage inMessage = InMessage.NONE;
    /** SEND: bytes of the message placed in the head receive WQE so far. */
    private long msgOffset;
    /** WRITE: the target MR, the next VA, the bytes still to come and the RETH length. */
    private RxeMr writeMr;
    private long writeVa;
    private long writeResid;
    private long writeLength;

    /** The engine of {@code qp} (a UC QP), built with it. */
    public UcEngine(RxeQp qp) {
        super(qp);
    }

    @Override
    public void applyAttributes(QpAttributes attr, int mask) {
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            psn = attr.sqPsn();
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            ePsn = attr.rqPsn();
            abandon();
            dropMsg = false;
        }
    }

    @Override
    public void reset() {
        psn = 0;
        ePsn = 0;
        dropMsg = false;
        abandon();
    }

    @Override
    public void stop() {
        abandon();
    }

    // ------------------------------------------------------------------ sender

    @Override
    public void run() {
        if (qp.state() != QpState.RTS) {
            return; // SQD: a WQE not started waits for RTS; ERR: the QP flushes
        }
        long prod = qp.sqProducer();
        int budget = PACKETS_PER_TURN;
        while (qp.sqReq() != prod) {
            long idx = qp.sqReq();
            SendWqe w = qp.sqAt(idx);
            if (w.opcode == io.rxe4j.verbs.WrOpcode.BIND_MW) { // UC's one local operation (§5.2)
                String why = io.rxe4j.core.qp.LocalOps.execute(qp, w);
                if (why != null) {
                    failSend(w, idx, WcStatus.MW_BIND_ERR, "UC send WQE " + w.wrId + " (BIND_MW) failed: MW_BIND_ERR: " + why);
                    return;
                }
                if (!finishSend(w, idx, WcStatus.SUCCESS)) {
                    return;
                }
                continue;
            }
            if (w.state == SendWqe.State.POSTED) {
                w.state = SendWqe.State.PROCESSING;
                w.sentBytes = 0;
                w.firstPsn = psn;
            }
            while (true) {
                if (!qp.host().transportWritable()) {
                    qp.host().awaitWritable(qp);
                    return;
                }
                if (budget-- == 0) {
                    qp.host().requestService(qp); // the rest in the QP's next turn
                    return;
                }
                boolean last = w.length - w.sentBytes <= qp.pmtu();
                if (!sendPacket(w)) {
                    failSend(w, idx, WcStatus.LOC_PROT_ERR, "UC send WQE " + w.wrId + ": its local memory cannot be read");
                    return;
                }
                if (last) {
                    w.lastPsn = Psn.add(psn, -1);
                    if (!finishSend(w, idx, WcStatus.SUCCESS)) {
                        return;
                    }
                    break;
                }
            }
        }
    }

    /** Builds and sends the packet of {@code w} at its sent offset; false when its SGEs cannot be read. */
    private boolean sendPacket(SendWqe w) {
        int pmtu = qp.pmtu();
        long offset = w.sentBytes;
        ByteBuf b = io.rxe4j.core.qp.SendWritePacket.build(qp, w, psn, offset, pmtu, false, true);
        if (b == null) {
            return false;
        }
        int payload = (int) Math.min(w.length - offset, pmtu);
        qp.host().transmit(qp, b);
        psn = Psn.next(psn);
        w.sentBytes = offset + payload;
        return true;
    }

    // ------------------------------------------------------------------ receiver

    @Override
    public void onRequest(PacketView pkt) {
        Opcode op = pkt.opcode();
        int p = pkt.psn();
        if (dropMsg || p != ePsn) {
            if (!op.isFirst()) {
                dropMsg = true; // §3.3 rule 2: everything up to the next FIRST/ONLY
                counters.inc(Counter.OUT_OF_SEQ_REQUEST);
                return;
            }
            if (p != ePsn) {
                counters.inc(Counter.OUT_OF_SEQ_REQUEST); // a new message after a gap: the stream resumes here
            }
            dropMsg = false;
            abandon(); // a half-received message leaves its receive WQE as it was (class D1)
        }
        boolean send = op.operation() == Opcode.Operation.SEND;
        if (inMessage != InMessage.NONE && (op.isFirst()
                || (inMessage == InMessage.SEND) != send)) {
            abandon(); // §3.4 rule 1: the message in progress is broken; this packet is dropped (D1), ePSN stays
            counters.drop(DropReason.OTHER);
            if (qp.hasSrq()) {
                dropMsg = true; // class E with an SRQ: the taken WQE completes with the error
                completeTakenWqe(WcStatus.REM_INV_REQ_ERR);
            }
            return;
        }
        if (inMessage == InMessage.NONE && !op.isFirst()) {
            dropMsg = true; // §3.4 rule 2: a MIDDLE or LAST with no message in progress
            counters.drop(DropReason.OTHER);
            return;
        }
        if (send ? !receiveSend(pkt, op) : !receiveWrite(pkt, op)) {
            return;
        }
        ePsn = Psn.next(p);
    }

    private boolean receiveSend(PacketView pkt, Opcode op) {
        RecvWqe r = qp.peekRecv();
        if (r == null) {
            drop(DropReason.NO_RECV_WQE, null); // §3.4 rule 6: no RNR NAK on UC
            return false;
        }
        int n = pkt.payloadLength();
        if (!lengthFits(op, n) || msgOffset + n > r.length) {
            drop(DropReason.RECV_LENGTH, WcStatus.REM_INV_REQ_ERR);
            return false;
        }
        if (n > 0 && !SgeCopy.copy(qp.host().mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge, msgOffset,
                pkt.buf(), pkt.payloadIndex(), n, false, Access.LOCAL_WRITE)) {
            malformedWqe(r);
            return false;
        }
        msgOffset += n;
        inMessage = InMessage.SEND;
        if (op.isLast()) {
            long wrId = r.wrId;
            int len = (int) msgOffset;
            qp.consumeRecv();
            abandon();
            boolean imm = op.has(Header.IMM_DT);
            int flags = WorkCompletion.WC_GRH | (imm ? WorkCompletion.WC_WITH_IMM : 0);
            if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV, len, flags,
                    imm ? ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT)) : 0, pkt.solicited())) {
                qp.moveToError("receive CQ overflow");
            }
        }
        return true;
    }

    private boolean receiveWrite(PacketView pkt, Opcode op) {
        if ((qp.attr.accessFlags() & Access.REMOTE_WRITE) == 0) {
            drop(DropReason.OTHER, WcStatus.REM_ACCESS_ERR); // §3.4 rule 3: no error, no completion (SRQ: class E)
            return false;
        }
        int n = pkt.payloadLength();
        if (op.isFirst()) {
            int reth = pkt.index(Header.RETH);
            long va = Reth.va(pkt.buf(), reth);
            int rkey = Reth.rkey(pkt.buf(), reth);
            long len = Reth.dmaLength(pkt.buf(), reth);
            if (len > (1L << 31)) {
                drop(DropReason.RECV_LENGTH, WcStatus.REM_INV_REQ_ERR);
                return false;
            }
            RxeMr mr = null;
            if (len > 0) {
                mr = qp.host().mrs().remote(rkey, qp.pd, qp.qpn(), va, len, Access.REMOTE_WRITE);
                if (mr == null) {
                    drop(DropReason.OTHER, WcStatus.REM_ACCESS_ERR); // §3.4 rule 5: an R_Key violation drops the message
                    return false;
                }
            }
            writeMr = mr;
            writeVa = va;
            writeResid = len;
            writeLength = len;
        }
        boolean withImm = op.has(Header.IMM_DT);
        if (withImm && qp.peekRecv() == null) {
            drop(DropReason.NO_RECV_WQE, null);
            return false;
        }
        int pmtu = qp.pmtu();
        boolean fits = writeResid > pmtu ? (n == pmtu && !op.isLast()) : (n == writeResid && op.isLast());
        if (!fits) {
            drop(DropReason.RECV_LENGTH, WcStatus.REM_INV_REQ_ERR);
            return false;
        }
        if (n > 0) {
            RxeMr mr = writeMr;
            if (mr == null || !mr.isValid()) {
                drop(DropReason.OTHER, WcStatus.REM_ACCESS_ERR);
                return false;
            }
            try {
                MemoryCopy.fromBuf(pkt.buf(), pkt.payloadIndex(), mr.segment(), mr.offset(writeVa), n);
            } catch (IllegalStateException closed) {
                drop(DropReason.OTHER, WcStatus.REM_ACCESS_ERR);
                return false;
            }
            writeVa += n;
            writeResid -= n;
        }
        inMessage = InMessage.WRITE;
        if (op.isLast()) {
            long len = writeLength;
            abandon();
            if (withImm) {
                RecvWqe r = qp.peekRecv();
                long wrId = r.wrId;
                qp.consumeRecv();
                if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) len,
                        WorkCompletion.WC_GRH | WorkCompletion.WC_WITH_IMM, ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT)),
                        pkt.solicited())) {
                    qp.moveToError("receive CQ overflow");
                }
            }
        }
        return true;
    }

    /** @return whether a packet of {@code op} may carry {@code n} payload bytes (§3.4 rule 4) */
    private boolean lengthFits(Opcode op, int n) {
        int pmtu = qp.pmtu();
        if (op.isFirst() && op.isLast()) {
            return n <= pmtu;
        }
        if (op.isLast()) {
            return n >= 1 && n <= pmtu;
        }
        return n == pmtu;
    }

    /**
     * Drops this packet and the rest of its message, counted: class D; with an SRQ, a receive WQE the
     * message took completes with {@code srqStatus} (class E, {@code verbs-surface-facts.md} §4.4; null:
     * nothing to complete).
     */
    private void drop(DropReason why, WcStatus srqStatus) {
        counters.drop(why);
        dropMsg = true;
        abandon();
        if (srqStatus != null) {
            completeTakenWqe(srqStatus);
        }
    }

    /** The receive WQE's memory cannot be written: it completes with LOC_QP_OP_ERR, the QP enters ERR (class A). */
    private void malformedWqe(RecvWqe r) {
        String why = "UC receive WQE " + r.wrId + ": its memory cannot be written (lkey, bounds or LOCAL_WRITE)";
        long wrId = r.wrId;
        qp.consumeRecv();
        abandon();
        qp.noteErrorReason(why);
        if (qp.completeRecv(wrId, WcStatus.LOC_QP_OP_ERR, WcOpcode.RECV, 0, 0, 0)) {
            qp.moveToError(why);
        } else {
            qp.moveToError("receive CQ overflow");
        }
    }

    /** Forgets the message in progress (its receive WQE, not consumed yet, stays at the head of the RQ). */
    private void abandon() {
        inMessage = InMessage.NONE;
        msgOffset = 0;
        writeMr = null;
        writeVa = 0;
        writeResid = 0;
        writeLength = 0;
    }

    @Override
    public void appendSenderState(StringBuilder sb) {
        sb.append(" uc{sq.psn=0x").append(Integer.toHexString(psn)).append('}');
    }

    @Override
    public void appendReceiverState(StringBuilder sb) {
        sb.append("uc{epsn=0x").append(Integer.toHexString(ePsn)).append(" in=").append(inMessage)
                .append(dropMsg ? " dropping" : "").append('}');
    }
}
