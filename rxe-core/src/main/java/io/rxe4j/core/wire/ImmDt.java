package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * Immediate data flyweight (4 bytes). The value is carried opaquely: rxe4j reads and writes it
 * as a big-endian int, so the int a user posts is the int the peer receives.
 */
public final class ImmDt {
    /** Header length in bytes. */
    public static final int LENGTH = 4;

    private ImmDt() {}

    /** @return the immediate value */
    public static int imm(ByteBuf b, int at) {
        return b.getInt(at);
    }

    /** Writes the immediate value. */
    public static void write(ByteBuf b, int at, int imm) {
        b.setInt(at, imm);
    }
}
