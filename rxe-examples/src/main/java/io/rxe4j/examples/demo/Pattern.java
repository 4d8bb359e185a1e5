package io.rxe4j.examples.demo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Deterministic test data both demo processes can recompute. */
final class Pattern {
    private Pattern() {}

    /** Fills {@code len} bytes at {@code off} from a seeded generator. */
    static void fill(MemorySegment seg, long off, long len, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < len; i++) {
            seg.set(ValueLayout.JAVA_BYTE, off + i, (byte) r.nextInt(256));
        }
    }

    /** @return whether {@code len} bytes at {@code off} equal {@link #fill}'s output for {@code seed} */
    static boolean matches(MemorySegment seg, long off, long len, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < len; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, off + i) != (byte) r.nextInt(256)) {
                return false;
            }
        }
        return true;
    }
}
