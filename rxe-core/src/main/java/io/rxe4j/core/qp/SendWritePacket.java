package io.rxe4j.core.qp;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.WrOpcode;

/**
 * Builds one SEND or RDMA WRITE packet of a send WQE at any byte offset of its message ({@code
 * rxe_req.c}'s {@code init_req_packet} and {@code finish_packet}; {@code rxe-facts.md} §4.2): the
 * opcode FIRST/MIDDLE/LAST/ONLY by position, RETH on the first, ImmDt and SE on the last, the payload
 * from the WQE, pad and ICRC room. RC and UC share it; UC's opcodes are RC's + 0x20 ({@code
 * verbs-surface-facts.md} §3.1). Reads the WQE and never changes it. Loop only.
 */
public final class SendWritePacket {
    private SendWritePacket() {}

    /**
     * @param uc whether the QP is UC (opcode + 0x20; AckReq is the caller's, false on UC)
     * @return the packet with its writer index at its end (ICRC included), or null when the WQE's
     *     local memory cannot be read (LOC_PROT_ERR; nothing is left allocated)
     */
    public static ByteBuf build(RxeQp qp, SendWqe w, int psn, long offset, int pmtu, boolean ackReq, boolean uc) {
        long remaining = w.length - offset;
        int payload = (int) Math.max(0, Math.min(remaining, pmtu));
        boolean first = offset == 0;
        boolean last = remaining <= pmtu;
        Opcode op = WrOpcodeInfo.of(w.opcode).packetOpcode(first, last);
        if (uc) {
            op = Opcode.of(op.code() + 0x20);
        }
        boolean se = last && (w.sendFlags & SendFlags.SOLICITED) != 0
                && (w.opcode == WrOpcode.SEND || w.opcode == WrOpcode.SEND_WITH_IMM
                    || w.opcode == WrOpcode.SEND_WITH_INV || w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM);
        int pad = -payload & 3;
        int hdr = op.headerLength();
        int total = hdr + payload + pad + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(qp, total);
        try {
            Bth.write(b, 0, op.code(), se, pad, Bth.DEFAULT_PKEY, qp.destQpn(), ackReq, psn);
            if (op.has(Header.RETH)) {
                Reth.write(b, op.offset(Header.RETH), w.remoteAddr, w.rkey, w.length);
            }
            if (op.has(Header.IMM_DT)) {
                ImmDt.write(b, op.offset(Header.IMM_DT), w.immData);
            }
            if (op.has(Header.IETH)) {
                io.rxe4j.core.wire.Ieth.write(b, op.offset(Header.IETH), w.invalidateRkey);
            }
            if (!SgeCopy.payload(qp, w, offset, b, hdr, payload, pad)) {
                b.release();
                return null;
            }
        } catch (RuntimeException e) {
            b.release();
            throw e;
        }
        b.writerIndex(total);
        return b;
    }
}
