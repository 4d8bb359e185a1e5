package io.rxe4j.net;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.rxe4j.verbs.spi.Scheduler;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Scheduler} backed by one Netty event loop (any single-threaded {@link EventExecutor},
 * such as a channel's {@link io.netty.channel.EventLoop} or a {@link
 * io.netty.channel.DefaultEventLoop}).
 *
 * <ul>
 *   <li>{@link #nanoTime()} is {@link System#nanoTime()} (nanoseconds, arbitrary origin);
 *   <li>{@link #inLoop()} is {@link EventExecutor#inEventLoop()};
 *   <li>{@link #execute} and {@link #schedule} delegate to the event loop, so tasks run on the loop
 *       thread in submission order, and timers at or after their deadline.
 * </ul>
 *
 * <p>This class holds no state of its own: it is thread-safe, and does not own the event loop
 * (shutting the loop down is its creator's job).
 */
public final class NettyScheduler implements Scheduler {

    private final EventExecutor eventLoop;

    /**
     * Wraps {@code eventLoop}.
     *
     * @param eventLoop a single-threaded Netty executor; not shut down by this class
     * @throws NullPointerException if {@code eventLoop} is {@code null}
     */
    public NettyScheduler(EventExecutor eventLoop) {
        this.eventLoop = Objects.requireNonNull(eventLoop, "eventLoop");
    }

    /** @return the wrapped Netty executor. */
    public EventExecutor eventLoop() {
        return eventLoop;
    }

    /**
     * {@inheritDoc}
     *
     * @return {@link System#nanoTime()}, in nanoseconds
     */
    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Thread-safe.
     */
    @Override
    public boolean inLoop() {
        return eventLoop.inEventLoop();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Thread-safe. A task that throws is logged by Netty and does not stop the loop.
     *
     * @throws java.util.concurrent.RejectedExecutionException if the event loop is shutting down
     *     or has terminated
     * @throws NullPointerException if {@code task} is {@code null}
     */
    @Override
    public void execute(Runnable task) {
        eventLoop.execute(Objects.requireNonNull(task, "task"));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Thread-safe. Uses {@link EventExecutor#schedule(Runnable, long, TimeUnit)}; the returned
     * handle cancels the Netty future (without interrupting a task that is already running).
     *
     * @param delayNanos delay in nanoseconds, {@code >= 0}
     * @throws IllegalArgumentException if {@code delayNanos < 0}
     * @throws java.util.concurrent.RejectedExecutionException if the event loop is shutting down
     *     or has terminated
     * @throws NullPointerException if {@code task} is {@code null}
     */
    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
        Objects.requireNonNull(task, "task");
        if (delayNanos < 0) {
            throw new IllegalArgumentException("delayNanos < 0: " + delayNanos);
        }
        ScheduledFuture<?> future = eventLoop.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        return () -> future.cancel(false);
    }

    @Override
    public String toString() {
        return "NettyScheduler[" + eventLoop + "]";
    }
}
