package io.rxe4j.verbs.spi;

/**
 * The single-threaded event loop that owns a device and all of its QPs, with its clock.
 *
 * <p>Every protocol action (requester, responder, completer, timers) of a device runs on this
 * loop; user threads hand work to it with {@link #execute(Runnable)}. Implementations: a Netty
 * event loop (rxe-net), and a virtual-time loop for deterministic tests. Time is injected through
 * this interface so that the protocol never reads the system clock itself.
 */
public interface Scheduler {

    /** @return the current time of this loop's clock in nanoseconds (monotonic, arbitrary origin). */
    long nanoTime();

    /** @return {@code true} when the calling thread is this loop's thread. */
    boolean inLoop();

    /**
     * Runs {@code task} on the loop thread, after the tasks already queued.
     *
     * @throws java.util.concurrent.RejectedExecutionException if the loop has shut down
     */
    void execute(Runnable task);

    /**
     * Runs {@code task} on the loop thread once, at least {@code delayNanos} nanoseconds from now.
     *
     * @param delayNanos delay in nanoseconds, {@code >= 0}
     * @return a handle that cancels the timer
     */
    Cancellable schedule(Runnable task, long delayNanos);

    /** A scheduled timer that can be cancelled. */
    @FunctionalInterface
    interface Cancellable {
        /** Cancels the timer; a no-op if it already ran or was cancelled. */
        void cancel();
    }
}
