package io.rxe4j.core.policy;

import io.rxe4j.verbs.spi.Scheduler;

/**
 * A one-shot timer for a gap in a PSN sequence: {@link #open} when the gap is first seen (at most
 * one deadline at a time; opening an open gap keeps the earlier deadline), {@link #close} when it
 * fills. When the deadline passes with the gap still open, the expiry action runs once and the timer
 * is closed; the action decides whether to open it again (e.g. for the next attempt one round trip
 * later). Loop only; time from the injected {@link Scheduler}.
 */
public final class GapTimer {
    private final Scheduler scheduler;
    private final Runnable onExpiry;
    private final Runnable task = this::fire;
    private Scheduler.Cancellable pending;
    private long deadline;
    private boolean open;

    /**
     * @param scheduler the loop and clock
     * @param onExpiry runs on the loop when an open gap's deadline passed
     */
    public GapTimer(Scheduler scheduler, Runnable onExpiry) {
        this.scheduler = scheduler;
        this.onExpiry = onExpiry;
    }

    /** @return whether a gap is open */
    public boolean isOpen() {
        return open;
    }

    /** @return the deadline of the open gap in scheduler nanoseconds (undefined when closed) */
    public long deadline() {
        return deadline;
    }

    /**
     * Opens the gap with a deadline {@code delayNanos} after {@code since} (a time in the past
     * counts from then); an open gap keeps its deadline.
     */
    public void open(long since, long delayNanos) {
        if (open) {
            return;
        }
        open = true;
        deadline = since + delayNanos;
        long now = scheduler.nanoTime();
        pending = scheduler.schedule(task, Math.max(0, deadline - now));
    }

    /** The gap filled (or its owner stops): no expiry. */
    public void close() {
        open = false;
        if (pending != null) {
            pending.cancel();
            pending = null;
        }
    }

    private void fire() {
        pending = null;
        if (!open) {
            return;
        }
        open = false;
        onExpiry.run();
    }
}
