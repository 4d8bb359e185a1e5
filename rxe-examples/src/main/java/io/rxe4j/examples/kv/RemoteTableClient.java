package io.rxe4j.examples.kv;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.RdmaConnection;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The client of a {@link RemoteTable}: {@link #put}, {@link #get} and {@link #increment} post one
 * RDMA WRITE, READ or FETCH_AND_ADD each and return a future; {@link #progress()} polls the CQ and
 * completes the futures (an application calls it from its own loop, a test while it waits). At
 * most {@code depth} operations are outstanding. Not thread-safe: one thread drives a client.
 */
public final class RemoteTableClient implements AutoCloseable {
    private final RdmaConnection conn;
    private final CompletionQueue cq;
    private final MemoryRegion staging;
    private final long remoteAddr;
    private final int rkey;
    private final int slots;
    private final int slotBytes;
    private final int depth;
    private final Map<Long, Pending> pending = new HashMap<>();
    private final WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
        new WorkCompletion()};
    private long nextId;

    private record Pending(int buffer, CompletableFuture<Object> future, Kind kind) {}

    private enum Kind { PUT, GET, INCREMENT }

    private RemoteTableClient(RdmaConnection conn, ProtectionDomain pd, CompletionQueue cq, byte[] advert, int depth) {
        if (advert.length < RemoteTable.ADVERT_BYTES) {
            throw new IllegalArgumentException("the server's advert has " + advert.length + " bytes, need "
                    + RemoteTable.ADVERT_BYTES);
        }
        ByteBuffer b = ByteBuffer.wrap(advert);
        this.remoteAddr = b.getLong();
        this.rkey = b.getInt();
        this.slots = b.getInt();
        this.slotBytes = b.getInt();
        this.conn = conn;
        this.cq = cq;
        this.depth = depth;
        this.staging = pd.allocMr((long) depth * slotBytes, Access.LOCAL_WRITE);
    }

    /**
     * @param conn a connection whose accept carried the table's {@link RemoteTable#advert()}
     * @param cq the connection's send CQ (polled by {@link #progress()})
     * @param depth most operations outstanding, 1..the QP's send queue
     */
    public static RemoteTableClient open(RdmaConnection conn, ProtectionDomain pd, CompletionQueue cq, int depth) {
        return new RemoteTableClient(conn, pd, cq, conn.remotePrivateData(), depth);
    }

    /** @return slots in the table */
    public int slots() {
        return slots;
    }

    /** Writes {@code value} (at most a slot, the rest of the slot unchanged) to slot {@code i}. */
    public CompletableFuture<Void> put(int i, byte[] value) {
        if (value.length > slotBytes) {
            throw new IllegalArgumentException("a slot holds " + slotBytes + " bytes, got " + value.length);
        }
        int buf = buffer();
        MemorySegment.copy(value, 0, staging.segment(), ValueLayout.JAVA_BYTE, (long) buf * slotBytes, value.length);
        long id = nextId++;
        CompletableFuture<Object> f = new CompletableFuture<>();
        pending.put(id, new Pending(buf, f, Kind.PUT));
        conn.qp().postSend(new SendWr().rdmaWrite(id, slotAddr(i), rkey,
                new Sge(staging.addr() + (long) buf * slotBytes, value.length, staging.lkey())).signaled());
        return f.thenApply(x -> null);
    }

    /** Reads slot {@code i} whole. */
    public CompletableFuture<byte[]> get(int i) {
        int buf = buffer();
        long id = nextId++;
        CompletableFuture<Object> f = new CompletableFuture<>();
        pending.put(id, new Pending(buf, f, Kind.GET));
        conn.qp().postSend(new SendWr().rdmaRead(id, slotAddr(i), rkey,
                new Sge(staging.addr() + (long) buf * slotBytes, slotBytes, staging.lkey())).signaled());
        return f.thenApply(byte[].class::cast);
    }

    /** Adds 1 to the 64-bit counter in the first 8 bytes of slot {@code i}; @return the value before */
    public CompletableFuture<Long> increment(int i) {
        int buf = buffer();
        long id = nextId++;
        CompletableFuture<Object> f = new CompletableFuture<>();
        pending.put(id, new Pending(buf, f, Kind.INCREMENT));
        conn.qp().postSend(new SendWr().fetchAndAdd(id, slotAddr(i), rkey, 1,
                new Sge(staging.addr() + (long) buf * slotBytes, 8, staging.lkey())).signaled());
        return f.thenApply(Long.class::cast);
    }

    /** @return operations posted and not completed yet */
    public int outstanding() {
        return pending.size();
    }

    /** Polls the CQ and completes the futures of what completed; @return how many completed */
    public int progress() {
        int n = cq.poll(wcs, wcs.length);
        for (int k = 0; k < n; k++) {
            WorkCompletion wc = wcs[k];
            Pending p = pending.remove(wc.wrId);
            if (p == null) {
                continue;
            }
            if (wc.status != WcStatus.SUCCESS) {
                p.future().completeExceptionally(new IllegalStateException("operation " + wc.wrId + " failed: "
                        + wc.status + " (" + conn.qp().errorReason() + ")"));
                continue;
            }
            long at = (long) p.buffer() * slotBytes;
            p.future().complete(switch (p.kind()) {
                case PUT -> Boolean.TRUE;
                case GET -> staging.segment().asSlice(at, slotBytes).toArray(ValueLayout.JAVA_BYTE);
                case INCREMENT -> staging.segment().get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(
                        java.nio.ByteOrder.nativeOrder()), at);
            });
        }
        return n;
    }

    private long slotAddr(int i) {
        if (i < 0 || i >= slots) {
            throw new IllegalArgumentException("slot must be 0.." + (slots - 1) + ", got " + i);
        }
        return remoteAddr + (long) i * slotBytes;
    }

    /** @return a staging buffer no outstanding operation uses */
    private int buffer() {
        if (pending.size() >= depth) {
            throw new IllegalStateException(depth + " operations outstanding: call progress() first");
        }
        boolean[] used = new boolean[depth];
        for (Pending p : pending.values()) {
            used[p.buffer()] = true;
        }
        for (int b = 0; b < depth; b++) {
            if (!used[b]) {
                return b;
            }
        }
        throw new IllegalStateException("no staging buffer free");
    }

    @Override
    public void close() {
        staging.close();
    }
}
