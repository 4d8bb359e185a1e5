package io.rxe4j.examples.persist;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.examples.Bootstrap;
import io.rxe4j.examples.ConnectionInfo;
import io.rxe4j.examples.RcEndpoint;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;

/**
 * Test-only server process for {@link PersistenceTest}: registers {@code <file>} ({@code <length>}
 * bytes) as a persistent MR, prints {@code READY <tcpPort> <udpPort>} once it accepts the
 * bootstrap connection, connects its QP to the client's, answers {@code READY} on the bootstrap
 * and then serves RDMA until it is killed or the client hangs up.
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
        try (RcEndpoint ep = new RcEndpoint(new InetSocketAddress(ip, 0), 4096, 5);
                ServerSocket ss = new ServerSocket(0, 1, ip)) {
            ep.registerPmem(Path.of(args[0]), Long.parseLong(args[1]));
            System.out.println("READY " + ss.getLocalPort() + " " + ep.info().address().getPort());
            System.out.flush();
            try (Bootstrap boot = new Bootstrap(ss.accept())) {
                ConnectionInfo peer = boot.exchange(ep.info());
                ep.connect(peer, Mtu.MTU_1024);
                boot.send("READY");
                boot.receive(); // blocks: the test kills this process while it waits here
            }
        } catch (IOException clientGone) {
            System.out.println("client hung up: " + clientGone.getMessage());
        }
        System.exit(0);
    }
}
