package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.AsyncEventType;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.cm.ib.CmaHeader;
import io.rxe4j.verbs.cm.ib.IbCm;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A client's connect request (an IB CM REQ), taken from an {@link RdmaListener} ({@code
 * RDMA_CM_EVENT_CONNECT_REQUEST}): inspect its private data, then {@link #accept} or {@link
 * #reject} it. One of the two must be called: a request neither accepted nor rejected is answered
 * by nobody, and the client times out. Thread-safe.
 */
public final class ConnectRequest {
    private final RdmaListener listener;
    private final IbCm.Incoming req;
    private final AtomicBoolean answered = new AtomicBoolean();

    ConnectRequest(RdmaListener listener, IbCm.Incoming req) {
        this.listener = listener;
        this.req = req;
    }

    /**
     * @return the private data the client sent (a copy): the {@value
     *     ConnectionParams#MAX_CONNECT_PRIVATE_DATA} bytes after rdma_cm's header, zero-padded
     */
    public byte[] privateData() {
        return req.privateData();
    }

    /** @return the client device's UDP address (its IP; port 4791, or its own for an rxe4j device) */
    public InetSocketAddress peerAddress() {
        return req.peer();
    }

    /**
     * @return the client's rdma_cm address from the request's header: its IP and the source port of
     *     its rdma_cm id ({@code rdma_get_peer_addr})
     */
    public InetSocketAddress sourceAddress() {
        CmaHeader h = req.cmaHeader();
        return new InetSocketAddress(h.src(), h.srcPort());
    }

    /** @return the client's QP number */
    public int peerQpNum() {
        return req.remoteQpn();
    }

    /** @return the path MTU the client asks for (the connection uses the smaller of it and this side's) */
    public Mtu peerPathMtu() {
        return req.pathMtu();
    }

    /**
     * Accepts the request ({@code rdma_accept}) and waits for the client's RTU: as {@link
     * #acceptAsync(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams, Consumer)}.
     *
     * @throws RdmaCmException as that future's: TIMEOUT also when the device's clock does not move
     *     (virtual time: use {@code acceptAsync})
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params) throws RdmaCmException {
        return accept(pd, sendCq, recvCq, params, qp -> { });
    }

    /**
     * As {@link #accept(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams)},
     * calling {@code beforeAccept} with the new QP in INIT before the client is answered: post the
     * receive work requests the client's first SENDs need there.
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            ConnectionParams params, Consumer<QueuePair> beforeAccept) throws RdmaCmException {
        return RdmaConnection.await(acceptAsync(pd, sendCq, recvCq, params, beforeAccept), pd.device(), params,
                "accept of " + this);
    }

    /**
     * Accepts with the default {@link ConnectionParams} and one CQ for sends and receives.
     *
     * @see #accept(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams)
     */
    public RdmaConnection accept(ProtectionDomain pd, CompletionQueue cq) throws RdmaCmException {
        RdmaConnection.notNull(cq, "cq");
        return accept(pd, cq, cq, ConnectionParams.defaults());
    }

    /**
     * Accepts the request without blocking ({@code rdma_accept}): creates an RC QP in {@code pd} with
     * {@code params}, moves it to INIT, calls {@code beforeAccept}, then to RTR and RTS with the
     * request's values ({@code cm-facts.md} §3.1: the client's starting PSN, its depths swapped and
     * capped by this side's, the smaller path MTU), and sends the REP with this side's private data
     * ({@link ConnectionParams#withPrivateData} or {@link ConnectionParams#withAcceptPrivateData}, at
     * most 196 bytes). Completes, on the device's event loop, when the client's RTU (or any packet
     * that proves it connected, such as a DREQ) arrives. The client may send as soon as it has the
     * REP, so the QP can already have work (or, after a failed request, be in ERR with a {@link
     * AsyncEventType#QP_FATAL} raised) when the future completes.
     *
     * @return completes exceptionally with an {@link RdmaCmException}: TIMEOUT if the client does not
     *     confirm within {@link ConnectionParams#timeout()} (it is sent REJ 28) or gave up itself (its
     *     REJ 4, timeout: before or after the REP; the message says which), REJECTED if it rejects
     *     the REP for another reason, PROTOCOL if the QP cannot take the request's values (the client is sent REJ 28),
     *     CLOSED if the device closes; the QP is destroyed then
     * @throws IllegalArgumentException naming the argument: a null {@code pd}, {@code sendCq}, {@code
     *     recvCq}, {@code params} or {@code beforeAccept}, or CQs of another device than {@code pd}'s
     *     (checked before anything is sent; the request can still be accepted or rejected then)
     * @throws IllegalStateException if the request was already accepted or rejected, or {@code pd},
     *     a CQ or the device is closed
     */
    public CompletableFuture<RdmaConnection> acceptAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, ConnectionParams params, Consumer<QueuePair> beforeAccept) {
        RdmaConnection.checkArgs(pd, sendCq, recvCq, params, beforeAccept, "beforeAccept");
        if (pd.device() != listener.device()) {
            throw new IllegalArgumentException("pd " + pd + " belongs to " + pd.device() + ", not to the listener's "
                    + listener.device());
        }
        answer();
        QueuePair qp;
        CompletableFuture<io.rxe4j.verbs.cm.ib.IbCm.Connection> cmf;
        try {
            qp = pd.createQp(RdmaConnection.initAttr(sendCq, recvCq, params));
        } catch (RuntimeException e) {
            req.reject(new byte[0]);
            throw e;
        }
        try {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(params.accessFlags()));
            beforeAccept.accept(qp);
            cmf = req.accept(qp, RdmaConnection.options(params), params.privateDataUnsafe());
        } catch (RuntimeException e) {
            req.reject(new byte[0]);
            qp.close();
            throw e;
        }
        String who = "the client at " + req.peer();
        CompletableFuture<RdmaConnection> f = new CompletableFuture<>();
        cmf.whenComplete((c, t) -> {
            if (t != null) {
                qp.close();
                f.completeExceptionally(RdmaConnection.translate(t, who, params.timeout()));
            } else if (!f.complete(RdmaConnection.established(pd.device(), qp, c))) {
                c.disconnect();
                qp.close();
            }
        });
        f.whenComplete((c, t) -> {
            if (f.isCancelled()) {
                cmf.cancel(false);
                qp.close();
            }
        });
        return f;
    }

    /**
     * As {@link #acceptAsync(ProtectionDomain, CompletionQueue, CompletionQueue, ConnectionParams,
     * Consumer)} without a hook.
     */
    public CompletableFuture<RdmaConnection> acceptAsync(ProtectionDomain pd, CompletionQueue sendCq,
            CompletionQueue recvCq, ConnectionParams params) {
        return acceptAsync(pd, sendCq, recvCq, params, qp -> { });
    }

    /**
     * Rejects the request ({@code rdma_reject}): a REJ with reason 28 (consumer defined); the client's
     * connect fails with {@link RdmaCmException.Reason#REJECTED} and these bytes (zero-padded to
     * 148, the REJ's private data field).
     *
     * @param privateData at most 148 bytes for the client (may be empty)
     * @throws IllegalArgumentException if {@code privateData} is null or longer
     * @throws IllegalStateException if the request was already accepted or rejected
     */
    public void reject(byte[] privateData) {
        RdmaConnection.notNull(privateData, "privateData");
        if (privateData.length > ConnectionParams.MAX_REJECT_PRIVATE_DATA) {
            throw new IllegalArgumentException("a reject carries at most " + ConnectionParams.MAX_REJECT_PRIVATE_DATA
                    + " bytes of private data, got " + privateData.length);
        }
        answer();
        req.reject(privateData.clone());
    }

    /** Backlog full: no answer, so that the client's retransmitted REQ comes as new. */
    void drop() {
        if (answered.compareAndSet(false, true)) {
            req.drop();
        }
    }

    private void answer() {
        if (!answered.compareAndSet(false, true)) {
            throw new IllegalStateException("the connect request from " + req.peer()
                    + " was already accepted or rejected");
        }
    }

    @Override
    public String toString() {
        return "ConnectRequest{from QP 0x" + Integer.toHexString(req.remoteQpn()) + " at " + req.peer() + " to port "
                + listener.port() + '}';
    }
}
