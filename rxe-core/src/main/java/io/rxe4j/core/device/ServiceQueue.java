package io.rxe4j.core.device;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;

/**
 * The lane's round-robin service turns (as Aeron's {@code Sender.doSend} visits its publications):
 * QPs that have output left (a READ reply produced in bounded batches, a requester after the
 * transport or the peer budget stopped it) wait here, and each gets one turn ({@link
 * RxeQp#onService()}) per round, in the order they asked. A round runs in a loop task of its own,
 * scheduled when the current loop task ends, after the packets already received, and only while
 * the transport is writable; no QP can starve the others. Loop only; no allocation per turn.
 */
final class ServiceQueue {
    private final RxeLane lane;
    private final Transport transport;
    private final Scheduler scheduler;
    private final BooleanSupplier closed;
    private final ArrayDeque<RxeQp> queue = new ArrayDeque<>();
    private boolean scheduled;
    private final Runnable task = this::round;

    /**
     * @param lane whose internal errors and flushes the turns report to
     * @param closed whether the device is closing (then no round is scheduled)
     */
    ServiceQueue(RxeLane lane, Transport transport, Scheduler scheduler, BooleanSupplier closed) {
        this.lane = lane;
        this.transport = transport;
        this.scheduler = scheduler;
        this.closed = closed;
    }

    /** {@code qp} gets a turn after the QPs already waiting (once: a queued QP keeps its place). */
    void request(RxeQp qp) {
        if (qp.enterServiceQueue()) {
            queue.add(qp);
        }
    }

    /** @return the QPs waiting for a turn */
    int size() {
        return queue.size();
    }

    /** Schedules a round if QPs wait, none is scheduled, the transport is writable and the device open. */
    void schedule() {
        if (!scheduled && !queue.isEmpty() && transport.isWritable() && !closed.getAsBoolean()) {
            scheduled = true;
            try {
                scheduler.execute(task);
            } catch (RejectedExecutionException shutDown) {
                scheduled = false; // the loop is gone (the device is closing)
            }
        }
    }

    /** One round: each QP queued when it starts gets one turn, while the transport is writable. */
    private void round() {
        scheduled = false;
        for (int n = queue.size(); n > 0 && transport.isWritable(); n--) {
            RxeQp qp = queue.poll();
            qp.leaveServiceQueue();
            if (qp.isDestroyed()) {
                continue;
            }
            try {
                qp.onService();
            } catch (RuntimeException e) {
                lane.internalError(qp, "service turn", e);
            }
        }
        lane.flushTransport(); // and the next round, if QPs still wait
    }
}
