package io.rxe4j.jcstress;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.RxeMr;

/** Values for the torn-read tests: every byte of {@link #OLD} differs from {@link #NEW}. */
final class Tearing {
    private Tearing() {}

    /** The word before the ATOMIC WRITE. */
    static final long OLD = 0x0000_0000_FFFF_FFFFL;
    /** The value the ATOMIC WRITE stores. */
    static final long NEW = 0xFFFF_FFFF_0000_0000L;
    /** The ATOMIC WRITE packet carrying {@link #NEW} (read-only, shared). */
    static final ByteBuf NEW_PACKET = Placement.atomicWritePacket(NEW);

    /** A fresh 8-byte MR whose word holds {@link #OLD} (published to the actors by jcstress). */
    static RxeMr newWord() {
        RxeMr mr = Placement.newMr(8);
        mr.setLongRelease(mr.iova(), OLD);
        return mr;
    }
}
