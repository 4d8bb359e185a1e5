package io.rxe4j.core.policy;

import io.rxe4j.verbs.spi.Scheduler;

/**
 * The local ACK timeout of one QP ({@code rxe-facts.md} §5.3; {@code extensions.md} §6): the
 * period is 4.096 µs × 2^timeout, and the deadline is measured from the oldest unacknowledged
 * packet — precisely, from the later of its send time and the last acknowledged progress, so that a
 * long READ whose responses keep arriving does not time out. When every packet sent has been
 * acknowledged the timer is idle; the first packet sent after that starts a fresh period, so a
 * deadline left over from an earlier burst never fires for a later one.
 *
 * <p>One scheduler timer at most is pending; it is not moved on every packet: when it fires early
 * it re-arms itself for the remainder (a lazy deadline), and when it fires with nothing outstanding
 * it just stops. Runs on the QP's loop; time comes only from the injected {@link Scheduler}.
 *
 * <p>A deadline that passes while received datagrams may still wait to be read ({@link
 * #deferWhile}: the transport's last read batch was full) waits for the next read batch, as often as
 * needed but at most one period in all, before it counts: on a loaded host the acknowledgement may be
 * in that backlog, and a retransmission would only lengthen it (kernel {@code rdma_rxe}'s completer
 * also drains its queued responses before it considers a timeout).
 */
public final class RetransmitTimer {
    /** 4.096 µs in nanoseconds: the unit of the local ACK timeout. */
    public static final long UNIT_NANOS = 4096;
    /**
     * How long a deadline deferred by a receive backlog waits before it looks again: 20 µs, enough
     * for the event loop to run one read batch (a loop turns to its I/O before its due timers).
     */
    public static final long DEFER_NANOS = 20_000;

    private final Scheduler scheduler;
    private final UnackedPackets unacked;
    private final Runnable onExpiry;
    private final Runnable task = this::onTimer;
    private long periodNanos;
    private long lastProgress = Long.MIN_VALUE;
    private final ReceiveBacklogDeferral deferral = new ReceiveBacklogDeferral();
    private Scheduler.Cancellable pending;
    /** When the pending timer fires, in scheduler nanoseconds (valid while {@link #pending} is set). */
    private long scheduledAt;

    /**
     * @param scheduler the QP's loop and clock
     * @param unacked the packets whose acknowledgement the timer waits for
     * @param onExpiry run on the loop when the deadline passed with packets still unacknowledged
     */
    public RetransmitTimer(Scheduler scheduler, UnackedPackets unacked, Runnable onExpiry) {
        this.scheduler = scheduler;
        this.unacked = unacked;
        this.onExpiry = onExpiry;
    }

    /**
     * Makes an expiry wait while {@code receiveBacklogged} says that received datagrams may still
     * wait to be read, re-checking after each read batch, at most one period; {@code onDeferred}
     * runs once per expiry so deferred (a counter).
     */
    public void deferWhile(java.util.function.BooleanSupplier receiveBacklogged, Runnable onDeferred) {
        deferral.set(receiveBacklogged, onDeferred);
    }

    /**
     * Sets the period from the QP attribute {@code timeout} (0..31; 0 = no timer, infinite).
     */
    public void timeout(int timeout) {
        periodNanos = timeout == 0 ? 0 : UNIT_NANOS << timeout;
        if (periodNanos == 0) {
            stop();
        }
    }

    /** @return the period in nanoseconds (0 = off) */
    public long periodNanos() {
        return periodNanos;
    }

    /** A packet was just sent (and recorded in the unacknowledged packets): make sure a timer runs. */
    public void onSend() {
        if (periodNanos != 0) {
            onSend(scheduler.nanoTime());
        }
    }

    /** A packet was sent at {@code now} (scheduler nanoseconds): make sure a timer runs. */
    public void onSend(long now) {
        if (periodNanos == 0) {
            return;
        }
        if (pending == null) {
            arm(now, periodNanos);
        } else {
            pullIn(now);
        }
    }

    /** Acknowledged progress at {@code now} nanoseconds: the deadline restarts from it. */
    public void onProgress(long now) {
        lastProgress = now;
        deferral.reset();
        pullIn(now);
    }

    /**
     * Packets have different periods (a TID READ_REQ waits 2^shift times longer), so when such a
     * packet is acknowledged the oldest one left may be due <em>earlier</em> than the timer pending
     * for the old one: then the timer is moved in. (Deadlines that move later are handled lazily,
     * when the timer fires early.)
     */
    private void pullIn(long now) {
        if (pending == null || unacked.isEmpty()) {
            return;
        }
        long d = deadline();
        if (d - scheduledAt < 0) {
            pending.cancel();
            arm(now, Math.max(0, d - now));
        }
    }

    private void arm(long now, long delay) {
        pending = scheduler.schedule(task, delay);
        scheduledAt = now + delay;
    }

    /**
     * @return the deadline in nanoseconds: the later of the oldest unacknowledged packet's send time
     *     and the last progress, plus the period; undefined when nothing is unacknowledged
     */
    public long deadline() {
        long from = unacked.oldestSentAt();
        if (lastProgress != Long.MIN_VALUE && lastProgress - from > 0) {
            from = lastProgress;
        }
        return from + (periodNanos << unacked.oldestTimeoutShift());
    }

    /** @return whether a timer is pending and the nanoseconds to the deadline, for diagnostics */
    public String debugState(long now) {
        return (pending != null ? "pending" : "idle") + (unacked.isEmpty() ? "" : " left=" + (deadline() - now));
    }

    /** Cancels the pending timer (QP leaves RTS, or the timeout is turned off). */
    public void stop() {
        if (pending != null) {
            pending.cancel();
            pending = null;
        }
        deferral.reset();
    }

    private void onTimer() {
        pending = null;
        if (periodNanos == 0 || unacked.isEmpty()) {
            return; // idle: the next packet sent starts a fresh period
        }
        long now = scheduler.nanoTime();
        long left = deadline() - now;
        if (left > 0) {
            arm(now, left);
            return;
        }
        if (deferral.defer(now, periodNanos)) {
            arm(now, DEFER_NANOS); // after the loop's next read batch
            return;
        }
        onExpiry.run();
    }
}
