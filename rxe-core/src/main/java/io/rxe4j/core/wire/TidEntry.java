package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * One TID entry, the u32 unit of the TID list carried as payload by TID RDMA READ_REQ and
 * WRITE_RESP ({@code tid-opfn-facts.md} §3.4–§3.5):
 * <pre>
 *  31:22 IDX (10 bits)   21:20 CTRL (2 bits)   19:11 unused (0)   10:0 LEN (11 bits)
 * </pre>
 * LEN is the buffer length in <b>4 KiB pages</b>, CTRL which entry of the RcvArray pair
 * (1 = even, 2 = odd, 3 = both), IDX the RcvArray pair index. In rxe4j an entry is a device-local
 * handle to (MR, offset, length) of one segment encoded in this layout ({@code extensions.md} §5).
 *
 * <p><b>Byte order:</b> hfi1 copies the list raw from memory, so each entry travels in x86 host
 * order, i.e. <em>little-endian</em> on the wire ({@link #read}/{@link #write} use
 * {@code getIntLE}/{@code setIntLE}); the headers around it are big-endian.
 *
 * <p>A list holds 1..{@link #MAX_ENTRIES} entries ({@code TID_RDMA_MAX_PAGES}), so the payload is
 * 4..256 bytes and a multiple of 4 ({@link Opcode#hasTidList()}). A receiver rejects a list in
 * which any LEN is 0 or whose LENs add up to less than the segment length.
 */
public final class TidEntry {
    /** Size of one entry on the wire, bytes. */
    public static final int LENGTH = 4;
    /** Most entries in one TID list ({@code TID_RDMA_MAX_PAGES}). */
    public static final int MAX_ENTRIES = 64;
    /** Longest TID list payload, bytes (64 × 4). */
    public static final int MAX_LIST_BYTES = MAX_ENTRIES * LENGTH;
    /** Unit of LEN, bytes (4 KiB pages). */
    public static final int PAGE_SIZE = 4096;
    /** log2 of {@link #PAGE_SIZE}. */
    public static final int PAGE_SHIFT = 12;

    /** LEN mask, bits 10:0 (11 bits, pages). */
    public static final int LEN_MASK = 0x7FF;
    /** CTRL shift (bits 21:20). */
    public static final int CTRL_SHIFT = 20;
    /** CTRL mask after shifting (2 bits). */
    public static final int CTRL_MASK = 3;
    /** IDX shift (bits 31:22). */
    public static final int IDX_SHIFT = 22;
    /** IDX mask after shifting (10 bits). */
    public static final int IDX_MASK = 0x3FF;
    /** Bits 19:11, unused by the layout; encoded as 0. */
    public static final int UNUSED_BITS = 0x000F_F800;
    /** CTRL: the even RcvArray entry. */
    public static final int CTRL_EVEN = 1;
    /** CTRL: the odd RcvArray entry. */
    public static final int CTRL_ODD = 2;
    /** CTRL: the pair. */
    public static final int CTRL_PAIR = 3;

    private TidEntry() {}

    /**
     * Encodes an entry; each field is masked to its width and bits 19:11 are 0.
     *
     * @param idx RcvArray pair index (10 bits)
     * @param ctrl which entry of the pair (2 bits)
     * @param lenPages buffer length in 4 KiB pages (11 bits; must be non-zero to be valid)
     * @return the u32 value (host order; written little-endian)
     */
    public static int encode(int idx, int ctrl, int lenPages) {
        return ((idx & IDX_MASK) << IDX_SHIFT) | ((ctrl & CTRL_MASK) << CTRL_SHIFT) | (lenPages & LEN_MASK);
    }

    /** @return IDX, the 10-bit RcvArray pair index of {@code entry} */
    public static int idx(int entry) {
        return (entry >>> IDX_SHIFT) & IDX_MASK;
    }

    /** @return CTRL, 2 bits: {@link #CTRL_EVEN}, {@link #CTRL_ODD} or {@link #CTRL_PAIR} */
    public static int ctrl(int entry) {
        return (entry >>> CTRL_SHIFT) & CTRL_MASK;
    }

    /** @return LEN, the buffer length in 4 KiB pages (11 bits) */
    public static int lengthPages(int entry) {
        return entry & LEN_MASK;
    }

    /** @return the buffer length in bytes, LEN × 4096 (at most 2047 × 4 KiB, just under 8 MiB) */
    public static int lengthBytes(int entry) {
        return lengthPages(entry) << PAGE_SHIFT;
    }

    /** @return the number of entries in a TID list payload of {@code payloadBytes} bytes */
    public static int count(int payloadBytes) {
        return payloadBytes / LENGTH;
    }

    /**
     * Reads one entry, little-endian.
     *
     * @param listAt absolute index of the TID list (the packet's payload index)
     * @param i entry number, 0-based
     * @return the u32 entry
     */
    public static int read(ByteBuf b, int listAt, int i) {
        return b.getIntLE(listAt + i * LENGTH);
    }

    /**
     * Writes one entry, little-endian.
     *
     * @param listAt absolute index of the TID list (the packet's payload index)
     * @param i entry number, 0-based
     * @param entry the u32 entry ({@link #encode})
     */
    public static void write(ByteBuf b, int listAt, int i, int entry) {
        b.setIntLE(listAt + i * LENGTH, entry);
    }
}
