package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.ib.IbCm;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server side of the connection manager ({@code rdma_listen} and {@code rdma_get_request}): a
 * device's IB CM listening on one of rdma_cm's TCP-space ports (service ID {@code 0x106 << 16 |
 * port}), whose clients {@linkplain RdmaConnection#connect connect} RC QPs. Thread-safe.
 *
 * <pre>{@code
 * try (RdmaListener listener = RdmaListener.listen(device, 7471)) {
 *     RdmaConnection conn = listener.accept(pd, cq, cq, ConnectionParams.defaults());
 *     ...
 * }
 * }</pre>
 *
 * <p>Requests are queued in arrival order until they are taken ({@link #getRequest}, {@link
 * #nextRequest}, {@link #accept}, {@link #acceptAsync}); at most {@code backlog} wait. A request
 * beyond that is left unanswered and counted ({@link #droppedRequests()}), so that the client's CM
 * resends it later, as Linux does when a listener's backlog is full. A retransmitted REQ of a
 * request already queued or answered is answered by the CM itself (the same REP, or nothing while
 * the application decides), never queued twice.
 */
public final class RdmaListener implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaListener.class);
    /** Requests waiting to be taken, by default. */
    public static final int DEFAULT_BACKLOG = 64;

    private final RdmaDevice device;
    private final IbCm cm;
    private final int backlog;
    private final AtomicLong dropped = new AtomicLong();
    /** Requests not taken yet, and takers waiting for one; guarded by {@code this}. */
    private final Deque<ConnectRequest> requests = new ArrayDeque<>();
    private final Deque<CompletableFuture<ConnectRequest>> takers = new ArrayDeque<>();
    private volatile int port;
    private volatile boolean closed;

    private RdmaListener(RdmaDevice device, int backlog) {
        this.device = device;
        this.cm = IbCm.of(device);
        this.backlog = backlog;
    }

    /**
     * Listens on rdma_cm port {@code port} of {@code device} with a backlog of {@value
     * #DEFAULT_BACKLOG}.
     *
     * @see #listen(RdmaDevice, int, int)
     */
    public static RdmaListener listen(RdmaDevice device, int port) {
        return listen(device, port, DEFAULT_BACKLOG);
    }

    /**
     * Listens on rdma_cm port {@code port} of {@code device} ({@code rdma_bind_addr} to the device's
     * address and {@code port}, then {@code rdma_listen}).
     *
     * @param port 1..65535, or 0 for a free port from 32768..60999 ({@link #port()})
     * @param backlog connect requests that may wait to be taken, 1..4096
     * @throws IllegalArgumentException for a null device, a port or backlog out of range
     * @throws IllegalStateException if something listens on {@code port} of the device already
     *     ({@code EADDRINUSE}), or the device is closed
     */
    public static RdmaListener listen(RdmaDevice device, int port, int backlog) {
        RdmaConnection.notNull(device, "device");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, got " + port);
        }
        if (backlog < 1 || backlog > 4096) {
            throw new IllegalArgumentException("backlog must be 1..4096, got " + backlog);
        }
        RdmaListener l = new RdmaListener(device, backlog);
        l.port = l.cm.listen(port, new IbCm.RequestHandler() {
            @Override
            public void onRequest(IbCm.Incoming request) {
                l.onRequest(request);
            }

            @Override
            public void onClosed() {
                l.close(); // the device closes: waiting takers fail with CLOSED
            }
        });
        return l;
    }

    /** @return the rdma_cm port listened on (the one picked when 0 was asked for) */
    public int port() {
        return port;
    }

    /** @return the device listened on */
    public RdmaDevice device() {
        return device;
    }

    /** A REQ for our port, on the device's loop: to a waiting taker, else the queue, else dropped. */
    private void onRequest(IbCm.Incoming incoming) {
        ConnectRequest r = new ConnectRequest(this, incoming);
        CompletableFuture<ConnectRequest> taker;
        synchronized (this) {
            if (closed) {
                taker = null;
            } else {
                taker = takers.poll();
                if (taker == null) {
                    if (requests.size() >= backlog) {
                        long d = dropped.incrementAndGet();
                        if (Long.bitCount(d) == 1) { // the 1st, 2nd, 4th, 8th ...: a flood logs a few lines
                            LOG.warn("connection manager on port {} of {}: {} left unanswered: backlog of {} requests"
                                    + " full (the client resends it; {} left so far)", port, device, r, backlog, d);
                        }
                        r.drop();
                        return;
                    }
                    requests.add(r);
                    return;
                }
            }
        }
        if (taker == null) {
            r.reject(new byte[0]);
        } else if (!taker.complete(r)) { // cancelled meanwhile: the next one, or the queue
            onRequestAgain(r);
        }
    }

    private void onRequestAgain(ConnectRequest r) {
        CompletableFuture<ConnectRequest> taker;
        synchronized (this) {
            while ((taker = takers.poll()) != null && taker.isDone()) {
                // a cancelled taker
            }
            if (taker == null) {
                if (requests.size() >= backlog) {
                    dropped.incrementAndGet();
                    r.drop();
                } else {
                    requests.add(r);
                }
                return;
            }
        }
        if (!taker.complete(r)) {
            onRequestAgain(r);
        }
    }

    /**
     * The next connect request, without blocking: completes at once with a queued one, else when one
     * arrives (on the device's event loop: do not block in its callbacks).
     *
     * @return fails with an {@link RdmaCmException} CLOSED once the listener is closed
     */
    public CompletableFuture<ConnectRequest> nextRequest() {
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(closedException());
            }
            ConnectRequest r = requests.poll();
            if (r != null) {
                return CompletableFuture.completedFuture(r);
            }
            CompletableFuture<ConnectRequest> f = new CompletableFuture<>();
            takers.add(f);
            return f;
        }
    }

    private RdmaCmException closedException() {
        return new RdmaCmException(RdmaCmException.Reason.CLOSED, this + " is closed", null);
    }

    /**
     * Takes the next connect request ({@code rdma_get_request}), waiting up to {@code timeout} of
     * real time.
     *
     * @return the request, or null if none arrived in time
     * @throws RdmaCmException CLOSED if the listener is closed
     * @throws InterruptedException if interrupted while waiting
     */
    public ConnectRequest getRequest(Duration timeout) throws RdmaCmException, InterruptedException {
        RdmaConnection.notNull(timeout, "timeout");
        CompletableFuture<ConnectRequest> f = nextRequest();
        try {
            return f.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            if (f.cancel(false)) {
                return null;
            }
            return f.getNow(null); // it completed meanwhile
        } catch (InterruptedException e) {
            if (!f.cancel(false) && !f.isCompletedExceptionally()) {
                requeue(f.getNow(null));
            }
            throw e;
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RdmaCmException cm ? cm : closedException();
        }
    }

    /** A request taken by a waiter that gave up: first in line again. */
    private void requeue(ConnectRequest r) {
        if (r != null) {
            synchronized (this) {
                requests.addFirst(r);
            }
        }
    }

    /**
     * Takes the next connect request, waiting as long as needed, and accepts it ({@code
     * rdma_get_request} + {@code rdma_accept}).
     *
     * @throws RdmaCmException CLOSED if the listener is closed; TIMEOUT if no request came within
     *     {@code params.timeout()} while the device's clock did not move (a virtual clock nobody
     *     drives; on a real clock it waits on); or as {@link
     *     ConnectRequest#accept}
     * @throws IllegalArgumentException naming a null or mismatched argument, as {@link
     *     ConnectRequest#accept}, before any request is taken
     * @throws InterruptedException if interrupted while waiting
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params) throws RdmaCmException, InterruptedException {
        return accept(pd, sendCq, recvCq, params, qp -> { });
    }

    /**
     * As {@link #accept(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams)},
     * with a hook that posts receives on the new QP before the client is answered (see {@link
     * ConnectRequest#accept(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams,
     * Consumer)}).
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params, Consumer<QueuePair> beforeAccept)
            throws RdmaCmException, InterruptedException {
        // bad arguments fail here, before a request is taken (and then lost)
        RdmaConnection.checkArgs(pd, sendCq, recvCq, params, beforeAccept, "beforeAccept");
        ConnectRequest r;
        io.rxe4j.verbs.spi.Scheduler clock = io.rxe4j.verbs.internal.VerbsAccess.get().gsi(device).scheduler();
        long slice = params.timeout().toNanos(); // how often it looks whether the device's clock moves
        do {
            long before = clock.nanoTime();
            r = getRequest(Duration.ofNanos(slice));
            long moved = clock.nanoTime() - before;
            if (r == null && moved < slice / 2) { // a virtual clock nobody drives: no REQ can come
                throw new RdmaCmException(RdmaCmException.Reason.TIMEOUT, "accept on port " + port + " of " + device
                        + ": no connect request within " + params.timeout() + ", and the device's clock moved only "
                        + TimeUnit.NANOSECONDS.toMillis(moved) + " ms meanwhile (virtual time? use acceptAsync or"
                        + " nextRequest and drive the clock)", null);
            }
        } while (r == null);
        return r.accept(pd, sendCq, recvCq, params, beforeAccept);
    }

    /**
     * Takes the next connect request when it comes and accepts it, without blocking: {@link
     * #nextRequest()} then {@link ConnectRequest#acceptAsync}.
     *
     * @throws IllegalArgumentException naming a null or mismatched argument, before any request is taken
     */
    public CompletableFuture<RdmaConnection> acceptAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, ConnectionParams params, Consumer<QueuePair> beforeAccept) {
        RdmaConnection.checkArgs(pd, sendCq, recvCq, params, beforeAccept, "beforeAccept");
        return nextRequest().thenCompose(r -> r.acceptAsync(pd, sendCq, recvCq, params, beforeAccept));
    }

    /** As {@link #acceptAsync(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams, Consumer)} without a hook. */
    public CompletableFuture<RdmaConnection> acceptAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, ConnectionParams params) {
        return acceptAsync(pd, sendCq, recvCq, params, qp -> { });
    }

    /** @return connect requests left unanswered because the backlog was full (their clients resend them) */
    public long droppedRequests() {
        return dropped.get();
    }

    /**
     * Stops listening (the CM answers further REQs for the port with REJ 8); requests not taken yet
     * are rejected (REJ 28), and waiting takers fail with CLOSED. Established connections are not
     * affected. Idempotent.
     */
    @Override
    public void close() {
        java.util.List<ConnectRequest> left;
        java.util.List<CompletableFuture<ConnectRequest>> waiting;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            left = new java.util.ArrayList<>(requests);
            requests.clear();
            waiting = new java.util.ArrayList<>(takers);
            takers.clear();
        }
        cm.unlisten(port);
        for (ConnectRequest r : left) {
            try {
                r.reject(new byte[0]);
            } catch (RuntimeException e) {
                // taken and answered meanwhile, or the device's loop is gone (its CM rejects what it holds)
            }
        }
        for (CompletableFuture<ConnectRequest> f : waiting) {
            f.completeExceptionally(closedException());
        }
    }

    @Override
    public String toString() {
        return "RdmaListener{port " + port + " of " + device + (closed ? ", closed" : "") + '}';
    }
}
