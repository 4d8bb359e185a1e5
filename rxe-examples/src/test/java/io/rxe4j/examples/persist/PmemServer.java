package io.rxe4j.examples.persist;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.examples.RcEndpoint;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * Test-only server process for {@link PersistenceTest}: registers {@code <file>} ({@code <length>}
 * bytes) as a persistent MR, prints {@code READY <cmPort> <udpPort>} (its listener's rdma_cm port and its device's UDP port),
 * accepts one connection (IB CM) and then serves RDMA until it is killed or the client hangs up.
 *
 * <p>Usage: {@code PmemServer <file> <length>}.
 */
public final class PmemServer {
    private PmemServer() {}

    /** Entry point; exit code 0 when the client hung up, 2 on a usage error. */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: PmemServer <file> <length>");
            System.exit(2);
        }
        InetAddress ip = InetAddress.getLoopbackAddress();
        try (RcEndpoint ep = new RcEndpoint(new InetSocketAddress(ip, 0), 4096);
                RdmaListener listener = ep.listen(0)) {
            ep.registerPmem(Path.of(args[0]), Long.parseLong(args[1]));
            System.out.println("READY " + listener.port() + " " + ep.address().getPort());
            System.out.flush();
            ep.accept(listener, Mtu.MTU_1024, RcEndpoint.DEFAULT_ACK_TIMEOUT, qp -> { });
            // blocks: the test kills this process while it waits here
            ep.connection().awaitDisconnect(java.time.Duration.ofDays(1));
            System.out.println("client hung up: " + ep.connection().disconnectReason());
        }
        System.exit(0);
    }
}
