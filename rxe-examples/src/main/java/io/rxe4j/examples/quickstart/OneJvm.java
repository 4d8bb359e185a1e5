package io.rxe4j.examples.quickstart;

import io.rxe4j.net.inproc.InJvmFabric;
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
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * Two devices in one JVM on the in-JVM fabric (no sockets for the RDMA traffic), connected by the
 * connection manager (the IB CM over each device's QP1, on the same fabric). The server advertises its buffer (rkey, address, length)
 * as private data; the client SENDs a message, WRITEs and READs the server's buffer, and adds to a
 * counter in it with FETCH_AND_ADD. Exits 0 when every result is right.
 */
public final class OneJvm {
    private OneJvm() {}

    public static void main(String[] args) throws Exception {
        InJvmFabric fabric = new InJvmFabric();
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        RdmaDevice serverDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice clientDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        try (RdmaListener listener = RdmaListener.listen(serverDev, 7471)) {
            ProtectionDomain spd = serverDev.allocPd();
            ProtectionDomain cpd = clientDev.allocPd();
            CompletionQueue scq = serverDev.createCq(64);
            CompletionQueue ccq = clientDev.createCq(64);
            MemoryRegion smr = spd.allocMr(4096, access);
            MemoryRegion cmr = cpd.allocMr(4096, access);

            // server: accept one client, advertising its buffer; a receive is posted before the client is answered
            byte[] advert = ByteBuffer.allocate(16).putInt(smr.rkey()).putLong(smr.addr()).array();
            CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.accept(spd, scq, scq, ConnectionParams.defaults().withPrivateData(advert),
                            qp -> qp.postRecv(new RecvWr().set(1, new Sge(smr.addr() + 1024, 1024, smr.lkey()))));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });

            // client: connect; the server's buffer comes back as private data
            try (RdmaConnection conn = RdmaConnection.connect(cpd, ccq, new InetSocketAddress("10.0.0.1", listener.port()));
                    RdmaConnection _ = accepted.join()) {
                ByteBuffer peer = ByteBuffer.wrap(conn.remotePrivateData());
                int rkey = peer.getInt();
                long va = peer.getLong();
                Sge local = new Sge(cmr.addr(), 8, cmr.lkey());

                conn.qp().postSend(new SendWr().send(1).inline("hello".getBytes(StandardCharsets.US_ASCII)).signaled());
                check(next(ccq), "SEND");
                WorkCompletion recv = next(scq);
                check(recv, "RECV");
                byte[] got = new byte[recv.byteLen];
                java.lang.foreign.MemorySegment.copy(smr.segment(), ValueLayout.JAVA_BYTE, 1024, got, 0, got.length);
                System.out.println("server received: " + new String(got, StandardCharsets.US_ASCII));

                cmr.segment().set(ValueLayout.JAVA_LONG, 0, 42);
                conn.qp().postSend(new SendWr().rdmaWrite(2, va, rkey, local).signaled());
                check(next(ccq), "RDMA WRITE");
                conn.qp().postSend(new SendWr().rdmaRead(3, va, rkey, new Sge(cmr.addr() + 8, 8, cmr.lkey())).signaled());
                check(next(ccq), "RDMA READ");
                long read = cmr.segment().get(ValueLayout.JAVA_LONG, 8);
                conn.qp().postSend(new SendWr().fetchAndAdd(4, va, rkey, 8, new Sge(cmr.addr() + 16, 8, cmr.lkey()))
                        .signaled());
                check(next(ccq), "FETCH_AND_ADD");
                long before = cmr.segment().get(ValueLayout.JAVA_LONG, 16);
                long after = smr.segment().get(ValueLayout.JAVA_LONG, 0);
                System.out.printf("WRITE 42, READ %d, FETCH_AND_ADD 8: returned %d, now %d%n", read, before, after);
                if (read != 42 || before != 42 || after != 50) {
                    throw new IllegalStateException("unexpected values");
                }
            }
        } finally {
            // each device's connections, QPs, MRs, CQs and PDs, newest first, then the device: never EBUSY,
            // so an error above does not leave everything open (as closing each in try-with-resources would)
            try {
                clientDev.closeAll();
            } finally {
                serverDev.closeAll();
            }
        }
        System.out.println("OK");
    }

    /** Waits (at most 10 s) for the next completion. */
    static WorkCompletion next(CompletionQueue cq) {
        WorkCompletion[] wc = {new WorkCompletion()};
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no completion within 10 s");
            }
            cq.await(100_000_000L);
        }
        return wc[0];
    }

    static void check(WorkCompletion wc, String what) {
        if (wc.status != WcStatus.SUCCESS) {
            throw new IllegalStateException(what + " failed: " + wc);
        }
    }
}
