package io.rxe4j.verbs;

import java.lang.foreign.MemorySegment;

/**
 * A registered memory region ({@code ibv_mr}). Its bytes are {@link #segment()}; peers and SGEs
 * name them by virtual address {@code [addr(), addr() + length())}. Closing it deregisters it
 * ({@code ibv_dereg_mr}): later remote accesses get NAK 0x62 (REM_ACCESS_ERR at the requester)
 * and owned memory is freed.
 */
public final class MemoryRegion implements AutoCloseable {
    private final ProtectionDomain pd;
    final io.rxe4j.verbs.provider.MrOps core;
    private volatile boolean closed;

    MemoryRegion(ProtectionDomain pd, io.rxe4j.verbs.provider.MrOps core) {
        this.pd = pd;
        this.core = core;
    }

    /** @return the local key (equal to the rkey, as rxe: {@code index << 8 | key8}) */
    public int lkey() {
        return core.lkey();
    }

    /** @return the remote key peers put in RETH/AtomicETH */
    public int rkey() {
        return core.rkey();
    }

    /** @return the first virtual address (the memory's native address) */
    public long addr() {
        return core.iova();
    }

    /** @return length in bytes */
    public long length() {
        return core.length();
    }

    /** @return the access flags */
    public int access() {
        return core.access();
    }

    /** @return the memory; valid until {@link #close()} */
    public MemorySegment segment() {
        return core.segment();
    }

    /** @return the PD */
    public ProtectionDomain pd() {
        return pd;
    }

    /**
     * Deregisters the MR. Idempotent.
     *
     * @throws IllegalStateException while memory windows are bound to it (rdma_rxe's EINVAL, IBA
     *     10.6.7.2.6; {@code verbs-surface-facts.md} §5.7): unbind, invalidate or close them first
     *     ({@link RdmaDevice#closeAll()} closes windows before MRs)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        pd.device.core.deregisterMr(core);
        closed = true;
        pd.mrs.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
