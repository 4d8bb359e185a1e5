package io.rxe4j.core.wire;

/**
 * 24-bit packet sequence number arithmetic ({@code rxe-facts.md} §5.1): increments wrap at
 * 2^24 and comparisons are serial-number comparisons with a window of ±2^23, as rxe's
 * {@code psn_compare}.
 */
public final class Psn {
    /** PSN modulus, 2^24. */
    public static final int MODULUS = 1 << 24;
    /** Mask of the 24 PSN bits. */
    public static final int MASK = MODULUS - 1;

    private Psn() {}

    /** @return {@code (psn + n) mod 2^24}; {@code n} may be negative */
    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /** @return {@code (psn + 1) mod 2^24} */
    public static int next(int psn) {
        return (psn + 1) & MASK;
    }

    /**
     * Serial comparison.
     *
     * @return negative if {@code a} is before {@code b}, 0 if equal, positive if after
     */
    public static int compare(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    /** @return the signed distance {@code a - b} in the ±2^23 window */
    public static int diff(int a, int b) {
        return compare(a, b);
    }

    /** @return whether {@code a} is strictly before {@code b} */
    public static boolean before(int a, int b) {
        return compare(a, b) < 0;
    }

    /** @return whether {@code a} is strictly after {@code b} */
    public static boolean after(int a, int b) {
        return compare(a, b) > 0;
    }

    /**
     * Validates a PSN given by a user.
     *
     * @throws IllegalArgumentException if {@code psn} is not in 0..2^24-1
     */
    public static int check(int psn, String what) {
        if ((psn & ~MASK) != 0) {
            throw new IllegalArgumentException(what + " must be a 24-bit PSN (0..0xFFFFFF), got 0x" + Integer.toHexString(psn));
        }
        return psn;
    }
}
