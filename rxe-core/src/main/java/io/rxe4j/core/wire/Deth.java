package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/** Datagram Extended Transport Header flyweight (8 bytes: 0–3 Q_Key, 4 reserved, 5–7 source QP). */
public final class Deth {
    /** Header length in bytes. */
    public static final int LENGTH = 8;

    private Deth() {}

    /** @return the Q_Key */
    public static int qkey(ByteBuf b, int at) {
        return b.getInt(at);
    }

    /** @return the 24-bit source QPN */
    public static int srcQp(ByteBuf b, int at) {
        return b.getInt(at + 4) & Bth.MASK_24;
    }

    /** Writes the header. */
    public static void write(ByteBuf b, int at, int qkey, int srcQp) {
        b.setInt(at, qkey);
        b.setInt(at + 4, srcQp & Bth.MASK_24);
    }
}
