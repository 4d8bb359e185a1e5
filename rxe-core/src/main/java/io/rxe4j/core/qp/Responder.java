package io.rxe4j.core.qp;

import io.rxe4j.core.wire.DropReason;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.device.DeviceCounters;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.MemoryRegion;
import io.rxe4j.core.verbs.Access;
import io.rxe4j.core.verbs.WcOpcode;
import io.rxe4j.core.verbs.WcStatus;
import io.rxe4j.core.verbs.WorkCompletion;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;

/**
 * The responder ({@code rxe_resp.c}; {@code rxe-facts.md} §1.3, §4.2, §5.5–§5.7, §6.3, §9.3):
 * CHK_PSN → CHK_OP_SEQ → CHK_OP_VALID → CHK_RESOURCE → CHK_LENGTH → CHK_RKEY → EXECUTE →
 * COMPLETE → ACKNOWLEDGE, one method per step. Class C errors send a NAK with the packet's PSN
 * and move the QP to ERR; out-of-sequence requests get one PSN-sequence NAK per gap; duplicates
 * are answered without re-executing. Loop only.
 */
final class Responder {
    private enum InMessage { NONE, SEND, WRITE }

    /** Maximum RETH DMA length ({@code RXE_PORT_MAX_MSG_SZ}). */
    private static final long MAX_MSG = 1L << 31;

    private final QueuePair qp;
    private final DeviceCounters counters;
    private final ResponderResources resources = new ResponderResources();

    /** Expected PSN (resp.psn). */
    private int ePsn;
    /** Message sequence number, 24-bit. */
    private int msn;
    private boolean nakSent;
    private InMessage inMessage = InMessage.NONE;
    private RecvWqe recv;
    private long recvOffset;
    private MemoryRegion writeMr;
    private long writeVa;
    private long writeResid;
    private long writeLength;

    Responder(QueuePair qp) {
        this.qp = qp;
        this.counters = qp.device.counters();
    }

    void setExpectedPsn(int p) {
        ePsn = p;
    }

    void resizeResources(int n) {
        resources.resize(n);
    }

    void reset() {
        ePsn = qp.rqPsn;
        msn = 0;
        nakSent = false;
        abortMessage();
        resources.clear();
    }

    void abortMessage() {
        inMessage = InMessage.NONE;
        recv = null;
        writeMr = null;
    }

    void onRequest(PacketView pkt) {
        Opcode op = pkt.opcode();
        int p = pkt.psn();
        // CHK_PSN
        int d = Psn.diff(p, ePsn);
        if (d > 0) {
            counters.outOfSeqRequest++;
            if (!nakSent) {
                nakSent = true;
                sendAck(Aeth.NAK_PSN_SEQ_ERROR, ePsn);
            }
            return;
        }
        if (d < 0) {
            counters.duplicateRequest++;
            duplicate(pkt, op, p);
            return;
        }
        nakSent = false;
        // CHK_OP_SEQ
        boolean seqOk = switch (inMessage) {
            case NONE -> op.isFirst();
            case SEND -> op.operation() == Opcode.Operation.SEND && !op.isFirst();
            case WRITE -> op.operation() == Opcode.Operation.WRITE && !op.isFirst();
        };
        if (!seqOk) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        // CHK_OP_VALID
        int need = switch (op.operation()) {
            case SEND -> op.hasInvalidate() ? -1 : 0; // no memory windows / invalidation yet
            case WRITE -> Access.REMOTE_WRITE;
            case READ -> Access.REMOTE_READ;
            case COMPARE_SWAP, FETCH_ADD -> Access.REMOTE_ATOMIC;
            default -> -1; // not implemented by this responder yet
        };
        if (need < 0 || (qp.accessFlags & need) != need) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        // CHK_LENGTH (packet level)
        int pmtu = qp.pmtu();
        int n = pkt.payloadLength();
        boolean lenOk = switch (op.payload()) {
            case NONE -> n == 0;
            case PMTU -> n == pmtu;
            case NON_EMPTY -> n >= 1 && n <= pmtu;
            case ANY -> n <= pmtu;
            case EIGHT -> n == 8;
        };
        if (!lenOk) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        switch (op.operation()) {
            case SEND -> executeSend(pkt, op, p, n);
            case WRITE -> executeWrite(pkt, op, p, n, pmtu);
            case READ -> executeRead(pkt, p, pmtu);
            case COMPARE_SWAP, FETCH_ADD -> executeAtomic(pkt, op, p);
            default -> nakError(Aeth.NAK_INVALID_REQUEST, p);
        }
    }

    // ------------------------------------------------------------------ execute

    private void executeSend(PacketView pkt, Opcode op, int p, int n) {
        if (op.isFirst()) {
            RecvWqe r = qp.peekRecv(); // CHK_RESOURCE
            if (r == null) {
                rnrNak(p);
                return;
            }
            recv = r;
            recvOffset = 0;
        }
        if (recvOffset + n > recv.length) {
            nakError(Aeth.NAK_INVALID_REQUEST, p); // receive buffer too small (rxe-facts §5.6)
            return;
        }
        if (!scatterToRecv(recv, recvOffset, pkt.buf(), pkt.payloadIndex(), n)) {
            nakError(Aeth.NAK_REMOTE_OP_ERROR, p); // malformed receive WQE
            return;
        }
        recvOffset += n;
        if (op.isLast()) {
            int flags = WorkCompletion.WC_GRH;
            int imm = 0;
            if (op.hasImmediate()) {
                flags |= WorkCompletion.WC_WITH_IMM;
                imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
            }
            RecvWqe r = recv;
            recv = null;
            inMessage = InMessage.NONE;
            msn = Psn.next(msn);
            boolean cqOk = qp.completeRecv(r, WcStatus.SUCCESS, WcOpcode.RECV, (int) recvOffset, flags, imm);
            qp.consumeRecv(); // only after the CQE was built from the slot
            if (!cqOk) {
                qp.moveToError();
                return;
            }
        } else {
            inMessage = InMessage.SEND;
        }
        accept(pkt, p);
    }

    private void executeWrite(PacketView pkt, Opcode op, int p, int n, int pmtu) {
        if (op.consumesRecvWqe()) {
            // CHK_RESOURCE: WRITE_WITH_IMM needs a receive WQE for its completion. rxe takes it
            // before CHK_LENGTH/CHK_RKEY, so a later class C error completes this WQE with the
            // error status (rxe_resp.c do_complete) rather than flushing it.
            RecvWqe r = qp.peekRecv();
            if (r == null) {
                rnrNak(p);
                return;
            }
            recv = r;
            recvOffset = 0;
        }
        if (op.isFirst()) {
            int reth = pkt.index(Header.RETH);
            long va = Reth.va(pkt.buf(), reth);
            int rkey = Reth.rkey(pkt.buf(), reth);
            long len = Reth.dmaLength(pkt.buf(), reth);
            if (len > MAX_MSG) {
                nakError(Aeth.NAK_INVALID_REQUEST, p);
                return;
            }
            MemoryRegion mr = null;
            if (len > 0) { // C9-88: a zero-length WRITE checks no rkey
                mr = remoteMr(rkey, va, len, Access.REMOTE_WRITE);
                if (mr == null) {
                    nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                    return;
                }
            }
            writeMr = mr;
            writeVa = va;
            writeResid = len;
            writeLength = len;
        }
        boolean fits = writeResid > pmtu ? (n == pmtu && !op.isLast()) : (n == writeResid && op.isLast());
        if (!fits) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        if (n > 0) {
            MemoryRegion mr = writeMr;
            if (mr == null || !mr.isValid()) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
            try {
                MemoryCopy.fromBuf(pkt.buf(), pkt.payloadIndex(), mr.segment(), mr.offset(writeVa), n);
            } catch (IllegalStateException closed) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
            writeVa += n;
            writeResid -= n;
        }
        if (op.isLast()) {
            inMessage = InMessage.NONE;
            writeMr = null;
            msn = Psn.next(msn);
            if (op.hasImmediate()) {
                RecvWqe r = recv;
                recv = null;
                int imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
                boolean cqOk = qp.completeRecv(r, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) writeLength,
                        WorkCompletion.WC_GRH | WorkCompletion.WC_WITH_IMM, imm);
                qp.consumeRecv();
                if (!cqOk) {
                    qp.moveToError();
                    return;
                }
            }
        } else {
            inMessage = InMessage.WRITE;
        }
        accept(pkt, p);
    }

    private void executeRead(PacketView pkt, int p, int pmtu) {
        if (qp.maxDestRdAtomic == 0) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        int rkey = Reth.rkey(pkt.buf(), reth);
        long len = Reth.dmaLength(pkt.buf(), reth);
        if (len > MAX_MSG) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        MemoryRegion mr = null;
        if (len > 0) {
            mr = remoteMr(rkey, va, len, Access.REMOTE_READ);
            if (mr == null) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
        }
        int npkts = (int) Math.max(1, (len + pmtu - 1) / pmtu);
        ResponderResources.Entry e = resources.allocate();
        e.type = ResponderResources.Type.READ;
        e.firstPsn = p;
        e.lastPsn = Psn.add(p, npkts - 1);
        e.va = va;
        e.length = len;
        e.rkey = rkey;
        msn = Psn.next(msn);
        ePsn = Psn.add(p, npkts);
        sendReadResponses(mr, va, len, p, true, pmtu);
    }

    private void executeAtomic(PacketView pkt, Opcode op, int p) {
        if (qp.maxDestRdAtomic == 0) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        int at = pkt.index(Header.ATOMIC_ETH);
        long va = AtomicEth.va(pkt.buf(), at);
        int rkey = AtomicEth.rkey(pkt.buf(), at);
        MemoryRegion mr = remoteMr(rkey, va, 8, Access.REMOTE_ATOMIC);
        if (mr == null) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        if ((va & 7) != 0) {
            nakError(Aeth.NAK_INVALID_REQUEST, p); // misaligned atomic (A19.4.2)
            return;
        }
        long original;
        try {
            original = op == Opcode.RC_COMPARE_SWAP
                    ? mr.compareAndExchange(va, AtomicEth.compare(pkt.buf(), at), AtomicEth.swapAdd(pkt.buf(), at))
                    : mr.getAndAdd(va, AtomicEth.swapAdd(pkt.buf(), at));
        } catch (IllegalStateException closed) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        ResponderResources.Entry e = resources.allocate();
        e.type = ResponderResources.Type.ATOMIC;
        e.firstPsn = p;
        e.lastPsn = p;
        e.original = original;
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        sendAtomicAck(p, original);
    }

    /** Accepts a SEND/WRITE packet: advance the expected PSN and ACK if asked. */
    private void accept(PacketView pkt, int p) {
        ePsn = Psn.next(p);
        if (pkt.ackReq()) {
            sendAck(Aeth.ACK_UNLIMITED, p);
        }
    }

    // ------------------------------------------------------------------ duplicates

    private void duplicate(PacketView pkt, Opcode op, int p) {
        switch (op.operation()) {
            case SEND, WRITE -> sendAck(Aeth.ACK_UNLIMITED, Psn.add(ePsn, -1)); // C9-105: ACK again
            case READ -> {
                ResponderResources.Entry e = resources.find(p);
                if (e == null || e.type != ResponderResources.Type.READ) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                int reth = pkt.index(Header.RETH);
                long va = Reth.va(pkt.buf(), reth);
                int rkey = Reth.rkey(pkt.buf(), reth);
                long len = Reth.dmaLength(pkt.buf(), reth);
                long off = va - e.va;
                boolean subset = rkey == e.rkey && Long.compareUnsigned(va, e.va) >= 0
                        && Long.compareUnsigned(off, e.length) <= 0 && len <= e.length - off;
                if (!subset) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                MemoryRegion mr = null;
                if (len > 0) {
                    mr = remoteMr(rkey, va, len, Access.REMOTE_READ); // looked up again (rxe-facts §5.5)
                    if (mr == null) {
                        counters.drop(DropReason.OTHER);
                        return;
                    }
                }
                sendReadResponses(mr, va, len, p, p == e.firstPsn, qp.pmtu());
            }
            case COMPARE_SWAP, FETCH_ADD -> {
                ResponderResources.Entry e = resources.find(p);
                if (e == null || e.type != ResponderResources.Type.ATOMIC || e.firstPsn != p) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                sendAtomicAck(p, e.original); // memory is not touched again
            }
            default -> counters.drop(DropReason.OTHER);
        }
    }

    /**
     * CHK_RKEY: the MR named by {@code rkey}, if it is valid, of this QP's PD, holds
     * {@code [va, va+len)} and grants {@code access}; else null (NAK 0x62).
     */
    private MemoryRegion remoteMr(int rkey, long va, long len, int access) {
        MemoryRegion mr = qp.device.mrs().lookup(rkey);
        return mr != null && mr.pd() == qp.pd && mr.allows(va, len, access) ? mr : null;
    }

    // ------------------------------------------------------------------ errors

    private void rnrNak(int p) {
        counters.sendRnrErr++;
        sendAck(Aeth.TYPE_RNR_NAK | (qp.minRnrTimer & 0x1F), p);
    }

    /** Class C error: NAK with the packet PSN, complete a receive WQE in use, QP → ERR. */
    private void nakError(int syndrome, int p) {
        sendAck(syndrome, p);
        RecvWqe r = recv;
        if (r != null) {
            WcStatus st = switch (syndrome) {
                case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                case Aeth.NAK_REMOTE_OP_ERROR -> WcStatus.LOC_QP_OP_ERR;
                default -> WcStatus.REM_INV_REQ_ERR;
            };
            recv = null;
            qp.completeRecv(r, st, WcOpcode.RECV, (int) recvOffset, 0, 0);
            qp.consumeRecv();
        }
        qp.moveToError();
    }

    // ------------------------------------------------------------------ packets out

    private boolean scatterToRecv(RecvWqe r, long msgOffset, ByteBuf b, int index, int len) {
        return SgeCopy.copy(qp.device.mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge, msgOffset, b, index,
                len, false, Access.LOCAL_WRITE);
    }

    void sendAck(int syndrome, int psn) {
        Opcode op = Opcode.RC_ACKNOWLEDGE;
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.device.allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn, false, psn);
        Aeth.write(b, op.offset(Header.AETH), syndrome, msn);
        b.writerIndex(total);
        qp.device.transmit(qp, b);
    }

    private void sendAtomicAck(int psn, long original) {
        Opcode op = Opcode.RC_ATOMIC_ACKNOWLEDGE;
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.device.allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn, false, psn);
        Aeth.write(b, op.offset(Header.AETH), Aeth.ACK_UNLIMITED, msn);
        AtomicAckEth.write(b, op.offset(Header.ATOMIC_ACK_ETH), original);
        b.writerIndex(total);
        qp.device.transmit(qp, b);
    }

    /**
     * Sends READ response packets for {@code [va, va+len)} starting at PSN {@code psn}.
     *
     * @param startsMessage whether the first packet is FIRST/ONLY (else MIDDLE/LAST, a replay
     *     from inside the original response)
     */
    private void sendReadResponses(MemoryRegion mr, long va, long len, int psn, boolean startsMessage, int pmtu) {
        long off = 0;
        int p = psn;
        boolean first = startsMessage;
        do {
            long remaining = len - off;
            int n = (int) Math.min(remaining, pmtu);
            boolean last = remaining <= pmtu;
            Opcode op = first ? (last ? Opcode.RC_RDMA_READ_RESPONSE_ONLY : Opcode.RC_RDMA_READ_RESPONSE_FIRST)
                    : (last ? Opcode.RC_RDMA_READ_RESPONSE_LAST : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE);
            int pad = -n & 3;
            int hdr = op.headerLength();
            int total = hdr + n + pad + Icrc.LENGTH;
            ByteBuf b = qp.device.allocPacket(total);
            Bth.write(b, 0, op.code(), false, pad, Bth.DEFAULT_PKEY, qp.destQpn, false, p);
            if (op.has(Header.AETH)) {
                Aeth.write(b, op.offset(Header.AETH), Aeth.ACK_UNLIMITED, msn);
            }
            if (n > 0) {
                try {
                    MemoryCopy.toBuf(mr.segment(), mr.offset(va + off), b, hdr, n);
                } catch (IllegalStateException closed) {
                    b.release();
                    return; // MR released: the requester times out and fails
                }
            }
            for (int i = 0; i < pad; i++) {
                b.setByte(hdr + n + i, 0);
            }
            b.writerIndex(total);
            qp.device.transmit(qp, b);
            off += n;
            p = Psn.next(p);
            first = false;
        } while (off < len);
    }
}
