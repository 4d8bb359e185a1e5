package io.rxe4j.verbs;

import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.cm.ConnectionParams;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.net.inproc.InJvmFabric;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Teardown in any order (issue 19, items 5 and 9): many connection-manager connections closed
 * while their peers disconnect, QPs reset or destroyed under a live connection, {@link
 * RdmaDevice#closeAll()} from a state with work in flight, and the EBUSY messages of plain close.
 * No exception may escape a library thread: every test watches the default uncaught-exception
 * handler (the devices' event loops, where the IB CM runs, report there).
 */
class TeardownTest {
    private static final int CONNECTIONS = 128;

    private final List<String> uncaught = new CopyOnWriteArrayList<>();
    private Thread.UncaughtExceptionHandler previous;
    private InJvmFabric fabric;
    private RdmaDevice serverDev;
    private RdmaDevice clientDev;
    private RdmaListener listener;

    @BeforeEach
    void setUp() throws Exception {
        previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(t.getName() + ": " + e));
        fabric = new InJvmFabric();
        serverDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        clientDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        listener = RdmaListener.listen(serverDev, 0); // a free rdma_cm port of the server's device
    }

    @AfterEach
    void tearDown() {
        try {
            listener.close();
            serverDev.closeAll();
            clientDev.closeAll();
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
    }

    /** {@code n} connections from the client device to the server device, one CQ per side. */
    private record Pairs(List<RdmaConnection> client, List<RdmaConnection> server, CompletionQueue clientCq) { }

    private Pairs connect(int n) throws Exception {
        ProtectionDomain spd = serverDev.allocPd();
        CompletionQueue scq = serverDev.createCq(4 * n + 16);
        ProtectionDomain cpd = clientDev.allocPd();
        CompletionQueue ccq = clientDev.createCq(4 * n + 16);
        CompletableFuture<List<RdmaConnection>> accepted = CompletableFuture.supplyAsync(() -> {
            List<RdmaConnection> l = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    long wrId = i;
                    // a receive in each server QP: work outstanding at teardown
                    l.add(listener.accept(spd, scq, scq, ConnectionParams.defaults(), qp -> qp.postRecv(new RecvWr()
                            .set(wrId))));
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return l;
        });
        List<RdmaConnection> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            clients.add(RdmaConnection.connect(cpd, ccq, ccq, serverDev.address(), listener.port(),
                    ConnectionParams.defaults(), qp -> { }));
        }
        return new Pairs(clients, accepted.get(60, TimeUnit.SECONDS), ccq);
    }

    private static void awaitAll(List<RdmaConnection> conns) throws InterruptedException {
        for (RdmaConnection c : conns) {
            assertThat(c.awaitDisconnect(Duration.ofSeconds(20))).as("%s ended", c).isTrue();
        }
    }

    @Test
    void aQpTheApplicationResetStaysInResetWhenThePeerDisconnects() throws Exception {
        Pairs p = connect(1);
        RdmaConnection s = p.server().get(0);
        s.qp().modify(new QpAttr().state(QpState.RESET)); // e.g. to reuse it
        p.client().get(0).disconnect();
        assertThat(s.awaitDisconnect(Duration.ofSeconds(20))).as("the server saw the disconnect; uncaught: %s",
                uncaught).isTrue();
        assertThat(s.qp().state()).as("a QP in RESET is not moved to ERR").isEqualTo(QpState.RESET);
        assertThat(uncaught).isEmpty();
    }

    @Test
    void aQpDestroyedUnderItsConnectionIsNoErrorWhenThePeerDisconnects() throws Exception {
        Pairs p = connect(1);
        RdmaConnection s = p.server().get(0);
        s.qp().close();
        p.client().get(0).disconnect();
        assertThat(s.awaitDisconnect(Duration.ofSeconds(20))).as("uncaught: %s", uncaught).isTrue();
        s.close();
        assertThat(uncaught).isEmpty();
    }

    /** How the server side tears down while every client disconnects at the same time. */
    enum Order {
        /** Each server connection closed ({@code close()}: disconnect, then destroy the QP). */
        CLOSE_CONNECTIONS,
        /** Each server QP destroyed directly, the connection objects closed afterwards. */
        DESTROY_QPS_FIRST,
        /** Each server QP reset (as for reuse), then the connections closed. */
        RESET_QPS_FIRST,
        /** The whole server device at once ({@link RdmaDevice#closeAll()}). */
        CLOSE_ALL
    }

    @ParameterizedTest
    @EnumSource(Order.class)
    void manyConnectionsTearDownCleanlyInAnyOrderWhileThePeerDisconnects(Order order) throws Exception {
        Pairs p = connect(CONNECTIONS);
        CompletableFuture<Void> clients = CompletableFuture.runAsync(() -> p.client().forEach(RdmaConnection::close));
        switch (order) {
            case CLOSE_CONNECTIONS -> p.server().forEach(RdmaConnection::close);
            case DESTROY_QPS_FIRST -> {
                p.server().forEach(c -> c.qp().close());
                p.server().forEach(RdmaConnection::close);
            }
            case RESET_QPS_FIRST -> {
                p.server().forEach(c -> c.qp().modify(new QpAttr().state(QpState.RESET)));
                p.server().forEach(RdmaConnection::close);
            }
            case CLOSE_ALL -> serverDev.closeAll();
        }
        clients.get(60, TimeUnit.SECONDS);
        awaitAll(p.server());
        awaitAll(p.client());
        clientDev.closeAll();
        serverDev.closeAll();
        assertThat(uncaught).as("exceptions that escaped library threads").isEmpty();
        assertThat(clientDev.openObjects()).isZero();
        assertThat(serverDev.openObjects()).isZero();
    }

    @Test
    void closeAllClosesEverythingFromAStateWithWorkInFlight() throws Exception {
        Pairs p = connect(4);
        ProtectionDomain cpd = p.client().get(0).qp().pd();
        CompletionQueue ccq = clientDev.createCq(64);
        MemoryRegion cmr = cpd.allocMr(1 << 20, Access.LOCAL_WRITE);
        ProtectionDomain spd = p.server().get(0).qp().pd();
        MemoryRegion smr = spd.allocMr(1 << 20, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        QueuePair loose = cpd.createQp(QpInitAttr.rc(ccq, ccq)); // a QP of no connection, in RESET
        CompletionChannel channel = clientDev.createCompletionChannel();
        clientDev.createCq(8, channel);
        List<CompletableFuture<WorkCompletion>> futures = new ArrayList<>();
        p.clientCq().onCompletion(wc -> { }); // the flushed receives (the WRITEs complete their futures)
        for (RdmaConnection c : p.client()) {
            for (int i = 0; i < 16; i++) { // 16 MiB of WRITEs per QP, far more than is sent before closeAll
                futures.add(c.qp().postSendAsync(new SendWr().rdmaWrite(i, smr.addr(), smr.rkey(),
                        new Sge(cmr.addr(), (int) cmr.length(), cmr.lkey()))));
            }
            c.qp().postRecv(new RecvWr().set(99, new Sge(cmr.addr(), 64, cmr.lkey())));
        }
        // 4 connections, 1 PD, 5 QPs, 1 MR, 3 CQs, 1 channel
        assertThat(clientDev.openObjects()).isEqualTo(15);

        assertThatThrownBy(clientDev::close).as("plain close keeps libibverbs' EBUSY")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("EBUSY");
        assertThat(clientDev.isClosed()).isFalse();

        clientDev.closeAll();
        assertThat(clientDev.isClosed()).isTrue();
        assertThat(clientDev.openObjects()).isZero();
        assertThat(cpd.qps).isEmpty();
        assertThat(cpd.mrs).isEmpty();
        assertThat(clientDev.pds).isEmpty();
        assertThat(clientDev.cqs).isEmpty();
        assertThat(loose.state()).isEqualTo(QpState.RESET);
        assertThatThrownBy(clientDev::allocPd).isInstanceOf(IllegalStateException.class);
        for (CompletableFuture<WorkCompletion> f : futures) { // none waits forever: flushed, failed or done
            f.handle((wc, e) -> null).get(20, TimeUnit.SECONDS);
        }
        awaitAll(p.server()); // the peers saw the disconnects
        for (RdmaConnection s : p.server()) {
            assertThat(s.qp().state()).isEqualTo(QpState.ERR);
        }
        clientDev.closeAll(); // idempotent
        serverDev.closeAll();
        assertThat(serverDev.openObjects()).isZero();
        assertThat(uncaught).isEmpty();
    }

    @Test
    void aCqUsedAsSendAndReceiveCqByFourQpsSaysFourQps() {
        ProtectionDomain pd = clientDev.allocPd();
        CompletionQueue cq = clientDev.createCq(16);
        List<QueuePair> qps = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            qps.add(pd.createQp(QpInitAttr.rc(cq, cq)));
        }
        assertThatThrownBy(cq::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("used by 4 QP(s)")
                .hasMessageContaining("0x" + Integer.toHexString(qps.get(0).qpNum()));
        qps.get(0).close();
        assertThatThrownBy(cq::close).hasMessageContaining("used by 3 QP(s)");
        qps.forEach(QueuePair::close);
        cq.close();
        pd.close();
    }
}
