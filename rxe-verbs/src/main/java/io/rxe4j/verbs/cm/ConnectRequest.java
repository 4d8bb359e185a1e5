package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.AsyncEventType;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A client's connect request, taken from an {@link RdmaListener} ({@code RDMA_CM_EVENT_CONNECT_REQUEST}):
 * inspect its private data, then {@link #accept} or {@link #reject} it. One of the two must be
 * called; a request neither accepted nor rejected ties up its TCP connection until the client
 * times out.
 */
public final class ConnectRequest {
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final CmMessage req;
    private final AtomicBoolean answered = new AtomicBoolean();

    ConnectRequest(Socket socket, DataInputStream in, DataOutputStream out, CmMessage req) {
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.req = req;
    }

    /** @return the private data the client sent (a copy; at most 56 bytes) */
    public byte[] privateData() {
        return req.privateData().clone();
    }

    /** @return the client device's UDP address */
    public InetSocketAddress peerAddress() {
        return req.udp();
    }

    /** @return the TCP address the request came from */
    public InetSocketAddress peerTcpAddress() {
        return (InetSocketAddress) socket.getRemoteSocketAddress();
    }

    /** @return the client's QP number */
    public int peerQpNum() {
        return req.qpn();
    }

    /** @return the largest path MTU the client accepts */
    public Mtu peerPathMtu() {
        return req.mtu();
    }

    /**
     * Accepts the request ({@code rdma_accept}): creates an RC QP in {@code pd} with {@code
     * params}, moves it to RTR and RTS, sends this side's connection data and private data ({@link
     * ConnectionParams#withPrivateData} or {@link ConnectionParams#withAcceptPrivateData}, at most 196
     * bytes), and returns once the client has
     * confirmed (RTU). The client may send as soon as it has the answer, so the QP can already have
     * work (or, after a failed request, be in ERR with a {@link AsyncEventType#QP_FATAL} raised)
     * when this returns.
     *
     * @throws RdmaCmException TIMEOUT if the client does not confirm within {@link
     *     ConnectionParams#timeout()}, PROTOCOL if it answers otherwise or closes; the QP is
     *     destroyed then
     * @throws IllegalArgumentException naming the argument: a null {@code pd}, {@code sendCq},
     *     {@code recvCq} or {@code params}, or CQs of another device than {@code pd}'s (checked
     *     before anything is sent; the request can still be accepted or rejected then)
     * @throws IllegalStateException if the request was already accepted or rejected, or {@code
     *     pd}, a CQ or the device is closed
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
            ConnectionParams params, java.util.function.Consumer<QueuePair> beforeAccept) throws RdmaCmException {
        RdmaConnection.checkArgs(pd, sendCq, recvCq, params, beforeAccept, "beforeAccept");
        answer();
        return RdmaConnection.accept(pd, sendCq, recvCq, params, socket, in, out, req, beforeAccept);
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
     * Rejects the request ({@code rdma_reject}); the client's connect fails with {@link
     * RdmaCmException.Reason#REJECTED} and these bytes.
     *
     * @param privateData at most 196 bytes for the client (may be empty)
     * @throws IllegalArgumentException if {@code privateData} is longer
     * @throws IllegalStateException if the request was already accepted or rejected
     */
    public void reject(byte[] privateData) {
        RdmaConnection.notNull(privateData, "privateData");
        if (privateData.length > ConnectionParams.MAX_ACCEPT_PRIVATE_DATA) {
            throw new IllegalArgumentException("a reject carries at most " + ConnectionParams.MAX_ACCEPT_PRIVATE_DATA
                    + " bytes of private data, got " + privateData.length);
        }
        answer();
        try {
            CmMessage.reject(privateData.clone()).write(out);
        } catch (IOException e) {
            // the client is gone: nothing to tell it
        } finally {
            RdmaConnection.closeQuietly(socket);
        }
    }

    private void answer() {
        if (!answered.compareAndSet(false, true)) {
            throw new IllegalStateException("the connect request from " + peerTcpAddress()
                    + " was already accepted or rejected");
        }
    }

    @Override
    public String toString() {
        return "ConnectRequest{from " + peerTcpAddress() + ", QP 0x" + Integer.toHexString(req.qpn()) + " at "
                + req.udp() + ", " + req.privateData().length + " B private data}";
    }
}
