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
 *   <li>{@code TwoProcess server [port [ip]]} listens on TCP {@code port} (default 7471, 0 for any)
 *       of {@code ip} and binds its RDMA device (UDP) to {@code ip} too, then prints {@code
 *       LISTENING <port>}. {@code ip} must be an address of this host the client can reach (the
 *       device's address is what the client's QP sends to); default 127.0.0.1.
 *   <li>{@code TwoProcess client <host:port> [ip]} connects to the server, RDMA WRITEs a message
 *       into the buffer the server advertised, and tells it with the immediate data of the WRITE.
 *       Its device binds to {@code ip}; by default to the loopback address if {@code host} is a
 *       loopback address, else to the local address the host's routes use towards {@code host}.
 * </ul>
 *
 * <p>The server prints the message and exits 0 when the client disconnects. Both tear down with
 * {@link RdmaDevice#closeAll()}, which closes the connection, QP, MR, CQ and PD, then the device,
 * whatever failed before. Across hosts: {@code TwoProcess server 7471 10.0.0.1} on one,
 * {@code TwoProcess client 10.0.0.1:7471} on the other (the RoCEv2 packets go between the two
 * devices' ephemeral UDP ports, so the hosts' firewalls must let UDP through).
 */
public final class TwoProcess {
    static final String MESSAGE = "hello over RoCEv2 from the client";

    private TwoProcess() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args.length <= 3 && args[0].equals("server")) {
            server(args.length > 1 ? Integer.parseInt(args[1]) : 7471,
                    args.length > 2 ? InetAddress.getByName(args[2]) : InetAddress.getLoopbackAddress());
        } else if ((args.length == 2 || args.length == 3) && args[0].equals("client")) {
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
            client(server, args.length > 2 ? InetAddress.getByName(args[2]) : localAddressTowards(server.getAddress()));
        } else {
            usage();
        }
    }

    private static void usage() {
        System.err.println("usage: TwoProcess server [port [ip]] | TwoProcess client <host:port> [ip]");
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

    static void server(int port, InetAddress ip) throws Exception {
        RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, 0)));
        try (RdmaListener listener = RdmaListener.listen(new InetSocketAddress(ip, port))) {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(16);
            MemoryRegion buf = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            System.out.println("LISTENING " + listener.localAddress().getPort());
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

    static void client(InetSocketAddress server, InetAddress ip) throws Exception {
        RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, 0)));
        try {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(16);
            RdmaConnection conn = RdmaConnection.connect(pd, cq, server);
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
