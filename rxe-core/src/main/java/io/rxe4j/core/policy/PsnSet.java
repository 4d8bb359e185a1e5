package io.rxe4j.core.policy;

import io.rxe4j.core.wire.Psn;

/**
 * A set of PSNs within {@link #WINDOW} of a moving base (the completer's comp.psn): which READ
 * response packets beyond the next expected one were already placed by their offset (adaptive
 * recovery). One bit per PSN in a ring; the owner clears the bits it passes ({@link #clear}) so a
 * bit never outlives its PSN. Loop only.
 */
public final class PsnSet {
    /** PSNs ahead of the base the set can hold: 4096. */
    public static final int WINDOW = 4096;

    private final long[] bits = new long[WINDOW / 64];
    private int count;

    /** @return whether {@code psn} lies within the window of {@code base} (strictly after it) */
    public static boolean inWindow(int psn, int base) {
        int d = Psn.diff(psn, base);
        return d > 0 && d < WINDOW;
    }

    /** Adds {@code psn}; @return false if it was present */
    public boolean add(int psn) {
        int i = psn & (WINDOW - 1);
        long m = 1L << (i & 63);
        if ((bits[i >>> 6] & m) != 0) {
            return false;
        }
        bits[i >>> 6] |= m;
        count++;
        return true;
    }

    /** @return whether {@code psn} is present */
    public boolean contains(int psn) {
        int i = psn & (WINDOW - 1);
        return (bits[i >>> 6] & (1L << (i & 63))) != 0;
    }

    /** Removes {@code psn}; @return whether it was present */
    public boolean clear(int psn) {
        int i = psn & (WINDOW - 1);
        long m = 1L << (i & 63);
        if ((bits[i >>> 6] & m) == 0) {
            return false;
        }
        bits[i >>> 6] &= ~m;
        count--;
        return true;
    }

    /** Removes every PSN in {@code [from, to)} (at most {@link #WINDOW} of them are looked at). */
    public void clearRange(int from, int to) {
        if (count == 0) {
            return;
        }
        int n = Math.min(WINDOW, Math.max(0, Psn.diff(to, from)));
        for (int k = 0; k < n && count > 0; k++) {
            clear(Psn.add(from, k));
        }
    }

    /** @return the PSNs held */
    public int size() {
        return count;
    }

    /** Removes everything. */
    public void clearAll() {
        java.util.Arrays.fill(bits, 0);
        count = 0;
    }
}
