package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * ACK Extended Transport Header flyweight (4 bytes; {@code rxe-facts.md} §2.2–2.3).
 * Layout: byte 0 syndrome, bytes 1–3 MSN (BE24).
 */
public final class Aeth {
    /** Header length in bytes. */
    public static final int LENGTH = 4;
    /** Syndrome type mask (bits 7..5). */
    public static final int TYPE_MASK = 0xE0;
    /** Syndrome type: ACK. */
    public static final int TYPE_ACK = 0x00;
    /** Syndrome type: RNR NAK. */
    public static final int TYPE_RNR_NAK = 0x20;
    /** Syndrome type: NAK. */
    public static final int TYPE_NAK = 0x60;
    /** ACK with "invalid credit" (no end-to-end flow control), what rxe always sends. */
    public static final int ACK_UNLIMITED = 0x1F;
    /** NAK: PSN sequence error. */
    public static final int NAK_PSN_SEQ_ERROR = 0x60;
    /** NAK: invalid request. */
    public static final int NAK_INVALID_REQUEST = 0x61;
    /** NAK: remote access error. */
    public static final int NAK_REMOTE_ACCESS_ERROR = 0x62;
    /** NAK: remote operational error. */
    public static final int NAK_REMOTE_OP_ERROR = 0x63;

    private Aeth() {}

    /** @return the 8-bit syndrome */
    public static int syndrome(ByteBuf b, int at) {
        return b.getUnsignedByte(at);
    }

    /** @return the 24-bit MSN */
    public static int msn(ByteBuf b, int at) {
        return b.getInt(at) & Bth.MASK_24;
    }

    /** Writes the header: 8-bit syndrome, 24-bit MSN. */
    public static void write(ByteBuf b, int at, int syndrome, int msn) {
        b.setInt(at, (syndrome << 24) | (msn & Bth.MASK_24));
    }

    /** @return the syndrome type bits ({@link #TYPE_ACK}, {@link #TYPE_RNR_NAK}, {@link #TYPE_NAK}, or 0x40 reserved) */
    public static int type(int syndrome) {
        return syndrome & TYPE_MASK;
    }
}
