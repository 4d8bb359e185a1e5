package io.rxe4j.core.policy;

import io.rxe4j.verbs.spi.Scheduler;

/**
 * The RTT-driven timers of one QP's requester under adaptive recovery ({@code docs/reliability.md},
 * "Recovery on real networks"; after RFC 8985's tail-loss probe and RFC 6298's retransmit timeout):
 *
 * <ol>
 *   <li>{@link Phase#PROBE}: when nothing was sent and nothing acknowledged for the path's probe
 *       timeout ({@link RttEstimator#probeTimeoutNanos()}, about two round trips) while packets are
 *       unacknowledged, {@link Listener#onProbe()} runs: the requester resends its last packet with
 *       AckReq, which answers a lost tail or a lost ACK within a round trip.
 *   <li>{@link Phase#RTO}: when the probe got no progress within the retransmit timeout ({@link
 *       RttEstimator#retransmitTimeoutNanos()}), {@link Listener#onTimeout()} runs (go-back-N from
 *       the oldest unacknowledged PSN); each further one without progress waits twice as long.
 *   <li>{@link Phase#OFF}: once the doubled timeout would exceed the QP's IB local ACK timeout
 *       ({@link #ceiling}), the early timers stop until progress: from then on only the IB timer
 *       ({@link RetransmitTimer}) runs, which charges retry_cnt and ends the QP after
 *       (retry_cnt + 1) periods without progress. The early timers never charge retry_cnt, so a QP
 *       fails exactly when the attribute says and no sooner.
 * </ol>
 *
 * <p>Progress (comp.psn moves) returns to PROBE with the backoff cleared. Before the path has an
 * RTT sample, or with the IB timeout off (0), the early timers do not run. One scheduler timer at
 * most is pending, with a lazy deadline as {@link RetransmitTimer}, and a deadline that passes while
 * received datagrams may still wait to be read waits for the next read batch as there ({@link
 * #deferWhile}; at most the phase's own timeout). Loop only; time comes only from the injected
 * {@link Scheduler}.
 */
public final class LossProbe {
    /** What the timers do next. */
    public enum Phase {
        /** Nothing unacknowledged. */
        IDLE,
        /** Waiting for the probe timeout since the last send or progress. */
        PROBE,
        /** A probe (or an early retransmission) is out: waiting for the retransmit timeout. */
        RTO,
        /** Backed off beyond the IB timeout: only the IB timer runs until progress. */
        OFF
    }

    /** What the timers make the requester do. */
    public interface Listener {
        /** Resend the last unacknowledged packet with AckReq (the tail-loss probe). */
        void onProbe();

        /** Retransmit from the oldest unacknowledged PSN, without charging retry_cnt. */
        void onTimeout();
    }

    private final Scheduler scheduler;
    private final UnackedPackets unacked;
    private final Listener listener;
    private final Runnable task = this::onTimer;
    private RttEstimator rtt;
    private long ceilingNanos;
    private Phase phase = Phase.IDLE;
    private long lastActivity;
    private long rtoStart;
    private int backoff;
    private Scheduler.Cancellable pending;
    private long scheduledAt;
    private final ReceiveBacklogDeferral deferral = new ReceiveBacklogDeferral();

    /**
     * @param scheduler the QP's loop and clock
     * @param unacked the requester's unacknowledged packets
     * @param listener what a probe and a timeout do (runs on the loop)
     */
    public LossProbe(Scheduler scheduler, UnackedPackets unacked, Listener listener) {
        this.scheduler = scheduler;
        this.unacked = unacked;
        this.listener = listener;
    }

    /**
     * Makes an expiry wait while {@code receiveBacklogged} says that received datagrams may still
     * wait to be read, re-checking after each read batch, at most the phase's own timeout; {@code
     * onDeferred} runs once per expiry so deferred.
     */
    public void deferWhile(java.util.function.BooleanSupplier receiveBacklogged, Runnable onDeferred) {
        deferral.set(receiveBacklogged, onDeferred);
    }

    /** Sets the path whose RTT the timers derive from (null: none, the timers do not run). */
    public void rtt(RttEstimator r) {
        this.rtt = r;
    }

    /**
     * Sets the ceiling: the IB local ACK timeout period in nanoseconds (0: the IB timer is off, and
     * so are these).
     */
    public void ceiling(long nanos) {
        ceilingNanos = nanos;
        if (nanos == 0) {
            stop();
        }
    }

    /** @return the phase (tests, diagnostics) */
    public Phase phase() {
        return phase;
    }

    /** @return consecutive timeouts without progress (the backoff exponent) */
    public int backoff() {
        return backoff;
    }

    private boolean active() {
        return ceilingNanos > 0 && rtt != null && rtt.hasSample();
    }

    /** A packet was sent (new or resent); the probe deadline restarts from now. */
    public void onSend() {
        if (active()) {
            onSend(scheduler.nanoTime());
        }
    }

    /** A packet was sent at {@code now} (scheduler nanoseconds); the probe deadline restarts from it. */
    public void onSend(long now) {
        if (!active()) {
            return;
        }
        if (phase == Phase.IDLE) {
            phase = Phase.PROBE;
        }
        if (phase == Phase.PROBE) {
            lastActivity = now;
            ensureArmed(now);
        }
    }

    /** comp.psn moved: backoff cleared, the probe deadline restarts from now (or idle if all acknowledged). */
    public void onProgress() {
        backoff = 0;
        deferral.reset();
        if (unacked.isEmpty()) {
            phase = Phase.IDLE;
            return;
        }
        if (!active()) {
            return;
        }
        long now = scheduler.nanoTime();
        phase = Phase.PROBE;
        lastActivity = now;
        ensureArmed(now);
    }

    /** Stops the timers (QP leaves RTS, rewinds are the caller's, or the IB timer is turned off). */
    public void stop() {
        if (pending != null) {
            pending.cancel();
            pending = null;
        }
        deferral.reset();
        phase = Phase.IDLE;
        backoff = 0;
    }

    /** @return the deadline of the current phase in scheduler nanoseconds */
    long deadline() {
        return switch (phase) {
            case PROBE -> lastActivity + rtt.probeTimeoutNanos();
            case RTO -> rtoStart + (rtt.retransmitTimeoutNanos() << backoff);
            default -> Long.MAX_VALUE;
        };
    }

    private void ensureArmed(long now) {
        long d = deadline();
        if (pending != null) {
            if (d - scheduledAt >= 0) {
                return; // fires early and re-arms for the rest
            }
            pending.cancel();
        }
        long delay = Math.max(0, d - now);
        pending = scheduler.schedule(task, delay);
        scheduledAt = now + delay;
    }

    private void onTimer() {
        pending = null;
        if (!active() || unacked.isEmpty() || phase == Phase.IDLE || phase == Phase.OFF) {
            if (unacked.isEmpty()) {
                phase = Phase.IDLE;
            }
            return;
        }
        long now = scheduler.nanoTime();
        long left = deadline() - now;
        if (left > 0) {
            pending = scheduler.schedule(task, left);
            scheduledAt = now + left;
            return;
        }
        long bound = phase == Phase.PROBE ? rtt.probeTimeoutNanos() : rtt.retransmitTimeoutNanos() << backoff;
        if (deferral.defer(now, bound)) {
            pending = scheduler.schedule(task, RetransmitTimer.DEFER_NANOS); // after the loop's next read batch
            scheduledAt = now + RetransmitTimer.DEFER_NANOS;
            return;
        }
        if (phase == Phase.PROBE) {
            phase = Phase.RTO;
            rtoStart = now;
            ensureArmed(now);
            listener.onProbe();
            return;
        }
        // RTO: an early go-back-N, then wait twice as long, up to the IB timeout
        backoff++;
        rtoStart = now;
        if ((rtt.retransmitTimeoutNanos() << backoff) >= ceilingNanos || backoff > 20) {
            phase = Phase.OFF;
        } else {
            ensureArmed(now);
        }
        listener.onTimeout();
    }
}
