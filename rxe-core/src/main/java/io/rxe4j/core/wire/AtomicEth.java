package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * Atomic Extended Transport Header flyweight (28 bytes packed, big-endian; {@code rxe-facts.md}
 * §2.2). Layout: 0–7 VA, 8–11 R_Key, 12–19 swap-or-add data, 20–27 compare data. The masked
 * FETCH_ADD of {@code extensions.md} §2 uses the same layout with the field-boundary mask in the
 * compare slot.
 */
public final class AtomicEth {
    /** Header length in bytes. */
    public static final int LENGTH = 28;
    /** Offset of the VA. */
    public static final int VA_OFFSET = 0;
    /** Offset of the R_Key. */
    public static final int RKEY_OFFSET = 8;
    /** Offset of swap (CAS) or add (FAA) data. */
    public static final int SWAP_ADD_OFFSET = 12;
    /** Offset of compare data (CAS) or field boundary (masked FAA). */
    public static final int COMPARE_OFFSET = 20;

    private AtomicEth() {}

    /** @return the remote VA */
    public static long va(ByteBuf b, int at) {
        return b.getLong(at + VA_OFFSET);
    }

    /** @return the rkey */
    public static int rkey(ByteBuf b, int at) {
        return b.getInt(at + RKEY_OFFSET);
    }

    /** @return swap (CAS) or add (FAA) data */
    public static long swapAdd(ByteBuf b, int at) {
        return b.getLong(at + SWAP_ADD_OFFSET);
    }

    /** @return compare data (CAS) or field boundary (masked FAA) */
    public static long compare(ByteBuf b, int at) {
        return b.getLong(at + COMPARE_OFFSET);
    }

    /** Writes the whole header. */
    public static void write(ByteBuf b, int at, long va, int rkey, long swapAdd, long compare) {
        b.setLong(at + VA_OFFSET, va);
        b.setInt(at + RKEY_OFFSET, rkey);
        b.setLong(at + SWAP_ADD_OFFSET, swapAdd);
        b.setLong(at + COMPARE_OFFSET, compare);
    }
}
