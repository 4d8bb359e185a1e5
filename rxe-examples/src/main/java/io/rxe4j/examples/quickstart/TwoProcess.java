package io.rxe4j.examples.quickstart;

import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ConnectionParams;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.RdmaConnection;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.RdmaListener;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Two processes over RoCEv2 (UDP): {@code TwoProcess server [port]} listens on TCP {@code port}
 * (default 7471, 0 for any) of 127.0.0.1 and prints {@code LISTENING <port>}; {@code TwoProcess
 * client <host:port>} connects, RDMA WRITEs a message into the buffer the server advertised, and
 * tells it with the immediate data of the WRITE; the server prints the message and exits 0 when
 * the client disconnects.
 */
public final class TwoProcess {
    static final String MESSAGE = "hello over RoCEv2 from the client";

    private TwoProcess() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("server")) {
            server(args.length > 1 ? Integer.parseInt(args[1]) : 7471);
        } else if (args.length == 2 && args[0].equals("client")) {
            int colon = args[1].lastIndexOf(':');
            client(new InetSocketAddress(args[1].substring(0, colon), Integer.parseInt(args[1].substring(colon + 1))));
        } else {
            System.err.println("usage: TwoProcess server [port] | TwoProcess client <host:port>");
            System.exit(2);
        }
    }

    static void server(int port) throws Exception {
        InetAddress ip = InetAddress.getLoopbackAddress();
        try (RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, 0)));
                ProtectionDomain pd = dev.allocPd();
                CompletionQueue cq = dev.createCq(16);
                MemoryRegion buf = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                RdmaListener listener = RdmaListener.listen(new InetSocketAddress(ip, port))) {
            System.out.println("LISTENING " + listener.localAddress().getPort());
            System.out.flush();
            byte[] advert = ByteBuffer.allocate(12).putInt(buf.rkey()).putLong(buf.addr()).array();
            // a WRITE_WITH_IMM consumes a receive WQE: post it before the client is answered
            try (RdmaConnection conn = listener.accept(pd, cq, cq, ConnectionParams.defaults().withPrivateData(advert),
                    qp -> qp.postRecv(new RecvWr().set(1)))) {
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
            }
        }
    }

    static void client(InetSocketAddress server) throws Exception {
        InetAddress ip = InetAddress.getLoopbackAddress();
        try (RdmaDevice dev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(ip, 0)));
                ProtectionDomain pd = dev.allocPd();
                CompletionQueue cq = dev.createCq(16);
                RdmaConnection conn = RdmaConnection.connect(pd, cq, server)) {
            ByteBuffer peer = ByteBuffer.wrap(conn.remotePrivateData());
            int rkey = peer.getInt();
            long va = peer.getLong();
            byte[] msg = MESSAGE.getBytes(StandardCharsets.UTF_8);
            // inline: the bytes come from a heap array, no MR needed on this side
            conn.qp().postSend(new SendWr().rdmaWriteWithImm(1, va, rkey, msg.length).inline(msg).signaled());
            OneJvm.check(OneJvm.next(cq), "WRITE_WITH_IMM");
            System.out.println("client: wrote " + msg.length + " bytes to " + conn);
        } // close(): disconnects, the server sees it
    }
}
