package io.rxe4j.examples.quickstart;

import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Two processes over RoCEv2 (UDP), on one host or two:
 *
 * <ul>
 *   <li>{@code TwoProcess server [port [ip [udpPort]]]} binds its RDMA device to UDP {@code ip:udpPort}
 *       (default 4791, RoCEv2's port), listens on rdma_cm port {@code port} of it (default 7471, 0 for
 *       any free one), then prints {@code LISTENING <port>}. {@code ip} must be an address of this
 *       host the client can reach; default 127.0.0.1.
 *   <li>{@code TwoProcess client <host:port> [ip [udpPort]]} connects to the server's device at UDP
 *       {@code host:udpPort} (default 4791) with the IB CM, RDMA WRITEs a message into the buffer the
 *       server advertised, and tells it with the immediate data of the WRITE. Its own device binds to
 *       a free UDP port of {@code ip}; by default of the loopback address if {@code host} is a
 *       loopback address, else of the local address the host's routes use towards {@code host}.
 * </ul>
 *
 * <p>The server prints the message and exits 0 when the client disconnects. Both tear down with
 * {@link RdmaDevice#closeAll()}, which closes the connection, QP, MR, CQ and PD, then the device,
 * whatever failed before. Across hosts: {@code TwoProcess server 7471 10.0.0.1} on one,
 * {@code TwoProcess client 10.0.0.1:7471} on the other (the RoCEv2 packets, the connection manager's
 * included, go between UDP 4791 of the server and the client device's port, so the hosts' firewalls
 * must let that UDP through). If the host runs kernel {@code rdma_rxe}, 4791 is taken: give the
 * server another {@code udpPort}, and the client the same.
 */
public final class TwoProcess {
    static final String MESSAGE = "hello over RoCEv2 from the client";

    private TwoProcess() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args.length <= 4 && args[0].equals("server")) {
            server(args.length > 1 ? Integer.parseInt(args[1]) : 7471,
                    args.length > 2 ? InetAddress.getByName(args[2]) : InetAddress.getLoopbackAddress(),
                    args.length > 3 ? Integer.parseInt(args[3]) : RdmaConnection.ROCE_PORT);
        } else if (args.length >= 2 && args.length <= 4 && args[0].equals("client")) {
            int colon = args[1].lastIndexOf(':');
            if (colon <= 0) {
                usage();
            }
            String host = args[1].substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) { // [v6]:port
                host = host.substring(1, host.length() - 1);
            }
            InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(host),
                    Integer.parseInt(args[1].substring(colon + 1)));
            client(server, args.length > 2 ? InetAddress.getByName(args[2]) : localAddressTowards(server.getAddress()),
                    args.length > 3 ? Integer.parseInt(args[3]) : RdmaConnection.ROCE_PORT);
        } else {
            usage();
        }
    }

    private static void usage() {
        System.err.println("usage: TwoProcess server [port [ip [udpPort]]] | TwoProcess client <host:port> [ip [udpPort]]");
        System.exit(2);
    }

    /** The local address this host's routes use towards {@code remote} (loopback for a loopback address). */
    static InetAddress localAddressTowards(InetAddress remote) throws java.io.IOException {
        if (remote.isLoopbackAddress()) {
            return InetAddress.getLoopbackAddress();
        }
        try (DatagramSocket probe = new DatagramSocket()) {
            probe.connect(remote, 4791); // no packet is sent: this only asks the routing table
            return probe.getLocalAddress();
        }
    }

    static void server(int port, InetAddress ip, int udpPort) throws Exception {
        RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, udpPort)));
        try (RdmaListener listener = RdmaListener.listen(dev, port)) {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(16);
            MemoryRegion buf = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            System.out.println("LISTENING " + listener.port());
            System.out.flush();
            byte[] advert = ByteBuffer.allocate(12).putInt(buf.rkey()).putLong(buf.addr()).array();
            // a WRITE_WITH_IMM consumes a receive WQE: post it before the client is answered
            RdmaConnection conn = listener.accept(pd, cq, cq, ConnectionParams.defaults().withPrivateData(advert),
                    qp -> qp.postRecv(new RecvWr().set(1)));
            WorkCompletion wc = OneJvm.next(cq);
            OneJvm.check(wc, "receive");
            if (wc.opcode != WcOpcode.RECV_RDMA_WITH_IMM) {
                throw new IllegalStateException("expected a WRITE_WITH_IMM, got " + wc);
            }
            byte[] msg = new byte[wc.immData]; // the immediate data carries the length
            MemorySegment.copy(buf.segment(), ValueLayout.JAVA_BYTE, 0, msg, 0, msg.length);
            String text = new String(msg, StandardCharsets.UTF_8);
            System.out.println("server: the client wrote \"" + text + "\"");
            if (!conn.awaitDisconnect(Duration.ofSeconds(30))) {
                throw new IllegalStateException("the client did not disconnect");
            }
            System.out.println("server: " + conn.disconnectReason());
            if (!text.equals(MESSAGE)) {
                throw new IllegalStateException("wrong message");
            }
        } finally {
            dev.closeAll(); // the connection, QP, MR, CQ, PD, then the device: never EBUSY
        }
    }

    static void client(InetSocketAddress server, InetAddress ip, int serverUdpPort) throws Exception {
        RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, 0)));
        try {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(16);
            RdmaConnection conn = RdmaConnection.connect(pd, cq, cq, new InetSocketAddress(server.getAddress(),
                    serverUdpPort), server.getPort(), ConnectionParams.defaults(), qp -> { });
            ByteBuffer peer = ByteBuffer.wrap(conn.remotePrivateData());
            int rkey = peer.getInt();
            long va = peer.getLong();
            byte[] msg = MESSAGE.getBytes(StandardCharsets.UTF_8);
            // inline: the bytes come from a heap array, no MR needed on this side
            conn.qp().postSend(new SendWr().rdmaWriteWithImm(1, va, rkey, msg.length).inline(msg).signaled());
            OneJvm.check(OneJvm.next(cq), "WRITE_WITH_IMM");
            System.out.println("client: wrote " + msg.length + " bytes to " + conn);
        } finally {
            dev.closeAll(); // disconnects first: the server sees it
        }
    }
}
