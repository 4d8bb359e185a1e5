package io.rxe4j.verbs;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A completion channel ({@code ibv_comp_channel}): where armed CQs report that a completion
 * arrived, so a thread can sleep until there is work instead of polling. Thread-safe.
 *
 * <p>The pattern of libibverbs:
 * <pre>{@code
 * CompletionChannel ch = device.createCompletionChannel();
 * CompletionQueue cq = device.createCq(256, ch);
 * cq.reqNotify(false);                       // arm: one event for the next completion
 * ...post work...
 * CompletionQueue ready = ch.getCqEvent(Duration.ofSeconds(5));   // null on timeout
 * ready.reqNotify(false);                    // re-arm before polling, so nothing is missed
 * int n = ready.poll(wcs);                   // then poll until empty
 * }</pre>
 *
 * <p>Each arming gives at most one event, and a CQ is queued here at most once until it is
 * taken, so the channel holds at most one entry per CQ. No {@code ibv_ack_cq_events} is needed.
 */
public final class CompletionChannel implements AutoCloseable {
    final RdmaDevice device;
    private final LinkedBlockingQueue<CompletionQueue> ready = new LinkedBlockingQueue<>();
    private volatile boolean closed;

    CompletionChannel(RdmaDevice device) {
        this.device = device;
    }

    /** Called on the device loop by an armed CQ: queues it unless it is queued already. */
    void signal(CompletionQueue cq) {
        if (closed) {
            return;
        }
        if (cq.eventQueued.compareAndSet(false, true)) {
            ready.offer(cq);
        } else {
            cq.eventMissed.set(true); // queued already, or being handed out: re-queued by getCqEvent
        }
    }

    /**
     * Waits for a completion event ({@code ibv_get_cq_event}).
     *
     * @param timeout how long to wait; zero returns at once
     * @return the CQ that had a completion after it was armed, or null if none in time
     * @throws InterruptedException if the thread is interrupted while waiting
     * @throws IllegalStateException if the channel is closed
     */
    public CompletionQueue getCqEvent(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            checkOpen(); // a close() wakes waiters within 100 ms
            long left = deadline - System.nanoTime();
            CompletionQueue cq = ready.poll(Math.max(0, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100))),
                    TimeUnit.NANOSECONDS);
            if (cq != null) {
                cq.eventQueued.set(false);
                if (cq.eventMissed.getAndSet(false)) {
                    signal(cq); // an arming fired while this CQ was being handed out: keep its event
                }
                return cq;
            }
            if (left <= 0) {
                return null;
            }
        }
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("completion channel of " + device + " is closed");
        }
    }

    /** Closes the channel ({@code ibv_destroy_comp_channel}); CQs attached to it stop reporting. Idempotent. */
    @Override
    public void close() {
        closed = true;
        ready.clear();
        device.channels.remove(this);
    }

    @Override
    public String toString() {
        return "CompletionChannel{" + device + ", ready=" + ready.size() + '}';
    }
}
