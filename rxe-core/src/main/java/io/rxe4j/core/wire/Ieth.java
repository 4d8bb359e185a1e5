package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/** Invalidate Extended Transport Header flyweight (4 bytes: the R_Key to invalidate, BE32). */
public final class Ieth {
    /** Header length in bytes. */
    public static final int LENGTH = 4;

    private Ieth() {}

    /** @return the rkey to invalidate */
    public static int rkey(ByteBuf b, int at) {
        return b.getInt(at);
    }

    /** Writes the rkey to invalidate. */
    public static void write(ByteBuf b, int at, int rkey) {
        b.setInt(at, rkey);
    }
}
