package io.rxe4j.test;

import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaConnection;

/**
 * Two RC QPs connected through the connection manager ({@link RxeFabric#connect}): the client's
 * and the server's side, each with its device's PD ({@link RxeFabric#pd(int)}) and a CQ (send and
 * receive) the kit made for it. The kit closes both connections after the test; what the test
 * makes in these PDs (MRs, more QPs) it closes itself, or the leak check names it.
 */
public final class ConnectedPair {
    /** One side of the pair. */
    public record Side(RdmaDevice device, ProtectionDomain pd, CompletionQueue cq, RdmaConnection connection) {
        /** @return the side's QP, in RTS */
        public QueuePair qp() {
            return connection.qp();
        }
    }

    private final Side client;
    private final Side server;

    ConnectedPair(Side client, Side server) {
        this.client = client;
        this.server = server;
    }

    /** @return the side that called {@code RdmaConnection.connect} */
    public Side client() {
        return client;
    }

    /** @return the side that accepted, through an {@code RdmaListener} */
    public Side server() {
        return server;
    }

    @Override
    public String toString() {
        return "ConnectedPair{client QP 0x" + Integer.toHexString(client.qp().qpNum()) + " at " + client.device().address()
                + ", server QP 0x" + Integer.toHexString(server.qp().qpNum()) + " at " + server.device().address() + '}';
    }
}
