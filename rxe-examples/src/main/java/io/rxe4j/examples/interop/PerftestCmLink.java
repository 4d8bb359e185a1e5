package io.rxe4j.examples.interop;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectRequest;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaCmException;
import io.rxe4j.verbs.cm.RdmaConnection;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * perftest's control channel with {@code -R} (and {@code -z}): an RC QP that rdma_cm connects on
 * the test's port ({@code -p}) before the test's own QPs, over which every message of perftest's
 * exchange travels as one SEND ({@code perftest_communication.c}: {@code create_comm_struct},
 * {@code establish_connection} → {@code rdma_client_connect} / {@code rdma_server_connect}, {@code
 * rdma_write_data} / {@code rdma_read_data}, {@code rdma_write_keys} / {@code rdma_read_keys}).
 * perftest's side has one receive of {@value PerftestDest#BINARY_BYTES} bytes posted at a time
 * (posted before {@code rdma_connect} / {@code rdma_accept}, re-posted after each message), its
 * conn_param has responder_resources and initiator_depth 0 (the channel's verb is SEND), retry 7,
 * RNR retry 7 and its QP timeout ({@code -u}) as the ACK timeout. The strict alternation of the
 * exchange means neither side ever has two messages in flight.
 */
final class PerftestCmLink implements PerftestWire.Link {
    /** Receives kept posted (perftest keeps one; more costs nothing). */
    private static final int RECVS = 4;
    /** Bytes per message slot: no perftest message is longer than a binary dest. */
    private static final int SLOT = 64;
    /** How often a waiting read looks at the connection's state. */
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final ProtectionDomain pd;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final MemoryRegion mr;
    private final long readTimeoutNanos;
    private RdmaConnection conn;
    private final WorkCompletion wc = new WorkCompletion();
    private long sends;

    private PerftestCmLink(RdmaDevice device, long readTimeoutNanos) {
        this.pd = device.allocPd();
        this.sendCq = device.createCq(RECVS + 4);
        this.recvCq = device.createCq(RECVS + 4);
        this.mr = pd.allocMr((long) SLOT * (RECVS + 1), Access.LOCAL_WRITE);
        this.readTimeoutNanos = readTimeoutNanos;
    }

    /**
     * The control connection's parameters as perftest's ({@code rdma_client_connect} / {@code
     * rdma_server_connect} with the comm struct's SEND verb): no READs either way, retry 7, RNR
     * retry 7, ACK timeout {@code qpTimeout}.
     */
    static ConnectionParams params(int qpTimeout, Duration cmTimeout) {
        return ConnectionParams.defaults().withInitiatorDepth(0).withResponderResources(0).withRetryCnt(7).withRnrRetry(7)
                .withAckTimeout(qpTimeout).withCaps(new QpCaps(4, RECVS, 1, 1, 0)).withTimeout(cmTimeout);
    }

    /** The receives, posted on the new QP before the REQ or REP goes out (as perftest's post_one_recv_wqe). */
    private Consumer<QueuePair> postRecvs() {
        return qp -> {
            for (int i = 0; i < RECVS; i++) {
                qp.postRecv(recv(i));
            }
        };
    }

    private RecvWr recv(int slot) {
        return new RecvWr().set(slot, new Sge(mr.addr() + (long) SLOT * (slot + 1), SLOT, mr.lkey()));
    }

    /**
     * The client: connects to perftest's rdma_cm listener on {@code server} (IP, port {@code -p}),
     * retrying while nothing listens there yet (REJ 8) until {@code connectDeadlineNanos}.
     */
    static PerftestCmLink connect(RdmaDevice device, InetSocketAddress server, ConnectionParams params,
            long connectDeadlineNanos, long readTimeoutNanos) throws IOException {
        PerftestCmLink l = new PerftestCmLink(device, readTimeoutNanos);
        try {
            l.conn = connectRetrying(l.pd, l.sendCq, l.recvCq, server, params, l.postRecvs(), connectDeadlineNanos);
            return l;
        } catch (IOException | RuntimeException e) {
            l.close();
            throw e;
        }
    }

    /** The server: accepts perftest's control connection request. */
    static PerftestCmLink accept(RdmaDevice device, ConnectRequest request, ConnectionParams params,
            long readTimeoutNanos) throws IOException {
        PerftestCmLink l = new PerftestCmLink(device, readTimeoutNanos);
        try {
            l.conn = request.accept(l.pd, l.sendCq, l.recvCq, params, l.postRecvs());
            return l;
        } catch (IOException | RuntimeException e) {
            l.close();
            throw e;
        }
    }

    /**
     * {@link RdmaConnection#connect}, again every 100 ms while the server answers REJ 8 (nothing
     * listens on the port yet: perftest's server opens its listener for the test QPs only after a
     * hand shake, and perftest's own client retries 10 times, {@code rdma_cm_client_connection}),
     * until {@code deadlineNanos}.
     */
    static RdmaConnection connectRetrying(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
            InetSocketAddress server, ConnectionParams params, Consumer<QueuePair> beforeConnect, long deadlineNanos)
            throws IOException {
        while (true) {
            try {
                return RdmaConnection.connect(pd, sendCq, recvCq, server, params, beforeConnect);
            } catch (RdmaCmException e) {
                if (e.reason() != RdmaCmException.Reason.REFUSED || System.nanoTime() - deadlineNanos > 0) {
                    throw e;
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", ie);
            }
        }
    }

    /** @return the connection */
    RdmaConnection connection() {
        return conn;
    }

    @Override
    public void write(byte[] msg) throws IOException {
        if (msg.length > SLOT) {
            throw new IllegalArgumentException("a perftest message has at most " + SLOT + " bytes, got " + msg.length);
        }
        MemorySegment.copy(msg, 0, mr.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, 0, msg.length);
        long id = ++sends;
        conn.qp().postSend(new SendWr().send(id, new Sge(mr.addr(), msg.length, mr.lkey())).signaled());
        await(sendCq, "the completion of a " + msg.length + "-byte SEND");
        if (wc.status != WcStatus.SUCCESS) {
            throw failed("SEND of " + msg.length + " bytes");
        }
    }

    @Override
    public void read(byte[] msg) throws IOException {
        await(recvCq, "a " + msg.length + "-byte message");
        if (wc.status != WcStatus.SUCCESS) {
            throw failed("receive");
        }
        int slot = (int) wc.wrId;
        if (wc.byteLen != msg.length) { // the two sides disagree on the exchange: say so rather than misread it
            throw new IOException("perftest peer sent a " + wc.byteLen + "-byte message on the rdma_cm control QP where "
                    + msg.length + " bytes were expected");
        }
        MemorySegment.copy(mr.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, (long) SLOT * (slot + 1), msg, 0,
                msg.length);
        conn.qp().postRecv(recv(slot));
    }

    private IOException failed(String what) {
        return new IOException("the " + what + " on the rdma_cm control QP failed with " + wc.status
                + (conn.disconnectReason() != null ? " (" + conn.disconnectReason() + ")" : "")
                + (conn.qp().errorReason() != null ? "; " + conn.qp().errorReason() : ""));
    }

    /** One completion from {@code cq} into {@link #wc}, or an IOException after the read timeout. */
    private void await(CompletionQueue cq, String what) throws IOException {
        WorkCompletion[] one = {wc};
        long deadline = System.nanoTime() + readTimeoutNanos;
        while (cq.poll(one) == 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IOException("no " + what + " on the rdma_cm control QP within "
                        + TimeUnit.NANOSECONDS.toSeconds(readTimeoutNanos) + " s" + (conn.isConnected() ? ""
                                : " (" + conn.disconnectReason() + ")"));
            }
            cq.await(Math.min(left, POLL_NANOS));
        }
    }

    /** Disconnects (DREQ, waiting a little for the DREP) and frees the QP and its resources. */
    @Override
    public void close() {
        if (conn != null) {
            try {
                conn.disconnectAsync().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // the peer's CM answers a DREQ even after its process exited; a lost DREP changes nothing here
            }
            conn.close();
        }
        mr.close();
        sendCq.close();
        recvCq.close();
        pd.close();
    }

    @Override
    public String toString() {
        return "perftest rdma_cm control QP " + conn;
    }
}
