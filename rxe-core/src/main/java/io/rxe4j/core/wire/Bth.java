package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * Base Transport Header flyweight (12 bytes, big-endian; {@code rxe-facts.md} §2.1; IBTA 9.2).
 *
 * <p>Layout: byte 0 OpCode; byte 1 SE(7) M(6) PadCnt(5..4) TVer(3..0); bytes 2–3 P_Key;
 * byte 4 FECN(7) BECN(6) resv; bytes 5–7 DestQP; byte 8 AckReq(7) resv; bytes 9–11 PSN.
 * Every method takes the buffer and the absolute index {@code at} of the BTH's first byte.
 */
public final class Bth {
    /** Header length in bytes. */
    public static final int LENGTH = 12;
    /** Offset of OpCode. */
    public static final int OPCODE_OFFSET = 0;
    /** Offset of the SE/M/PadCnt/TVer byte. */
    public static final int FLAGS_OFFSET = 1;
    /** Offset of P_Key (BE16). */
    public static final int PKEY_OFFSET = 2;
    /** Offset of the FECN/BECN byte ("resv8a" in the ICRC). */
    public static final int RESV8A_OFFSET = 4;
    /** Offset of the 32-bit word whose low 24 bits are DestQP. */
    public static final int DEST_QP_WORD_OFFSET = 4;
    /** Offset of the 32-bit word: AckReq bit 31, PSN bits 23..0. */
    public static final int PSN_WORD_OFFSET = 8;

    /** Default P_Key rxe sends. */
    public static final int DEFAULT_PKEY = 0xFFFF;
    /** SE bit in byte 1. */
    public static final int SE_BIT = 0x80;
    /** MigReq bit in byte 1. */
    public static final int MIG_BIT = 0x40;
    /** AckReq bit in the PSN word. */
    public static final int ACK_REQ_BIT = 0x8000_0000;
    /** BECN bit in the DestQP word. */
    public static final int BECN_BIT = 0x4000_0000;
    /** FECN bit in the DestQP word. */
    public static final int FECN_BIT = 0x8000_0000;
    /**
     * OPFN's "STL Verbs Extended" bit, bit 24 of DW1 ({@code IB_BTHE_E_SHIFT}; {@code
     * tid-opfn-facts.md} §1.1): the lowest bit of byte 4, reserved in the IB BTH (masked by the ICRC).
     */
    public static final int EXTENDED_BIT = 0x0100_0000;
    /** Low 24 bits. */
    public static final int MASK_24 = 0x00FF_FFFF;

    private Bth() {}

    /** @return the 8-bit opcode */
    public static int opcode(ByteBuf b, int at) {
        return b.getUnsignedByte(at + OPCODE_OFFSET);
    }

    /** @return whether the solicited-event bit is set */
    public static boolean se(ByteBuf b, int at) {
        return (b.getByte(at + FLAGS_OFFSET) & SE_BIT) != 0;
    }

    /** @return whether the MigReq bit is set */
    public static boolean migReq(ByteBuf b, int at) {
        return (b.getByte(at + FLAGS_OFFSET) & MIG_BIT) != 0;
    }

    /** @return the pad count, 0..3 bytes */
    public static int padCount(ByteBuf b, int at) {
        return (b.getByte(at + FLAGS_OFFSET) >> 4) & 3;
    }

    /** @return the transport header version (must be 0) */
    public static int tver(ByteBuf b, int at) {
        return b.getByte(at + FLAGS_OFFSET) & 0x0F;
    }

    /** @return the 16-bit partition key */
    public static int pkey(ByteBuf b, int at) {
        return b.getUnsignedShort(at + PKEY_OFFSET);
    }

    /** @return whether FECN is set */
    public static boolean fecn(ByteBuf b, int at) {
        return (b.getInt(at + DEST_QP_WORD_OFFSET) & FECN_BIT) != 0;
    }

    /** @return whether BECN is set */
    public static boolean becn(ByteBuf b, int at) {
        return (b.getInt(at + DEST_QP_WORD_OFFSET) & BECN_BIT) != 0;
    }

    /** @return whether the OPFN extended bit (DW1 bit 24) is set */
    public static boolean extended(ByteBuf b, int at) {
        return (b.getByte(at + RESV8A_OFFSET) & 1) != 0;
    }

    /** Sets the OPFN extended bit (DW1 bit 24), keeping the rest of the BTH. */
    public static void setExtended(ByteBuf b, int at) {
        b.setByte(at + RESV8A_OFFSET, b.getByte(at + RESV8A_OFFSET) | 1);
    }

    /** @return the 24-bit destination QPN */
    public static int destQp(ByteBuf b, int at) {
        return b.getInt(at + DEST_QP_WORD_OFFSET) & MASK_24;
    }

    /** @return whether AckReq is set */
    public static boolean ackReq(ByteBuf b, int at) {
        return (b.getInt(at + PSN_WORD_OFFSET) & ACK_REQ_BIT) != 0;
    }

    /** @return the 24-bit PSN */
    public static int psn(ByteBuf b, int at) {
        return b.getInt(at + PSN_WORD_OFFSET) & MASK_24;
    }

    /** @return the reserved 7 bits after AckReq (should be 0) */
    public static int resv7(ByteBuf b, int at) {
        return (b.getInt(at + PSN_WORD_OFFSET) >>> 24) & 0x7F;
    }

    /**
     * Writes a whole BTH.
     *
     * @param opcode 8-bit opcode
     * @param se solicited event
     * @param padCount pad bytes 0..3
     * @param pkey 16-bit P_Key
     * @param destQp 24-bit destination QPN
     * @param ackReq AckReq bit
     * @param psn 24-bit PSN
     */
    public static void write(ByteBuf b, int at, int opcode, boolean se, int padCount, int pkey,
            int destQp, boolean ackReq, int psn) {
        b.setByte(at + OPCODE_OFFSET, opcode);
        b.setByte(at + FLAGS_OFFSET, (se ? SE_BIT : 0) | ((padCount & 3) << 4));
        b.setShort(at + PKEY_OFFSET, pkey);
        b.setInt(at + DEST_QP_WORD_OFFSET, destQp & MASK_24);
        b.setInt(at + PSN_WORD_OFFSET, (ackReq ? ACK_REQ_BIT : 0) | (psn & MASK_24));
    }

    /** Sets or clears the AckReq bit. */
    public static void setAckReq(ByteBuf b, int at, boolean ackReq) {
        int w = b.getInt(at + PSN_WORD_OFFSET);
        b.setInt(at + PSN_WORD_OFFSET, ackReq ? (w | ACK_REQ_BIT) : (w & ~ACK_REQ_BIT));
    }

    /** Sets the 24-bit PSN, keeping AckReq. */
    public static void setPsn(ByteBuf b, int at, int psn) {
        int w = b.getInt(at + PSN_WORD_OFFSET);
        b.setInt(at + PSN_WORD_OFFSET, (w & ~MASK_24) | (psn & MASK_24));
    }

    /** Sets the 8-bit opcode. */
    public static void setOpcode(ByteBuf b, int at, int opcode) {
        b.setByte(at + OPCODE_OFFSET, opcode);
    }
}
