package io.rxe4j.verbs;

import io.rxe4j.verbs.cm.CmWire;
import io.rxe4j.verbs.cm.ConnectRequest;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaCmException;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.net.inproc.InJvmFabric;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The connection manager: connect/accept with private data, MTU and depth negotiation, reject,
 * refused/unreachable/half-open peers, a malformed peer, disconnect seen by both sides, and a peer
 * whose TCP connection dies.
 */
class ConnectionManagerTest {
    private static final InetSocketAddress ANY_LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

    private InJvmFabric fabric;
    private Side server;
    private Side client;
    private RdmaListener listener;

    static final class Side implements AutoCloseable {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final List<AsyncEvent> events = new CopyOnWriteArrayList<>();

        Side(InJvmFabric fabric, String ip) {
            this(fabric, ip, DeviceConfig.defaults());
        }

        Side(InJvmFabric fabric, String ip, DeviceConfig config) {
            dev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress(ip, 4791)), config);
            dev.addAsyncEventListener(events::add);
            pd = dev.allocPd();
            cq = dev.createCq(256);
            mr = pd.allocMr(1 << 16, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        }

        AsyncEvent awaitEvent(AsyncEventType type) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (System.nanoTime() < deadline) {
                AsyncEvent e = dev.getAsyncEvent(Duration.ofMillis(100));
                if (e != null && e.type() == type) {
                    return e;
                }
            }
            throw new AssertionError("no " + type + " event within 10 s; listener saw " + events);
        }

        WorkCompletion next() {
            return RcPair.next(cq, cq::toString);
        }

        @Override
        public void close() {
            mr.close();
            cq.close();
            pd.close();
            dev.close();
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        fabric = new InJvmFabric();
        server = new Side(fabric, "10.0.0.1");
        client = new Side(fabric, "10.0.0.2");
        listener = RdmaListener.listen(ANY_LOOPBACK, 4, Duration.ofMillis(300));
    }

    @AfterEach
    void tearDown() {
        listener.close();
        server.close();
        client.close();
    }

    private static byte[] advertise(MemoryRegion mr) {
        return ByteBuffer.allocate(20).putInt(mr.rkey()).putLong(mr.addr()).putLong(mr.length()).array();
    }

    @Test
    void connectAndAcceptBringBothQpsToRtsWithPrivateDataAndTheSmallerMtuAndDepths() throws Exception {
        CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
            try {
                ConnectRequest req = listener.getRequest(Duration.ofSeconds(10));
                assertThat(req.privateData()).containsExactly(1, 2, 3);
                assertThat(req.peerPathMtu()).isEqualTo(Mtu.MTU_4096);
                return req.accept(server.pd, server.cq, server.cq, ConnectionParams.defaults()
                        .withPathMtu(Mtu.MTU_2048).withInitiatorDepth(4).withPrivateData(advertise(server.mr)));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, client.cq, listener.localAddress(),
                ConnectionParams.defaults().withPathMtu(Mtu.MTU_4096).withResponderResources(2)
                        .withPrivateData(new byte[] {1, 2, 3}));
                RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
            assertThat(c.qp().state()).isEqualTo(QpState.RTS);
            assertThat(s.qp().state()).isEqualTo(QpState.RTS);
            assertThat(c.pathMtu()).isEqualTo(Mtu.MTU_2048);
            assertThat(s.pathMtu()).isEqualTo(Mtu.MTU_2048);
            assertThat(c.remoteQpNum()).isEqualTo(s.qp().qpNum());
            assertThat(s.remoteQpNum()).isEqualTo(c.qp().qpNum());
            assertThat(c.remoteAddress()).isEqualTo(server.dev.address());
            QpAttr cq = c.qp().query();
            QpAttr sq = s.qp().query();
            assertThat(cq.pathMtu).isEqualTo(Mtu.MTU_2048);
            assertThat(cq.timeout).isEqualTo(17);
            assertThat(cq.retryCnt).isEqualTo(7);
            assertThat(cq.maxRdAtomic).as("client initiator 16, server responder 16").isEqualTo(16);
            assertThat(cq.maxDestRdAtomic).as("client responder 2, server initiator 4").isEqualTo(2);
            assertThat(sq.maxRdAtomic).as("server initiator 4, client responder 2").isEqualTo(2);
            assertThat(sq.sqPsn).isEqualTo(cq.rqPsn);
            assertThat(cq.sqPsn).isEqualTo(sq.rqPsn);

            // the client WRITEs into the buffer the server advertised in its private data
            ByteBuffer adv = ByteBuffer.wrap(c.remotePrivateData());
            int rkey = adv.getInt();
            long va = adv.getLong();
            assertThat(adv.getLong()).isEqualTo(1 << 16);
            client.mr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0xFEEDFACECAFEBEEFL);
            c.qp().postSend(new SendWr().rdmaWrite(1, va + 8, rkey, new Sge(client.mr.addr(), 8, client.mr.lkey()))
                    .signaled());
            WorkCompletion wc = client.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(server.mr.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 8)).isEqualTo(0xFEEDFACECAFEBEEFL);
            assertThat(client.awaitEvent(AsyncEventType.ESTABLISHED).qp()).isSameAs(c.qp());
            assertThat(server.awaitEvent(AsyncEventType.ESTABLISHED).qp()).isSameAs(s.qp());
        }
    }

    /**
     * Two rxe4j peers agree at connection setup on the extensions both devices offer (REQ offers,
     * REP answers with the intersection; docs/wire.md): with adaptive recovery on both sides each QP
     * knows its peer holds out-of-order requests; with it off on one side neither assumes it.
     */
    @Test
    void theQpsUseTheExtensionsBothDevicesOffer() throws Exception {
        CompletableFuture<RdmaConnection> first = acceptAsync();
        try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, listener.localAddress());
                RdmaConnection s = first.get(10, TimeUnit.SECONDS)) {
            int both = io.rxe4j.verbs.provider.QpOps.EXT_HOLDS_OUT_OF_ORDER | io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK;
            assertThat(c.qp().core.peerExtensions()).isEqualTo(both);
            assertThat(s.qp().core.peerExtensions()).isEqualTo(both);
        }
        try (Side rxeMode = new Side(fabric, "10.0.0.3", DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.getRequest(Duration.ofSeconds(10)).accept(rxeMode.pd, rxeMode.cq, rxeMode.cq,
                            ConnectionParams.defaults());
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, listener.localAddress());
                    RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
                assertThat(c.qp().core.localExtensions()).isEqualTo(io.rxe4j.verbs.provider.QpOps.EXT_HOLDS_OUT_OF_ORDER
                        | io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK);
                assertThat(c.qp().core.peerExtensions()).as("the server's device does not hold").isZero();
                assertThat(s.qp().core.peerExtensions()).isZero();
            }
        }
    }

    @Test
    void aRequestThatFailsAtTheServerRightAfterConnectDoesNotFailTheAccept() throws Exception {
        // the client's first request may reach the server before its accept returns; a NAKed one moves
        // the server's QP to ERR, which must not turn the accept into an exception (it once did:
        // "illegal QP state transition ERR -> RTS", when the server went to RTS only on the RTU)
        for (int i = 0; i < 10; i++) {
            CompletableFuture<RdmaConnection> accepted = acceptAsync();
            try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, listener.localAddress())) {
                c.qp().postSend(new SendWr().rdmaWrite(1, 0x1000, 0xBAD, new Sge(client.mr.addr(), 8,
                        client.mr.lkey())).signaled());
                try (RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
                    assertThat(client.next().status).isEqualTo(WcStatus.REM_ACCESS_ERR);
                    assertThat(s.isConnected()).isTrue();
                    assertThat(c.isConnected()).isTrue();
                }
            }
        }
    }

    @Test
    void disconnectMovesBothQpsToErrAndBothSidesSeeIt() throws Exception {
        CompletableFuture<RdmaConnection> accepted = acceptAsync();
        RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, listener.localAddress());
        RdmaConnection s = accepted.get(10, TimeUnit.SECONDS);
        try {
            s.qp().postRecv(new RecvWr().set(77, new Sge(server.mr.addr(), 64, server.mr.lkey())));
            c.disconnect();
            assertThat(c.isConnected()).isFalse();
            assertThat(c.qp().state()).isEqualTo(QpState.ERR);
            assertThat(s.awaitDisconnect(Duration.ofSeconds(10))).isTrue();
            assertThat(s.disconnectReason()).isEqualTo("the peer at " + client.dev.address() + " disconnected");
            // the cause is the QP's error reason too, not "modify_qp to ERR"
            assertThat(s.qp().errorReason()).isEqualTo(s.disconnectReason());
            assertThat(c.qp().errorReason()).isEqualTo("this side disconnected");
            assertThat(s.qp().state()).isEqualTo(QpState.ERR);
            WorkCompletion flushed = server.next();
            assertThat(flushed.wrId).isEqualTo(77);
            assertThat(flushed.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            assertThat(server.awaitEvent(AsyncEventType.DISCONNECTED).qp()).isSameAs(s.qp());
            assertThat(client.awaitEvent(AsyncEventType.DISCONNECTED).reason()).contains("this side disconnected");
            c.disconnect(); // idempotent
        } finally {
            c.close();
            s.close();
        }
    }

    @Test
    void aPeerWhoseTcpConnectionDiesIsDisconnected() throws Exception {
        // a hand-made client: REQ, then RTU, then the socket just closes (the process died)
        try (QueuePair fake = client.pd.createQp(QpInitAttr.rc(client.cq, client.cq))) {
            CompletableFuture<RdmaConnection> accepted = acceptAsync();
            Socket sock = new Socket();
            sock.connect(listener.localAddress());
            DataOutputStream out = new DataOutputStream(sock.getOutputStream());
            DataInputStream in = new DataInputStream(sock.getInputStream());
            CmWire.writeReq(out, fake.qpNum(), 5, Mtu.MTU_1024, 16, 16, client.dev.address(), new byte[0]);
            assertThat(CmWire.readType(in)).isEqualTo("REP");
            CmWire.writeControl(out, "RTU");
            RdmaConnection s = accepted.get(10, TimeUnit.SECONDS);
            try {
                sock.close();
                assertThat(s.awaitDisconnect(Duration.ofSeconds(10))).isTrue();
                assertThat(s.disconnectReason()).contains("was lost", client.dev.address().toString());
                assertThat(s.qp().state()).isEqualTo(QpState.ERR);
                // the real cause, with the peer's address, in the QP's error reason and the event
                assertThat(s.qp().errorReason()).isEqualTo(s.disconnectReason());
                assertThat(server.awaitEvent(AsyncEventType.DISCONNECTED).reason())
                        .contains("was lost", client.dev.address().toString());
            } finally {
                s.close();
            }
        }
    }

    @Test
    void establishedIsRaisedBeforeADisconnectThatArrivesWithTheRtu() throws Exception {
        for (int i = 0; i < 20; i++) {
            try (QueuePair fake = client.pd.createQp(QpInitAttr.rc(client.cq, client.cq))) {
                CompletableFuture<RdmaConnection> accepted = acceptAsync();
                try (Socket sock = new Socket()) {
                    sock.connect(listener.localAddress());
                    DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(sock.getOutputStream()));
                    CmWire.writeReq(out, fake.qpNum(), 5, Mtu.MTU_1024, 16, 16, client.dev.address(), new byte[0]);
                    assertThat(CmWire.readType(new DataInputStream(sock.getInputStream()))).isEqualTo("REP");
                    java.io.ByteArrayOutputStream both = new java.io.ByteArrayOutputStream();
                    DataOutputStream b = new DataOutputStream(both);
                    CmWire.writeControl(b, "RTU");
                    CmWire.writeControl(b, "DREQ");
                    sock.getOutputStream().write(both.toByteArray()); // RTU and DREQ in one segment
                    try (RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
                        assertThat(s.awaitDisconnect(Duration.ofSeconds(10))).isTrue();
                        AsyncEvent first = server.awaitEvent(AsyncEventType.ESTABLISHED);
                        assertThat(first.qp()).isSameAs(s.qp());
                        assertThat(server.awaitEvent(AsyncEventType.DISCONNECTED).qp()).isSameAs(s.qp());
                    }
                }
            }
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(10)
    void aClientTricklingItsRequestIsDroppedAtTheRequestDeadline() throws Exception {
        try (Socket slow = new Socket()) {
            slow.connect(listener.localAddress());
            java.io.OutputStream o = slow.getOutputStream();
            slow.setSoTimeout(100);
            // one byte of a REQ every 100 ms: each read would be within the 300 ms timeout, the whole is not
            byte[] magic = {0x52, 0x58, 0x43, 0x4D, 1, 1, 2, 0}; // a REQ header announcing a 512-byte body
            int k = 0;
            boolean closed = false;
            for (int i = 0; i < 60 && !closed; i++) {
                try {
                    o.write(k < magic.length ? magic[k] : 0); // then the body, zeros, one byte at a time
                    k++;
                    o.flush();
                    closed = slow.getInputStream().read() == -1;
                } catch (java.net.SocketTimeoutException stillOpen) {
                    // nothing to read yet: the listener still waits for the rest
                } catch (java.io.IOException reset) {
                    closed = true;
                }
            }
            assertThat(closed).as("the listener closed the trickling connection").isTrue();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); // counted just after the close
        while (listener.droppedConnections() == 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(listener.droppedConnections()).isEqualTo(1);
    }

    @Test
    void aRejectedRequestFailsTheConnectWithTheServersPrivateDataAndLeavesNoQp() throws Exception {
        CompletableFuture<Void> rejected = CompletableFuture.runAsync(() -> {
            try {
                listener.getRequest(Duration.ofSeconds(10)).reject(new byte[] {9, 9});
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, listener.localAddress()))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REJECTED);
                    assertThat(e.privateData()).containsExactly(9, 9);
                });
        rejected.get(10, TimeUnit.SECONDS);
        assertThat(client.pd.qps).as("the failed connect destroyed its QP").isEmpty();
    }

    @Test
    void nothingListeningIsRefused() throws Exception {
        int port;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = ss.getLocalPort();
        }
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq,
                new InetSocketAddress(InetAddress.getLoopbackAddress(), port)))
                .isInstanceOfSatisfying(RdmaCmException.class,
                        e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REFUSED));
    }

    @Test
    void aServerThatAcceptsTcpButNeverAnswersTimesOutAndTheQpIsDestroyed() throws Exception {
        try (ServerSocket mute = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq,
                    (InetSocketAddress) mute.getLocalSocketAddress(),
                    ConnectionParams.defaults().withTimeout(Duration.ofMillis(300))))
                    .isInstanceOfSatisfying(RdmaCmException.class,
                            e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT));
        }
        assertThat(client.pd.qps).as("the failed connect destroyed its QP").isEmpty();
    }

    @Test
    void aClientThatSendsNothingOrGarbageIsDroppedAndCounted() throws Exception {
        try (Socket silent = new Socket()) {
            silent.connect(listener.localAddress());
            assertThat(silent.getInputStream().read()).as("closed by the listener after 300 ms").isEqualTo(-1);
        }
        try (Socket garbage = new Socket()) {
            garbage.connect(listener.localAddress());
            garbage.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            assertThat(garbage.getInputStream().read()).isEqualTo(-1);
        }
        assertThat(listener.droppedConnections()).isEqualTo(2);
        assertThat(listener.getRequest(Duration.ZERO)).isNull();
    }

    @Test
    void aClientThatNeverConfirmsFailsTheAcceptAndTheServerQpIsDestroyed() throws Exception {
        try (QueuePair fake = client.pd.createQp(QpInitAttr.rc(client.cq, client.cq));
                Socket sock = new Socket()) {
            sock.connect(listener.localAddress());
            CmWire.writeReq(new DataOutputStream(sock.getOutputStream()), fake.qpNum(), 5, Mtu.MTU_1024, 16, 16, client.dev.address(), new byte[0]);
            ConnectRequest req = listener.getRequest(Duration.ofSeconds(10));
            assertThatThrownBy(() -> req.accept(server.pd, server.cq, server.cq,
                    ConnectionParams.defaults().withTimeout(Duration.ofMillis(300))))
                    .isInstanceOfSatisfying(RdmaCmException.class,
                            e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT));
            assertThatThrownBy(() -> req.reject(new byte[0])).isInstanceOf(IllegalStateException.class);
        }
        assertThat(server.pd.qps).as("the failed accept destroyed its QP").isEmpty();
    }

    @Test
    void badParametersAreRefusedWithTheirValue() {
        assertThatThrownBy(() -> ConnectionParams.defaults().withRetryCnt(8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryCnt must be 0..7, got 8");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, listener.localAddress(),
                ConnectionParams.defaults().withPrivateData(new byte[57])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("56 bytes");
    }

    @Test
    void connectChecksEveryArgumentBeforeAnyIoAndNamesIt() throws Exception {
        InetSocketAddress nobody;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            nobody = (InetSocketAddress) ss.getLocalSocketAddress(); // closed: a connect there is REFUSED
        }
        ConnectionParams p = ConnectionParams.defaults();
        CompletionQueue otherCq = server.cq;
        InetSocketAddress to = nobody;
        // each would be REFUSED if the TCP connection were tried first
        assertThatThrownBy(() -> RdmaConnection.connect(null, client.cq, to))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("pd is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, null, to))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("cq is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("server is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, null, client.cq, to, p))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("sendCq is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, null, to, p))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("recvCq is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, to, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("params is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, to, p, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("beforeConnect is null");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, otherCq, client.cq, to, p))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sendCq")
                .hasMessageContaining("not to pd's");
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, otherCq, to, p))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("recvCq");
        ConnectionParams big = p.withAcceptPrivateData(new byte[57]);
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, to, big))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 56 bytes");
        assertThat(client.pd.qps).as("no QP was created").isEmpty();
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, to))
                .isInstanceOf(RdmaCmException.class); // the real thing: REFUSED
    }

    @Test
    void anAcceptWithABadArgumentFailsBeforeAnsweringAndTheRequestCanStillBeAccepted() throws Exception {
        CompletableFuture<RdmaConnection> connecting = CompletableFuture.supplyAsync(() -> {
            try {
                return RdmaConnection.connect(client.pd, client.cq, listener.localAddress());
            } catch (RdmaCmException e) {
                throw new IllegalStateException(e);
            }
        });
        ConnectRequest r = null;
        while (r == null) {
            r = listener.getRequest(Duration.ofSeconds(10));
        }
        ConnectRequest req = r;
        assertThatThrownBy(() -> req.accept(null, server.cq)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("pd is null");
        assertThatThrownBy(() -> req.accept(server.pd, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cq is null");
        assertThatThrownBy(() -> req.accept(server.pd, client.cq, server.cq, ConnectionParams.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sendCq");
        assertThatThrownBy(() -> listener.accept(server.pd, server.cq, server.cq, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("params is null");
        try (RdmaConnection s = req.accept(server.pd, server.cq); RdmaConnection c = connecting.get(10, TimeUnit.SECONDS)) {
            assertThat(s.isConnected()).isTrue();
            assertThat(c.qp().state()).isEqualTo(QpState.RTS);
        }
    }

    @Test
    void privateDataIsCheckedWhereItIsGiven() {
        assertThat(ConnectionParams.defaults().withPrivateData(new byte[56]).privateData()).hasSize(56);
        assertThatThrownBy(() -> ConnectionParams.defaults().withPrivateData(new byte[57]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 56 bytes")
                .hasMessageContaining("withAcceptPrivateData").hasMessageContaining("got 57");
        assertThat(ConnectionParams.defaults().withAcceptPrivateData(new byte[196]).privateData()).hasSize(196);
        assertThatThrownBy(() -> ConnectionParams.defaults().withAcceptPrivateData(new byte[197]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 196 bytes");
        assertThatThrownBy(() -> ConnectionParams.defaults().withPrivateData(null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("null");
    }

    private CompletableFuture<RdmaConnection> acceptAsync() {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return listener.accept(server.pd, server.cq, server.cq, ConnectionParams.defaults());
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }
}
