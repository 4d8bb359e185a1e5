package io.rxe4j.verbs;

import io.rxe4j.verbs.provider.CqOps;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A completion queue ({@code ibv_cq}). When full, the QP producing a completion moves to ERR
 * ({@code rxe-facts.md} §5.6) and the device raises {@link AsyncEventType#CQ_ERR}. Thread-safe.
 *
 * <p>Three ways to consume completions; a CQ uses one of the first two, or the third:
 * <ul>
 *   <li><b>Polling</b>: {@link #poll} copies completions into caller-supplied {@link
 *       WorkCompletion} objects (no allocation); {@link #await} blocks until one is there.
 *   <li><b>Completion events</b>: a CQ created with a {@link CompletionChannel} and armed with
 *       {@link #reqNotify} reports the next (or next solicited) completion to the channel, where
 *       a thread blocks in {@link CompletionChannel#getCqEvent}; it then polls.
 *   <li><b>Dispatch</b>: {@link #onCompletion} hands every completion to a callback on the
 *       device's event thread, and {@link QueuePair#postSendAsync} completes a future when its
 *       work request completes. A dispatched CQ cannot be polled (its completions belong to the
 *       dispatcher).
 * </ul>
 */
public final class CompletionQueue implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CompletionQueue.class);

    final RdmaDevice device;
    final CqOps core;
    /** The QPs that use this CQ, each once (as send CQ, receive CQ or both). */
    final java.util.Set<QueuePair> users = ConcurrentHashMap.newKeySet();
    /** Whether this CQ is queued in its channel (at most once until taken). */
    final AtomicBoolean eventQueued = new AtomicBoolean();
    /** An event fired while this CQ was queued or being handed out (see CompletionChannel.signal). */
    final AtomicBoolean eventMissed = new AtomicBoolean();
    private volatile CompletionChannel channel;
    private volatile boolean dispatching;
    private volatile Consumer<WorkCompletion> handler;
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Map<FutureKey, CompletableFuture<WorkCompletion>> futures = new ConcurrentHashMap<>();
    private final AtomicLong unclaimed = new AtomicLong();
    /** The dispatcher's poll batch; used on the event thread only. */
    private final WorkCompletion[] batch = newBatch(32);
    /** {@link #pollFutures}'s poll batch; on the polling thread. */
    private final WorkCompletion[] scratch = newBatch(16);
    /** Completions {@link #pollFutures} polled that no future waited for: the next {@link #poll} returns them first. */
    private final java.util.ArrayDeque<WorkCompletion> kept = new java.util.ArrayDeque<>();
    private volatile boolean closed;

    private record FutureKey(int qpNum, long wrId) { }

    CompletionQueue(RdmaDevice device, CqOps core) {
        this.device = device;
        this.core = core;
        core.events(new CqOps.Events() {
            @Override
            public void completionEvent() {
                if (dispatching) {
                    scheduleDrain();
                } else {
                    CompletionChannel ch = channel;
                    if (ch != null) {
                        ch.signal(CompletionQueue.this);
                    }
                }
            }

            @Override
            public void overflow() {
                device.events.raise(new AsyncEvent(AsyncEventType.CQ_ERR, null, CompletionQueue.this,
                        "CQ overflow: " + core.capacity() + " completions were not polled in time"));
                // completions that did not fit are lost: no pending future may wait for one forever.
                // On the event thread: completing a future runs its dependents, never on the device loop.
                device.events.execute(() -> failAllFutures("CQ " + core
                        + " overflowed; the completion of this work request was lost"));
            }
        });
    }

    private static WorkCompletion[] newBatch(int n) {
        WorkCompletion[] b = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            b[i] = new WorkCompletion();
        }
        return b;
    }

    void attach(CompletionChannel ch) {
        this.channel = ch;
    }

    /**
     * {@code ibv_poll_cq}: fills up to {@code out.length} completions.
     *
     * @return how many were written, 0 if the CQ is empty
     * @throws IllegalStateException if the CQ is dispatched ({@link #onCompletion}, {@link
     *     QueuePair#postSendAsync})
     */
    public int poll(WorkCompletion[] out) {
        return poll(out, out.length);
    }

    /**
     * {@code ibv_poll_cq} with an explicit maximum.
     *
     * @throws IllegalArgumentException if {@code max} exceeds {@code out.length}
     * @throws IllegalStateException if the CQ is dispatched
     */
    public int poll(WorkCompletion[] out, int max) {
        if (dispatching) {
            throw new IllegalStateException(core + " dispatches its completions to a handler or futures; it cannot"
                    + " also be polled");
        }
        int n = 0;
        while (n < max && !kept.isEmpty()) {
            out[n++].copyFrom(kept.poll());
        }
        if (n == max) {
            return n;
        }
        if (n == 0 && futures.isEmpty()) {
            return core.poll(out, max); // the fast path: nothing kept, no future waits
        }
        // completions that complete a future (QueuePair.submit, execute) are theirs, not returned here
        while (n < max) {
            int got = core.poll(scratch, Math.min(scratch.length, max - n));
            if (got == 0) {
                break;
            }
            for (int i = 0; i < got; i++) {
                if (!completeFuture(scratch[i])) {
                    out[n++].copyFrom(scratch[i]);
                }
            }
        }
        return n;
    }

    /**
     * Polls the completions work requests posted with {@link QueuePair#submit} or {@link
     * QueuePair#execute} wait for and completes their futures; every other completion polled meanwhile
     * is kept, in order, for the next {@link #poll}. For an application that drives such futures from
     * its own loop, or a test on virtual time that drives them while it runs the clock. Call it from
     * the thread that polls this CQ.
     *
     * @return how many futures it completed
     * @throws IllegalStateException if the CQ is dispatched (its handler thread completes the futures)
     */
    public int pollFutures() {
        if (dispatching) {
            throw new IllegalStateException(core + " dispatches its completions: its futures complete on their own");
        }
        int done = 0;
        for (int got; (got = core.poll(scratch, scratch.length)) > 0; ) {
            for (int i = 0; i < got; i++) {
                if (completeFuture(scratch[i])) {
                    done++;
                } else {
                    WorkCompletion copy = new WorkCompletion(); // off the fast path: a completion nobody waited for
                    copy.copyFrom(scratch[i]);
                    kept.add(copy);
                }
            }
        }
        return done;
    }

    /** @return whether {@code wc} completed a registered future (and was consumed by it) */
    private boolean completeFuture(WorkCompletion wc) {
        if (futures.isEmpty() || wc.opcode == WcOpcode.RECV || wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
            return false;
        }
        CompletableFuture<WorkCompletion> f = futures.remove(new FutureKey(wc.qpNum, wc.wrId));
        if (f == null) {
            return false;
        }
        WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wc);
        if (copy.status == WcStatus.SUCCESS) {
            f.complete(copy);
        } else {
            f.completeExceptionally(new WorkCompletionException(copy, qpReason(copy.qpNum)));
        }
        return true;
    }

    /** @return the error reason of the QP {@code qpn} among this CQ's users, or null */
    private String qpReason(int qpn) {
        for (QueuePair qp : users) {
            if (qp.qpNum() == qpn) {
                return qp.errorReason();
            }
        }
        return null;
    }

    /**
     * Waits for a completion to poll, without a channel.
     *
     * @param timeoutNanos maximum wait, nanoseconds
     * @return whether a completion is available
     */
    public boolean await(long timeoutNanos) {
        return core.await(timeoutNanos);
    }

    /**
     * Arms the CQ for one completion event ({@code ibv_req_notify_cq}); the event goes to the CQ's
     * {@link CompletionChannel}. With {@code solicitedOnly} the event waits for a receive
     * completion of a message sent with {@link SendFlags#SOLICITED} (or any unsuccessful
     * completion, IBTA 11.4.2.2); otherwise the next completion fires it. Completions already in
     * the CQ do not fire it: poll after arming.
     *
     * @return whether completions were already waiting when the CQ was armed (as {@code
     *     IB_CQ_REPORT_MISSED_EVENTS}): poll them rather than wait
     * @throws IllegalStateException if the CQ has no channel or is dispatched
     */
    public boolean reqNotify(boolean solicitedOnly) {
        checkOpen();
        if (channel == null || dispatching) {
            throw new IllegalStateException(core + (dispatching ? " is dispatched" : " has no completion channel")
                    + ": create it with RdmaDevice.createCq(cqe, channel) to use reqNotify");
        }
        return core.reqNotify(solicitedOnly);
    }

    /**
     * Dispatches every completion of this CQ to {@code handler} on the device's event thread, in
     * order (the callback form of a completion channel). The {@link WorkCompletion} passed is
     * reused after the call returns: copy what you keep. The handler must not block for long; an
     * exception it throws is logged and dispatch goes on. Completions of work requests posted with
     * {@link QueuePair#postSendAsync} go to their futures instead.
     *
     * @param handler the callback, or null to stop calling one (completions then go to futures
     *     only, and others are logged at WARN)
     * @throws IllegalStateException if the CQ was created with a completion channel
     */
    public void onCompletion(Consumer<WorkCompletion> handler) {
        this.handler = handler;
        enableDispatch();
    }

    /** @return whether completions go to a handler or futures on the event thread ({@link #onCompletion}) */
    boolean isDispatching() {
        return dispatching;
    }

    void enableDispatch() {
        checkOpen();
        if (channel != null) {
            throw new IllegalStateException(core + " reports to a completion channel; it cannot also dispatch");
        }
        if (!dispatching) {
            dispatching = true;
            scheduleDrain();
        }
    }

    CompletableFuture<WorkCompletion> registerFuture(int qpNum, long wrId) {
        CompletableFuture<WorkCompletion> f = new CompletableFuture<>();
        if (futures.putIfAbsent(new FutureKey(qpNum, wrId), f) != null) {
            throw new IllegalArgumentException("wr_id " + wrId + " of QP 0x" + Integer.toHexString(qpNum)
                    + " already has a pending future; use a distinct wr_id per outstanding postSendAsync or submit");
        }
        return f;
    }

    void unregisterFuture(int qpNum, long wrId) {
        futures.remove(new FutureKey(qpNum, wrId));
    }

    private void failAllFutures(String why) {
        futures.entrySet().removeIf(e -> {
            e.getValue().completeExceptionally(new IllegalStateException(why + " (wr_id " + e.getKey().wrId() + ")"));
            return true;
        });
    }

    /** Fails the pending futures of a QP being destroyed. */
    void failFutures(QueuePair qp) {
        int qpn = qp.qpNum();
        futures.entrySet().removeIf(e -> {
            if (e.getKey().qpNum() == qpn) {
                e.getValue().completeExceptionally(new IllegalStateException("QP 0x" + Integer.toHexString(qpn)
                        + " was destroyed before wr_id " + e.getKey().wrId() + " completed"));
                return true;
            }
            return false;
        });
    }

    private void scheduleDrain() {
        if (drainScheduled.compareAndSet(false, true)) {
            device.events.execute(this::drain);
        }
    }

    /** Event thread: polls until empty and armed, delivering each completion. */
    private void drain() {
        drainScheduled.set(false);
        while (!closed) {
            int n = core.poll(batch, batch.length);
            for (int i = 0; i < n; i++) {
                deliver(batch[i]);
            }
            if (n == 0 && !core.reqNotify(false)) {
                return; // armed while empty: the next completion schedules the next drain
            }
        }
    }

    private void deliver(WorkCompletion wc) {
        // only send-side completions complete futures: a receive with the same wr_id on a CQ shared
        // by sends and receives belongs to a receive WR
        if (!futures.isEmpty() && wc.opcode != WcOpcode.RECV && wc.opcode != WcOpcode.RECV_RDMA_WITH_IMM) {
            CompletableFuture<WorkCompletion> f = futures.remove(new FutureKey(wc.qpNum, wc.wrId));
            if (f != null) {
                WorkCompletion copy = new WorkCompletion();
                copy.copyFrom(wc);
                if (copy.status == WcStatus.SUCCESS) {
                    f.complete(copy);
                } else {
                    f.completeExceptionally(new WorkCompletionException(copy, qpReason(copy.qpNum)));
                }
                return;
            }
        }
        Consumer<WorkCompletion> h = handler;
        if (h != null) {
            try {
                h.accept(wc);
            } catch (RuntimeException e) {
                LOG.warn("completion handler of {} threw on {}", core, wc, e);
            }
        } else {
            unclaimed.incrementAndGet();
            LOG.warn("{}: completion with no future and no handler (set one with onCompletion): {}", core, wc);
        }
    }

    /** @return how many dispatched completions found neither a future nor a handler (each was logged) */
    public long unclaimedCompletions() {
        return unclaimed.get();
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
     * Destroys the CQ ({@code ibv_destroy_cq}). Idempotent. To close a whole device, children
     * first, see {@link RdmaDevice#closeAll()}.
     *
     * @throws IllegalStateException if a QP still uses it (EBUSY), naming how many distinct QPs
     *     (a QP that uses it as send and receive CQ counts once) and which
     */
    @Override
    public void close() {
        close(false);
    }

    /** As {@link #close()}; {@code force}: even while QPs use it (for {@link RdmaDevice#closeAll()}). */
    synchronized void close(boolean force) {
        if (closed) {
            return;
        }
        if (!force && !users.isEmpty()) {
            java.util.List<QueuePair> u = java.util.List.copyOf(users);
            StringBuilder names = new StringBuilder();
            for (QueuePair qp : u) {
                names.append(names.isEmpty() ? "" : ", ").append("0x").append(Integer.toHexString(qp.qpNum()));
            }
            throw new IllegalStateException(core + " is still used by " + u.size() + " QP(s) (" + names
                    + ") (EBUSY): close them first, or use RdmaDevice.closeAll()");
        }
        closed = true;
        core.events(null);
        device.cqs.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
