package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server side of the connection manager ({@code rdma_listen} and {@code rdma_get_request}):
 * a TCP listener whose clients {@linkplain RdmaConnection#connect connect} RC QPs. Thread-safe.
 *
 * <pre>{@code
 * try (RdmaListener listener = RdmaListener.listen(new InetSocketAddress("10.0.0.1", 7471))) {
 *     RdmaConnection conn = listener.accept(pd, cq, cq, ConnectionParams.defaults());
 *     ...
 * }
 * }</pre>
 *
 * <p>Each TCP connection is read on its own virtual thread until its connect request (REQ)
 * arrives; a client that does not send a whole request within the request timeout (one deadline,
 * however slowly it trickles bytes), or sends something else, is dropped and counted ({@link
 * #droppedConnections()}). At most {@code 2 × backlog} requests are read at once (more connections
 * are dropped at once) and at most {@code backlog} wait to be taken; further clients are rejected
 * (an empty REJ) rather than queued without bound.
 */
public final class RdmaListener implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaListener.class);
    /** Requests waiting to be taken, by default. */
    public static final int DEFAULT_BACKLOG = 64;

    private final ServerSocket server;
    private final BlockingQueue<ConnectRequest> requests;
    private final Duration requestTimeout;
    private final AtomicLong dropped = new AtomicLong();
    /** Connection requests being read at once, at most: {@code 2 × backlog}. */
    private final java.util.concurrent.Semaphore handshakes;
    private final int maxHandshakes;
    private volatile boolean closed;

    private RdmaListener(ServerSocket server, int backlog, Duration requestTimeout) {
        this.server = server;
        this.requests = new ArrayBlockingQueue<>(backlog);
        this.requestTimeout = requestTimeout;
        this.maxHandshakes = 2 * backlog;
        this.handshakes = new java.util.concurrent.Semaphore(maxHandshakes);
    }

    /**
     * Listens on {@code address} with a backlog of {@value #DEFAULT_BACKLOG} and a 10 s request timeout.
     *
     * @param address the TCP address to bind; port 0 picks a free port ({@link #localAddress()})
     * @throws IOException if the address cannot be bound (in use, not local)
     */
    public static RdmaListener listen(InetSocketAddress address) throws IOException {
        return listen(address, DEFAULT_BACKLOG, Duration.ofSeconds(10));
    }

    /**
     * Listens on {@code address}.
     *
     * @param backlog connect requests that may wait to be taken, 1..4096
     * @param requestTimeout how long a new TCP connection may take to send its connect request
     * @throws IOException if the address cannot be bound
     * @throws IllegalArgumentException for a backlog out of range or a non-positive timeout
     */
    public static RdmaListener listen(InetSocketAddress address, int backlog, Duration requestTimeout)
            throws IOException {
        if (backlog < 1 || backlog > 4096) {
            throw new IllegalArgumentException("backlog must be 1..4096, got " + backlog);
        }
        if (requestTimeout == null || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("request timeout must be positive, got " + requestTimeout);
        }
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(address, backlog);
        RdmaListener l = new RdmaListener(ss, backlog, requestTimeout);
        Thread.ofVirtual().name("rxe4j-cm-listen-" + ss.getLocalPort()).start(l::acceptLoop);
        return l;
    }

    /** @return the bound TCP address (with the real port when 0 was asked for) */
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.getLocalSocketAddress();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                if (server.isClosed()) { // nothing more will come: waiters get CLOSED
                    closed = true;
                    LOG.warn("connection manager listener on {} failed and stops: {}", localAddress(), e.toString());
                    return;
                }
                // transient (e.g. too many open files): back off and go on
                LOG.warn("connection manager listener on {}: accept failed ({}); retrying", localAddress(), e.toString());
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
                continue;
            }
            if (!handshakes.tryAcquire()) { // bounded: a flood of connections cannot pile up threads and sockets
                drop(s, "too many connection requests in progress (" + maxHandshakes + ")", dropped::incrementAndGet);
                continue;
            }
            Thread.ofVirtual().name("rxe4j-cm-req-" + s.getRemoteSocketAddress()).start(() -> {
                try {
                    readRequest(s);
                } finally {
                    handshakes.release();
                }
            });
        }
    }

    private void readRequest(Socket s) {
        // one deadline for the whole request, whatever the peer trickles: the watchdog closes the socket
        // the drop is counted before the socket closes, whoever closes it, so that a client that sees
        // the connection end also sees it counted
        java.util.concurrent.atomic.AtomicBoolean counted = new java.util.concurrent.atomic.AtomicBoolean();
        Runnable countDrop = () -> {
            if (counted.compareAndSet(false, true)) {
                dropped.incrementAndGet();
            }
        };
        RdmaConnection.Watchdog dog = RdmaConnection.watchdog(s, System.nanoTime()
                + requestTimeout.toNanos(), countDrop);
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis()));
            DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(s.getOutputStream()));
            CmMessage m = CmMessage.read(in);
            if (m.type() != CmMessage.Type.REQ) {
                throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "expected REQ, got " + m.type(), null);
            }
            if (!dog.cancel(false)) {
                throw new SocketTimeoutException("request deadline passed");
            }
            s.setSoTimeout(0);
            ConnectRequest r = new ConnectRequest(s, in, out, m);
            if (closed || !requests.offer(r)) {
                dropped.incrementAndGet();
                LOG.warn("connection manager on {}: {} rejected: {}", localAddress(), r,
                        closed ? "the listener is closed" : "backlog of " + (requests.size()) + " requests full");
                r.reject(new byte[0]);
            } else if (closed && requests.remove(r)) { // close() ran between the check and the offer
                r.reject(new byte[0]);
            }
        } catch (SocketTimeoutException e) {
            dog.cancel(false);
            drop(s, "sent no connect request within " + requestTimeout, countDrop);
        } catch (EOFException e) {
            dog.cancel(false);
            drop(s, "closed before sending a connect request", countDrop);
        } catch (IOException e) {
            boolean timedOut = dog.fired();
            dog.cancel(false);
            drop(s, timedOut ? "sent no complete connect request within " + requestTimeout : e.getMessage(), countDrop);
        }
    }

    private void drop(Socket s, String why, Runnable countDrop) {
        countDrop.run();
        LOG.warn("connection manager on {}: dropped the TCP connection from {}: {}", localAddress(),
                s.getRemoteSocketAddress(), why);
        RdmaConnection.closeQuietly(s);
    }

    /**
     * Takes the next connect request ({@code rdma_get_request}), waiting up to {@code timeout}.
     *
     * @return the request, or null if none arrived in time
     * @throws RdmaCmException CLOSED if the listener is closed
     * @throws InterruptedException if interrupted while waiting
     */
    public ConnectRequest getRequest(Duration timeout) throws RdmaCmException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (closed) {
                throw new RdmaCmException(RdmaCmException.Reason.CLOSED, "listener on " + localAddress()
                        + " is closed", null);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            // wake up now and then to notice close()
            ConnectRequest r = requests.poll(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)), TimeUnit.NANOSECONDS);
            if (r != null) {
                return r;
            }
        }
    }

    /**
     * Takes the next connect request, waiting as long as needed, and accepts it ({@code
     * rdma_get_request} + {@code rdma_accept}).
     *
     * @throws RdmaCmException CLOSED if the listener is closed, or as {@link ConnectRequest#accept}
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
     * java.util.function.Consumer)}).
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params, java.util.function.Consumer<QueuePair> beforeAccept)
            throws RdmaCmException, InterruptedException {
        // bad arguments fail here, before a request is taken (and then lost)
        RdmaConnection.checkArgs(pd, sendCq, recvCq, params, beforeAccept, "beforeAccept");
        ConnectRequest r;
        do {
            r = getRequest(Duration.ofDays(1));
        } while (r == null);
        return r.accept(pd, sendCq, recvCq, params, beforeAccept);
    }

    /** @return TCP connections dropped: no or a bad connect request, or a full backlog */
    public long droppedConnections() {
        return dropped.get();
    }

    /** Stops listening; requests not taken yet are rejected. Established connections are not affected. Idempotent. */
    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            LOG.debug("closing listener", e);
        }
        ConnectRequest r;
        while ((r = requests.poll()) != null) {
            r.reject(new byte[0]);
        }
    }

    @Override
    public String toString() {
        return "RdmaListener{" + localAddress() + (closed ? ", closed" : "") + '}';
    }
}
