package io.rxe4j.core.policy;

/**
 * How long a gap in a PSN sequence may last before it counts as a loss, for one peer path (RFC 8985
 * §6.2.4's reordering window, adapted as its DSACK rule): a quarter of the path's minimum RTT once
 * {@link RttEstimator} has a sample ({@link #DEFAULT_NANOS} before), times a multiplier that doubles
 * each time a loss verdict turns out spurious (the "missing" packet then arrived twice: the late
 * original and the resend) and halves again after {@link #CLEAN_VERDICTS} verdicts that did not;
 * never more than the smoothed RTT (or {@link #MAX_NANOS} without a sample). Used by the responder
 * (when to send a PSN-sequence NAK for held out-of-order requests) and the completer (when to
 * re-request a missing part of a READ). Nanoseconds. Loop only.
 */
public final class ReorderWindow {
    /**
     * Window of a path without an RTT sample (a device that only responds): 200 µs, in nanoseconds.
     * Short on purpose: a NAK that turns out spurious costs a requester with adaptive recovery one
     * packet, and doubles the window.
     */
    public static final long DEFAULT_NANOS = 200_000;
    /** Largest window without an RTT sample: 12.8 ms (the default × the largest multiplier), in nanoseconds. */
    public static final long MAX_NANOS = 12_800_000;
    /** Largest multiplier. */
    public static final int MAX_MULTIPLIER = 64;
    /** Loss verdicts without a spurious one after which the multiplier halves. */
    public static final int CLEAN_VERDICTS = 16;

    private final RttEstimator rtt;
    /** The longest reordering observed lately, × 5/4 (halved with the multiplier), in nanoseconds. */
    private long observed;
    private int multiplier = 1;
    private int clean;
    private long spurious;

    /** @param rtt the path's RTT estimate */
    public ReorderWindow(RttEstimator rtt) {
        this.rtt = rtt;
    }

    /** @return the window in nanoseconds */
    public long windowNanos() {
        if (rtt.hasSample()) {
            long w = Math.max(rtt.reorderWindowNanos() * multiplier, observed);
            return Math.min(w, Math.max(rtt.srttNanos(), RttEstimator.MIN_REORDER_NANOS));
        }
        return Math.min(Math.max(DEFAULT_NANOS * multiplier, observed), MAX_NANOS);
    }

    /**
     * A packet arrived {@code delayNanos} after a packet sent after it, without having been asked
     * for again: the path reorders by at least that much. The window covers 5/4 of the longest such
     * delay seen lately (Linux TCP likewise widens its reordering allowance to the reordering it
     * measures), halved with the multiplier after {@link #CLEAN_VERDICTS} verdicts.
     */
    public void onReorder(long delayNanos) {
        if (delayNanos > 0) {
            observed = Math.max(observed, delayNanos + delayNanos / 4);
        }
    }

    /** @return the multiplier (tests, diagnostics) */
    public int multiplier() {
        return multiplier;
    }

    /** @return the spurious verdicts seen */
    public long spuriousVerdicts() {
        return spurious;
    }

    /** A gap was declared a loss (a NAK or a re-request went out). */
    public void onVerdict() {
        if (++clean >= CLEAN_VERDICTS) {
            clean = 0;
            multiplier = Math.max(1, multiplier / 2);
            observed /= 2;
        }
    }

    /** A loss verdict was spurious: the window doubles. */
    public void onSpurious() {
        spurious++;
        clean = 0;
        multiplier = Math.min(MAX_MULTIPLIER, multiplier * 2);
    }

    @Override
    public String toString() {
        return "reorder{" + windowNanos() / 1000 + "us x" + multiplier + "}";
    }
}
