package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * rxe4j's masked compare-and-swap header (44 bytes, big-endian; {@code extensions.md} §2).
 * Layout: 0–7 VA, 8–11 R_Key, 12–19 swap, 20–27 compare, 28–35 swap_mask, 36–43 compare_mask.
 */
public final class MaskedCmpSwapEth {
    /** Header length in bytes. */
    public static final int LENGTH = 44;
    /** Offset of the VA. */
    public static final int VA_OFFSET = 0;
    /** Offset of the R_Key. */
    public static final int RKEY_OFFSET = 8;
    /** Offset of swap. */
    public static final int SWAP_OFFSET = 12;
    /** Offset of compare. */
    public static final int COMPARE_OFFSET = 20;
    /** Offset of swap_mask. */
    public static final int SWAP_MASK_OFFSET = 28;
    /** Offset of compare_mask. */
    public static final int COMPARE_MASK_OFFSET = 36;

    private MaskedCmpSwapEth() {}

    /** @return the remote VA */
    public static long va(ByteBuf b, int at) {
        return b.getLong(at + VA_OFFSET);
    }

    /** @return the rkey */
    public static int rkey(ByteBuf b, int at) {
        return b.getInt(at + RKEY_OFFSET);
    }

    /** @return swap */
    public static long swap(ByteBuf b, int at) {
        return b.getLong(at + SWAP_OFFSET);
    }

    /** @return compare */
    public static long compare(ByteBuf b, int at) {
        return b.getLong(at + COMPARE_OFFSET);
    }

    /** @return swap mask */
    public static long swapMask(ByteBuf b, int at) {
        return b.getLong(at + SWAP_MASK_OFFSET);
    }

    /** @return compare mask */
    public static long compareMask(ByteBuf b, int at) {
        return b.getLong(at + COMPARE_MASK_OFFSET);
    }

    /** Writes the whole header. */
    public static void write(ByteBuf b, int at, long va, int rkey, long swap, long compare,
            long swapMask, long compareMask) {
        b.setLong(at + VA_OFFSET, va);
        b.setInt(at + RKEY_OFFSET, rkey);
        b.setLong(at + SWAP_OFFSET, swap);
        b.setLong(at + COMPARE_OFFSET, compare);
        b.setLong(at + SWAP_MASK_OFFSET, swapMask);
        b.setLong(at + COMPARE_MASK_OFFSET, compareMask);
    }
}
