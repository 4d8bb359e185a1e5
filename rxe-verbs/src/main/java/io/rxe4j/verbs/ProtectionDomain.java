package io.rxe4j.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * A protection domain ({@code ibv_pd}). Owns the MRs registered, the QPs, address handles, shared
 * receive queues and memory windows created through it; {@link #close()} throws {@link
 * IllegalStateException} while any is open (EBUSY).
 */
public final class ProtectionDomain implements AutoCloseable {
    /** Alignment of memory allocated by {@link #allocMr}: one 4 KiB page. */
    public static final long PAGE = 4096;

    final RdmaDevice device;
    final io.rxe4j.verbs.provider.PdOps core;
    /** Open MRs and QPs, in order of creation (for {@link RdmaDevice#closeAll()}). */
    final Set<MemoryRegion> mrs = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<QueuePair> qps = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<AddressHandle> ahs = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<SharedReceiveQueue> srqs = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<MemoryWindow> mws = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    private volatile boolean closed;

    ProtectionDomain(RdmaDevice device, io.rxe4j.verbs.provider.PdOps core) {
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

    /**
     * Registers a memory-mapped file as a persistent MR (rxe4j's stand-in for pmem; {@code
     * extensions.md} §4). The file is created if missing and grown to {@code length} bytes if
     * shorter; its first {@code length} bytes are mapped read-write and shared, so stores reach the
     * file. Only such MRs accept {@link io.rxe4j.verbs.Access#FLUSH_PERSISTENT}; a FLUSH with
     * persistence forces exactly the flushed range to the storage device before it is acknowledged.
     * The mapping is released when the MR is closed.
     *
     * @param file the backing file
     * @param length bytes to map, {@code >= 1}
     * @param access {@link io.rxe4j.verbs.Access} bits
     * @throws java.io.UncheckedIOException if the file cannot be opened, grown or mapped
     * @throws IllegalArgumentException for a bad length or access combination
     */
    public MemoryRegion registerFileMr(java.nio.file.Path file, long length, int access) {
        if (length < 1) {
            throw new IllegalArgumentException("MR length must be >= 1 byte, got " + length);
        }
        Arena arena = Arena.ofShared();
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.READ,
                java.nio.file.StandardOpenOption.WRITE)) {
            MemorySegment seg = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, length, arena);
            return register(seg, arena, access, io.rxe4j.verbs.spi.Persistence.MAPPED_FILE);
        } catch (java.io.IOException e) {
            arena.close();
            throw new java.io.UncheckedIOException("cannot map " + file + " (" + length + " bytes)", e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Registers caller-owned native memory as a persistent MR whose durability routine the caller
     * supplies (for example a pmem library, or a test that records the order of events).
     *
     * @param persistence makes a range durable; called on the device loop before a FLUSH with
     *     persistence is acknowledged
     * @throws IllegalArgumentException for a heap segment or a bad access combination
     */
    public MemoryRegion registerPersistentMr(MemorySegment segment, int access,
            io.rxe4j.verbs.spi.Persistence persistence) {
        if (persistence == null) {
            throw new IllegalArgumentException("persistence must not be null");
        }
        return register(segment, null, access, persistence);
    }

    private MemoryRegion register(MemorySegment segment, Arena arena, int access) {
        return register(segment, arena, access, null);
    }

    private MemoryRegion register(MemorySegment segment, Arena arena, int access,
            io.rxe4j.verbs.spi.Persistence persistence) {
        checkOpen();
        MemoryRegion mr = new MemoryRegion(this, device.core.registerMr(core, segment, arena, access, persistence));
        mrs.add(mr);
        return mr;
    }

    /**
     * Creates an address handle for UD sends ({@code ibv_create_ah}; {@code verbs-surface-facts.md}
     * §2.5). At most {@link DeviceAttr#maxAh()} may be open in a device.
     *
     * @throws IllegalArgumentException if {@code attr} is null, or its peer's address family is one
     *     the device's transport cannot reach (an IPv6 peer from an IPv4 device and back)
     * @throws IllegalStateException if the PD is closed, or the device has {@link DeviceAttr#maxAh()}
     *     AHs open (ENOMEM)
     */
    public AddressHandle createAh(AhAttr attr) {
        checkOpen();
        if (attr == null) {
            throw new IllegalArgumentException("AH attributes are null");
        }
        java.net.InetAddress local = device.core.address().getAddress();
        if ((local instanceof java.net.Inet6Address) != (attr.peer().getAddress() instanceof java.net.Inet6Address)
                && !local.isAnyLocalAddress()) {
            throw new IllegalArgumentException("AH peer " + attr.peer() + " is not reachable from " + device.core.address()
                    + " (another IP version)");
        }
        int open = device.openAhs();
        if (open >= DeviceAttr.MAX_AH) {
            throw new IllegalStateException(device + " has " + open + " address handles open, the most it allows (ENOMEM)");
        }
        AddressHandle ah = new AddressHandle(this, attr);
        ahs.add(ah);
        return ah;
    }

    /**
     * Creates a shared receive queue ({@code ibv_create_srq}; {@code verbs-surface-facts.md} §4.1).
     *
     * @throws IllegalArgumentException if {@code attr} is null
     * @throws IllegalStateException if the PD is closed
     */
    public SharedReceiveQueue createSrq(SrqInitAttr attr) {
        checkOpen();
        if (attr == null) {
            throw new IllegalArgumentException("SRQ attributes are null");
        }
        SharedReceiveQueue srq = new SharedReceiveQueue(this, device.core.createSrq(core, attr.maxWr(), attr.maxSge(),
                attr.srqLimit()));
        srqs.add(srq);
        return srq;
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}; {@code verbs-surface-facts.md} §5.1, {@code
     * docs/verbs.md} "Memory windows"). A type 1 window is VALID with nothing bound (every access
     * fails until {@link QueuePair#bindMw}); a type 2B window is FREE until a {@link
     * WrOpcode#BIND_MW} WR binds it. At most {@link DeviceAttr#maxMw()} may be open in a device.
     *
     * @throws IllegalArgumentException if {@code type} is null
     * @throws IllegalStateException if the PD is closed, or the device holds {@link DeviceAttr#maxMw()}
     *     windows (ENOMEM)
     */
    public MemoryWindow allocMw(MwType type) {
        checkOpen();
        if (type == null) {
            throw new IllegalArgumentException("memory window type is null (TYPE_1 or TYPE_2B)");
        }
        MemoryWindow mw = new MemoryWindow(this, type, device.core.allocMw(core, type.value()));
        mws.add(mw);
        return mw;
    }

    /** @return the QPs of this PD now (a copy) */
    java.util.List<QueuePair> snapshotQps() {
        synchronized (qps) {
            return new java.util.ArrayList<>(qps);
        }
    }

    /**
     * Creates a queue pair in RESET ({@code ibv_create_qp}): RC, UC or UD ({@code
     * verbs-surface-facts.md} §2, §3; {@code docs/verbs.md}).
     *
     * @throws IllegalArgumentException for CQs of another device, or bad capacities
     */
    public QueuePair createQp(QpInitAttr init) {
        checkOpen();
        if (init.sendCq().device != device || init.recvCq().device != device) {
            throw new IllegalArgumentException("the QP's CQs must belong to " + device);
        }
        init.sendCq().checkOpen();
        init.recvCq().checkOpen();
        SharedReceiveQueue srq = init.srq();
        if (srq != null) {
            srq.checkOpen();
            if (srq.pd() != this) {
                throw new IllegalArgumentException(srq + " belongs to " + srq.pd() + " of " + srq.pd().device()
                        + ", not to " + this + " of " + device);
            }
        }
        QueuePair qp = new QueuePair(this, init, device.core.createQp(core, init.sendCq().core, init.recvCq().core,
                init.caps(), init.sqSigAll(), init.qpType(), srq == null ? null : srq.core));
        qps.add(qp);
        device.qpsByNum.put(qp.qpNum(), qp);
        init.sendCq().users.add(qp);
        init.recvCq().users.add(qp);
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
     * Deallocates the PD ({@code ibv_dealloc_pd}). Idempotent. To close a whole device, children
     * first, see {@link RdmaDevice#closeAll()}.
     *
     * @throws IllegalStateException if an MR or QP of this PD is still open (EBUSY)
     */
    @Override
    public void close() {
        close(false);
    }

    /** As {@link #close()}; {@code force}: even with MRs or QPs open (for {@link RdmaDevice#closeAll()}). */
    synchronized void close(boolean force) {
        if (closed) {
            return;
        }
        if (!force && (!mrs.isEmpty() || !qps.isEmpty() || !ahs.isEmpty() || !srqs.isEmpty() || !mws.isEmpty())) {
            throw new IllegalStateException(core + " still has " + mrs.size() + " MR(s), " + qps.size()
                    + " QP(s), " + ahs.size() + " AH(s), " + srqs.size() + " SRQ(s) and " + mws.size()
                    + " MW(s) open (EBUSY): close them first, or use RdmaDevice.closeAll()");
        }
        closed = true;
        device.pds.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
