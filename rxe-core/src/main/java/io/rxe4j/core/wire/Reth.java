package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * RDMA Extended Transport Header flyweight (16 bytes, big-endian; {@code rxe-facts.md} §2.2).
 * Layout: 0–7 VA, 8–11 R_Key, 12–15 DMA length in bytes.
 */
public final class Reth {
    /** Header length in bytes. */
    public static final int LENGTH = 16;
    /** Offset of the 64-bit virtual address. */
    public static final int VA_OFFSET = 0;
    /** Offset of the 32-bit R_Key. */
    public static final int RKEY_OFFSET = 8;
    /** Offset of the 32-bit DMA length. */
    public static final int DMA_LENGTH_OFFSET = 12;

    private Reth() {}

    /** @return the remote virtual address */
    public static long va(ByteBuf b, int at) {
        return b.getLong(at + VA_OFFSET);
    }

    /** @return the 32-bit rkey */
    public static int rkey(ByteBuf b, int at) {
        return b.getInt(at + RKEY_OFFSET);
    }

    /** @return the DMA length in bytes, unsigned 32-bit */
    public static long dmaLength(ByteBuf b, int at) {
        return b.getUnsignedInt(at + DMA_LENGTH_OFFSET);
    }

    /** Writes the whole header; {@code dmaLength} in bytes (unsigned 32-bit). */
    public static void write(ByteBuf b, int at, long va, int rkey, long dmaLength) {
        b.setLong(at + VA_OFFSET, va);
        b.setInt(at + RKEY_OFFSET, rkey);
        b.setInt(at + DMA_LENGTH_OFFSET, (int) dmaLength);
    }
}
