package io.rxe4j.core.policy;

/**
 * The round-trip time of one peer path (all of a device lane's QPs towards one peer), estimated from
 * acknowledgements as TCP does (RFC 6298 §2: smoothed RTT with gain 1/8, RTT variation with gain
 * 1/4), with the minimum seen; the timers of adaptive recovery derive from it ({@code
 * docs/reliability.md}, "Recovery on real networks"). All values in nanoseconds of the injected
 * scheduler's clock.
 *
 * <p>Karn's rule is the caller's: a sample is taken only from a packet that was sent exactly once
 * (a retransmitted packet's acknowledgement may answer either copy). Until the first sample {@link
 * #hasSample()} is false and the derived timeouts are not defined: then only the QP's IB local ACK
 * timeout runs. Loop only.
 */
public final class RttEstimator {
    /** Timer granularity G of RFC 6298: 50 µs (an event loop's scheduling slack), in nanoseconds. */
    public static final long GRANULARITY_NANOS = 50_000;
    /** Smallest tail-loss probe timeout: 200 µs, in nanoseconds. */
    public static final long MIN_PROBE_NANOS = 200_000;
    /** Smallest RTT-derived retransmit timeout: 1 ms, in nanoseconds. */
    public static final long MIN_RTO_NANOS = 1_000_000;
    /** Smallest reordering window: 100 µs, in nanoseconds. */
    public static final long MIN_REORDER_NANOS = 100_000;

    private long srtt;
    private long rttvar;
    private long minRtt = Long.MAX_VALUE;
    private long samples;
    /** The smallest sample of the current round and of the one before (rounds of max(SRTT, 1 ms)). */
    private long roundMin = Long.MAX_VALUE;
    private long previousRoundMin = Long.MAX_VALUE;
    private long roundStart;

    /**
     * One measured round trip: from sending a packet (sent once) to the response that acknowledged it.
     *
     * @param rttNanos the round trip in nanoseconds; values below 1 count as 1
     */
    public void sample(long rttNanos) {
        sample(rttNanos, roundStart);
    }

    /**
     * One measured round trip, taken at {@code now} (nanoseconds of the injected clock): as {@link
     * #sample(long)}, and it keeps the smallest sample of the last rounds ({@link #recentMinNanos()}).
     */
    public void sample(long rttNanos, long now) {
        long r = Math.max(1, rttNanos);
        if (samples == 0 || now - roundStart >= Math.max(srtt, MIN_RTO_NANOS)) {
            previousRoundMin = roundMin;
            roundMin = Long.MAX_VALUE;
            roundStart = now;
        }
        roundMin = Math.min(roundMin, r);
        if (samples == 0) {
            srtt = r;
            rttvar = r / 2;
        } else {
            rttvar = (3 * rttvar + Math.abs(srtt - r)) / 4;
            srtt = (7 * srtt + r) / 8;
        }
        minRtt = Math.min(minRtt, r);
        samples++;
    }

    /** @return whether at least one sample was taken */
    public boolean hasSample() {
        return samples > 0;
    }

    /** @return the number of samples taken */
    public long samples() {
        return samples;
    }

    /** @return the smoothed RTT in nanoseconds (0 before the first sample) */
    public long srttNanos() {
        return srtt;
    }

    /** @return the RTT variation in nanoseconds (0 before the first sample) */
    public long rttvarNanos() {
        return rttvar;
    }

    /**
     * @return the smallest sample of the current and the previous round (a round is max(SRTT, 1 ms)
     *     of samples), in nanoseconds ({@link Long#MAX_VALUE} before the first sample). A standing
     *     queue on the path raises every sample, so this minimum too; a sample raised only by its own
     *     packet's wait (behind a hole at the responder, a late ACK) does not raise it.
     */
    public long recentMinNanos() {
        return Math.min(roundMin, previousRoundMin);
    }

    /**
     * @return the queueing delay the path shows now: {@link #recentMinNanos()} − {@link
     *     #minRttNanos()}, in nanoseconds (0 before the first sample)
     */
    public long queueingDelayNanos() {
        return samples == 0 ? 0 : recentMinNanos() - minRtt;
    }

    /** @return the smallest RTT seen in nanoseconds ({@link Long#MAX_VALUE} before the first sample) */
    public long minRttNanos() {
        return minRtt;
    }

    /**
     * @return the tail-loss probe timeout (RFC 8985 §7.2): 2 × SRTT, at least SRTT + 4 × RTTVAR and
     *     {@link #MIN_PROBE_NANOS}, in nanoseconds; undefined before the first sample
     */
    public long probeTimeoutNanos() {
        return Math.max(MIN_PROBE_NANOS, Math.max(2 * srtt, srtt + 4 * rttvar));
    }

    /**
     * @return the retransmit timeout (RFC 6298 §2.3): SRTT + max(G, 4 × RTTVAR), at least {@link
     *     #MIN_RTO_NANOS}, in nanoseconds; undefined before the first sample
     */
    public long retransmitTimeoutNanos() {
        return Math.max(MIN_RTO_NANOS, srtt + Math.max(GRANULARITY_NANOS, 4 * rttvar));
    }

    /**
     * @return the base reordering window (RFC 8985 §6.2.4: a quarter of the minimum RTT), at least
     *     {@link #MIN_REORDER_NANOS}, in nanoseconds; undefined before the first sample
     */
    public long reorderWindowNanos() {
        return Math.max(MIN_REORDER_NANOS, minRtt / 4);
    }

    @Override
    public String toString() {
        return samples == 0 ? "rtt{-}" : "rtt{srtt=" + srtt / 1000 + "us var=" + rttvar / 1000 + "us min=" + minRtt / 1000
                + "us n=" + samples + "}";
    }
}
