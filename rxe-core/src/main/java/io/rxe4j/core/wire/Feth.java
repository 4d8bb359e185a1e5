package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flush Extended Transport Header flyweight (4 bytes, BE32; {@code rxe-facts.md} §2.2,
 * {@code extensions.md} §1): bits 5..4 selectivity level (SEL), bits 3..0 placement type (PLT).
 * FLUSH of a whole MR with global visibility encodes as {@code 00 00 00 11}.
 */
public final class Feth {
    /** Header length in bytes. */
    public static final int LENGTH = 4;
    /** PLT bit: global visibility. */
    public static final int PLT_GLOBAL = 1;
    /** PLT bit: persistence. */
    public static final int PLT_PERSISTENT = 2;
    /** SEL: the range named by the RETH. */
    public static final int SEL_RANGE = 0;
    /** SEL: the whole MR. */
    public static final int SEL_MR = 1;

    private Feth() {}

    /** @return the selectivity level, 2 bits */
    public static int selectivity(ByteBuf b, int at) {
        return (b.getInt(at) >>> 4) & 3;
    }

    /** @return the placement type bits, 4 bits */
    public static int placementType(ByteBuf b, int at) {
        return b.getInt(at) & 0xF;
    }

    /** Writes the header from SEL (0..3) and PLT (0..15). */
    public static void write(ByteBuf b, int at, int selectivity, int placementType) {
        b.setInt(at, ((selectivity & 3) << 4) | (placementType & 0xF));
    }
}
