package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/** Atomic ACK Extended Transport Header flyweight (8 bytes: original remote data, BE64). */
public final class AtomicAckEth {
    /** Header length in bytes. */
    public static final int LENGTH = 8;

    private AtomicAckEth() {}

    /** @return the original remote 64-bit value */
    public static long originalData(ByteBuf b, int at) {
        return b.getLong(at);
    }

    /** Writes the original remote value. */
    public static void write(ByteBuf b, int at, long original) {
        b.setLong(at, original);
    }
}
