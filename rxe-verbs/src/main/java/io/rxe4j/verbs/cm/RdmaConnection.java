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

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A reliable connection made by the connection manager: an RC {@link QueuePair} in RTS towards one
 * peer, and the TCP connection the two sides used to set it up, kept open to carry the
 * disconnect ({@code rdma_cm_id} of librdmacm, {@code RdmaEndpoint} of DiSNI). Thread-safe.
 *
 * <p>A client connects with {@link #connect}; a server {@linkplain RdmaListener#listen listens},
 * then {@linkplain RdmaListener#accept accepts}. The two sides exchange, over TCP (rxe4j's own
 * protocol, in the roles of the IB CM's REQ, REP and RTU; see {@code docs/verbs.md}): QPN, a random
 * initial PSN, the largest path MTU each accepts (the smaller wins), the UDP address of each
 * device, their READ/atomic depths, and up to 56 bytes (connect) or 196 bytes (accept) of private
 * data, for example the rkey, address and length of a buffer. The QP is created with {@link
 * ConnectionParams}, whose defaults are safe between freshly started JVMs.
 *
 * <p>{@link #disconnect()} (or {@link #close()}) moves this side's QP to ERR, tells the peer, and
 * the peer's QP moves to ERR too ({@code rdma_disconnect}); outstanding work requests on both
 * sides complete with WR_FLUSH_ERR. Both devices raise {@link AsyncEventType#DISCONNECTED}. If the
 * peer's process dies, its TCP connection closes and this side disconnects the same way; if its
 * host crashes or the network partitions, TCP keepalive (probes after 30 s idle, every 10 s, three
 * unanswered) ends the connection after about a minute.
 */
public final class RdmaConnection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaConnection.class);
    /** How long {@link #disconnect()} waits for the peer to confirm (DREP). */
    private static final long DREP_WAIT_MILLIS = 1000;
    /** The reason of a disconnect asked for on this side. */
    private static final String LOCAL_DISCONNECT = "this side disconnected";

    private final RdmaDevice device;
    private final QueuePair qp;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final InetSocketAddress remoteUdp;
    private final int remoteQpn;
    private final Mtu pathMtu;
    private final byte[] remotePrivateData;
    private final AtomicBoolean connected = new AtomicBoolean(true);
    private final CountDownLatch drep = new CountDownLatch(1);
    private final CountDownLatch ended = new CountDownLatch(1);
    private volatile String endReason;

    private RdmaConnection(RdmaDevice device, QueuePair qp, Socket socket, DataInputStream in, DataOutputStream out,
            CmMessage peer, Mtu pathMtu) {
        this.device = device;
        this.qp = qp;
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.remoteUdp = peer.udp();
        this.remoteQpn = peer.qpn();
        this.pathMtu = pathMtu;
        this.remotePrivateData = peer.privateData();
    }

    /** The QP the connection manager creates: RC, with the params' caps, sq_sig_all and SRQ. */
    private static QpInitAttr initAttr(CompletionQueue sendCq, CompletionQueue recvCq, ConnectionParams params) {
        QpInitAttr a = new QpInitAttr(sendCq, recvCq, params.caps(), QpType.RC, params.sqSigAll());
        return params.srq() != null ? a.withSrq(params.srq()) : a;
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
     * Connects to a server's {@link RdmaListener} ({@code rdma_connect}): creates an RC QP in
     * {@code pd} with {@code params}, exchanges the connection data over TCP and returns with the
     * QP in RTS. The server's QP is in RTS too (it moved there before its REP, as librdmacm's
     * {@code rdma_accept} does), so work may be posted at once on either side.
     *
     * <p>Every argument is checked before any network I/O.
     *
     * @param server the listener's TCP address
     * @throws RdmaCmException REFUSED (nothing listens), UNREACHABLE (also for an unresolved
     *     {@code server}), TIMEOUT (no answer within {@link ConnectionParams#timeout()}), REJECTED
     *     (with the server's private data) or PROTOCOL; the QP is destroyed then
     * @throws IllegalArgumentException naming the argument: a null {@code pd}, {@code sendCq},
     *     {@code recvCq}, {@code server} or {@code params}, more than {@value
     *     ConnectionParams#MAX_CONNECT_PRIVATE_DATA} bytes of private data, or CQs of another
     *     device than {@code pd}'s
     * @throws IllegalStateException if {@code pd}, a CQ or the device is closed
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
            InetSocketAddress server, ConnectionParams params, java.util.function.Consumer<QueuePair> beforeConnect)
            throws RdmaCmException {
        checkArgs(pd, sendCq, recvCq, params, beforeConnect, "beforeConnect");
        notNull(server, "server");
        if (params.privateDataUnsafe().length > ConnectionParams.MAX_CONNECT_PRIVATE_DATA) {
            throw new IllegalArgumentException("a connect request carries at most "
                    + ConnectionParams.MAX_CONNECT_PRIVATE_DATA + " bytes of private data (params.privateData), got "
                    + params.privateDataUnsafe().length);
        }
        long deadline = System.nanoTime() + params.timeout().toNanos();
        Socket s = new Socket();
        try {
            s.connect(server, millisLeft(deadline, server));
        } catch (ConnectException e) {
            closeQuietly(s);
            throw new RdmaCmException(RdmaCmException.Reason.REFUSED, "nothing listens at " + server, e);
        } catch (SocketTimeoutException e) {
            closeQuietly(s);
            throw new RdmaCmException(RdmaCmException.Reason.TIMEOUT, "no TCP connection to " + server + " within "
                    + params.timeout(), e);
        } catch (IOException | IllegalArgumentException e) {
            closeQuietly(s);
            throw new RdmaCmException(RdmaCmException.Reason.UNREACHABLE, "cannot reach " + server + ": " + e, e);
        }
        QueuePair qp = null;
        Watchdog dog = watchdog(s, deadline);
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout(millisLeft(deadline, server));
            DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(s.getOutputStream()));
            qp = pd.createQp(initAttr(sendCq, recvCq, params));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(params.accessFlags()));
            beforeConnect.accept(qp);
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            VerbsAccess access = VerbsAccess.get();
            int offered = access.localExtensions(qp);
            new CmMessage(CmMessage.Type.REQ, qp.qpNum(), psn, params.pathMtu(pd.device()), params.initiatorDepth(),
                    params.responderResources(), pd.device().address(), params.privateDataUnsafe(), offered)
                    .write(out);
            CmMessage rep = readAnswer(in, server);
            if (rep.type() == CmMessage.Type.REJ) {
                throw new RdmaCmException(RdmaCmException.Reason.REJECTED, "the server at " + server
                        + " rejected the connection", null, rep.privateData());
            }
            if (rep.type() != CmMessage.Type.REP) {
                throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "expected REP or REJ from " + server
                        + ", got " + rep.type(), null);
            }
            Mtu mtu = smaller(params.pathMtu(pd.device()), rep.mtu());
            if ((rep.extensions() & ~offered) != 0) {
                throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "the server at " + server
                        + " answered with extensions 0x" + Integer.toHexString(rep.extensions())
                        + " beyond the 0x" + Integer.toHexString(offered) + " offered", null);
            }
            access.setPeerExtensions(qp, rep.extensions());
            toRts(qp, params, rep, mtu, psn);
            CmMessage.control(CmMessage.Type.RTU).write(out);
            return established(pd, qp, s, in, out, rep, mtu, dog);
        } catch (IOException | RuntimeException e) {
            throw failed(e, qp, s, dog, "the server at " + server, params.timeout());
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

    /** Server side of the exchange, after the REQ was read: see {@link ConnectRequest#accept}. */
    static RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params, Socket s, DataInputStream in, DataOutputStream out, CmMessage req,
            java.util.function.Consumer<QueuePair> beforeAccept) throws RdmaCmException {
        long deadline = System.nanoTime() + params.timeout().toNanos();
        InetSocketAddress peer = (InetSocketAddress) s.getRemoteSocketAddress();
        QueuePair qp = null;
        Watchdog dog = watchdog(s, deadline);
        try {
            qp = pd.createQp(initAttr(sendCq, recvCq, params));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(params.accessFlags()));
            beforeAccept.accept(qp);
            Mtu mtu = smaller(params.pathMtu(pd.device()), req.mtu());
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            // RTR and RTS before the REP, as librdmacm's rdma_accept: the client may send as soon as it has
            // the REP, and a request that fails in RTR would leave the QP in ERR before an RTS here
            VerbsAccess access = VerbsAccess.get();
            int agreed = req.extensions() & access.localExtensions(qp);
            access.setPeerExtensions(qp, agreed);
            toRts(qp, params, req, mtu, psn);
            new CmMessage(CmMessage.Type.REP, qp.qpNum(), psn, mtu, params.initiatorDepth(),
                    params.responderResources(), pd.device().address(), params.privateDataUnsafe(), agreed).write(out);
            s.setSoTimeout(millisLeft(deadline, peer));
            CmMessage rtu = readAnswer(in, peer);
            if (rtu.type() != CmMessage.Type.RTU) {
                throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "expected RTU from " + peer + ", got "
                        + rtu.type(), null);
            }
            return established(pd, qp, s, in, out, req, mtu, dog);
        } catch (IOException | RuntimeException e) {
            throw failed(e, qp, s, dog, "the client at " + peer, params.timeout());
        }
    }

    /**
     * The end of a successful exchange on either side: the watchdog off (or, if it already fired,
     * a timeout), the socket back to blocking reads with keepalive, the connection started.
     */
    private static RdmaConnection established(ProtectionDomain pd, QueuePair qp, Socket s, DataInputStream in,
            DataOutputStream out, CmMessage peer, Mtu mtu, Watchdog dog)
            throws IOException {
        if (!dog.cancel(false)) {
            throw new SocketTimeoutException("exchange deadline passed");
        }
        s.setSoTimeout(0);
        keepAlive(s);
        RdmaConnection c = new RdmaConnection(pd.device(), qp, s, in, out, peer, mtu);
        VerbsAccess.get().addConnection(pd.device(), c);
        c.start();
        return c;
    }

    /**
     * A failed exchange on either side: stops the watchdog, destroys the QP and closes the socket,
     * and says why: the peer's own RdmaCmException as it is, TIMEOUT when a read timed out or the
     * watchdog closed the socket at the deadline, PROTOCOL for any other I/O error. A
     * RuntimeException (e.g. a bad attribute) is rethrown.
     */
    private static RdmaCmException failed(Exception e, QueuePair qp, Socket s,
            Watchdog dog, String who, java.time.Duration timeout) {
        // fired() is set before the watchdog closes the socket, so an error caused by that close is a timeout
        boolean deadline = e instanceof SocketTimeoutException || dog.fired();
        dog.cancel(false);
        cleanUp(qp, s);
        if (e instanceof RdmaCmException cm && !(deadline && cm.reason() == RdmaCmException.Reason.PROTOCOL)) {
            return cm;
        }
        if (e instanceof RuntimeException r) {
            throw r;
        }
        if (deadline) {
            return new RdmaCmException(RdmaCmException.Reason.TIMEOUT, who + " did not complete the exchange within "
                    + timeout, e);
        }
        return new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "the exchange with " + who + " failed: " + e, e);
    }

    private static void toRts(QueuePair qp, ConnectionParams p, CmMessage peer, Mtu mtu, int psn) {
        qp.modify(new QpAttr().state(QpState.RTR).av(peer.udp()).pathMtu(mtu).destQpNum(peer.qpn())
                .rqPsn(peer.psn()).maxDestRdAtomic(Math.min(p.responderResources(), peer.initiatorDepth()))
                .minRnrTimer(p.minRnrTimer()));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(p.ackTimeout()).retryCnt(p.retryCnt())
                .rnrRetry(p.rnrRetry()).sqPsn(psn).maxRdAtomic(Math.min(p.initiatorDepth(), peer.responderResources())));
    }

    private static CmMessage readAnswer(DataInputStream in, InetSocketAddress peer) throws IOException {
        try {
            return CmMessage.read(in);
        } catch (EOFException e) {
            throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, peer + " closed the connection during the"
                    + " exchange", e);
        }
    }

    private static Mtu smaller(Mtu a, Mtu b) {
        return a.bytes() <= b.bytes() ? a : b;
    }

    private static int millisLeft(long deadline, InetSocketAddress peer) throws SocketTimeoutException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new SocketTimeoutException("deadline passed for " + peer);
        }
        return (int) Math.min(Integer.MAX_VALUE, left);
    }

    private static void cleanUp(QueuePair qp, Socket s) {
        if (qp != null) {
            qp.close();
        }
        closeQuietly(s);
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            LOG.debug("closing {}", s, e);
        }
    }

    private void start() {
        // ESTABLISHED first: a DREQ already buffered must not raise DISCONNECTED before it
        VerbsAccess.get().raise(device, new AsyncEvent(AsyncEventType.ESTABLISHED, qp, null, "QP 0x"
                + Integer.toHexString(qp.qpNum()) + " connected to QP 0x" + Integer.toHexString(remoteQpn) + " at "
                + remoteUdp + ", path MTU " + pathMtu.bytes()));
        Thread.ofVirtual().name("rxe4j-cm-" + qp.qpNum()).start(this::readLoop);
    }

    /** Closes the socket when the exchange's deadline passes, so that no read outlives it (a trickling peer). */
    static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "rxe4j-cm-watchdog");
                t.setDaemon(true);
                return t;
            });

    static Watchdog watchdog(Socket s, long deadline) {
        return watchdog(s, deadline, null);
    }

    /** As {@link #watchdog(Socket, long)}, running {@code beforeClose} (if not null) just before it closes. */
    static Watchdog watchdog(Socket s, long deadline, Runnable beforeClose) {
        Watchdog w = new Watchdog();
        w.future = WATCHDOG.schedule(() -> {
            if (!w.state.compareAndSet(Watchdog.PENDING, Watchdog.FIRED)) {
                return; // cancelled first: the exchange ended in time
            }
            if (beforeClose != null) {
                beforeClose.run();
            }
            closeQuietly(s); // after FIRED: whoever sees the socket fail then sees the deadline
        }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        return w;
    }

    /**
     * The deadline of one exchange: closes its socket when it passes, unless cancelled first. Firing
     * and cancelling race on one state word, so exactly one of them wins.
     */
    static final class Watchdog {
        static final int PENDING = 0;
        static final int FIRED = 1;
        static final int CANCELLED = 2;
        final java.util.concurrent.atomic.AtomicInteger state = new java.util.concurrent.atomic.AtomicInteger();
        private volatile java.util.concurrent.ScheduledFuture<?> future;

        /** @return whether the deadline passed (set before the socket is closed) */
        boolean fired() {
            return state.get() == FIRED;
        }

        /** @return whether the watchdog was stopped before it fired (the socket stays open) */
        boolean cancel(boolean mayInterrupt) {
            boolean won = state.compareAndSet(PENDING, CANCELLED);
            future.cancel(mayInterrupt);
            return won || state.get() == CANCELLED;
        }
    }

    /**
     * Keeps the connection's liveness checked by TCP keepalive: a peer host that crashes or a
     * network that partitions sends no FIN, so without probes DISCONNECTED would never come.
     * Probes start after 30 s idle, every 10 s, 3 unanswered close the connection (about 60 s).
     */
    static void keepAlive(Socket s) {
        try {
            s.setKeepAlive(true);
            trySet(s, jdk.net.ExtendedSocketOptions.TCP_KEEPIDLE, 30);
            trySet(s, jdk.net.ExtendedSocketOptions.TCP_KEEPINTERVAL, 10);
            trySet(s, jdk.net.ExtendedSocketOptions.TCP_KEEPCOUNT, 3);
        } catch (IOException e) {
            LOG.debug("keepalive on {}", s, e);
        }
    }

    private static void trySet(Socket s, java.net.SocketOption<Integer> o, int v) {
        try {
            if (s.supportedOptions().contains(o)) {
                s.setOption(o, v);
            }
        } catch (IOException | UnsupportedOperationException e) {
            LOG.debug("{} on {}", o, s, e);
        }
    }

    /**
     * The TCP connection's reader: the peer's DREQ or DREP, or the end of the connection. Nothing
     * escapes this thread: an unexpected exception is logged and ends the connection.
     */
    private void readLoop() {
        try {
            readMessages();
        } catch (RuntimeException | Error e) {
            LOG.warn("connection manager thread of {} failed; the connection ends", this, e);
            drep.countDown();
            if (connected.compareAndSet(true, false)) {
                end("the connection manager failed: " + e);
            }
        }
    }

    private void readMessages() {
        try {
            while (true) {
                CmMessage m = CmMessage.read(in);
                switch (m.type()) {
                    case DREQ -> {
                        sendQuietly(CmMessage.Type.DREP);
                        if (connected.compareAndSet(true, false)) {
                            end("the peer at " + remoteUdp + " disconnected");
                        }
                        drep.countDown();
                        return;
                    }
                    case DREP -> {
                        drep.countDown();
                        return;
                    }
                    default -> throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "unexpected " + m.type()
                            + " on an established connection", null);
                }
            }
        } catch (IOException e) {
            drep.countDown();
            if (connected.compareAndSet(true, false)) {
                end(e instanceof EOFException ? "the connection to the peer at " + remoteUdp + " (TCP "
                        + tcpPeer() + ") was lost (peer process gone?)"
                        : "the connection to the peer at " + remoteUdp + " (TCP " + tcpPeer() + ") failed: "
                                + e.getMessage());
            }
        }
    }

    private String tcpPeer() {
        return String.valueOf(socket.getRemoteSocketAddress());
    }

    private void sendQuietly(CmMessage.Type type) {
        try {
            synchronized (out) {
                CmMessage.control(type).write(out);
            }
        } catch (IOException e) {
            LOG.debug("sending {} to {}", type, remoteUdp, e);
        }
    }

    /**
     * Moves this side's QP to ERR with {@code reason} as its {@link QueuePair#errorReason()},
     * unless the application already reset or destroyed it, or it failed on its own (one task on
     * the QP's loop: a concurrent close cannot make it fail). Never throws.
     */
    private void qpToError(String reason) {
        try {
            VerbsAccess.get().disconnectToError(qp, reason);
        } catch (RuntimeException e) {
            LOG.warn("{}: moving the QP to ERR failed", this, e);
        }
    }

    /** This side's QP to ERR, the socket closed, the event raised; once. Never throws. */
    private void end(String reason) {
        endReason = reason;
        try {
            qpToError(reason);
            closeQuietly(socket);
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
            ended.countDown();
        }
    }

    /**
     * Disconnects ({@code rdma_disconnect}): moves the QP to ERR (outstanding work requests
     * complete with WR_FLUSH_ERR; {@link QueuePair#errorReason()} says "this side disconnected"),
     * tells the peer, whose QP moves to ERR too, and waits up to a second for its confirmation.
     * A QP the application has reset or destroyed is left as it is. Idempotent; the QP stays
     * allocated until {@link #close()}.
     */
    public void disconnect() {
        if (!connected.compareAndSet(true, false)) {
            return;
        }
        qpToError(LOCAL_DISCONNECT);
        sendQuietly(CmMessage.Type.DREQ);
        try {
            drep.await(DREP_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        end(LOCAL_DISCONNECT);
    }

    /**
     * Waits until the connection ends (either side disconnects, or the TCP connection is lost).
     *
     * @return whether it ended within {@code timeout}
     * @throws InterruptedException if interrupted while waiting
     */
    public boolean awaitDisconnect(Duration timeout) throws InterruptedException {
        return ended.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** @return whether the connection is up (neither side has disconnected and TCP is open) */
    public boolean isConnected() {
        return connected.get();
    }

    /** @return why the connection ended, or null while it is up */
    public String disconnectReason() {
        return endReason;
    }

    /** @return the connected QP (owned by this connection: {@link #close()} destroys it) */
    public QueuePair qp() {
        return qp;
    }

    /** @return the private data the peer sent with its connect request or accept (a copy) */
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
