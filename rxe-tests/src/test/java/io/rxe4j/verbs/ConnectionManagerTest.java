package io.rxe4j.verbs;

import io.rxe4j.verbs.cm.ConnectRequest;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaCmException;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.cm.ib.CmMad;
import io.rxe4j.verbs.cm.ib.CmMessages;
import io.rxe4j.verbs.cm.ib.IbCm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The public connection manager ({@link RdmaListener}, {@link ConnectRequest}, {@link
 * RdmaConnection}) over the IB CM on QP1, between two devices of an in-JVM fabric.
 *
 * <p>On real time, through the blocking API: connect and accept with private data, path MTU and
 * depths; the extensions both devices offer; a request that fails at the server right after the
 * connect; disconnect from either side; reject; nothing listening; arguments checked before any
 * I/O; private data limits.
 *
 * <p>On virtual time ({@link VirtualScheduler} shared by the fabric and both devices, so the CM's
 * retry timers and deadlines run in virtual time and every MAD crossing the fabric is logged, and
 * can be dropped, by the fabric's filter), through the async API: a lost REQ, REP or RTU recovered
 * by the CM's retries; a server that never answers (TIMEOUT at {@link ConnectionParams#timeout()},
 * REJ 4); a client that never confirms (the accept fails with TIMEOUT, REJ 28); disconnect from
 * either side (DREQ, DREP); a device that closes (its DREQs end the peer's connections); a full
 * backlog (the REQ is left unanswered, counted, and connects once resent); ESTABLISHED before
 * DISCONNECTED when a DREQ follows the RTU; ports.
 */
class ConnectionManagerTest {
    private static final InetSocketAddress SERVER = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress CLIENT = new InetSocketAddress("10.0.0.2", 4791);
    /** The most virtual time a step may take: 200 s. */
    private static final long MAX = 200_000_000_000L;
    private static final long MS = 1_000_000L;
    /** rdma_cm's REQ retry period: 2 × 256 ms (packet life time) + 4096 ms (CM response timeout). */
    private static final long REQ_PERIOD = 4608 * MS;
    /** The REP's retry period: the REQ's local CM response timeout, 4096 ms. */
    private static final long REP_PERIOD = 4096 * MS;
    private static final int REQ = CmMad.ATTR_REQ;
    private static final int REP = CmMad.ATTR_REP;
    private static final int RTU = CmMad.ATTR_RTU;
    private static final int REJ = CmMad.ATTR_REJ;
    private static final int DREQ = CmMad.ATTR_DREQ;
    private static final int DREP = CmMad.ATTR_DREP;

    private InJvmFabric fabric;
    /** Non-null on virtual time. */
    private VirtualScheduler vs;
    private Side server;
    private Side client;
    private RdmaListener listener;
    private final List<Side> others = new ArrayList<>();

    /** A CM MAD that crossed (or was dropped by) the fabric, on virtual time. */
    record Mad(long at, boolean fromClient, CmMad mad, boolean dropped) {
        /** @return the attribute, positive from the client, negative from the server */
        int signed() {
            return fromClient ? mad.attribute() : -mad.attribute();
        }
    }

    /** Every CM MAD offered to the fabric, in order, dropped ones included. */
    private final List<Mad> mads = new ArrayList<>();
    /** Which MADs the fabric drops. */
    private Predicate<Mad> drop = m -> false;

    static final class Side implements AutoCloseable {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final List<AsyncEvent> events = new CopyOnWriteArrayList<>();

        Side(InJvmFabric fabric, String ip) {
            this(fabric, new InetSocketAddress(ip, 4791), DeviceConfig.defaults());
        }

        Side(InJvmFabric fabric, String ip, DeviceConfig config) {
            this(fabric, new InetSocketAddress(ip, 4791), config);
        }

        Side(InJvmFabric fabric, InetSocketAddress at, DeviceConfig config) {
            dev = RdmaDevice.open(fabric.newTransport(at), config);
            dev.addAsyncEventListener(events::add);
            pd = dev.allocPd();
            cq = dev.createCq(256);
            mr = pd.allocMr(1 << 16, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        }

        /** Real time: the next event of {@code type} within 10 s (others are skipped). */
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

        /** Virtual time: the events raised so far (the device queues them as they are raised), taken. */
        List<AsyncEvent> takeEvents() throws InterruptedException {
            List<AsyncEvent> l = new ArrayList<>();
            for (AsyncEvent e; (e = dev.getAsyncEvent(Duration.ZERO)) != null; ) {
                l.add(e);
            }
            return l;
        }

        /** Real time: the next completion. */
        WorkCompletion next() {
            return RcPair.next(cq, cq::toString);
        }

        InetSocketAddress at(int port) {
            return new InetSocketAddress(dev.address().getAddress(), port);
        }

        @Override
        public void close() {
            dev.closeAll();
        }
    }

    // ------------------------------------------------------------------ fixtures

    /** Two devices on a real-time fabric, a listener on a free port of the server's. */
    private void realTime() {
        fabric = new InJvmFabric();
        server = new Side(fabric, SERVER, DeviceConfig.defaults());
        client = new Side(fabric, CLIENT, DeviceConfig.defaults());
        listener = RdmaListener.listen(server.dev, 0, 4);
    }

    /** Two devices on virtual time, every CM MAD logged; a listener on port 7471 of the server's. */
    private void virtualTime() {
        vs = new VirtualScheduler();
        fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(20_000).build();
        fabric.setFilter(this::filter);
        server = new Side(fabric, SERVER, DeviceConfig.defaults().withSeed(1));
        client = new Side(fabric, CLIENT, DeviceConfig.defaults().withSeed(2));
        listener = RdmaListener.listen(server.dev, 7471);
    }

    @AfterEach
    void tearDown() {
        if (listener != null) {
            listener.close();
        }
        for (Side s : others) {
            s.close();
        }
        if (server != null) {
            server.close();
        }
        if (client != null) {
            client.close();
        }
        if (fabric != null) {
            fabric.closeAll();
        }
        if (vs != null) {
            vs.shutdown();
        }
    }

    private boolean filter(ByteBuf b, InetSocketAddress from, InetSocketAddress to) {
        int at = b.readerIndex();
        if (b.readableBytes() < 20 + CmMad.SIZE || (b.getInt(at + 4) & 0xFFFFFF) != 1) {
            return true; // not a MAD to QP1
        }
        byte[] bytes = new byte[CmMad.SIZE];
        b.getBytes(at + 20, bytes); // after the BTH (12) and the DETH (8)
        CmMad m = CmMad.parse(bytes);
        if (m == null) {
            return true;
        }
        Mad mad = new Mad(vs.nanoTime(), from.equals(CLIENT), m, false);
        boolean dropped = drop.test(mad);
        mads.add(new Mad(mad.at(), mad.fromClient(), m, dropped));
        return !dropped;
    }

    /** @return the signed attributes of the MADs so far (client positive, server negative), dropped ones included */
    private List<Integer> seq() {
        return mads.stream().map(Mad::signed).toList();
    }

    private List<Mad> of(int signedAttribute) {
        return mads.stream().filter(m -> m.signed() == signedAttribute).toList();
    }

    /** Drops the first {@code n} MADs of {@code signedAttribute}. */
    private Predicate<Mad> dropFirst(int signedAttribute, int n) {
        int[] left = {n};
        return m -> m.signed() == signedAttribute && left[0]-- > 0;
    }

    /** Virtual time: runs until {@code f} completes (at most 200 s) and @return its value. */
    private <T> T done(CompletableFuture<T> f) {
        assertThat(vs.runUntil(f::isDone, MAX)).as("done within 200 s of virtual time: %s; MADs %s", f, seq())
                .isTrue();
        return f.join();
    }

    /** Virtual time: runs until {@code f} completes and @return the RdmaCmException it failed with. */
    private RdmaCmException failure(CompletableFuture<?> f) {
        assertThat(vs.runUntil(f::isDone, MAX)).as("done within 200 s of virtual time: %s; MADs %s", f, seq())
                .isTrue();
        assertThat(f).isCompletedExceptionally();
        Throwable t = f.handle((v, e) -> e).join();
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        assertThat(t).isInstanceOf(RdmaCmException.class);
        return (RdmaCmException) t;
    }

    private CompletableFuture<RdmaConnection> connectAsync(ConnectionParams params) {
        return RdmaConnection.connectAsync(client.pd, client.cq, client.cq, server.dev.address(), listener.port(),
                params, qp -> { });
    }

    private CompletableFuture<RdmaConnection> acceptAsync(ConnectionParams params) {
        return listener.acceptAsync(server.pd, server.cq, server.cq, params);
    }

    /** Virtual time: a connection, both sides up; @return {client's, server's} */
    private RdmaConnection[] connectBoth() {
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults());
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        assertThat(vs.runUntil(() -> c.isDone() && s.isDone(), MAX)).as("connected: %s %s", c, s).isTrue();
        return new RdmaConnection[] {c.join(), s.join()};
    }

    private static List<AsyncEventType> typesFor(List<AsyncEvent> events, QueuePair qp) {
        return events.stream().filter(e -> e.qp() == qp).map(AsyncEvent::type).toList();
    }

    private static byte[] advertise(MemoryRegion mr) {
        return ByteBuffer.allocate(20).putInt(mr.rkey()).putLong(mr.addr()).putLong(mr.length()).array();
    }

    private static boolean allZero(byte[] b, int from) {
        for (int i = from; i < b.length; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ real time, blocking API

    @Test
    void connectAndAcceptBringBothQpsToRtsWithPrivateDataAndTheSmallerMtuAndDepths() throws Exception {
        realTime();
        CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
            try {
                ConnectRequest req = listener.getRequest(Duration.ofSeconds(10));
                assertThat(req.privateData()).as("the REQ's whole user field").hasSize(56)
                        .startsWith(1, 2, 3);
                assertThat(allZero(req.privateData(), 3)).as("zero padded").isTrue();
                assertThat(req.peerPathMtu()).isEqualTo(Mtu.MTU_4096);
                assertThat(req.peerAddress()).isEqualTo(client.dev.address());
                assertThat(req.sourceAddress().getAddress()).isEqualTo(client.dev.address().getAddress());
                return req.accept(server.pd, server.cq, server.cq, ConnectionParams.defaults()
                        .withPathMtu(Mtu.MTU_2048).withInitiatorDepth(4).withPrivateData(advertise(server.mr)));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        // the (IP, port) form: the server's device is at 4791
        try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, client.cq,
                server.at(listener.port()), ConnectionParams.defaults().withPathMtu(Mtu.MTU_4096)
                        .withResponderResources(2).withPrivateData(new byte[] {1, 2, 3}));
                RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
            assertThat(c.qp().state()).isEqualTo(QpState.RTS);
            assertThat(s.qp().state()).isEqualTo(QpState.RTS);
            assertThat(c.pathMtu()).as("the server's smaller MTU, told in its REP").isEqualTo(Mtu.MTU_2048);
            assertThat(s.pathMtu()).isEqualTo(Mtu.MTU_2048);
            assertThat(c.remoteQpNum()).isEqualTo(s.qp().qpNum());
            assertThat(s.remoteQpNum()).isEqualTo(c.qp().qpNum());
            assertThat(c.remoteAddress()).isEqualTo(server.dev.address());
            assertThat(s.remoteAddress()).isEqualTo(client.dev.address());
            assertThat(s.remotePrivateData()).hasSize(56).startsWith(1, 2, 3);
            assertThat(c.remotePrivateData()).as("the REP's whole field").hasSize(196);
            assertThat(allZero(c.remotePrivateData(), 20)).isTrue();
            QpAttr cq = c.qp().query();
            QpAttr sq = s.qp().query();
            assertThat(cq.pathMtu).isEqualTo(Mtu.MTU_2048);
            assertThat(sq.pathMtu).isEqualTo(Mtu.MTU_2048);
            assertThat(cq.timeout).isEqualTo(17);
            assertThat(cq.retryCnt).isEqualTo(7);
            assertThat(sq.retryCnt).as("the client's retry count, from the REQ").isEqualTo(7);
            assertThat(cq.maxRdAtomic).as("client initiator 16, server responder 16").isEqualTo(16);
            assertThat(cq.maxDestRdAtomic).as("client responder 2").isEqualTo(2);
            assertThat(sq.maxRdAtomic).as("server initiator 4, client responder 2").isEqualTo(2);
            assertThat(sq.maxDestRdAtomic).as("server responder 16").isEqualTo(16);
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
     * Two rxe4j peers agree at connection setup on the extensions both devices offer (the REQ's ECE
     * offers, the REP's answers with the intersection; docs/wire.md): with adaptive recovery on both
     * sides each QP knows its peer holds out-of-order requests; with it off on one side neither assumes it.
     */
    @Test
    void theQpsUseTheExtensionsBothDevicesOffer() throws Exception {
        realTime();
        int both = io.rxe4j.verbs.provider.QpOps.EXT_HOLDS_OUT_OF_ORDER
                | io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK;
        CompletableFuture<RdmaConnection> first = acceptAsync(ConnectionParams.defaults());
        try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, server.at(listener.port()));
                RdmaConnection s = first.get(10, TimeUnit.SECONDS)) {
            assertThat(c.qp().core.peerExtensions()).isEqualTo(both);
            assertThat(s.qp().core.peerExtensions()).isEqualTo(both);
        }
        Side rxeMode = new Side(fabric, "10.0.0.3", DeviceConfig.defaults().withAdaptiveRecovery(false));
        others.add(rxeMode);
        try (RdmaListener l3 = RdmaListener.listen(rxeMode.dev, 0)) {
            CompletableFuture<RdmaConnection> accepted = l3.acceptAsync(rxeMode.pd, rxeMode.cq, rxeMode.cq,
                    ConnectionParams.defaults());
            try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, rxeMode.at(l3.port()));
                    RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
                assertThat(c.qp().core.localExtensions()).isEqualTo(both);
                assertThat(c.qp().core.peerExtensions()).as("the server's device does not hold").isZero();
                assertThat(s.qp().core.peerExtensions()).isZero();
            }
        }
    }

    @Test
    void aRequestThatFailsAtTheServerRightAfterConnectDoesNotFailTheAccept() throws Exception {
        realTime();
        // the client's first request may reach the server before its accept completes; a NAKed one moves
        // the server's QP to ERR, which must not turn the accept into an exception (it once did:
        // "illegal QP state transition ERR -> RTS", when the server went to RTS only on the RTU)
        for (int i = 0; i < 10; i++) {
            CompletableFuture<RdmaConnection> accepted = acceptAsync(ConnectionParams.defaults());
            try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, server.at(listener.port()))) {
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

    @ParameterizedTest(name = "the {0} disconnects")
    @ValueSource(strings = {"client", "server"})
    void disconnectMovesBothQpsToErrAndBothSidesSeeIt(String who) throws Exception {
        realTime();
        CompletableFuture<RdmaConnection> accepted = acceptAsync(ConnectionParams.defaults());
        RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, server.at(listener.port()));
        RdmaConnection s = accepted.get(10, TimeUnit.SECONDS);
        boolean byClient = who.equals("client");
        RdmaConnection d = byClient ? c : s;
        RdmaConnection peer = byClient ? s : c;
        Side dSide = byClient ? client : server;
        Side peerSide = byClient ? server : client;
        try {
            assertThat(dSide.awaitEvent(AsyncEventType.ESTABLISHED).qp()).isSameAs(d.qp());
            assertThat(peerSide.awaitEvent(AsyncEventType.ESTABLISHED).qp()).isSameAs(peer.qp());
            peer.qp().postRecv(new RecvWr().set(77, new Sge(peerSide.mr.addr(), 64, peerSide.mr.lkey())));
            d.disconnect(); // returns at once, the DREQ on its way
            assertThat(d.isConnected()).isFalse();
            assertThat(d.qp().state()).isEqualTo(QpState.ERR);
            assertThat(d.qp().errorReason()).isEqualTo("this side disconnected");
            assertThat(peer.awaitDisconnect(Duration.ofSeconds(10))).isTrue();
            assertThat(peer.isConnected()).isFalse();
            assertThat(peer.disconnectReason()).isEqualTo("the peer at " + dSide.dev.address() + " disconnected");
            // the cause is the QP's error reason too, not "modify_qp to ERR"
            assertThat(peer.qp().errorReason()).isEqualTo(peer.disconnectReason());
            assertThat(peer.qp().state()).isEqualTo(QpState.ERR);
            WorkCompletion flushed = peerSide.next();
            assertThat(flushed.wrId).isEqualTo(77);
            assertThat(flushed.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            assertThat(peerSide.awaitEvent(AsyncEventType.DISCONNECTED).qp()).isSameAs(peer.qp());
            AsyncEvent mine = dSide.awaitEvent(AsyncEventType.DISCONNECTED);
            assertThat(mine.qp()).isSameAs(d.qp());
            assertThat(mine.reason()).contains("this side disconnected");
            assertThat(d.awaitDisconnect(Duration.ofSeconds(10))).isTrue();
            assertThat(d.disconnectReason()).isEqualTo("this side disconnected");
            d.disconnect(); // idempotent
            peer.disconnect(); // after the peer's: nothing to do
            assertThat(peer.disconnectReason()).isEqualTo("the peer at " + dSide.dev.address() + " disconnected");
        } finally {
            c.close();
            s.close();
        }
    }

    @Test
    void aRejectedRequestFailsTheConnectWithTheServersPrivateDataAndLeavesNoQp() throws Exception {
        realTime();
        CompletableFuture<Void> rejected = CompletableFuture.runAsync(() -> {
            try {
                ConnectRequest req = listener.getRequest(Duration.ofSeconds(10));
                assertThatThrownBy(() -> req.reject(new byte[ConnectionParams.MAX_REJECT_PRIVATE_DATA + 1]))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 148 bytes");
                assertThatThrownBy(() -> req.reject(null)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("privateData is null");
                req.reject(new byte[] {9, 9}); // still possible after the refused ones
                assertThatThrownBy(() -> req.reject(new byte[0])).isInstanceOf(IllegalStateException.class);
                assertThatThrownBy(() -> req.accept(server.pd, server.cq)).isInstanceOf(IllegalStateException.class);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, server.at(listener.port())))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REJECTED);
                    assertThat(e.privateData()).as("the REJ's whole field").hasSize(148).startsWith(9, 9);
                    assertThat(allZero(e.privateData(), 2)).isTrue();
                });
        rejected.get(10, TimeUnit.SECONDS);
        assertThat(client.pd.qps).as("the failed connect destroyed its QP").isEmpty();
        assertThat(server.pd.qps).as("a reject creates no QP").isEmpty();
        assertThat(client.dev.openObjects()).as("PD, CQ and MR only").isEqualTo(3);
    }

    @Test
    void nothingListeningIsRefused() throws Exception {
        realTime();
        int port = listener.port() == 65535 ? 65534 : listener.port() + 1;
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, server.at(port)))
                .isInstanceOfSatisfying(RdmaCmException.class,
                        e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REFUSED));
        assertThat(client.pd.qps).as("the failed connect destroyed its QP").isEmpty();
        // a closed listener's port is refused too
        int was = listener.port();
        listener.close();
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, server.at(was)))
                .isInstanceOfSatisfying(RdmaCmException.class,
                        e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REFUSED));
    }

    @Test
    void badParametersAreRefusedWithTheirValue() {
        realTime();
        assertThatThrownBy(() -> ConnectionParams.defaults().withRetryCnt(8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryCnt must be 0..7, got 8");
        assertThatThrownBy(() -> ConnectionParams.defaults().withTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout must be positive");
        assertThatThrownBy(() -> RdmaListener.listen(server.dev, 65536))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 65536");
        assertThatThrownBy(() -> RdmaListener.listen(server.dev, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got -1");
        assertThatThrownBy(() -> RdmaListener.listen(server.dev, 0, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("backlog must be 1..4096, got 0");
        assertThatThrownBy(() -> RdmaListener.listen(server.dev, 0, 4097))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 4097");
        assertThatThrownBy(() -> RdmaListener.listen(null, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("device is null");
    }

    @Test
    void connectChecksEveryArgumentBeforeAnyIoAndNamesIt() throws Exception {
        realTime();
        ConnectionParams p = ConnectionParams.defaults();
        CompletionQueue otherCq = server.cq;
        InetSocketAddress to = server.at(listener.port() == 65535 ? 65534 : listener.port() + 1); // REFUSED
        // each would be REFUSED if the REQ were sent first
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
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, server.at(0), p))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("port must be 1..65535, got 0");
        assertThatThrownBy(() -> RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                server.dev.address(), 65536, p, qp -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 65536");
        assertThatThrownBy(() -> RdmaConnection.connectAsync(client.pd, client.cq, client.cq, null, 7471, p,
                qp -> { })).isInstanceOf(IllegalArgumentException.class).hasMessage("peerDevice is null");
        assertThat(client.pd.qps).as("no QP was created").isEmpty();
        // addresses that cannot be used: the future fails UNREACHABLE, no QP is created, nothing thrown
        CompletableFuture<RdmaConnection> unresolved = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                InetSocketAddress.createUnresolved("no.such.host.invalid", 7471), p);
        CompletableFuture<RdmaConnection> v6 = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                new InetSocketAddress("::1", 7471), p);
        for (CompletableFuture<RdmaConnection> f : List.of(unresolved, v6)) {
            assertThat(f).isCompletedExceptionally();
            assertThat(f.handle((c, t) -> t).join()).isInstanceOfSatisfying(RdmaCmException.class,
                    e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.UNREACHABLE));
        }
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq,
                new InetSocketAddress("::1", 7471), p))
                .isInstanceOfSatisfying(RdmaCmException.class,
                        e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.UNREACHABLE));
        assertThat(client.pd.qps).as("no QP was created").isEmpty();
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, to))
                .isInstanceOfSatisfying(RdmaCmException.class, // the real thing
                        e -> assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.REFUSED));
    }

    @Test
    void anAcceptWithABadArgumentFailsBeforeAnsweringAndTheRequestCanStillBeAccepted() throws Exception {
        realTime();
        CompletableFuture<RdmaConnection> connecting = CompletableFuture.supplyAsync(() -> {
            try {
                return RdmaConnection.connect(client.pd, client.cq, server.at(listener.port()));
            } catch (RdmaCmException e) {
                throw new IllegalStateException(e);
            }
        });
        // bad arguments fail before a request is taken
        assertThatThrownBy(() -> listener.accept(server.pd, server.cq, server.cq, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("params is null");
        assertThatThrownBy(() -> listener.acceptAsync(server.pd, server.cq, client.cq, ConnectionParams.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("recvCq");
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
        assertThatThrownBy(() -> req.acceptAsync(client.pd, client.cq, client.cq, ConnectionParams.defaults()))
                .as("a PD of another device than the listener's").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not to the listener's");
        assertThat(server.pd.qps).as("no QP was created").isEmpty();
        assertThat(client.pd.qps).as("only the connecting one").hasSize(1);
        try (RdmaConnection s = req.accept(server.pd, server.cq); RdmaConnection c = connecting.get(10, TimeUnit.SECONDS)) {
            assertThat(s.isConnected()).isTrue();
            assertThat(c.qp().state()).isEqualTo(QpState.RTS);
            assertThat(c.remoteQpNum()).isEqualTo(s.qp().qpNum());
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
        assertThat(ConnectionParams.MAX_CONNECT_PRIVATE_DATA).isEqualTo(56);
        assertThat(ConnectionParams.MAX_ACCEPT_PRIVATE_DATA).isEqualTo(196);
        assertThat(ConnectionParams.MAX_REJECT_PRIVATE_DATA).isEqualTo(148);
    }

    // ------------------------------------------------------------------ virtual time, async API

    @Test
    void onVirtualTimeAConnectionIsReqRepRtuAndAcceptSendsTheWholeAcceptField() {
        virtualTime();
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults()
                .withAcceptPrivateData(new byte[196]));
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults()
                .withPrivateData("hello".getBytes()));
        RdmaConnection cc = done(c);
        RdmaConnection sc = done(s);
        assertThat(seq()).containsExactly(REQ, -REP, RTU);
        assertThat(mads).noneMatch(Mad::dropped);
        assertThat(new String(sc.remotePrivateData(), 0, 5)).isEqualTo("hello");
        assertThat(sc.remotePrivateData()).hasSize(56);
        assertThat(cc.remotePrivateData()).hasSize(196);
        assertThat(cc.isConnected()).isTrue();
        assertThat(sc.isConnected()).isTrue();
        assertThat(cc.remoteQpNum()).isEqualTo(sc.qp().qpNum());
        assertThat(vs.nanoTime()).as("three one-way trips, no retry").isLessThan(MS);
    }

    @Test
    void aLostReqIsResentAndTheConnectionComesUp() {
        virtualTime();
        drop = dropFirst(REQ, 1);
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults());
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        RdmaConnection cc = done(c);
        RdmaConnection sc = done(s);
        assertThat(seq()).containsExactly(REQ, REQ, -REP, RTU);
        assertThat(mads.get(0).dropped()).isTrue();
        assertThat(mads.get(1).at() - mads.get(0).at()).as("rdma_cm's REQ retry period").isEqualTo(REQ_PERIOD);
        assertThat(cc.qp().state()).isEqualTo(QpState.RTS);
        assertThat(sc.qp().state()).isEqualTo(QpState.RTS);
        assertThat(cc.remoteQpNum()).isEqualTo(sc.qp().qpNum());
        // one request only reached the listener
        CompletableFuture<ConnectRequest> more = listener.nextRequest();
        vs.runFor(30_000 * MS);
        assertThat(more).isNotDone();
        more.cancel(false);
    }

    @Test
    void aLostRepIsResentByTheServerAndTheConnectionComesUp() {
        virtualTime();
        drop = dropFirst(-REP, 1);
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults());
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        RdmaConnection cc = done(c);
        RdmaConnection sc = done(s);
        // the server's REP retry (4096 ms) comes before the client's REQ retry (4608 ms)
        assertThat(seq()).containsExactly(REQ, -REP, -REP, RTU);
        assertThat(of(-REP).get(0).dropped()).isTrue();
        assertThat(of(-REP).get(1).at() - of(-REP).get(0).at()).isEqualTo(REP_PERIOD);
        assertThat(cc.isConnected()).isTrue();
        assertThat(sc.isConnected()).isTrue();
        assertThat(cc.qp().state()).isEqualTo(QpState.RTS);
        assertThat(sc.qp().state()).isEqualTo(QpState.RTS);
        vs.runFor(30_000 * MS);
        assertThat(seq()).as("nothing more: the client's REQ retries stopped with the REP").hasSize(4);
    }

    @Test
    void aLostRtuIsRecoveredByTheRepRetryAndTheClientMayWorkMeanwhile() {
        virtualTime();
        drop = dropFirst(RTU, 1);
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults());
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        RdmaConnection cc = done(c);
        assertThat(s).as("the server waits for the RTU").isNotDone();
        // the server's QP is in RTS already: the client's WRITE lands before the accept completes
        client.mr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0x1122334455667788L);
        cc.qp().postSend(new SendWr().rdmaWrite(1, server.mr.addr(), server.mr.rkey(),
                new Sge(client.mr.addr(), 8, client.mr.lkey())).signaled());
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(vs.runUntil(() -> client.cq.poll(wc) == 1, MAX)).isTrue();
        assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
        assertThat(server.mr.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(0x1122334455667788L);
        assertThat(s).isNotDone();
        RdmaConnection sc = done(s);
        // REP, RTU (lost), the REP again at 4096 ms: the client answers it with its RTU again
        assertThat(seq()).containsExactly(REQ, -REP, RTU, -REP, RTU);
        assertThat(of(RTU).get(0).dropped()).isTrue();
        assertThat(of(-REP).get(1).at() - of(-REP).get(0).at()).isEqualTo(REP_PERIOD);
        assertThat(sc.isConnected()).isTrue();
        assertThat(cc.isConnected()).isTrue();
    }

    @Test
    void whenNothingAnswersTheConnectTimesOutAtTheParamsTimeoutAndItsQpIsDestroyed() {
        virtualTime();
        drop = m -> m.fromClient(); // every MAD to the server is lost
        int before = client.dev.openObjects();
        long t0 = vs.nanoTime();
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults()
                .withTimeout(Duration.ofSeconds(7)));
        RdmaCmException e = failure(c);
        assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        assertThat(vs.nanoTime() - t0).as("at params.timeout() of the device's clock").isEqualTo(7_000 * MS);
        vs.runFor(MS); // the REJ leaves QP1
        // the REQ, its retry at 4608 ms, then at the deadline REJ 4 (the destroyed id's goodbye)
        assertThat(seq()).containsExactly(REQ, REQ, REJ);
        assertThat(mads.stream().map(Mad::at).toList()).containsExactly(t0, t0 + REQ_PERIOD, t0 + 7_000 * MS);
        assertThat(new CmMessages.Rej(of(REJ).get(0).mad()).reason()).isEqualTo(IbCm.REJ_TIMEOUT);
        assertThat(client.pd.qps).as("the failed connect destroyed its QP").isEmpty();
        assertThat(client.dev.openObjects()).isEqualTo(before);
        vs.runFor(120_000 * MS);
        assertThat(seq()).as("no retry after the deadline").hasSize(3);
    }

    @Test
    void aClientThatNeverSendsItsRtuFailsTheAcceptWithTimeoutAndTheServerQpIsDestroyed() throws Exception {
        virtualTime();
        drop = m -> m.signed() == RTU; // the client's RTUs never arrive
        CompletableFuture<ConnectRequest> next = listener.nextRequest();
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        ConnectRequest req = done(next);
        int before = server.dev.openObjects();
        CompletableFuture<RdmaConnection> s = req.acceptAsync(server.pd, server.cq, server.cq,
                ConnectionParams.defaults().withTimeout(Duration.ofSeconds(6)));
        RdmaConnection cc = done(c); // the client is connected by the REP
        RdmaCmException e = failure(s);
        assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        long rep0 = of(-REP).get(0).at();
        assertThat(vs.nanoTime() - rep0).as("params.timeout() after the REP").isEqualTo(6_000 * MS);
        vs.runFor(MS); // the REJ leaves QP1
        // REP, RTU (lost), the REP's retry, RTU (lost), then at the deadline REJ 28 (a REP in flight)
        assertThat(seq()).containsExactly(REQ, -REP, RTU, -REP, RTU, -REJ);
        assertThat(new CmMessages.Rej(of(-REJ).get(0).mad()).reason()).isEqualTo(IbCm.REJ_CONSUMER_DEFINED);
        assertThat(server.pd.qps).as("the failed accept destroyed its QP").isEmpty();
        assertThat(server.dev.openObjects()).isEqualTo(before);
        assertThatThrownBy(() -> req.reject(new byte[0])).isInstanceOf(IllegalStateException.class);
        // the client is told by the REJ: its connection ends
        done(cc.disconnected());
        assertThat(cc.isConnected()).isFalse();
        assertThat(cc.qp().state()).isEqualTo(QpState.ERR);
        assertThat(typesFor(client.takeEvents(), cc.qp()))
                .containsExactly(AsyncEventType.ESTABLISHED, AsyncEventType.DISCONNECTED);
    }

    @ParameterizedTest(name = "the {0} disconnects")
    @ValueSource(strings = {"client", "server"})
    void onVirtualTimeADisconnectIsDreqAndDrepAndBothSidesSeeIt(String who) throws Exception {
        virtualTime();
        RdmaConnection[] cs = connectBoth();
        boolean byClient = who.equals("client");
        RdmaConnection d = byClient ? cs[0] : cs[1];
        RdmaConnection peer = byClient ? cs[1] : cs[0];
        Side dSide = byClient ? client : server;
        Side peerSide = byClient ? server : client;
        assertThat(typesFor(dSide.takeEvents(), d.qp())).containsExactly(AsyncEventType.ESTABLISHED);
        assertThat(typesFor(peerSide.takeEvents(), peer.qp())).containsExactly(AsyncEventType.ESTABLISHED);
        peer.qp().postRecv(new RecvWr().set(77, new Sge(peerSide.mr.addr(), 64, peerSide.mr.lkey())));
        mads.clear();
        CompletableFuture<Void> down = d.disconnectAsync();
        assertThat(d.isConnected()).isFalse();
        assertThat(d.qp().state()).isEqualTo(QpState.ERR);
        assertThat(down).as("completes with the DREP").isNotDone();
        long t0 = vs.nanoTime();
        done(down);
        done(peer.disconnected());
        assertThat(vs.nanoTime() - t0).as("one round trip, no retry").isLessThan(MS);
        vs.runFor(MS);
        assertThat(seq()).containsExactly(byClient ? DREQ : -DREQ, byClient ? -DREP : DREP);
        assertThat(peer.isConnected()).isFalse();
        assertThat(peer.disconnectReason()).isEqualTo("the peer at " + dSide.dev.address() + " disconnected");
        assertThat(peer.qp().errorReason()).isEqualTo(peer.disconnectReason());
        assertThat(peer.qp().state()).isEqualTo(QpState.ERR);
        assertThat(d.disconnectReason()).isEqualTo("this side disconnected");
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(vs.runUntil(() -> peerSide.cq.poll(wc) == 1, MAX)).isTrue();
        assertThat(wc[0].wrId).isEqualTo(77);
        assertThat(wc[0].status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        List<AsyncEvent> peerEvents = peerSide.takeEvents();
        assertThat(typesFor(peerEvents, peer.qp())).containsExactly(AsyncEventType.DISCONNECTED);
        List<AsyncEvent> mine = dSide.takeEvents();
        assertThat(typesFor(mine, d.qp())).containsExactly(AsyncEventType.DISCONNECTED);
        assertThat(mine.get(0).reason()).contains("this side disconnected");
        d.disconnect(); // idempotent
        vs.runFor(60_000 * MS);
        assertThat(seq()).as("nothing more").hasSize(2);
    }

    /**
     * Closes {@code d} ({@link RdmaDevice#closeAll()}) from another thread, as an application would,
     * while this thread runs the tasks it queues on the loop (without moving the clock).
     */
    private void closeFromAnotherThread(RdmaDevice d) throws Exception {
        CompletableFuture<Void> closer = CompletableFuture.runAsync(d::closeAll);
        while (!closer.isDone()) {
            vs.runUntil(closer::isDone, 0);
            Thread.onSpinWait();
        }
        closer.get();
    }

    @ParameterizedTest(name = "the {0}''s device closes")
    @ValueSource(strings = {"client", "server"})
    void aDeviceThatClosesDisconnectsItsPeers(String who) throws Exception {
        virtualTime();
        RdmaConnection[] cs = connectBoth();
        boolean clientCloses = who.equals("client");
        Side closing = clientCloses ? client : server;
        Side peerSide = clientCloses ? server : client;
        RdmaConnection peer = clientCloses ? cs[1] : cs[0];
        peer.qp().postRecv(new RecvWr().set(5, new Sge(peerSide.mr.addr(), 64, peerSide.mr.lkey())));
        peerSide.takeEvents();
        mads.clear();
        long t0 = vs.nanoTime();
        closeFromAnotherThread(closing.dev);
        assertThat(closing.dev.isClosed()).isTrue();
        assertThat(closing.dev.openObjects()).isZero();
        done(peer.disconnected());
        assertThat(vs.nanoTime() - t0).as("told by a DREQ at once, not by the QP's retries").isLessThan(MS);
        assertThat(seq()).as("DREQs from the closing device").isNotEmpty()
                .allMatch(a -> a == (clientCloses ? DREQ : -DREQ) || a == (clientCloses ? -DREP : DREP));
        assertThat(seq().get(0)).isEqualTo(clientCloses ? DREQ : -DREQ);
        assertThat(peer.isConnected()).isFalse();
        assertThat(peer.disconnectReason()).isEqualTo("the peer at " + closing.dev.address() + " disconnected");
        assertThat(peer.qp().state()).isEqualTo(QpState.ERR);
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(vs.runUntil(() -> peerSide.cq.poll(wc) == 1, MAX)).isTrue();
        assertThat(wc[0].status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(typesFor(peerSide.takeEvents(), peer.qp())).containsExactly(AsyncEventType.DISCONNECTED);
        if (!clientCloses) {
            assertThat(listener.nextRequest()).as("the listener of a closed device is closed")
                    .isCompletedExceptionally();
        }
    }

    @ParameterizedTest(name = "the {0}''s device closes on its loop thread")
    @ValueSource(strings = {"client", "server"})
    void aDeviceClosedOnItsOwnLoopThreadStillSendsItsDreqs(String who) throws Exception {
        virtualTime();
        RdmaConnection[] cs = connectBoth();
        boolean clientCloses = who.equals("client");
        Side closing = clientCloses ? client : server;
        RdmaConnection peer = clientCloses ? cs[1] : cs[0];
        mads.clear();
        closing.dev.closeAll(); // this thread runs the virtual loop: the DREQ is queued while QP1 closes
        assertThat(closing.dev.isClosed()).isTrue();
        done(peer.disconnected());
        assertThat(seq()).as("the closing device's DREQ left before its QP1 was destroyed").isNotEmpty();
        assertThat(seq().get(0)).isEqualTo(clientCloses ? DREQ : -DREQ);
        assertThat(peer.disconnectReason()).isEqualTo("the peer at " + closing.dev.address() + " disconnected");
        assertThat(peer.qp().state()).isEqualTo(QpState.ERR);
    }

    @Test
    void aRequestTheClientWithdrawsWhileQueuedIsForgottenAndItsAcceptFailsWithoutAnyReply() {
        virtualTime();
        CompletableFuture<ConnectRequest> next = listener.nextRequest();
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults().withTimeout(Duration.ofSeconds(3)));
        ConnectRequest req = done(next); // queued in the listener, nobody answers it
        RdmaCmException ce = failure(c);
        assertThat(ce.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        vs.runFor(MS); // the client's REJ 4 reaches the server
        assertThat(seq()).containsExactly(REQ, REJ);
        assertThat(new CmMessages.Rej(of(REJ).get(0).mad()).reason()).isEqualTo(IbCm.REJ_TIMEOUT);
        int before = server.dev.openObjects();
        CompletableFuture<RdmaConnection> s = req.acceptAsync(server.pd, server.cq, server.cq,
                ConnectionParams.defaults());
        RdmaCmException se = failure(s);
        assertThat(se.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        assertThat(se).hasMessageContaining("withdrew its request (REJ reason 4)").hasMessageContaining("gave up")
                .hasMessageNotContaining("did not complete");
        vs.runFor(60_000 * MS);
        assertThat(seq()).as("no REP, no REJ for a forgotten request").containsExactly(REQ, REJ);
        assertThat(server.pd.qps).as("the failed accept destroyed its QP").isEmpty();
        assertThat(server.dev.openObjects()).isEqualTo(before);
    }

    @Test
    void aFullBacklogLeavesTheReqUnansweredAndCountsItAndItsResentReqConnects() {
        virtualTime();
        listener.close();
        listener = RdmaListener.listen(server.dev, 7472, 1);
        ConnectionParams p = ConnectionParams.defaults().withTimeout(Duration.ofSeconds(20));
        QueuePair[] qps = new QueuePair[2];
        long t0 = vs.nanoTime();
        CompletableFuture<RdmaConnection> c1 = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                server.dev.address(), 7472, p, qp -> qps[0] = qp);
        CompletableFuture<RdmaConnection> c2 = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                server.dev.address(), 7472, p, qp -> qps[1] = qp);
        vs.runFor(1_000 * MS);
        assertThat(listener.droppedRequests()).as("the second REQ found the backlog full").isEqualTo(1);
        assertThat(seq()).as("no REJ: the client resends").containsExactly(REQ, REQ);
        vs.runUntil(() -> false, 5_000 * MS - (vs.nanoTime() - t0));
        // at 4608 ms both resent: the first's is a duplicate of a queued request, the second's is dropped again
        assertThat(listener.droppedRequests()).isEqualTo(2);
        assertThat(c1).isNotDone();
        assertThat(c2).isNotDone();
        // the queued request is taken: the backlog drains
        RdmaConnection s1 = done(acceptAsync(ConnectionParams.defaults()));
        RdmaConnection k1 = done(c1);
        assertThat(s1.remoteQpNum()).isEqualTo(qps[0].qpNum());
        assertThat(c2).isNotDone();
        // the second's next retry, at 9216 ms, is queued and accepted
        RdmaConnection s2 = done(acceptAsync(ConnectionParams.defaults()));
        RdmaConnection k2 = done(c2);
        assertThat(vs.nanoTime() - t0).isGreaterThanOrEqualTo(2 * REQ_PERIOD).isLessThan(2 * REQ_PERIOD + MS);
        assertThat(s2.remoteQpNum()).isEqualTo(qps[1].qpNum());
        assertThat(k1.isConnected()).isTrue();
        assertThat(k2.isConnected()).isTrue();
        assertThat(listener.droppedRequests()).isEqualTo(2);
        List<Integer> reqQpns = of(REQ).stream().map(m -> new CmMessages.Req(m.mad()).localQpn()).toList();
        assertThat(reqQpns).containsExactly(qps[0].qpNum(), qps[1].qpNum(), qps[0].qpNum(), qps[1].qpNum(),
                qps[1].qpNum());
        assertThat(of(-REJ)).as("nothing was rejected").isEmpty();
    }

    @Test
    void aThousandConcurrentConnectsToABusyListenerAllCompleteWithABoundedBacklogAndTable() throws Exception {
        virtualTime();
        int n = 1000;
        int backlog = 128;
        RdmaListener busy = RdmaListener.listen(server.dev, 7480, backlog);
        ConnectionParams p = ConnectionParams.defaults().withCaps(new QpCaps(2, 2, 1, 1, 0))
                .withTimeout(Duration.ofMinutes(5));
        int serverObjects = server.dev.openObjects();
        drop = m -> false;
        List<CompletableFuture<RdmaConnection>> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) { // all at once, from one device
            clients.add(RdmaConnection.connectAsync(client.pd, client.cq, client.cq, server.dev.address(), 7480, p,
                    qp -> { }));
        }
        IbCm serverCm = IbCm.of(server.dev);
        List<CompletableFuture<RdmaConnection>> servers = new ArrayList<>();
        long t0 = vs.nanoTime();
        int mostIds = 0;
        while (servers.size() < n || !clients.stream().allMatch(CompletableFuture::isDone)) {
            assertThat(vs.nanoTime() - t0).as("all connected within 5 min of virtual time; %d accepted, %d dropped",
                    servers.size(), busy.droppedRequests()).isLessThan(TimeUnit.MINUTES.toNanos(5));
            vs.runFor(MS);
            ConnectRequest r = busy.getRequest(Duration.ZERO); // a busy server: one request per millisecond
            if (r != null) {
                servers.add(r.acceptAsync(server.pd, server.cq, server.cq, p));
            }
            int ids = serverCm.idCount(); // (this thread runs the virtual loop)
            mostIds = Math.max(mostIds, ids);
            assertThat(ids).as("the server's CM holds the accepted connections and at most the backlog")
                    .isLessThanOrEqualTo(servers.size() + backlog);
        }
        assertThat(busy.droppedRequests()).as("the backlog was full at times: REQs left for the client's retry")
                .isPositive();
        java.util.Set<Integer> clientQpns = new java.util.HashSet<>();
        for (CompletableFuture<RdmaConnection> c : clients) {
            assertThat(c).isCompleted();
            assertThat(c.join().isConnected()).isTrue();
            clientQpns.add(c.join().qp().qpNum());
        }
        vs.runFor(MS);
        java.util.Set<Integer> servedQpns = new java.util.HashSet<>();
        for (CompletableFuture<RdmaConnection> s : servers) {
            assertThat(s).isCompleted();
            servedQpns.add(s.join().remoteQpNum());
        }
        assertThat(servedQpns).as("each client QP is served once").isEqualTo(clientQpns);
        assertThat(server.dev.openObjects()).as("a connection and its QP each, nothing else")
                .isEqualTo(serverObjects + 2 * n);
        assertThat(mostIds).isLessThanOrEqualTo(n + backlog);
        // the client's device closes: every server connection is told by a DREQ (QP1's queue and retries)
        mads.clear();
        closeFromAnotherThread(client.dev);
        assertThat(vs.runUntil(() -> servers.stream().allMatch(s -> !s.join().isConnected()), MAX))
                .as("every server connection disconnected").isTrue();
        busy.close();
    }

    @ParameterizedTest(name = "RTU lost: {0}")
    @ValueSource(booleans = {false, true})
    void establishedIsRaisedBeforeDisconnectedWhenTheDreqFollowsTheRtu(boolean rtuLost) throws Exception {
        virtualTime();
        if (rtuLost) {
            drop = m -> m.signed() == RTU;
        }
        CompletableFuture<RdmaConnection> s = acceptAsync(ConnectionParams.defaults());
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        RdmaConnection cc = done(c);
        assertThat(s).isNotDone();
        cc.disconnect(); // right behind the RTU
        long t0 = vs.nanoTime();
        RdmaConnection sc = done(s);
        done(sc.disconnected());
        assertThat(vs.nanoTime() - t0).as("the DREQ proves the connection: no wait for the REP's retry")
                .isLessThan(MS);
        vs.runFor(MS); // the DREP leaves QP1
        assertThat(seq()).containsExactly(REQ, -REP, RTU, DREQ, -DREP);
        assertThat(of(RTU).get(0).dropped()).isEqualTo(rtuLost);
        assertThat(typesFor(server.takeEvents(), sc.qp()))
                .containsExactly(AsyncEventType.ESTABLISHED, AsyncEventType.DISCONNECTED);
        assertThat(sc.qp().state()).isEqualTo(QpState.ERR);
        vs.runFor(60_000 * MS);
        assertThat(of(-REP)).as("no REP retry after the DREQ").hasSize(1);
    }

    @Test
    void portsAreOfTheDeviceAndZeroPicksAFreeOne() throws Exception {
        virtualTime();
        assertThat(listener.port()).isEqualTo(7471);
        assertThat(listener.device()).isSameAs(server.dev);
        assertThatThrownBy(() -> RdmaListener.listen(server.dev, 7471)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("7471");
        try (RdmaListener onClient = RdmaListener.listen(client.dev, 7471);
                RdmaListener any1 = RdmaListener.listen(server.dev, 0);
                RdmaListener any2 = RdmaListener.listen(server.dev, 0)) {
            assertThat(onClient.port()).as("another device's port space").isEqualTo(7471);
            assertThat(any1.port()).isBetween(32768, 60999).isNotEqualTo(7471);
            assertThat(any2.port()).isBetween(32768, 60999).isNotEqualTo(any1.port());
            assertThatThrownBy(() -> RdmaListener.listen(server.dev, any1.port()))
                    .isInstanceOf(IllegalStateException.class);
            CompletableFuture<RdmaConnection> s = any2.acceptAsync(server.pd, server.cq, server.cq,
                    ConnectionParams.defaults());
            CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                    server.at(any2.port()), ConnectionParams.defaults());
            assertThat(done(c).remoteQpNum()).isEqualTo(done(s).qp().qpNum());
            CompletableFuture<ConnectRequest> none = listener.nextRequest();
            CompletableFuture<ConnectRequest> none1 = any1.nextRequest();
            assertThat(none).as("the other listeners got nothing").isNotDone();
            assertThat(none1).isNotDone();
            none.cancel(false);
            none1.cancel(false);
        }
        // a closed listener's port is free again, and refused meanwhile
        listener.close();
        RdmaCmException refused = failure(connectAsync(ConnectionParams.defaults()));
        assertThat(refused.reason()).isEqualTo(RdmaCmException.Reason.REFUSED);
        assertThat(new CmMessages.Rej(of(-REJ).get(0).mad()).reason()).isEqualTo(IbCm.REJ_INVALID_SERVICE_ID);
        listener = RdmaListener.listen(server.dev, 7471);
        assertThat(listener.port()).isEqualTo(7471);
    }

    @Test
    void closingAListenerRejectsTheRequestsItHoldsAndFailsItsTakers() {
        virtualTime();
        CompletableFuture<RdmaConnection> c = connectAsync(ConnectionParams.defaults());
        vs.runFor(MS);
        assertThat(seq()).containsExactly(REQ);
        listener.close();
        RdmaCmException e = failure(c);
        assertThat(e.reason()).as("REJ 28 for a request not taken").isEqualTo(RdmaCmException.Reason.REJECTED);
        assertThat(new CmMessages.Rej(of(-REJ).get(0).mad()).reason()).isEqualTo(IbCm.REJ_CONSUMER_DEFINED);
        assertThat(client.pd.qps).isEmpty();
        CompletableFuture<ConnectRequest> after = listener.nextRequest();
        assertThat(after).isCompletedExceptionally();
        assertThat(failure(after).reason()).isEqualTo(RdmaCmException.Reason.CLOSED);
        // a taker waiting when the listener closes fails CLOSED too
        RdmaListener other = RdmaListener.listen(server.dev, 7472);
        CompletableFuture<RdmaConnection> waiting = other.acceptAsync(server.pd, server.cq, server.cq,
                ConnectionParams.defaults());
        other.close();
        assertThat(failure(waiting).reason()).isEqualTo(RdmaCmException.Reason.CLOSED);
    }

    /** The blocking forms wait on the real clock: on virtual time they time out and say why. */
    @Test
    void aBlockingConnectOnVirtualTimeTimesOutNamingTheClock() {
        virtualTime();
        assertThatThrownBy(() -> RdmaConnection.connect(client.pd, client.cq, client.cq, server.at(7471),
                ConnectionParams.defaults().withTimeout(Duration.ofMillis(200))))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
                    assertThat(e.getMessage()).contains("virtual time");
                });
        assertThat(client.pd.qps).as("the given-up connect destroyed its QP").isEmpty();
        vs.runFor(60_000 * MS);
        CompletableFuture<ConnectRequest> next = listener.nextRequest();
        assertThat(next).as("the given-up connect left no request at the server").isNotDone();
        next.cancel(false);
        assertThat(seq()).as("cancelled before its loop task ran: no REQ went out").isEmpty();
        assertThat(client.pd.qps).isEmpty();
    }

    @Test
    void aBlockingAcceptOnVirtualTimeFailsNamingTheClockInsteadOfWaitingForever() {
        virtualTime();
        assertThatThrownBy(() -> listener.accept(server.pd, server.cq, server.cq,
                ConnectionParams.defaults().withTimeout(Duration.ofMillis(200))))
                .isInstanceOfSatisfying(RdmaCmException.class, e -> {
                    assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
                    assertThat(e.getMessage()).contains("no connect request within PT0.2S", "virtual time");
                });
        assertThat(server.pd.qps).isEmpty();
    }

    @Test
    void aConnectToAPortNothingAnswersAt4791NamesTheExplicitDeviceForm() {
        virtualTime();
        // the short form assumes the server's device at UDP 4791; here nothing is at 10.0.0.9
        CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                new InetSocketAddress("10.0.0.9", 7471), ConnectionParams.defaults().withTimeout(Duration.ofSeconds(2)));
        RdmaCmException e = failure(c);
        assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        assertThat(e).hasMessageContaining("did not complete the exchange within PT2S")
                .hasMessageContaining("nothing has ever answered at UDP 4791 of 10.0.0.9")
                .hasMessageContaining("serverDevice.address()");
    }

    @Test
    void aConnectToAServerThatAnsweredBeforeGetsNoPortHintWhenItsMadsAreLost() {
        virtualTime();
        RdmaConnection[] first = connectBoth(); // the CM has heard from 10.0.0.1:4791
        drop = m -> !m.fromClient(); // now everything from the server is lost
        // the short form, as in the test above, but 10.0.0.1:4791 has answered before
        CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(client.pd, client.cq, client.cq,
                new InetSocketAddress(SERVER.getAddress(), listener.port()),
                ConnectionParams.defaults().withTimeout(Duration.ofSeconds(6)));
        acceptAsync(ConnectionParams.defaults());
        RdmaCmException e = failure(c);
        assertThat(e.reason()).isEqualTo(RdmaCmException.Reason.TIMEOUT);
        assertThat(e).hasMessageContaining("did not complete the exchange within PT6S")
                .hasMessageNotContaining("answered at UDP 4791")
                .hasMessageNotContaining("serverDevice.address()");
        first[0].close();
        first[1].close();
    }
}
