package io.rxe4j.core.policy;

/**
 * When the requester last sent each PSN again as a repair (adaptive recovery, {@code
 * docs/reliability.md}): so that a NAK, a selective NAK or its repetition that names a PSN repaired
 * less than a round trip ago does not send it once more — its repair may still be on the way. A
 * direct-mapped table of {@link #SLOTS} PSNs, allocated on first use; a PSN that shares a slot with
 * a newer repair is forgotten, which only costs a repair that was perhaps not needed. Times are
 * nanoseconds of the injected clock. Loop only.
 */
public final class RepairLog {
    /** PSNs remembered: 4096 (the responder's reorder buffer holds at most as many ahead). */
    public static final int SLOTS = 4096;

    private int[] psns;
    private long[] at;

    /** PSN {@code psn} was sent again at {@code now}. */
    public void onRepair(int psn, long now) {
        if (psns == null) {
            psns = new int[SLOTS];
            at = new long[SLOTS];
            java.util.Arrays.fill(psns, -1);
        }
        int i = psn & (SLOTS - 1);
        psns[i] = psn;
        at[i] = now;
    }

    /** @return whether {@code psn} was repaired less than {@code guardNanos} before {@code now} */
    public boolean recentlyRepaired(int psn, long now, long guardNanos) {
        if (psns == null) {
            return false;
        }
        int i = psn & (SLOTS - 1);
        return psns[i] == psn && now - at[i] < guardNanos;
    }

    /** Forgets every repair (QP reset). */
    public void clear() {
        if (psns != null) {
            java.util.Arrays.fill(psns, -1);
        }
    }
}
