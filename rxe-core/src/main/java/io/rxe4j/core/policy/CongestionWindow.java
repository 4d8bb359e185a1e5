package io.rxe4j.core.policy;

/**
 * Loss-driven congestion window of one peer path (all of a device's QPs towards one peer), in
 * bytes in flight (AIMD after TCP Reno / RFC 5681 with CUBIC's β = 0.7, and NewReno's one decrease per loss episode).
 *
 * <ul>
 *   <li>Start: {@link #INITIAL_BYTES}, slow-start threshold unlimited.
 *   <li>Acknowledged bytes: below the threshold the window grows by the bytes acknowledged (slow
 *       start, which ends early when the round trip rises: HyStart++'s delay rule); above it by
 *       {@link #SEGMENT_BYTES} per window acknowledged (additive increase; ρ² times that on a long path
 *       without a queue, Hybla), up to {@link #MAX_BYTES}; not at all during a loss episode (NewReno's
 *       fast recovery). See {@link #onAcknowledged(long, long, long, boolean)}.
 *   <li>A loss or congestion signal (PSN-sequence NAK, a READ gap, a lost READ/atomic response, one
 *       QP's retransmit timeout while the path makes progress, a CNP; {@link PeerBudget#onLoss} passes on a loss that may be noise only when
 *       the path shows a queue): threshold and window become {@link #BETA} × the window, at least {@link
 *       #MIN_BYTES} (multiplicative decrease), once per loss episode: further signals are part of
 *       the same episode until as many bytes as were in flight at the decrease have been
 *       acknowledged since.
 *   <li>A stalled path (a retransmit timer, IB or RTT-derived, expired and no QP of the path made
 *       progress for as long, {@link PeerBudget#onTimeout}): the window collapses to {@link
 *       #LOSS_WINDOW_BYTES} and slow start begins again, the threshold becoming {@link #BETA} × the
 *       window before the first timeout of a stall (held for the timeouts that follow it without
 *       progress): RFC 5681 §3.1. A go-back-N after a timeout thus resends one segment, then twice
 *       as much per round trip, instead of the whole window again to a peer that may only be slow
 *       (a loaded kernel {@code rdma_rxe} answers each duplicate with its own ACK).
 * </ul>
 *
 * <p>Retransmissions count against the same window: a resent packet takes budget bytes like a new
 * one. It changes nothing on the wire, only when packets are sent. When disabled the window is
 * {@link #MAX_BYTES}. Loop only.
 */
public final class CongestionWindow {
    /** The growth unit of additive increase: one 4 KiB packet. */
    public static final long SEGMENT_BYTES = 4096;
    /**
     * The multiplicative decrease: 0.7 (CUBIC's β, RFC 9438 §4.6; Reno halves). On the lossy paths
     * rxe4j runs on, a lost datagram is more often noise than a full queue, and a repaired loss costs
     * one packet, not a window: halving there kept a quarter of the link.
     */
    public static final double BETA = 0.7;
    /** Smallest window: 4 packets of 4 KiB. */
    public static final long MIN_BYTES = 4 * SEGMENT_BYTES;
    /** Window of a new path: 256 KiB. */
    public static final long INITIAL_BYTES = 256 * 1024;
    /** The window after a retransmit timeout: one 4 KiB segment (RFC 5681's loss window, 1 SMSS). */
    public static final long LOSS_WINDOW_BYTES = SEGMENT_BYTES;
    /** Largest window: 1 GiB (in practice the budget's static limit binds first). */
    public static final long MAX_BYTES = 1L << 30;

    private final boolean enabled;
    private double cwnd = INITIAL_BYTES;
    private double ssthresh = MAX_BYTES;
    /** Bytes still to be acknowledged before the current loss episode ends (0: none under way). */
    private long episodeBytes;
    /** A timeout collapsed the window and nothing was acknowledged since. */
    private boolean collapsed;
    /** The loss episode under way was started by {@link #onLoss}: the window holds until it ends. */
    private boolean fastRecovery;

    CongestionWindow(boolean enabled) {
        this.enabled = enabled;
    }

    /** @return whether the window is in force */
    public boolean enabled() {
        return enabled;
    }

    /** @return the window in bytes ({@link #MAX_BYTES} when disabled) */
    public long windowBytes() {
        return enabled ? (long) cwnd : MAX_BYTES;
    }

    /** Round trip of reference for the growth above the threshold: 1 ms, in nanoseconds. */
    public static final long REFERENCE_RTT_NANOS = 1_000_000;
    /** Largest growth factor: 256 segments per round trip (reached at a 16 ms round trip). */
    public static final double MAX_GROWTH = 256;

    /** {@code bytes} in flight were acknowledged. */
    void onAcknowledged(long bytes) {
        onAcknowledged(bytes, 0, 0, false);
    }

    /** As {@link #onAcknowledged(long, long, long, boolean)} with no queueing delay, the long-path rule on. */
    void onAcknowledged(long bytes, long minRttNanos) {
        onAcknowledged(bytes, minRttNanos, 0, true);
    }

    /**
     * Smallest rise of the path's round trip over its minimum that ends slow start: 4 ms (RFC 9406's
     * MIN_RTT_THRESH), in nanoseconds.
     */
    public static final long SLOW_START_EXIT_MIN_NANOS = 4_000_000;
    /** Largest rise that slow start waits for: 16 ms (RFC 9406's MAX_RTT_THRESH), in nanoseconds. */
    public static final long SLOW_START_EXIT_MAX_NANOS = 16_000_000;

    /**
     * {@code bytes} in flight were acknowledged, on a path whose minimum RTT is {@code minRttNanos}
     * (0: unknown) and whose recent round trips exceed it by {@code queueingDelayNanos} (a queue that
     * builds: {@code RttEstimator.queueingDelayNanos()}).
     *
     * <ul>
     *   <li>During a loss episode started by {@link #onLoss} the window does not grow (NewReno's fast
     *       recovery, RFC 6582 §3.2): the bytes acknowledged count towards the episode's end only.
     *       Growing there at a full queue would refill it as fast as the decrease drained it.
     *   <li>Below the threshold (slow start) the window grows by the bytes acknowledged, until the
     *       queueing delay reaches minimum RTT / 8, clamped to [{@link #SLOW_START_EXIT_MIN_NANOS},
     *       {@link #SLOW_START_EXIT_MAX_NANOS}]: then the threshold becomes the window (HyStart++'s
     *       delay rule, RFC 9406 §4.2), so slow start ends at a queue that builds instead of doubling
     *       on until it overflows.
     *   <li>Above the threshold the window grows by ρ² segments per window acknowledged, ρ = minimum
     *       RTT / {@link #REFERENCE_RTT_NANOS} (at least 1, ρ² at most {@link #MAX_GROWTH}), when
     *       {@code longPath} is set and the path shows no queue (a queueing delay of at most half the
     *       minimum RTT and {@link PeerBudget#MIN_QUEUEING_NANOS}, the loss discrimination's rule): TCP Hybla's rule, so that the sending rate grows as fast per second on a long
     *       path as on a 1 ms one instead of ρ² times slower. With a queue it is Reno's one segment per
     *       window: a queue that builds (at a bottleneck, in a slow peer's receive path) must not
     *       speed up the growth that builds it, and a minimum RTT taken while the path was already
     *       queued (a warming JVM's first samples) must not make the growth ρ² times too fast.
     * </ul>
     */
    void onAcknowledged(long bytes, long minRttNanos, long queueingDelayNanos, boolean longPath) {
        if (!enabled || bytes <= 0) {
            return;
        }
        collapsed = false;
        if (episodeBytes > 0) {
            long left = episodeBytes - bytes;
            episodeBytes = Math.max(0, left);
            if (fastRecovery) {
                if (left >= 0) {
                    return;
                }
                fastRecovery = false;
                bytes = -left; // only what lies beyond the episode grows the window
            }
        }
        if (cwnd < ssthresh) {
            if (minRttNanos > 0 && queueingDelayNanos >= Math.min(SLOW_START_EXIT_MAX_NANOS,
                    Math.max(SLOW_START_EXIT_MIN_NANOS, minRttNanos / 8))) {
                ssthresh = Math.max(cwnd, MIN_BYTES); // a queue builds: slow start ends here
            } else {
                cwnd = Math.min(cwnd + bytes, Math.max(ssthresh, cwnd));
            }
        } else {
            boolean queued = queueingDelayNanos > Math.max(minRttNanos / 2, PeerBudget.MIN_QUEUEING_NANOS);
            double rho = longPath && !queued ? Math.max(1.0, (double) minRttNanos / REFERENCE_RTT_NANOS) : 1.0;
            cwnd += SEGMENT_BYTES * Math.min(MAX_GROWTH, rho * rho) * (double) bytes / cwnd;
        }
        if (cwnd > MAX_BYTES) {
            cwnd = MAX_BYTES;
        }
    }

    /**
     * A loss or congestion signal while {@code inFlightBytes} are in flight.
     *
     * @return whether the window was reduced (false within the same loss episode, or when disabled)
     */
    boolean onLoss(long inFlightBytes) {
        if (!enabled || episodeBytes > 0) {
            return false;
        }
        ssthresh = Math.max(cwnd * BETA, MIN_BYTES);
        cwnd = ssthresh;
        episodeBytes = Math.max(inFlightBytes, SEGMENT_BYTES);
        fastRecovery = true;
        return true;
    }

    /**
     * A retransmit timeout while {@code inFlightBytes} are in flight: the window becomes {@link
     * #LOSS_WINDOW_BYTES}; the threshold {@link #BETA} × the window, unless an earlier timeout
     * without acknowledged bytes since already set it. Starts a loss episode, so the NAKs that the
     * resent packets draw do not reduce the window again.
     *
     * @return whether the window was reduced (false when disabled or already at the loss window)
     */
    boolean onTimeout(long inFlightBytes) {
        if (!enabled) {
            return false;
        }
        if (!collapsed) {
            ssthresh = Math.max(cwnd * BETA, MIN_BYTES);
            collapsed = true;
        }
        boolean reduced = cwnd > LOSS_WINDOW_BYTES;
        cwnd = LOSS_WINDOW_BYTES;
        episodeBytes = Math.max(inFlightBytes, SEGMENT_BYTES);
        fastRecovery = false; // slow start grows from the loss window at once (RFC 5681 §3.1)
        return reduced;
    }

    @Override
    public String toString() {
        return enabled ? "cwnd=" + (long) cwnd + "B ssthresh=" + (ssthresh >= MAX_BYTES ? "-" : (long) ssthresh + "B")
                + (episodeBytes > 0 ? " recovery" : "") : "cwnd=off";
    }
}
