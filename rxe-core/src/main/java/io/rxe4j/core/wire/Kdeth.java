package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * KDETH flyweight: the first two dwords of the 36-byte KDETH + TID extension block that follows
 * the BTH of every TID RDMA opcode 0xE0–0xE7 ({@code tid-opfn-facts.md} §3.3; {@code extensions.md}
 * §5). The other seven dwords are the per-opcode TID extension fields of {@link TidHeader}.
 *
 * <p><b>Byte order:</b> the two KDETH dwords are <em>little-endian</em> on the wire (hfi1 declares
 * them {@code __le32}), unlike every other RoCE field; the rest of the block is big-endian. Every
 * method takes the buffer and the absolute index {@code at} of the block's first byte, which is
 * BTH + 12 ({@code PacketView.index(Header.KDETH)}).
 *
 * <p>kdeth0 (bytes 0–3, LE32):
 * <pre>
 *  31:30 KVER (always 1)   29 SH   28 INTR   27:26 TIDCTRL   25:16 TID   15 OM   14:0 OFFSET
 * </pre>
 * OFFSET is the offset inside the TID buffer in units chosen by OM; TID RDMA always sends OM = 1,
 * so the unit is {@link #OM_LARGE_UNIT} = 64 bytes. SH (header suppression) is 1 on every data
 * packet except the last one of a segment. Non-data TID packets (WRITE_REQ, WRITE_RESP, READ_REQ,
 * RESYNC, ACK) set only KVER = 1.
 *
 * <p>kdeth1 (bytes 4–7, LE32): bits 15:0 J_KEY (hfi1 uses only the low 8 bits,
 * {@link #JKEY_DRIVER_MASK}), bits 31:16 the header CRC, which hardware fills in and software
 * writes as 0.
 *
 * <p>Writers mask every field to its width; nothing is allocated and the buffer's indices are not
 * moved.
 */
public final class Kdeth {
    /** Length of the whole KDETH + TID extension block in bytes (9 dwords). */
    public static final int LENGTH = 36;
    /** Offset of kdeth0 (LE32) in the block. */
    public static final int KDETH0_OFFSET = 0;
    /** Offset of kdeth1 (LE32) in the block. */
    public static final int KDETH1_OFFSET = 4;
    /** Length in bytes of the two KDETH dwords proper; the TID extension fields follow. */
    public static final int KDETH_LENGTH = 8;

    /** The only KDETH version: KVER is always 1. */
    public static final int KVER = 1;
    /** OM value of the large offset mode that TID RDMA always uses. */
    public static final int OM_LARGE = 1;
    /** Unit of OFFSET when OM = 1, in bytes ({@code KDETH_OM_LARGE}). */
    public static final int OM_LARGE_UNIT = 64;
    /** log2 of {@link #OM_LARGE_UNIT}: byte offset = {@code OFFSET << 6}. */
    public static final int OM_LARGE_SHIFT = 6;

    /** kdeth0: OFFSET mask, bits 14:0 (15 bits). */
    public static final int OFFSET_MASK = 0x7FFF;
    /** kdeth0: OM bit 15. */
    public static final int OM_BIT = 1 << 15;
    /** kdeth0: TID shift (bits 25:16). */
    public static final int TID_SHIFT = 16;
    /** kdeth0: TID mask after shifting (10 bits). */
    public static final int TID_MASK = 0x3FF;
    /** kdeth0: TIDCTRL shift (bits 27:26). */
    public static final int TIDCTRL_SHIFT = 26;
    /** kdeth0: TIDCTRL mask after shifting (2 bits). */
    public static final int TIDCTRL_MASK = 3;
    /** TIDCTRL: the even entry of the RcvArray pair. */
    public static final int TIDCTRL_EVEN = 1;
    /** TIDCTRL: the odd entry of the RcvArray pair. */
    public static final int TIDCTRL_ODD = 2;
    /** TIDCTRL: both entries of the pair. */
    public static final int TIDCTRL_PAIR = 3;
    /** kdeth0: INTR (urgent interrupt request) bit 28. */
    public static final int INTR_BIT = 1 << 28;
    /** kdeth0: SH (header suppression) bit 29. */
    public static final int SH_BIT = 1 << 29;
    /** kdeth0: KVER shift (bits 31:30). */
    public static final int KVER_SHIFT = 30;
    /** kdeth0: KVER mask after shifting (2 bits). */
    public static final int KVER_MASK = 3;

    /** kdeth1: J_KEY mask, bits 15:0. */
    public static final int JKEY_MASK = 0xFFFF;
    /** The part of the J_KEY hfi1 actually uses ({@code KDETH_JKEY_MASK}, 8 bits). */
    public static final int JKEY_DRIVER_MASK = 0xFF;
    /** kdeth1: HCRC shift (bits 31:16). */
    public static final int HCRC_SHIFT = 16;

    private Kdeth() {}

    // ---------------------------------------------------------------- kdeth0

    /** @return kdeth0 as an int, read little-endian from bytes 0–3 of the block */
    public static int kdeth0(ByteBuf b, int at) {
        return b.getIntLE(at + KDETH0_OFFSET);
    }

    /** @return OFFSET, 15 bits, in units of 64 bytes when {@link #om} is set */
    public static int offset(ByteBuf b, int at) {
        return kdeth0(b, at) & OFFSET_MASK;
    }

    /**
     * @return the offset inside the TID buffer in bytes, for OM = 1 ({@code OFFSET × 64}); TID
     *     RDMA never sends OM = 0
     */
    public static int offsetBytes(ByteBuf b, int at) {
        return offset(b, at) << OM_LARGE_SHIFT;
    }

    /** @return whether OM (offset mode, 1 = 64-byte units) is set */
    public static boolean om(ByteBuf b, int at) {
        return (kdeth0(b, at) & OM_BIT) != 0;
    }

    /** @return TID, the 10-bit RcvArray pair index of the TID entry the data goes to */
    public static int tid(ByteBuf b, int at) {
        return (kdeth0(b, at) >>> TID_SHIFT) & TID_MASK;
    }

    /** @return TIDCTRL, 2 bits: {@link #TIDCTRL_EVEN}, {@link #TIDCTRL_ODD} or {@link #TIDCTRL_PAIR} */
    public static int tidCtrl(ByteBuf b, int at) {
        return (kdeth0(b, at) >>> TIDCTRL_SHIFT) & TIDCTRL_MASK;
    }

    /** @return whether INTR (urgent interrupt request) is set */
    public static boolean intr(ByteBuf b, int at) {
        return (kdeth0(b, at) & INTR_BIT) != 0;
    }

    /** @return whether SH (header suppression) is set: 1 on every data packet but a segment's last */
    public static boolean sh(ByteBuf b, int at) {
        return (kdeth0(b, at) & SH_BIT) != 0;
    }

    /** @return KVER, 2 bits (1 on every well-formed packet) */
    public static int kver(ByteBuf b, int at) {
        return (kdeth0(b, at) >>> KVER_SHIFT) & KVER_MASK;
    }

    /**
     * Encodes kdeth0 with KVER = 1; each field is masked to its width.
     *
     * @param offset64 OFFSET in 64-byte units (15 bits) when {@code om} is set
     * @param om offset mode; TID RDMA always sets it
     * @param tid RcvArray pair index (10 bits)
     * @param tidCtrl which entry of the pair (2 bits)
     * @param intr urgent interrupt request
     * @param sh header suppression
     * @return the host-order value; it goes on the wire little-endian
     */
    public static int encodeKdeth0(int offset64, boolean om, int tid, int tidCtrl, boolean intr, boolean sh) {
        return (KVER << KVER_SHIFT)
                | (sh ? SH_BIT : 0)
                | (intr ? INTR_BIT : 0)
                | ((tidCtrl & TIDCTRL_MASK) << TIDCTRL_SHIFT)
                | ((tid & TID_MASK) << TID_SHIFT)
                | (om ? OM_BIT : 0)
                | (offset64 & OFFSET_MASK);
    }

    /**
     * Writes kdeth0 (little-endian) of a data packet (READ_RESP, WRITE_DATA, WRITE_DATA_LAST) with
     * KVER = 1; parameters as {@link #encodeKdeth0}.
     */
    public static void writeKdeth0(ByteBuf b, int at, int offset64, boolean om, int tid, int tidCtrl,
            boolean intr, boolean sh) {
        b.setIntLE(at + KDETH0_OFFSET, encodeKdeth0(offset64, om, tid, tidCtrl, intr, sh));
    }

    // ---------------------------------------------------------------- kdeth1

    /** @return kdeth1 as an int, read little-endian from bytes 4–7 of the block */
    public static int kdeth1(ByteBuf b, int at) {
        return b.getIntLE(at + KDETH1_OFFSET);
    }

    /** @return J_KEY, 16 bits (hfi1 sends only the low 8 bits) */
    public static int jkey(ByteBuf b, int at) {
        return kdeth1(b, at) & JKEY_MASK;
    }

    /** @return HCRC, 16 bits (0 as software writes it; rxe4j has no hardware to fill it) */
    public static int hcrc(ByteBuf b, int at) {
        return kdeth1(b, at) >>> HCRC_SHIFT;
    }

    /** Writes kdeth1 (little-endian): J_KEY masked to 16 bits, HCRC 0. */
    public static void writeKdeth1(ByteBuf b, int at, int jkey) {
        b.setIntLE(at + KDETH1_OFFSET, jkey & JKEY_MASK);
    }

    // ---------------------------------------------------------------- both

    /**
     * Writes both KDETH dwords of a non-data TID packet (WRITE_REQ, WRITE_RESP, READ_REQ, RESYNC,
     * ACK): kdeth0 = KVER 1 and nothing else, kdeth1 = {@code jkey} with HCRC 0.
     */
    public static void writeControl(ByteBuf b, int at, int jkey) {
        b.setIntLE(at + KDETH0_OFFSET, KVER << KVER_SHIFT);
        writeKdeth1(b, at, jkey);
    }
}
