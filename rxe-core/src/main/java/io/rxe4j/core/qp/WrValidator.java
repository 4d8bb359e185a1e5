package io.rxe4j.core.qp;

import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WrOpcode;

/**
 * The post-time checks of send and receive WRs ({@code rxe_verbs.c:validate_send_wr} /
 * {@code rxe_post_recv} and rxe's {@code rxe_wr_opcode_info} lookup), asking {@link
 * WrOpcodeInfo} what an opcode allows. A refused WR throws before anything is queued, with a
 * message that names the field, as {@code bad_wr}.
 *
 * <p>Threading: any thread (the posting thread); reads only immutable configuration and the MR
 * table, which is safe for concurrent lookups.
 */
final class WrValidator {
    private final int qpn;
    private final QpCaps caps;
    private final RxePd pd;
    private final MrTable mrs;
    private final QpType type;
    /** UD: the largest message, the port's active MTU in bytes (a UD message is one packet). */
    private final int udMaxMessage;

    WrValidator(int qpn, QpCaps caps, RxePd pd, MrTable mrs) {
        this(qpn, caps, pd, mrs, QpType.RC, Integer.MAX_VALUE);
    }

    /**
     * @param type the QP's type: which opcodes it takes
     * @param activeMtu the port's active MTU in bytes: the largest UD message
     */
    WrValidator(int qpn, QpCaps caps, RxePd pd, MrTable mrs, QpType type, int activeMtu) {
        this.qpn = qpn;
        this.caps = caps;
        this.pd = pd;
        this.mrs = mrs;
        this.type = type;
        this.udMaxMessage = activeMtu;
    }

    /**
     * The checks of {@code ibv_post_send} for a QP in {@code state}: the state, then the WR.
     *
     * @throws IllegalStateException if the QP is not in RTS, SQD, SQE or ERR (posting in ERR is
     *     accepted and completes with WR_FLUSH_ERR, as rxe)
     * @throws IllegalArgumentException for an opcode the QP type does not take, a UD message longer
     *     than the port's active MTU, too many SGEs, an
     *     unknown lkey or an SGE outside its MR, a wrong atomic length or alignment, or inline
     *     data larger than max_inline_data (each named)
     */
    void validatePost(QpState state, SendWr wr) {
        validatePost(state, wr, null);
    }

    /** As {@link #validatePost(QpState, SendWr)}; a UD WR may go to {@code peer} without an address handle. */
    void validatePost(QpState state, SendWr wr, java.net.InetSocketAddress peer) {
        if (state == QpState.RESET || state == QpState.INIT || state == QpState.RTR) {
            throw new IllegalStateException("post_send requires the QP in RTS (or SQD/ERR), QP 0x"
                    + Integer.toHexString(qpn) + " is in " + state);
        }
        validateSend(wr, peer);
    }

    /**
     * The WR checks of {@code ibv_post_send} alone.
     *
     * @throws IllegalArgumentException as {@link #validatePost}
     */
    void validateSend(SendWr wr) {
        validateSend(wr, null);
    }

    private void validateSend(SendWr wr, java.net.InetSocketAddress peer) {
        WrOpcode op = wr.opcode;
        if (op == null) {
            throw new IllegalArgumentException("send WR opcode is null");
        }
        WrOpcodeInfo info = WrOpcodeInfo.of(op);
        if (!info.allowed(type)) {
            throw new IllegalArgumentException("WR opcode " + op + " is not supported on a " + type + " QP");
        }
        if (type == QpType.UD) {
            if (wr.ah == null && peer == null) {
                throw new IllegalArgumentException("a UD send WR needs an address handle (SendWr.ud), wr_id " + wr.wrId);
            }
            long len = wr.totalLength();
            if (len > udMaxMessage) {
                // rdma_rxe completes such a WR successfully without sending anything (C10-93.1.1,
                // verbs-surface-facts §1.3); rxe4j refuses it before anything is queued (docs/verbs.md)
                throw new IllegalArgumentException("UD message of " + len + " bytes exceeds the port's active MTU of "
                        + udMaxMessage + " bytes (a UD message is one packet), wr_id " + wr.wrId);
            }
            if ((wr.remoteQpn & ~0xFFFFFF) != 0) {
                throw new IllegalArgumentException("remote_qpn must be 24-bit, got 0x" + Integer.toHexString(wr.remoteQpn));
            }
        }
        if (info.family() == WrOpcodeInfo.Family.LOCAL) {
            validateLocal(wr);
            return;
        }
        if (info.operandInWr()) {
            if (wr.numSge != 0) {
                throw new IllegalArgumentException(op + " takes no SGEs (its operand is in the WR), got num_sge "
                        + wr.numSge);
            }
            if (info.family() == WrOpcodeInfo.Family.FLUSH) {
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
        if (wr.inlineData != null) {
            if (!info.is(WrOpcodeInfo.INLINE_MASK)) {
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
        if (inline && !info.is(WrOpcodeInfo.INLINE_MASK)) {
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
                RxeMr mr = mrs.lookup(sge.lkey);
                if (mr == null || !mr.contains(sge.addr, sge.length)) {
                    throw new IllegalArgumentException("inline sg_list[" + i + "] " + sge
                            + " must lie in a registered MR of this device (rxe4j reads inline data from MRs only)");
                }
            }
            if (!inline && sge.length > 0) {
                int need = info.localAccess();
                RxeMr mr = mrs.lookup(sge.lkey);
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
        if (info.is(WrOpcodeInfo.ATOMIC_MASK)) {
            if (total != 8) {
                throw new IllegalArgumentException(op + " needs exactly 8 bytes of local SGE, got " + total);
            }
            if ((wr.remoteAddr & 7) != 0) {
                throw new IllegalArgumentException(op + " remote_addr 0x" + Long.toHexString(wr.remoteAddr)
                        + " is not 8-byte aligned");
            }
        }
    }

    /**
     * A local operation ({@code rxe.c:validate_send_wr} for BIND_MW; LOCAL_INV alike): no SGEs, no
     * inline data, no immediate; BIND_MW names a window and what to bind. The window's own checks
     * run when the WR executes ({@code verbs-surface-facts.md} §5.3: MW_BIND_ERR).
     */
    private void validateLocal(SendWr wr) {
        if (wr.numSge != 0 || wr.inlineData != null || (wr.sendFlags & SendFlags.INLINE) != 0) {
            throw new IllegalArgumentException(wr.opcode + " takes no SGEs or inline data, got num_sge " + wr.numSge
                    + (wr.inlineData != null || (wr.sendFlags & SendFlags.INLINE) != 0 ? " and inline data" : ""));
        }
        if (wr.immData != 0 && wr.opcode == WrOpcode.BIND_MW) {
            throw new IllegalArgumentException("BIND_MW takes no immediate data, got 0x" + Integer.toHexString(wr.immData));
        }
        if (wr.opcode == WrOpcode.BIND_MW && (wr.mw == null || wr.bindInfo == null)) {
            throw new IllegalArgumentException("a BIND_MW WR needs a window and bind info (SendWr.bindMw), wr_id "
                    + wr.wrId);
        }
    }

    /**
     * The checks of {@code ibv_post_recv} for a QP in {@code state}.
     *
     * @return the WR's total length in bytes (the sum of its SGE lengths)
     * @throws IllegalStateException if the QP is in RESET
     * @throws IllegalArgumentException for too many SGEs, a null SGE or negative length, an
     *     unknown lkey, an SGE outside its MR or an MR without LOCAL_WRITE
     */
    long validateRecv(QpState state, RecvWr wr) {
        if (state == QpState.RESET) {
            throw new IllegalStateException("post_recv requires the QP in INIT or later, QP 0x"
                    + Integer.toHexString(qpn) + " is in RESET");
        }
        return validateRecvSges(wr, caps.maxRecvSge(), pd, mrs);
    }

    /**
     * The SGE checks of a receive WR, for a QP's receive queue or a shared receive queue.
     *
     * @return the WR's total length in bytes
     * @throws IllegalArgumentException for too many SGEs, a null SGE or negative length, an unknown
     *     lkey, an SGE outside its MR, an MR without LOCAL_WRITE, or more than 2^31 bytes
     */
    static long validateRecvSges(RecvWr wr, int maxSge, RxePd pd, MrTable mrs) {
        if (wr.numSge < 0 || wr.numSge > maxSge || wr.numSge > wr.sgList.length) {
            throw new IllegalArgumentException("num_sge " + wr.numSge + " exceeds max_recv_sge " + maxSge
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
                RxeMr mr = mrs.lookup(sge.lkey);
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
        if (total > (1L << 31)) {
            throw new IllegalArgumentException("receive WR of " + total + " bytes exceeds 2^31");
        }
        return total;
    }
}
