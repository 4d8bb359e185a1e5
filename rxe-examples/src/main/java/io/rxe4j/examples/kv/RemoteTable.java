package io.rxe4j.examples.kv;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The server side of a small RDMA key-value table, an example application: {@code slots} fixed-size
 * slots in one memory region that clients read and write with RDMA READ and WRITE and whose first
 * 8 bytes they count with FETCH_AND_ADD ({@link RemoteTableClient}); the server's CPU takes no part.
 * The server hands its {@link #advert()} to each client in the accept's private data.
 */
public final class RemoteTable implements AutoCloseable {
    /** Bytes of {@link #advert()}: address 8, rkey 4, slots 4, slot bytes 4, big-endian. */
    public static final int ADVERT_BYTES = 20;

    private final MemoryRegion mr;
    private final int slots;
    private final int slotBytes;

    private RemoteTable(MemoryRegion mr, int slots, int slotBytes) {
        this.mr = mr;
        this.slots = slots;
        this.slotBytes = slotBytes;
    }

    /**
     * @param slots how many slots, at least 1
     * @param slotBytes bytes per slot, a multiple of 8 and at least 8 (the counter)
     * @throws IllegalArgumentException for bad sizes
     */
    public static RemoteTable create(ProtectionDomain pd, int slots, int slotBytes) {
        if (slots < 1 || slotBytes < 8 || slotBytes % 8 != 0) {
            throw new IllegalArgumentException("need slots >= 1 and slotBytes a multiple of 8, got " + slots + " x "
                    + slotBytes);
        }
        MemoryRegion mr = pd.allocMr((long) slots * slotBytes,
                Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC);
        return new RemoteTable(mr, slots, slotBytes);
    }

    /** @return what a client needs: the table's address, rkey and shape ({@value #ADVERT_BYTES} bytes) */
    public byte[] advert() {
        return ByteBuffer.allocate(ADVERT_BYTES).putLong(mr.addr()).putInt(mr.rkey()).putInt(slots).putInt(slotBytes)
                .array();
    }

    /** @return slot {@code i} as the server sees it (a view, not a copy) */
    public MemorySegment slot(int i) {
        return mr.segment().asSlice((long) i * slotBytes, slotBytes);
    }

    @Override
    public void close() {
        mr.close();
    }
}
