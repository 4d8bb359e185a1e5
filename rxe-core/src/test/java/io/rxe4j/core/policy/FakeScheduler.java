package io.rxe4j.core.policy;

import io.rxe4j.verbs.spi.Scheduler;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * A {@link Scheduler} on virtual time for unit tests of the policies: time moves only in {@link
 * #advance}, tasks given to {@link #execute} run in {@link #runTasks} (and in {@link #advance}), and
 * timers fire in deadline order (ties in scheduling order) at their deadline. Single-threaded: the
 * test thread is the loop ({@link #inLoop()} is true).
 */
public final class FakeScheduler implements Scheduler {
    private long now;
    private long seq;
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    private final PriorityQueue<Timer> timers = new PriorityQueue<>((a, b) ->
            a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    /** Every schedule call's delay, in order, for assertions. */
    private final List<Long> scheduledDelays = new ArrayList<>();

    private final class Timer implements Cancellable {
        final long at;
        final long seq;
        final Runnable task;
        boolean cancelled;

        Timer(long at, long seq, Runnable task) {
            this.at = at;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public void cancel() {
            if (!cancelled) {
                cancelled = true;
                timers.remove(this);
            }
        }
    }

    /** @param start the clock's first reading in nanoseconds (any value; the policies must not care) */
    public FakeScheduler(long start) {
        this.now = start;
    }

    public FakeScheduler() {
        this(1_000_000_000L);
    }

    @Override
    public long nanoTime() {
        return now;
    }

    @Override
    public boolean inLoop() {
        return true;
    }

    @Override
    public void execute(Runnable task) {
        tasks.add(task);
    }

    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
        if (delayNanos < 0) {
            throw new IllegalArgumentException("negative delay " + delayNanos);
        }
        scheduledDelays.add(delayNanos);
        Timer t = new Timer(now + delayNanos, seq++, task);
        timers.add(t);
        return t;
    }

    /** Runs the queued tasks (and the tasks they queue). */
    public void runTasks() {
        Runnable r;
        while ((r = tasks.poll()) != null) {
            r.run();
        }
    }

    /** Moves the clock {@code nanos} forward, firing each timer due on the way at its deadline. */
    public void advance(long nanos) {
        long end = now + nanos;
        runTasks();
        Timer t;
        while ((t = timers.peek()) != null && t.at <= end) {
            timers.poll();
            now = Math.max(now, t.at);
            t.task.run();
            runTasks();
        }
        now = end;
    }

    /** @return the timers scheduled and neither fired nor cancelled */
    public int pendingTimers() {
        return timers.size();
    }

    /** @return the nanoseconds until the earliest pending timer fires, or -1 when none is pending */
    public long nextTimerIn() {
        Timer t = timers.peek();
        return t == null ? -1 : t.at - now;
    }

    /** @return the delay of every {@link #schedule} call so far, in order */
    public List<Long> scheduledDelays() {
        return scheduledDelays;
    }
}
