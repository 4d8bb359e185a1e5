package io.rxe4j.net.sim;

import io.rxe4j.verbs.spi.Scheduler;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A deterministic, single-threaded {@link Scheduler} with a virtual clock, for tests.
 *
 * <h2>Time and order</h2>
 *
 * <p>The clock ({@link #nanoTime()}, nanoseconds) starts at the value given to the constructor (0
 * by default) and moves only inside the {@code run*} methods: when no task is due at the current
 * time, the clock jumps straight to the next timer's deadline. Every queued task has a deadline
 * ({@link #execute}: the current time; {@link #schedule}: current time + delay) and a sequence
 * number taken at submission; tasks run in (deadline, sequence) order. So {@code execute} is FIFO,
 * timers with the same deadline run in the order they were scheduled, and a task executed at time
 * {@code t} runs after the timers that were already due at {@code t}.
 *
 * <h2>Threads</h2>
 *
 * <p>Tasks run only inside {@link #runUntilIdle()}, {@link #runFor(long)}, {@link
 * #runUntil(BooleanSupplier, long)} and {@link #runNext()}, on the thread that calls them; no
 * thread is created. {@link #execute}, {@link #schedule}, {@link Cancellable#cancel()} and the
 * observers may be called from any thread (they take a lock). At most one thread runs tasks at a
 * time: a {@code run*} call while another is active (on another thread, or re-entrantly from a
 * task) throws {@link IllegalStateException}.
 *
 * <p>{@link #inLoop()} is {@code true} on the thread that is currently inside a {@code run*}
 * method and, while no {@code run*} method is active, on the thread that created this scheduler
 * (typically the test thread, so that test code between two {@code run*} calls acts "on the loop"
 * like a task would). It is {@code false} on every other thread.
 *
 * <h2>Errors</h2>
 *
 * <p>An exception thrown by a task is not caught: it propagates out of the {@code run*} method
 * (the task is already removed from the queue, the clock stays at its deadline, and the remaining
 * tasks stay queued), so that a test fails loudly. Each {@code run*} call runs at most {@link
 * #taskLimit()} tasks: when that many have run and another is due, it throws {@link
 * IllegalStateException} (leaving that task queued and the clock unchanged), to catch a timer that
 * reschedules itself forever.
 */
public final class VirtualScheduler implements Scheduler {

    /** The default {@link #taskLimit()}: 10 000 000 tasks per {@code run*} call. */
    public static final long DEFAULT_TASK_LIMIT = 10_000_000L;

    private final ReentrantLock lock = new ReentrantLock();
    private final TreeSet<Entry> queue = new TreeSet<>();
    private final Thread owner;
    private final long taskLimit;
    // guarded by lock
    private long now;
    private long sequence;
    private boolean shutdown;
    // written under lock, read without it
    private volatile Thread runner;
    private volatile long tasksRun;

    /** Creates a scheduler whose clock starts at 0 ns, with {@link #DEFAULT_TASK_LIMIT}. */
    public VirtualScheduler() {
        this(0L, DEFAULT_TASK_LIMIT);
    }

    /**
     * Creates a scheduler.
     *
     * @param startNanos the initial value of {@link #nanoTime()}, in nanoseconds (any value; the
     *     clock never overflows in practice if it is far from {@link Long#MAX_VALUE})
     * @param taskLimit the most tasks one {@code run*} call may run, {@code > 0}
     * @throws IllegalArgumentException if {@code taskLimit <= 0}
     */
    public VirtualScheduler(long startNanos, long taskLimit) {
        if (taskLimit <= 0) {
            throw new IllegalArgumentException("taskLimit <= 0: " + taskLimit);
        }
        this.now = startNanos;
        this.taskLimit = taskLimit;
        this.owner = Thread.currentThread();
    }

    /** @return the most tasks one {@code run*} call may run before it throws. */
    public long taskLimit() {
        return taskLimit;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The virtual time in nanoseconds; thread-safe.
     */
    @Override
    public long nanoTime() {
        lock.lock();
        try {
            return now;
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code true} on the thread inside a {@code run*} method, or, when none is active, on the
     * thread that created this scheduler; see the class comment.
     */
    @Override
    public boolean inLoop() {
        Thread current = Thread.currentThread();
        Thread r = runner;
        return r != null ? r == current : current == owner;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Queues {@code task} to run at the current virtual time, after the tasks already due then.
     * Thread-safe; never runs the task synchronously.
     *
     * @throws RejectedExecutionException after {@link #shutdown()}
     * @throws NullPointerException if {@code task} is {@code null}
     */
    @Override
    public void execute(Runnable task) {
        enqueue(task, 0L);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Queues {@code task} at virtual time now + {@code delayNanos}. Thread-safe. The handle
     * removes the timer from the queue; a cancelled timer never runs and does not move the clock.
     *
     * @param delayNanos delay in nanoseconds, {@code >= 0}
     * @throws IllegalArgumentException if {@code delayNanos < 0}
     * @throws RejectedExecutionException after {@link #shutdown()}
     * @throws NullPointerException if {@code task} is {@code null}
     */
    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
        if (delayNanos < 0) {
            throw new IllegalArgumentException("delayNanos < 0: " + delayNanos);
        }
        Entry entry = enqueue(task, delayNanos);
        return () -> {
            lock.lock();
            try {
                queue.remove(entry);
            } finally {
                lock.unlock();
            }
        };
    }

    private Entry enqueue(Runnable task, long delayNanos) {
        Objects.requireNonNull(task, "task");
        lock.lock();
        try {
            if (shutdown) {
                throw new RejectedExecutionException("VirtualScheduler is shut down");
            }
            Entry entry = new Entry(saturatedAdd(now, delayNanos), sequence++, task);
            queue.add(entry);
            return entry;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs queued tasks, jumping the clock to the next timer whenever nothing is due now, until the
     * queue is empty. Tasks queued by the running tasks run too.
     *
     * @return the number of tasks run
     * @throws IllegalStateException if more than {@link #taskLimit()} tasks would run, or if
     *     another {@code run*} call is active
     */
    public long runUntilIdle() {
        return run(Long.MAX_VALUE, null, false).count();
    }

    /**
     * Runs every task whose deadline is at most now + {@code nanos} (including those queued
     * meanwhile), then sets the clock to now + {@code nanos}.
     *
     * @param nanos how far to advance the virtual clock, in nanoseconds, {@code >= 0}
     * @return the number of tasks run
     * @throws IllegalArgumentException if {@code nanos < 0}
     * @throws IllegalStateException if more than {@link #taskLimit()} tasks would run, or if
     *     another {@code run*} call is active
     */
    public long runFor(long nanos) {
        if (nanos < 0) {
            throw new IllegalArgumentException("nanos < 0: " + nanos);
        }
        return run(saturatedAdd(nanoTime(), nanos), null, true).count();
    }

    /**
     * Runs tasks in order until {@code condition} is true, or until no task is left with a
     * deadline within now + {@code maxNanos}. The condition is evaluated on this thread (with
     * {@link #inLoop()} true) before the first task and after every task. If it does not become
     * true, the clock ends at now + {@code maxNanos} and the condition is evaluated once more
     * there; if it does, the clock stays where it was when it became true.
     *
     * @param condition the condition to wait for
     * @param maxNanos the most virtual time to let pass, in nanoseconds, {@code >= 0}
     * @return whether {@code condition} became true
     * @throws IllegalArgumentException if {@code maxNanos < 0}
     * @throws IllegalStateException if more than {@link #taskLimit()} tasks would run, or if
     *     another {@code run*} call is active
     */
    public boolean runUntil(BooleanSupplier condition, long maxNanos) {
        Objects.requireNonNull(condition, "condition");
        if (maxNanos < 0) {
            throw new IllegalArgumentException("maxNanos < 0: " + maxNanos);
        }
        return run(saturatedAdd(nanoTime(), maxNanos), condition, true).conditionMet();
    }

    /**
     * Runs the single next task, moving the clock to its deadline if it lies in the future.
     *
     * @return {@code true} if a task ran, {@code false} if the queue was empty
     * @throws IllegalStateException if another {@code run*} call is active
     */
    public boolean runNext() {
        beginRun();
        try {
            Entry next = pollDue(Long.MAX_VALUE, false);
            if (next == null) {
                return false;
            }
            tasksRun++;
            next.task.run();
            return true;
        } finally {
            endRun();
        }
    }

    private record RunResult(long count, boolean conditionMet) {}

    private RunResult run(long until, BooleanSupplier condition, boolean advanceToEnd) {
        beginRun();
        long count = 0;
        try {
            while (true) {
                if (condition != null && condition.getAsBoolean()) {
                    return new RunResult(count, true);
                }
                Entry next = pollDue(until, count >= taskLimit);
                if (next == null) {
                    break;
                }
                count++;
                tasksRun++;
                next.task.run();
            }
            if (advanceToEnd) {
                lock.lock();
                try {
                    if (until > now) {
                        now = until;
                    }
                } finally {
                    lock.unlock();
                }
            }
            return new RunResult(count, condition != null && condition.getAsBoolean());
        } finally {
            endRun();
        }
    }

    /**
     * Removes and returns the first entry with deadline {@code <= until}, advancing the clock to
     * it; {@code null} if there is none. With {@code limitReached}, throws instead of removing a
     * due entry, leaving queue and clock unchanged.
     */
    private Entry pollDue(long until, boolean limitReached) {
        lock.lock();
        try {
            if (queue.isEmpty() || queue.first().deadline > until) {
                return null;
            }
            if (limitReached) {
                throw new IllegalStateException(
                        "VirtualScheduler ran " + taskLimit + " tasks in one call and more are due"
                                + " (a timer rescheduling itself forever?); clock at " + now + " ns");
            }
            Entry e = queue.pollFirst();
            if (e.deadline > now) {
                now = e.deadline;
            }
            return e;
        } finally {
            lock.unlock();
        }
    }

    private void beginRun() {
        lock.lock();
        try {
            Thread current = Thread.currentThread();
            Thread r = runner;
            if (r != null) {
                throw new IllegalStateException(
                        r == current
                                ? "VirtualScheduler run* called re-entrantly from a task"
                                : "VirtualScheduler is already running on " + r.getName());
            }
            runner = current;
        } finally {
            lock.unlock();
        }
    }

    private void endRun() {
        lock.lock();
        try {
            runner = null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A task that owns something it must give back if it never runs (a packet in flight on a
     * simulated wire): {@link #shutdown()} calls {@link #onDropped()} on each such task it drops.
     */
    public interface Droppable extends Runnable {
        /** The task was dropped by {@link #shutdown()} and will never run; called once, after the drop. */
        void onDropped();
    }

    /**
     * Rejects further {@link #execute} / {@link #schedule} calls with {@link
     * RejectedExecutionException} and drops the queued tasks, calling {@link Droppable#onDropped()}
     * on those that are {@link Droppable} (outside the scheduler's lock, in queue order; an exception
     * of one is rethrown after all were called). Thread-safe; idempotent.
     *
     * @return the number of queued tasks dropped
     */
    public int shutdown() {
        java.util.List<Droppable> owners = new java.util.ArrayList<>();
        int dropped;
        lock.lock();
        try {
            shutdown = true;
            dropped = queue.size();
            for (Entry e : queue) {
                if (e.task() instanceof Droppable d) {
                    owners.add(d);
                }
            }
            queue.clear();
        } finally {
            lock.unlock();
        }
        RuntimeException first = null;
        for (Droppable d : owners) {
            try {
                d.onDropped();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
        return dropped;
    }

    /** @return whether {@link #shutdown()} was called. Thread-safe. */
    public boolean isShutdown() {
        lock.lock();
        try {
            return shutdown;
        } finally {
            lock.unlock();
        }
    }

    /** @return the number of queued tasks and (uncancelled) timers. Thread-safe. */
    public int pendingTasks() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * @return the deadline in virtual nanoseconds of the next queued task, or {@link
     *     java.util.OptionalLong#empty()} if none. Thread-safe.
     */
    public java.util.OptionalLong nextDeadline() {
        lock.lock();
        try {
            return queue.isEmpty()
                    ? java.util.OptionalLong.empty()
                    : java.util.OptionalLong.of(queue.first().deadline);
        } finally {
            lock.unlock();
        }
    }

    /** @return the total number of tasks run since creation (approximate if read concurrently). */
    public long tasksRun() {
        return tasksRun;
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        // overflow only when both have the same sign and the result's sign differs
        if (((a ^ r) & (b ^ r)) < 0) {
            return b > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
        }
        return r;
    }

    @Override
    public String toString() {
        return "VirtualScheduler[now=" + nanoTime() + "ns, pending=" + pendingTasks() + "]";
    }

    private record Entry(long deadline, long seq, Runnable task) implements Comparable<Entry> {
        @Override
        public int compareTo(Entry o) {
            int c = Long.compare(deadline, o.deadline);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }

        // identity semantics: two submissions of the same task are distinct entries
        @Override
        public boolean equals(Object o) {
            return this == o;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }
}
