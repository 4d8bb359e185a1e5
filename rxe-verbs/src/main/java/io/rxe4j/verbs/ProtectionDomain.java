package io.rxe4j.verbs;

import io.rxe4j.core.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A protection domain ({@code ibv_pd}). Owns the MRs registered and QPs created through it;
 * {@link #close()} throws {@link IllegalStateException} while any is open (EBUSY).
 */
public final class ProtectionDomain implements AutoCloseable {
    /** Alignment of memory allocated by {@link #allocMr}: one 4 KiB page. */
    public static final long PAGE = 4096;

    final RdmaDevice device;
    final io.rxe4j.core.memory.ProtectionDomain core;
    final Set<MemoryRegion> mrs = ConcurrentHashMap.newKeySet();
    final Set<QueuePair> qps = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    ProtectionDomain(RdmaDevice device, io.rxe4j.core.memory.ProtectionDomain core) {
        this.device = device;
        this.core = core;
    }

    /**
     * Allocates {@code length} bytes of zeroed, page-aligned off-heap memory and registers it
     * ({@code ibv_reg_mr} over fresh memory). The MR owns the memory and frees it on close.
     *
     * @param length bytes, {@code >= 1}
     * @param access {@link Access} bits
     * @throws IllegalArgumentException for a bad length or access combination (see
     *     {@link #registerMr})
     */
    public MemoryRegion allocMr(long length, int access) {
        if (length < 1) {
            throw new IllegalArgumentException("MR length must be >= 1 byte, got " + length);
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment seg = arena.allocate(length, PAGE);
            return register(seg, arena, access);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Registers caller-owned native memory ({@code ibv_reg_mr}). The memory must stay alive
     * until the MR is closed.
     *
     * @param segment a native segment; its address is the MR's iova
     * @param access {@link Access} bits; REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE
     * @throws IllegalArgumentException for a heap segment or a bad access combination
     */
    public MemoryRegion registerMr(MemorySegment segment, int access) {
        return register(segment, null, access);
    }

    private MemoryRegion register(MemorySegment segment, Arena arena, int access) {
        checkOpen();
        MemoryRegion mr = new MemoryRegion(this, device.core.registerMr(core, segment, arena, access));
        mrs.add(mr);
        return mr;
    }

    /**
     * Creates an RC queue pair in RESET ({@code ibv_create_qp}).
     *
     * @throws IllegalArgumentException for a non-RC type, CQs of another device, or bad capacities
     */
    public QueuePair createQp(QpInitAttr init) {
        checkOpen();
        if (init.qpType() != io.rxe4j.core.verbs.QpType.RC) {
            throw new IllegalArgumentException("only RC QPs are supported, got " + init.qpType());
        }
        if (init.sendCq().device != device || init.recvCq().device != device) {
            throw new IllegalArgumentException("the QP's CQs must belong to " + device);
        }
        init.sendCq().checkOpen();
        init.recvCq().checkOpen();
        QueuePair qp = new QueuePair(this, init, device.core.createQp(core, init.sendCq().core, init.recvCq().core,
                init.caps(), init.sqSigAll()));
        qps.add(qp);
        init.sendCq().users.incrementAndGet();
        init.recvCq().users.incrementAndGet();
        return qp;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException(core + " is closed");
        }
        device.checkOpen();
    }

    /** @return the device */
    public RdmaDevice device() {
        return device;
    }

    /**
     * Deallocates the PD ({@code ibv_dealloc_pd}). Idempotent.
     *
     * @throws IllegalStateException if an MR or QP of this PD is still open
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (!mrs.isEmpty() || !qps.isEmpty()) {
            throw new IllegalStateException(core + " still has " + mrs.size() + " MR(s) and " + qps.size()
                    + " QP(s) open (EBUSY): close them first");
        }
        closed = true;
        device.pds.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
