package app;

import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** Two devices on loopback UDP: the server advertises a buffer, the client connects and WRITEs into it. */
public final class Main {
    public static void main(String[] args) throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (RdmaDevice sdev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(lo, 0)));
                RdmaDevice cdev = RdmaDevice.open(UdpTransport.bind(new InetSocketAddress(lo, 0)))) {
            ProtectionDomain spd = sdev.allocPd();
            CompletionQueue scq = sdev.createCq(16);
            MemoryRegion smr = spd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            RdmaListener listener = RdmaListener.listen(sdev, 0);
            byte[] advert = ByteBuffer.allocate(12).putInt(smr.rkey()).putLong(smr.addr()).array();
            CompletableFuture<RdmaConnection> server = listener.acceptAsync(spd, scq, scq,
                    ConnectionParams.defaults().withPrivateData(advert));
            ProtectionDomain pd = cdev.allocPd();
            CompletionQueue cq = cdev.createCq(16);
            RdmaConnection conn = RdmaConnection.connectAsync(pd, cq, cq, sdev.address(), listener.port(),
                    ConnectionParams.defaults(), qp -> { }).get();
            server.get();
            ByteBuffer peer = ByteBuffer.wrap(conn.remotePrivateData());
            int rkey = peer.getInt();
            long addr = peer.getLong();
            MemoryRegion mr = pd.allocMr(64, Access.LOCAL_WRITE);
            mr.segment().setString(0, "hello from a consumer project");
            WorkCompletion wc = conn.qp().execute(Duration.ofSeconds(10),
                    new SendWr().rdmaWrite(1, addr, rkey, new Sge(mr.addr(), 64, mr.lkey())));
            String got = smr.segment().getString(0);
            System.out.println("WRITE " + wc.status + ", the server's buffer reads: " + got);
            if (!got.equals("hello from a consumer project")) {
                throw new IllegalStateException("wrong data: " + got);
            }
            sdev.closeAll();
            cdev.closeAll();
        }
    }
}
