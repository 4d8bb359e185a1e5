package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * The TID RDMA extension fields in dwords 2–8 of the 36-byte KDETH block
 * ({@code tid-opfn-facts.md} §3.2, §3.4; hfi1 {@code tid_rdma_defs.h}). All of them are
 * <b>big-endian</b>; the two KDETH dwords before them are little-endian ({@link Kdeth}). Every
 * method takes the buffer and the absolute index {@code at} of the block's first byte (BTH + 12,
 * {@code PacketView.index(Header.KDETH)}); offsets below are bytes from {@code at}.
 *
 * <pre>
 * opcode             0       4       8            12–23                     24            28            32
 * READ_REQ   0xE4    kdeth0  kdeth1  RETH VA(8)   RETH R_Key@16, len@20     tid_flow_psn  tid_flow_qp   verbs_qp
 * READ_RESP  0xE5    kdeth0  kdeth1  AETH         reserved 12–27            (reserved)    verbs_psn     verbs_qp
 * WRITE_REQ  0xE0    kdeth0  kdeth1  RETH VA(8)   RETH R_Key@16, len@20     reserved      reserved      verbs_qp
 * WRITE_RESP 0xE1    kdeth0  kdeth1  AETH         reserved 12–23            tid_flow_psn  tid_flow_qp   verbs_qp
 * WRITE_DATA(_LAST)  kdeth0  kdeth1  reserved 8–31                                                      verbs_qp
 * RESYNC     0xE6    kdeth0  kdeth1  reserved 8–31                                                      verbs_qp
 * ACK        0xE7    kdeth0  kdeth1  AETH         reserved 12–19, tid_flow_psn@20  verbs_psn  tid_flow_qp  verbs_qp
 * </pre>
 *
 * <p><b>verbs_qp</b> is at offset 32, the last dword, for all eight opcodes: BTH DestQP of a TID
 * packet is a KDETH QPN (prefix {@link #KDETH_QP_PREFIX} in bits 23:16), never the verbs QPN, so
 * a receiver finds the real QP from {@link #verbsQp} (hfi1 {@code hfi1_kdeth_eager_rcv} /
 * {@code hfi1_kdeth_expected_rcv}; §9.1).
 *
 * <p>The RETH and AETH sit at {@link #RETH_OFFSET} and {@link #AETH_OFFSET} (= 8) with the standard
 * layouts, so {@link Reth} and {@link Aeth} work on {@code at + 8}; the methods here are shortcuts.
 * Builders call {@link #clear} (or {@link #zeroReserved}) so reserved bytes go out as 0.
 */
public final class TidHeader {
    /** Offset of the first extension byte, just after the two KDETH dwords. */
    public static final int EXTENSION_OFFSET = Kdeth.KDETH_LENGTH;
    /** Offset of the RETH (READ_REQ, WRITE_REQ): VA @8, R_Key @16, DMA length @20. */
    public static final int RETH_OFFSET = 8;
    /** Offset of the AETH (READ_RESP, WRITE_RESP, ACK). */
    public static final int AETH_OFFSET = 8;
    /** Offset of tid_flow_psn in READ_REQ and WRITE_RESP. */
    public static final int TID_FLOW_PSN_OFFSET = 24;
    /** Offset of tid_flow_qp in READ_REQ, WRITE_RESP and ACK. */
    public static final int TID_FLOW_QP_OFFSET = 28;
    /** Offset of verbs_psn in READ_RESP. */
    public static final int VERBS_PSN_OFFSET = 28;
    /** Offset of tid_flow_psn in ACK (not 24: the ACK layout differs). */
    public static final int ACK_TID_FLOW_PSN_OFFSET = 20;
    /** Offset of verbs_psn in ACK. */
    public static final int ACK_VERBS_PSN_OFFSET = 24;
    /** Offset of verbs_qp, the last dword, in every TID opcode. */
    public static final int VERBS_QP_OFFSET = 32;

    /** KDETH QPN prefix, bits 23:16 of every KDETH QPN ({@code RVT_KDETH_QP_PREFIX}). */
    public static final int KDETH_QP_PREFIX = 0x80;
    /** Shift of {@link #KDETH_QP_PREFIX} in a QPN. */
    public static final int KDETH_QP_PREFIX_SHIFT = 16;
    /** Shift of the hardware flow index in tid_flow_qp ({@code TID_RDMA_DESTQP_FLOW_SHIFT}). */
    public static final int FLOW_INDEX_SHIFT = 11;
    /** Mask of the hardware flow index after shifting (5 bits, 32 flows). */
    public static final int FLOW_INDEX_MASK = 0x1F;

    private TidHeader() {}

    // ---------------------------------------------------------------- RETH (READ_REQ, WRITE_REQ)

    /** @return the absolute index of the RETH inside the block ({@code at + 8}), for {@link Reth} */
    public static int rethIndex(int at) {
        return at + RETH_OFFSET;
    }

    /** @return RETH VA (READ_REQ: the segment's remote address; WRITE_REQ: the remaining range's) */
    public static long va(ByteBuf b, int at) {
        return Reth.va(b, at + RETH_OFFSET);
    }

    /** @return RETH R_Key */
    public static int rkey(ByteBuf b, int at) {
        return Reth.rkey(b, at + RETH_OFFSET);
    }

    /** @return RETH DMA length in bytes, unsigned 32-bit (READ_REQ: the segment; WRITE_REQ: the rest) */
    public static long dmaLength(ByteBuf b, int at) {
        return Reth.dmaLength(b, at + RETH_OFFSET);
    }

    /** Writes the RETH at offset 8 (big-endian); {@code dmaLength} in bytes. */
    public static void writeReth(ByteBuf b, int at, long va, int rkey, long dmaLength) {
        Reth.write(b, at + RETH_OFFSET, va, rkey, dmaLength);
    }

    // ---------------------------------------------------------------- AETH (READ_RESP, WRITE_RESP, ACK)

    /** @return the absolute index of the AETH inside the block ({@code at + 8}), for {@link Aeth} */
    public static int aethIndex(int at) {
        return at + AETH_OFFSET;
    }

    /** @return the AETH syndrome (a TID NAK of the ACK opcode has {@link Aeth#NAK_PSN_SEQ_ERROR}) */
    public static int syndrome(ByteBuf b, int at) {
        return Aeth.syndrome(b, at + AETH_OFFSET);
    }

    /** @return the AETH MSN, 24 bits */
    public static int msn(ByteBuf b, int at) {
        return Aeth.msn(b, at + AETH_OFFSET);
    }

    /** Writes the AETH at offset 8: 8-bit syndrome, 24-bit MSN. */
    public static void writeAeth(ByteBuf b, int at, int syndrome, int msn) {
        Aeth.write(b, at + AETH_OFFSET, syndrome, msn);
    }

    // ---------------------------------------------------------------- flow fields

    /**
     * @return tid_flow_psn at offset 24 (READ_REQ, WRITE_RESP): {@code generation << 11 |} first
     *     flow sequence of the segment ({@link FlowPsn}), 32 bits as sent
     */
    public static int tidFlowPsn(ByteBuf b, int at) {
        return b.getInt(at + TID_FLOW_PSN_OFFSET);
    }

    /** Sets tid_flow_psn at offset 24 (READ_REQ, WRITE_RESP), big-endian. */
    public static void setTidFlowPsn(ByteBuf b, int at, int flowPsn) {
        b.setInt(at + TID_FLOW_PSN_OFFSET, flowPsn);
    }

    /**
     * @return tid_flow_qp at offset 28 (READ_REQ, WRITE_RESP, ACK): the data destination's KDETH QPN
     *     ORed with the hardware flow index {@code << 11}; the peer echoes it in BTH DestQP of the
     *     data packets (READ_RESP, WRITE_DATA)
     */
    public static int tidFlowQp(ByteBuf b, int at) {
        return b.getInt(at + TID_FLOW_QP_OFFSET);
    }

    /** Sets tid_flow_qp at offset 28 (READ_REQ, WRITE_RESP, ACK), big-endian. */
    public static void setTidFlowQp(ByteBuf b, int at, int flowQp) {
        b.setInt(at + TID_FLOW_QP_OFFSET, flowQp);
    }

    /** @return verbs_psn at offset 28 of a READ_RESP: the verbs (IB) PSN of this response packet */
    public static int verbsPsn(ByteBuf b, int at) {
        return b.getInt(at + VERBS_PSN_OFFSET);
    }

    /** Sets verbs_psn at offset 28 of a READ_RESP, big-endian. */
    public static void setVerbsPsn(ByteBuf b, int at, int psn) {
        b.setInt(at + VERBS_PSN_OFFSET, psn);
    }

    /**
     * @return tid_flow_psn at offset 20 of an ACK: the last good KDETH flow PSN received, used only
     *     in the ACK to a RESYNC (otherwise 0)
     */
    public static int ackTidFlowPsn(ByteBuf b, int at) {
        return b.getInt(at + ACK_TID_FLOW_PSN_OFFSET);
    }

    /** Sets tid_flow_psn at offset 20 of an ACK, big-endian. */
    public static void setAckTidFlowPsn(ByteBuf b, int at, int flowPsn) {
        b.setInt(at + ACK_TID_FLOW_PSN_OFFSET, flowPsn);
    }

    /** @return verbs_psn at offset 24 of an ACK: the verbs PSN of the acked segment's WRITE_RESP */
    public static int ackVerbsPsn(ByteBuf b, int at) {
        return b.getInt(at + ACK_VERBS_PSN_OFFSET);
    }

    /** Sets verbs_psn at offset 24 of an ACK, big-endian. */
    public static void setAckVerbsPsn(ByteBuf b, int at, int psn) {
        b.setInt(at + ACK_VERBS_PSN_OFFSET, psn);
    }

    // ---------------------------------------------------------------- verbs_qp (all opcodes)

    /**
     * @return verbs_qp at offset 32, present in every TID opcode: the receiver's real (verbs) QPN,
     *     24 bits (the top byte is ignored, as hfi1 masks with {@code RVT_QPN_MASK})
     */
    public static int verbsQp(ByteBuf b, int at) {
        return b.getInt(at + VERBS_QP_OFFSET) & Bth.MASK_24;
    }

    /** Sets verbs_qp at offset 32 (big-endian): the 24-bit verbs QPN, top byte 0. */
    public static void setVerbsQp(ByteBuf b, int at, int qpn) {
        b.setInt(at + VERBS_QP_OFFSET, qpn & Bth.MASK_24);
    }

    // ---------------------------------------------------------------- reserved bytes

    /** Zeroes the whole 36-byte block (both KDETH dwords and every extension field). */
    public static void clear(ByteBuf b, int at) {
        b.setZero(at, Kdeth.LENGTH);
    }

    /**
     * Zeroes the bytes that {@code op}'s layout reserves (table above) and nothing else, so a
     * builder may write the fields first.
     *
     * @param op a TID opcode ({@link Opcode.Transport#TID})
     * @throws IllegalArgumentException if {@code op} is not a TID opcode
     */
    public static void zeroReserved(ByteBuf b, int at, Opcode op) {
        int from = reservedFrom(op);
        b.setZero(at + from, reservedTo(op) - from);
    }

    /**
     * @param op a TID opcode
     * @return whether every reserved byte of {@code op}'s layout is 0
     * @throws IllegalArgumentException if {@code op} is not a TID opcode
     */
    public static boolean reservedAreZero(ByteBuf b, int at, Opcode op) {
        for (int i = reservedFrom(op), end = reservedTo(op); i < end; i++) {
            if (b.getByte(at + i) != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * @param op a TID opcode
     * @return the offset of the first reserved byte of {@code op}'s layout (equal to
     *     {@link #reservedTo} when none is reserved: READ_REQ)
     * @throws IllegalArgumentException if {@code op} is not a TID opcode
     */
    public static int reservedFrom(Opcode op) {
        return switch (op) {
            case TID_RDMA_READ_REQ -> VERBS_QP_OFFSET;
            case TID_RDMA_WRITE_REQ -> TID_FLOW_PSN_OFFSET;
            case TID_RDMA_READ_RESP, TID_RDMA_WRITE_RESP, TID_RDMA_ACK -> AETH_OFFSET + Aeth.LENGTH;
            case TID_RDMA_WRITE_DATA, TID_RDMA_WRITE_DATA_LAST, TID_RDMA_RESYNC -> EXTENSION_OFFSET;
            default -> throw new IllegalArgumentException(op + " is not a TID RDMA opcode");
        };
    }

    /**
     * @param op a TID opcode
     * @return the offset just after the last reserved byte of {@code op}'s layout (the reserved
     *     bytes of every TID layout are one contiguous run)
     * @throws IllegalArgumentException if {@code op} is not a TID opcode
     */
    public static int reservedTo(Opcode op) {
        return switch (op) {
            case TID_RDMA_READ_REQ -> VERBS_QP_OFFSET;
            case TID_RDMA_READ_RESP -> VERBS_PSN_OFFSET;
            case TID_RDMA_WRITE_RESP -> TID_FLOW_PSN_OFFSET;
            case TID_RDMA_ACK -> ACK_TID_FLOW_PSN_OFFSET;
            case TID_RDMA_WRITE_REQ, TID_RDMA_WRITE_DATA, TID_RDMA_WRITE_DATA_LAST, TID_RDMA_RESYNC -> VERBS_QP_OFFSET;
            default -> throw new IllegalArgumentException(op + " is not a TID RDMA opcode");
        };
    }

    // ---------------------------------------------------------------- KDETH QPNs

    /**
     * @param ctxt receive context, 0..0x7FF (masked, so that it never reaches the flow index bits)
     * @return the KDETH QPN of receive context {@code ctxt}: {@code 0x80 << 16 | ctxt} (§3.2, §9.1)
     */
    public static int kdethQpn(int ctxt) {
        return (KDETH_QP_PREFIX << KDETH_QP_PREFIX_SHIFT) | (ctxt & 0x7FF);
    }

    /**
     * @param kdethQpn the data destination's KDETH QPN ({@link #kdethQpn})
     * @param flowIndex hardware flow index 0..31
     * @return the tid_flow_qp value: {@code kdethQpn | (flowIndex & 0x1F) << 11}
     */
    public static int flowQpn(int kdethQpn, int flowIndex) {
        return kdethQpn | ((flowIndex & FLOW_INDEX_MASK) << FLOW_INDEX_SHIFT);
    }

    /** @return the hardware flow index, bits 15:11 of a tid_flow_qp / data-packet DestQP */
    public static int flowIndex(int flowQpn) {
        return (flowQpn >>> FLOW_INDEX_SHIFT) & FLOW_INDEX_MASK;
    }

    /** @return whether bits 23:16 of {@code qpn} hold the KDETH prefix 0x80 */
    public static boolean isKdethQpn(int qpn) {
        return ((qpn >>> KDETH_QP_PREFIX_SHIFT) & 0xFF) == KDETH_QP_PREFIX;
    }
}
