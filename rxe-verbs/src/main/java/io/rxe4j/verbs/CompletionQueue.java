package io.rxe4j.verbs;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A completion queue ({@code ibv_cq}). {@link #poll} copies completions into caller-supplied
 * {@link WorkCompletion} objects (no allocation). When full, the QP producing a completion moves
 * to ERR ({@code rxe-facts.md} §5.6). Thread-safe.
 */
public final class CompletionQueue implements AutoCloseable {
    final RdmaDevice device;
    final io.rxe4j.core.cq.RxeCq core;
    final AtomicInteger users = new AtomicInteger();
    private volatile boolean closed;

    CompletionQueue(RdmaDevice device, io.rxe4j.core.cq.RxeCq core) {
        this.device = device;
        this.core = core;
    }

    /**
     * {@code ibv_poll_cq}: fills up to {@code out.length} completions.
     *
     * @return how many were written, 0 if the CQ is empty
     */
    public int poll(WorkCompletion[] out) {
        return core.poll(out, out.length);
    }

    /**
     * {@code ibv_poll_cq} with an explicit maximum.
     *
     * @throws IllegalArgumentException if {@code max} exceeds {@code out.length}
     */
    public int poll(WorkCompletion[] out, int max) {
        return core.poll(out, max);
    }

    /**
     * Waits for a completion (the role of a completion channel).
     *
     * @param timeoutNanos maximum wait, nanoseconds
     * @return whether a completion is available
     */
    public boolean await(long timeoutNanos) {
        return core.await(timeoutNanos);
    }

    /** @return how many completions are waiting to be polled (a snapshot) */
    public int size() {
        return core.size();
    }

    /** @return capacity in completions */
    public int capacity() {
        return core.capacity();
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException(core + " is closed");
        }
    }

    /**
     * Destroys the CQ ({@code ibv_destroy_cq}). Idempotent.
     *
     * @throws IllegalStateException if a QP still uses it
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (users.get() > 0) {
            throw new IllegalStateException(core + " is still used by " + users.get() + " QP(s) (EBUSY)");
        }
        closed = true;
        device.cqs.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
