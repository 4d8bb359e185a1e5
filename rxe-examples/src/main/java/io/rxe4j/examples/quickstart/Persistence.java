package io.rxe4j.examples.quickstart;

import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WorkCompletion;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * Persistence with RDMA FLUSH: the server registers a file as a persistent MR ({@link
 * ProtectionDomain#registerFileMr}); the client RDMA WRITEs a record into it and then FLUSHes the
 * range with {@link Flush#PERSISTENT}. The FLUSH completes only once the record is durable in the
 * file; the program then reads the file back with plain file I/O. {@code Persistence [file]}
 * (default: a temporary file, deleted afterwards).
 */
public final class Persistence {
    private Persistence() {}

    public static void main(String[] args) throws Exception {
        Path file = args.length > 0 ? Path.of(args[0]) : Files.createTempFile("rxe4j-pmem", ".bin");
        InJvmFabric fabric = new InJvmFabric();
        byte[] record = "a durable record".getBytes(StandardCharsets.US_ASCII);
        long offset = 4096;
        RdmaDevice serverDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice clientDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        try (RdmaListener listener = RdmaListener.listen(serverDev, 7471)) {
            ProtectionDomain spd = serverDev.allocPd();
            ProtectionDomain cpd = clientDev.allocPd();
            CompletionQueue scq = serverDev.createCq(16);
            CompletionQueue ccq = clientDev.createCq(16);
            MemoryRegion pmem = spd.registerFileMr(file, 1 << 16,
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.FLUSH_PERSISTENT | Access.FLUSH_GLOBAL);
            byte[] advert = ByteBuffer.allocate(12).putInt(pmem.rkey()).putLong(pmem.addr()).array();
            CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.accept(spd, scq, scq, ConnectionParams.defaults().withPrivateData(advert));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            try (RdmaConnection conn = RdmaConnection.connect(cpd, ccq, new InetSocketAddress("10.0.0.1", listener.port()));
                    RdmaConnection _ = accepted.join()) {
                ByteBuffer peer = ByteBuffer.wrap(conn.remotePrivateData());
                int rkey = peer.getInt();
                long va = peer.getLong();
                // the WRITE is unsignaled: the FLUSH behind it says "placed and durable"
                conn.qp().postSend(new SendWr().rdmaWrite(1, va + offset, rkey).inline(record));
                conn.qp().postSend(new SendWr().flush(2, va + offset, rkey, Flush.PERSISTENT, Flush.RANGE,
                        record.length).signaled());
                WorkCompletion wc = OneJvm.next(ccq);
                OneJvm.check(wc, "FLUSH");
                System.out.println("FLUSH completed: " + wc.opcode + " " + wc.status);
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
        // read the file with plain I/O, as a process started after a crash would
        byte[] onDisk = new byte[record.length];
        try (var ch = java.nio.channels.FileChannel.open(file)) {
            ByteBuffer b = ByteBuffer.wrap(onDisk);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) >= 0) {
                // until full or end of file
            }
        }
        System.out.println("file " + file + " at " + offset + ": \"" + new String(onDisk, StandardCharsets.US_ASCII)
                + "\"");
        if (args.length == 0) {
            Files.deleteIfExists(file);
        }
        if (!Arrays.equals(onDisk, record)) {
            throw new IllegalStateException("the record is not in the file");
        }
        System.out.println("OK");
    }
}
