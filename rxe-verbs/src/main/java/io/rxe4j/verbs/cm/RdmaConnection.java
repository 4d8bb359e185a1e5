package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.internal.VerbsAccess;

import io.rxe4j.verbs.AsyncEvent;
import io.rxe4j.verbs.AsyncEventType;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.ib.IbCm;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A reliable connection made by the connection manager: an RC {@link QueuePair} in RTS towards one
 * peer ({@code rdma_cm_id} of librdmacm, {@code RdmaEndpoint} of DiSNI). Thread-safe.
 *
 * <p>The connection manager speaks the IB CM on each device's GSI QP (QP1, {@code docs/ib-cm.md}):
 * the client sends a REQ to rdma_cm's TCP-space port the server {@linkplain RdmaListener#listen
 * listens} on, the server answers with a REP after moving its QP to RTS, the client moves its QP to
 * RTS and confirms with an RTU. A REJ refuses; DREQ and DREP end the connection. So rxe4j connects
 * to librdmacm applications (rping, ucmatose, rdma_server…) on kernel {@code rdma_rxe} or a RoCE NIC,
 * and they to it, and it runs on every transport, the in-JVM fabric and virtual time included. The
 * private data rdma_cm leaves its users travels along: 56 bytes with the request, 196 with the
 * accept or reject. Between two rxe4j devices, the REQ and REP also carry each device's UDP port,
 * the path MTU and the rxe4j extensions both offer, in the IB CM's ECE fields.
 *
 * <p>Addresses: the peer is named as in rdma_cm by an IP address and a port. The IP is the peer
 * device's, and the port is the rdma_cm port its listener uses. The peer device is at UDP port 4791
 * (RoCEv2: kernel {@code rdma_rxe}, a RoCE NIC, an rxe4j device bound to 4791), unless an explicit
 * device address is given ({@link #connectAsync(ProtectionDomain, CompletionQueue, CompletionQueue,
 * InetSocketAddress, int, ConnectionParams, Consumer)}) for an rxe4j device bound to another port.
 *
 * <p>Each blocking method has a non-blocking form returning a {@link CompletableFuture}
 * ({@code connectAsync}, {@link RdmaListener#acceptAsync}, {@link #disconnectAsync}); on a device on
 * virtual time only those work, since the clock moves only while the test drives it.
 *
 * <p>{@link #disconnect()} (or {@link #close()}) moves this side's QP to ERR and sends a DREQ; the
 * peer's QP moves to ERR too ({@code rdma_disconnect}); outstanding work requests on both sides
 * complete with WR_FLUSH_ERR. Both devices raise {@link AsyncEventType#DISCONNECTED}. A peer whose
 * device closes sends its DREQ too. A peer that vanishes without one (its process killed, its host
 * down) is noticed, as with rdma_cm, by the QP: the next work request fails with RETRY_EXC_ERR after
 * the retries of {@link ConnectionParams#retryCnt()}, and the QP is in ERR; the connection itself
 * stays up until it is disconnected or closed.
 */
public final class RdmaConnection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaConnection.class);
    /** The RoCEv2 UDP port, where the device behind a peer's IP address is unless told otherwise. */
    public static final int ROCE_PORT = IbCm.ROCE_PORT;
    static final String LOCAL_DISCONNECT = "this side disconnected";

    private final RdmaDevice device;
    private final QueuePair qp;
    private final IbCm.Connection cm;
    private final InetSocketAddress remoteUdp;
    private final int remoteQpn;
    private final Mtu pathMtu;
    private final byte[] remotePrivateData;
    private final AtomicBoolean connected = new AtomicBoolean(true);
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private volatile boolean localDisconnect;
    private volatile String endReason;

    private RdmaConnection(RdmaDevice device, QueuePair qp, IbCm.Connection cm) {
        this.device = device;
        this.qp = qp;
        this.cm = cm;
        this.remoteUdp = cm.peer();
        this.remoteQpn = cm.remoteQpn();
        this.pathMtu = cm.pathMtu();
        this.remotePrivateData = cm.remotePrivateData();
    }

    /** The QP the connection manager creates: RC, with the params' caps, sq_sig_all and SRQ. */
    static QpInitAttr initAttr(CompletionQueue sendCq, CompletionQueue recvCq, ConnectionParams params) {
        QpInitAttr a = new QpInitAttr(sendCq, recvCq, params.caps(), QpType.RC, params.sqSigAll());
        return params.srq() != null ? a.withSrq(params.srq()) : a;
    }

    /** The IB CM options of {@code params}. */
    static IbCm.Options options(ConnectionParams p) {
        IbCm.Options d = IbCm.Options.defaults();
        return new IbCm.Options(p.responderResources(), p.initiatorDepth(), p.retryCnt(), p.rnrRetry(),
                p.minRnrTimer(), p.pathMtu(), d.cmResponseTimeout(), d.maxCmRetries(), p.ackTimeout(),
                p.timeout().toNanos());
    }

    /** The peer device behind {@code server}'s IP: at the RoCEv2 port. */
    private static InetSocketAddress roceDevice(InetSocketAddress server) {
        notNull(server, "server");
        if (server.isUnresolved()) {
            return server; // reported as UNREACHABLE by connectAsync
        }
        return new InetSocketAddress(server.getAddress(), ROCE_PORT);
    }

    /**
     * Connects to a server's {@link RdmaListener} with the default {@link ConnectionParams}, one CQ
     * for sends and receives.
     *
     * @see #connect(ProtectionDomain, CompletionQueue, CompletionQueue, InetSocketAddress, ConnectionParams)
     */
    public static RdmaConnection connect(ProtectionDomain pd, CompletionQueue cq, InetSocketAddress server)
            throws RdmaCmException {
        notNull(cq, "cq");
        return connect(pd, cq, cq, server, ConnectionParams.defaults());
    }

    /**
     * Connects to a server's {@link RdmaListener} ({@code rdma_connect}) and waits: as {@link
     * #connectAsync(ProtectionDomain, CompletionQueue, CompletionQueue, InetSocketAddress, int,
     * ConnectionParams, Consumer)} with the device at {@code server}'s IP and UDP port 4791, and
     * rdma_cm port {@code server.getPort()}.
     *
     * @param server the server's IP address and rdma_cm port
     */
    public static RdmaConnection connect(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            InetSocketAddress server, ConnectionParams params) throws RdmaCmException {
        return connect(pd, sendCq, recvCq, server, params, qp -> { });
    }

    /**
     * As {@link #connect(ProtectionDomain, CompletionQueue, CompletionQueue, InetSocketAddress,
     * ConnectionParams)}, calling {@code beforeConnect} with the new QP in INIT before the request is
     * sent: post the receive work requests the peer's first SENDs need there (as an application of
     * librdmacm posts receives between {@code rdma_create_qp} and {@code rdma_connect}).
     */
    public static RdmaConnection connect(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            InetSocketAddress server, ConnectionParams params, Consumer<QueuePair> beforeConnect)
            throws RdmaCmException {
        notNull(server, "server");
        InetSocketAddress peerDevice = roceDevice(server);
        return await(connectAsync(pd, sendCq, recvCq, peerDevice, server.getPort(), params, beforeConnect, true),
                pd.device(), params, "connect to port " + server.getPort() + " at " + peerDevice);
    }

    /**
     * As {@link #connectAsync(ProtectionDomain, CompletionQueue, CompletionQueue, InetSocketAddress,
     * int, ConnectionParams, Consumer)}, waiting for the result.
     *
     * @throws RdmaCmException as the future's; TIMEOUT also when the device's clock does not move
     *     (virtual time: use {@code connectAsync} and drive the clock)
     */
    public static RdmaConnection connect(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            InetSocketAddress peerDevice, int port, ConnectionParams params, Consumer<QueuePair> beforeConnect)
            throws RdmaCmException {
        return await(connectAsync(pd, sendCq, recvCq, peerDevice, port, params, beforeConnect), pd.device(), params,
                "connect to port " + port + " at " + peerDevice);
    }

    /**
     * Connects to a server's {@link RdmaListener} without blocking: as {@link
     * #connectAsync(ProtectionDomain, CompletionQueue, CompletionQueue, InetSocketAddress, int,
     * ConnectionParams, Consumer)} with the device at {@code server}'s IP and UDP port 4791.
     */
    public static CompletableFuture<RdmaConnection> connectAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, InetSocketAddress server, ConnectionParams params) {
        notNull(server, "server");
        return connectAsync(pd, sendCq, recvCq, roceDevice(server), server.getPort(), params, qp -> { }, true);
    }

    /**
     * Connects to the listener on rdma_cm port {@code port} of the device at {@code peerDevice}
     * ({@code rdma_resolve_addr}, {@code rdma_resolve_route}, {@code rdma_connect}): creates an RC QP
     * in {@code pd} with {@code params}, moves it to INIT, calls {@code beforeConnect}, sends the REQ
     * and completes, once the REP has come and the QP is in RTS, with the connection (the RTU is on
     * its way). The server's QP is in RTS too (it moved there before its REP, as librdmacm's {@code
     * rdma_accept} does), so work may be posted at once on either side. The future completes on the
     * device's event loop: do not block in its callbacks. Cancelling it gives up the request (the
     * server is told with a REJ, as when librdmacm destroys a connecting id) and destroys the QP.
     *
     * <p>Every argument is checked before any I/O; the REQ's values are those of {@code
     * cm-facts.md} §2.1: a random starting PSN, {@code params}' depths, retry counts, path MTU (the
     * smaller of both sides' wins) and 56 bytes of private data after rdma_cm's 36-byte header.
     *
     * @param peerDevice the peer device's IP address and UDP port: port 4791 for kernel rdma_rxe, a
     *     RoCE NIC or an rxe4j device bound to 4791; for an rxe4j device bound elsewhere, its {@link
     *     RdmaDevice#address()}
     * @param port the rdma_cm port (TCP port space) the peer listens on, 1..65535
     * @return completes exceptionally with an {@link RdmaCmException}: REFUSED (nothing listens on
     *     {@code port}: REJ 8), REJECTED (the server rejected it, with its private data; or REJ 3, 10
     *     …), TIMEOUT (no answer within {@link ConnectionParams#timeout()}, or the CM's retries ran out:
     *     REJ 4), UNREACHABLE (an unresolved address, or one of another IP family than the device's),
     *     PROTOCOL (the QP could not be moved to the REP's values; the server is sent REJ 28) or CLOSED
     *     (the device closed); the QP is destroyed then
     * @throws IllegalArgumentException naming the argument: a null {@code pd}, {@code sendCq}, {@code
     *     recvCq}, {@code peerDevice}, {@code params} or {@code beforeConnect}, a port out of range,
     *     more than {@value ConnectionParams#MAX_CONNECT_PRIVATE_DATA} bytes of private data, or CQs of
     *     another device than {@code pd}'s
     * @throws IllegalStateException if {@code pd}, a CQ or the device is closed
     */
    public static CompletableFuture<RdmaConnection> connectAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, InetSocketAddress peerDevice, int port, ConnectionParams params,
            Consumer<QueuePair> beforeConnect) {
        return connectAsync(pd, sendCq, recvCq, peerDevice, port, params, beforeConnect, false);
    }

    /**
     * @param portAssumed the caller named the server by IP and rdma_cm port only, and the device's
     *     UDP port 4791 was assumed: a connect nothing ever answered gets a hint naming the other form
     */
    private static CompletableFuture<RdmaConnection> connectAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, InetSocketAddress peerDevice, int port, ConnectionParams params,
            Consumer<QueuePair> beforeConnect, boolean portAssumed) {
        checkArgs(pd, sendCq, recvCq, params, beforeConnect, "beforeConnect");
        notNull(peerDevice, "peerDevice");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, got " + port);
        }
        if (params.privateDataUnsafe().length > ConnectionParams.MAX_CONNECT_PRIVATE_DATA) {
            throw new IllegalArgumentException("a connect request carries at most "
                    + ConnectionParams.MAX_CONNECT_PRIVATE_DATA + " bytes of private data (params.privateData), got "
                    + params.privateDataUnsafe().length);
        }
        if (peerDevice.isUnresolved()) {
            return CompletableFuture.failedFuture(new RdmaCmException(RdmaCmException.Reason.UNREACHABLE,
                    "cannot resolve " + peerDevice.getHostString(), null));
        }
        boolean v4 = pd.device().address().getAddress() instanceof java.net.Inet4Address;
        if (v4 != (peerDevice.getAddress() instanceof java.net.Inet4Address)) {
            return CompletableFuture.failedFuture(new RdmaCmException(RdmaCmException.Reason.UNREACHABLE,
                    peerDevice + " is not of the IP family of the device at " + pd.device().address(), null));
        }
        QueuePair qp = pd.createQp(initAttr(sendCq, recvCq, params));
        CompletableFuture<IbCm.Connection> cmf;
        try {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(params.accessFlags()));
            beforeConnect.accept(qp);
            cmf = IbCm.of(pd.device()).connect(qp, peerDevice, port, options(params), params.privateDataUnsafe());
        } catch (RuntimeException e) {
            qp.close();
            throw e;
        }
        String who = "the server on port " + port + " at " + peerDevice;
        CompletableFuture<RdmaConnection> f = new CompletableFuture<>();
        cmf.whenComplete((c, t) -> {
            if (t != null) {
                qp.close();
                boolean silent = portAssumed && !IbCm.of(pd.device()).heardFrom(peerDevice);
                f.completeExceptionally(translate(t, who, params.timeout(), !silent ? ""
                        : "; nothing has ever answered at UDP " + ROCE_PORT + " of "
                                + peerDevice.getAddress().getHostAddress() + ": if the server's device is on another"
                                + " UDP port, name its address: connect(pd, sendCq, recvCq, serverDevice.address(),"
                                + " port, params, beforeConnect)"));
            } else if (!f.complete(established(pd.device(), qp, c))) {
                // our user cancelled between the REP and here: the connection goes at once
                forget(pd.device(), qp, c);
            }
        });
        f.whenComplete((c, t) -> {
            if (f.isCancelled()) {
                cmf.cancel(false); // the CM says goodbye to the peer; then the QP goes
                qp.close();
            }
        });
        return f;
    }

    /** A connection that came up after its future was cancelled: disconnected and destroyed. */
    private static void forget(RdmaDevice device, QueuePair qp, IbCm.Connection c) {
        c.disconnect();
        qp.close();
    }

    /** The connection, registered with its device and announced (ESTABLISHED). On the loop. */
    static RdmaConnection established(RdmaDevice device, QueuePair qp, IbCm.Connection c) {
        RdmaConnection conn = new RdmaConnection(device, qp, c);
        VerbsAccess.get().addConnection(device, conn);
        conn.start();
        return conn;
    }

    /** The RdmaCmException for a failed exchange with {@code who}. */
    static RdmaCmException translate(Throwable t, String who, Duration timeout) {
        return translate(t, who, timeout, "");
    }

    /**
     * @param localTimeoutHint appended to the message when this side gave up without an answer
     *     (what to check); "" for none
     */
    static RdmaCmException translate(Throwable t, String who, Duration timeout, String localTimeoutHint) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof RdmaCmException e) {
            return e;
        }
        if (t instanceof IbCm.RejectedException r) {
            return switch (r.reason()) {
                case IbCm.REJ_INVALID_SERVICE_ID -> new RdmaCmException(RdmaCmException.Reason.REFUSED,
                        "nothing listens: " + who + " rejected the request with REJ 8 (invalid service ID)", r);
                case IbCm.REJ_TIMEOUT -> r.fromPeer()
                        ? new RdmaCmException(RdmaCmException.Reason.TIMEOUT, who + " gave up the exchange (REJ 4,"
                                + " timeout: " + r.getMessage() + ")", r)
                        : new RdmaCmException(RdmaCmException.Reason.TIMEOUT, who + " did not complete the exchange"
                                + " within " + timeout + " (" + r.getMessage() + ")" + localTimeoutHint, r);
                case IbCm.REJ_CONSUMER_DEFINED -> new RdmaCmException(RdmaCmException.Reason.REJECTED, who
                        + " rejected the connection", r, r.privateData());
                default -> new RdmaCmException(RdmaCmException.Reason.REJECTED, who + " rejected the connection"
                        + " with REJ " + r.reason() + (r.reason() == IbCm.REJ_STALE_CONN ? " (stale connection)"
                                : r.reason() == IbCm.REJ_NO_RESOURCES ? " (no resources)" : ""), r, r.privateData());
            };
        }
        if (t instanceof IbCm.ClosedException c) {
            return new RdmaCmException(RdmaCmException.Reason.CLOSED, c.getMessage(), c);
        }
        if (t instanceof java.util.concurrent.CancellationException c) {
            return new RdmaCmException(RdmaCmException.Reason.CLOSED, "cancelled", c);
        }
        return new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "the exchange with " + who + " failed: " + t, t);
    }

    /**
     * Waits for {@code f}: up to the params' timeout and a second more on the real clock (the CM's
     * own deadline ends it before), and names a clock that did not move (virtual time).
     */
    static RdmaConnection await(CompletableFuture<RdmaConnection> f, RdmaDevice device, ConnectionParams params,
            String what) throws RdmaCmException {
        long clock = VerbsAccess.get().gsi(device).scheduler().nanoTime();
        try {
            return f.get(params.timeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            f.cancel(false);
            Thread.currentThread().interrupt();
            throw new RdmaCmException(RdmaCmException.Reason.CLOSED, what + " interrupted", e);
        } catch (ExecutionException e) {
            throw translate(e, what, params.timeout());
        } catch (TimeoutException e) {
            f.cancel(false);
            long moved = VerbsAccess.get().gsi(device).scheduler().nanoTime() - clock;
            throw new RdmaCmException(RdmaCmException.Reason.TIMEOUT, what + ": no result within " + params.timeout()
                    + (moved < params.timeout().toNanos() / 2 ? "; the device's clock moved only "
                            + TimeUnit.NANOSECONDS.toMillis(moved) + " ms meanwhile (virtual time? use the Async"
                            + " form and drive the clock)" : ""), e);
        }
    }

    static <T> T notNull(T v, String name) {
        if (v == null) {
            throw new IllegalArgumentException(name + " is null");
        }
        return v;
    }

    /**
     * The arguments of a connect or an accept, checked before any I/O and before a QP exists:
     * none null, the CQs of {@code pd}'s device, all open.
     */
    static void checkArgs(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params, Object hook, String hookName) {
        notNull(pd, "pd");
        notNull(sendCq, "sendCq");
        notNull(recvCq, "recvCq");
        notNull(params, "params");
        notNull(hook, hookName);
        VerbsAccess access = VerbsAccess.get();
        if (access.device(sendCq) != pd.device()) {
            throw new IllegalArgumentException("sendCq " + sendCq + " belongs to " + access.device(sendCq)
                    + ", not to pd's " + pd.device());
        }
        if (access.device(recvCq) != pd.device()) {
            throw new IllegalArgumentException("recvCq " + recvCq + " belongs to " + access.device(recvCq)
                    + ", not to pd's " + pd.device());
        }
        access.checkOpen(pd);
        access.checkOpen(sendCq);
        access.checkOpen(recvCq);
    }

    private void start() {
        // ESTABLISHED first: a DREQ that came with the RTU must not raise DISCONNECTED before it
        VerbsAccess.get().raise(device, new AsyncEvent(AsyncEventType.ESTABLISHED, qp, null, "QP 0x"
                + Integer.toHexString(qp.qpNum()) + " connected to QP 0x" + Integer.toHexString(remoteQpn) + " at "
                + remoteUdp + ", path MTU " + pathMtu.bytes()));
        cm.disconnected().whenComplete((v, t) -> {
            if (connected.compareAndSet(true, false)) {
                end(localDisconnect ? LOCAL_DISCONNECT : peerReason());
            } else {
                end(endReason != null ? endReason : LOCAL_DISCONNECT);
            }
        });
    }

    /** Why the connection ended when this side did not end it: the peer's DREQ (or REJ), or the CM closing. */
    private String peerReason() {
        return "the peer at " + remoteUdp + " disconnected";
    }

    /** The event raised, the connection forgotten by its device; once. Never throws. */
    private void end(String reason) {
        if (ended.isDone()) {
            return;
        }
        endReason = reason;
        try {
            VerbsAccess.get().removeConnection(device, this);
            try {
                VerbsAccess.get().raise(device, new AsyncEvent(AsyncEventType.DISCONNECTED, qp, null, "QP 0x"
                        + Integer.toHexString(qp.qpNum()) + ": " + reason));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                LOG.debug("{}: the device is closed, no DISCONNECTED event", this, e);
            }
        } catch (RuntimeException e) {
            LOG.warn("{}: ending the connection failed", this, e);
        } finally {
            ended.complete(null);
        }
    }

    /**
     * Disconnects ({@code rdma_disconnect}) without waiting: moves the QP to ERR (outstanding work
     * requests complete with WR_FLUSH_ERR; {@link QueuePair#errorReason()} says "this side
     * disconnected") and sends a DREQ, resent until the peer's DREP comes or the CM's retries end; the
     * peer's QP moves to ERR. A QP the application has reset or destroyed is left as it is.
     * Idempotent; the QP stays allocated until {@link #close()}.
     *
     * @return completes when the peer confirmed (DREP) or the retries ended; then DISCONNECTED is raised
     */
    public CompletableFuture<Void> disconnectAsync() {
        if (connected.compareAndSet(true, false)) {
            localDisconnect = true;
            endReason = LOCAL_DISCONNECT;
            try {
                VerbsAccess.get().disconnectToError(qp, LOCAL_DISCONNECT);
            } catch (RuntimeException e) {
                LOG.warn("{}: moving the QP to ERR failed", this, e);
            }
            cm.disconnect();
        }
        return ended;
    }

    /**
     * Disconnects as {@link #disconnectAsync()} and returns at once, the DREQ on its way (as {@code
     * rdma_disconnect}, which does not wait for the DREP either). Idempotent.
     */
    public void disconnect() {
        disconnectAsync();
    }

    /**
     * Waits until the connection ends (either side disconnects, or the device closes).
     *
     * @return whether it ended within {@code timeout}
     * @throws InterruptedException if interrupted while waiting
     */
    public boolean awaitDisconnect(Duration timeout) throws InterruptedException {
        try {
            ended.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true;
        }
    }

    /** @return completes when the connection ends (either side disconnects, or the device closes) */
    public CompletableFuture<Void> disconnected() {
        return ended.thenApply(v -> null);
    }

    /** @return whether the connection is up (neither side has disconnected) */
    public boolean isConnected() {
        return connected.get();
    }

    /** @return why the connection ended, or null while it is up */
    public String disconnectReason() {
        return ended.isDone() || !connected.get() ? endReason : null;
    }

    /** @return the connected QP (owned by this connection: {@link #close()} destroys it) */
    public QueuePair qp() {
        return qp;
    }

    /**
     * @return the private data the peer sent with its connect request or accept (a copy): always
     *     {@value ConnectionParams#MAX_CONNECT_PRIVATE_DATA} bytes from a client and {@value
     *     ConnectionParams#MAX_ACCEPT_PRIVATE_DATA} from a server, zero-padded, as the IB CM's
     *     fixed-size fields arrive (librdmacm reports the whole field too)
     */
    public byte[] remotePrivateData() {
        return remotePrivateData.clone();
    }

    /** @return the peer device's UDP address (the QP's address vector) */
    public InetSocketAddress remoteAddress() {
        return remoteUdp;
    }

    /** @return the peer's QP number */
    public int remoteQpNum() {
        return remoteQpn;
    }

    /** @return the path MTU the two sides agreed on */
    public Mtu pathMtu() {
        return pathMtu;
    }

    /**
     * Disconnects (if connected) and destroys the QP. Idempotent; safe while the peer disconnects
     * at the same time.
     */
    @Override
    public void close() {
        disconnect();
        qp.close();
        VerbsAccess.get().removeConnection(device, this);
    }

    @Override
    public String toString() {
        return "RdmaConnection{QP 0x" + Integer.toHexString(qp.qpNum()) + " -> QP 0x" + Integer.toHexString(remoteQpn)
                + " at " + remoteUdp + (connected.get() ? "" : ", disconnected") + '}';
    }
}
