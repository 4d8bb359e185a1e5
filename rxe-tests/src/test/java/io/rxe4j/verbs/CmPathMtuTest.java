package io.rxe4j.verbs;

import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.cm.ConnectionParams;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.inproc.InJvmFabric;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The connection manager's default path MTU is the port's active MTU (issue 19 item 2): 1024 on a
 * link of IP MTU 1500, 4096 on a link without a limit; an explicit {@link ConnectionParams#withPathMtu}
 * still wins, and the smaller offer of the two sides is used ({@link ConnectionParams#withPathMtu}).
 * Over the IB CM: the client's REQ carries its offer; the server takes the smaller of it and its own
 * and, for an rxe4j client, states it in the REP's ECE, so both QPs use the same MTU whichever side
 * offered less.
 */
class CmPathMtuTest {
    /** Connects a client to a server on a fabric of {@code linkMtu} and returns the client's agreed MTU and QP's. */
    private static Mtu[] connect(int linkMtu, ConnectionParams clientParams, ConnectionParams serverParams)
            throws Exception {
        InJvmFabric fabric = InJvmFabric.builder().linkMtu(linkMtu).build();
        try (ConnectionManagerTest.Side server = new ConnectionManagerTest.Side(fabric, "10.0.0.1");
                ConnectionManagerTest.Side client = new ConnectionManagerTest.Side(fabric, "10.0.0.2");
                RdmaListener listener = RdmaListener.listen(server.dev, 0)) {
            CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.accept(server.pd, server.cq, server.cq, serverParams);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            try (RdmaConnection c = RdmaConnection.connect(client.pd, client.cq, client.cq, server.dev.address(),
                    listener.port(), clientParams, qp -> { });
                    RdmaConnection s = accepted.get(10, TimeUnit.SECONDS)) {
                assertThat(s.pathMtu()).isEqualTo(c.pathMtu());
                return new Mtu[] {c.pathMtu(), c.qp().query().pathMtu, s.qp().query().pathMtu,
                        client.dev.queryPort(1).activeMtu()};
            }
        }
    }

    @Test
    void theDefaultIsThePortsActiveMtu() throws Exception {
        assertThat(ConnectionParams.defaults().pathMtu()).as("null: the port's active MTU").isNull();
        assertThat(connect(1500, ConnectionParams.defaults(), ConnectionParams.defaults()))
                .containsExactly(Mtu.MTU_1024, Mtu.MTU_1024, Mtu.MTU_1024, Mtu.MTU_1024);
        assertThat(connect(9000, ConnectionParams.defaults(), ConnectionParams.defaults()))
                .containsExactly(Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_4096);
        assertThat(connect(0, ConnectionParams.defaults(), ConnectionParams.defaults()))
                .containsExactly(Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_4096);
    }

    @Test
    void anExplicitMtuWinsAndTheSmallerOfferIsUsed() throws Exception {
        // the client asks for 512 on a 4096 link: its REQ says 512, the server takes it (all QPs: 512)
        assertThat(connect(9000, ConnectionParams.defaults().withPathMtu(Mtu.MTU_512), ConnectionParams.defaults()))
                .containsExactly(Mtu.MTU_512, Mtu.MTU_512, Mtu.MTU_512, Mtu.MTU_4096);
        // the server asks for 512 on a 4096 link, the client offers its default (4096): the server's smaller
        // value wins, and the client learns it from the REP's ECE
        assertThat(connect(9000, ConnectionParams.defaults(), ConnectionParams.defaults().withPathMtu(Mtu.MTU_512)))
                .containsExactly(Mtu.MTU_512, Mtu.MTU_512, Mtu.MTU_512, Mtu.MTU_4096);
        // the client asks for 4096 on a 1500 link, the server offers its default (its active MTU, 1024): 1024
        assertThat(connect(1500, ConnectionParams.defaults().withPathMtu(Mtu.MTU_4096), ConnectionParams.defaults()))
                .containsExactly(Mtu.MTU_1024, Mtu.MTU_1024, Mtu.MTU_1024, Mtu.MTU_1024);
        ConnectionParams four = ConnectionParams.defaults().withPathMtu(Mtu.MTU_4096);
        assertThat(four.pathMtu()).isEqualTo(Mtu.MTU_4096);
        // both ask for 4096 on a 1500 link: used as given (modify_qp accepts up to max_mtu, as rdma_rxe)
        assertThat(connect(1500, four, four)).containsExactly(Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_4096, Mtu.MTU_1024);
        // the client asks for 2048 above its active MTU, the server for 4096: the smaller, 2048, as given
        assertThat(connect(1500, ConnectionParams.defaults().withPathMtu(Mtu.MTU_2048), four))
                .containsExactly(Mtu.MTU_2048, Mtu.MTU_2048, Mtu.MTU_2048, Mtu.MTU_1024);
    }
}
