package io.rxe4j.verbs;

/**
 * A memory window ({@code ibv_mw}; {@code verbs-surface-facts.md} §5, {@code docs/verbs.md}
 * "Memory windows"): a remote key for part of an MR, with its own rights, that is granted by a bind
 * and revoked by an unbind (type 1), an invalidation (type 2B) or {@link #close()}, without
 * touching the MR. Peers use {@link #rkey()} with addresses inside the bound range; any access
 * outside it, beyond its rights, through another PD, after a revocation or (type 2B) through
 * another QP gets NAK 0x62 (REM_ACCESS_ERR at the peer's requester).
 *
 * <p>Created by {@link ProtectionDomain#allocMw}. {@link #close()} deallocates it ({@code
 * ibv_dealloc_mw}), bound or not; the MR it was bound to may then be deregistered.
 */
public final class MemoryWindow implements AutoCloseable {
    private final ProtectionDomain pd;
    private final MwType type;
    final io.rxe4j.verbs.provider.MwOps core;
    /** The rkey as {@code ibv_mw.rkey}: set at allocation and when a bind is posted. */
    private volatile int rkey;
    private volatile boolean closed;

    MemoryWindow(ProtectionDomain pd, MwType type, io.rxe4j.verbs.provider.MwOps core) {
        this.pd = pd;
        this.type = type;
        this.core = core;
        this.rkey = core.rkey();
    }

    /**
     * @return the window's rkey as libibverbs' {@code ibv_mw.rkey}: the allocated key, then the key of
     *     the last bind posted ({@link QueuePair#bindMw}, or a {@link SendWr#bindMw} WR), which the
     *     window carries once that bind completes successfully. After a bind fails (MW_BIND_ERR)
     *     the window keeps its old key: {@link #deviceRkey()} tells which.
     */
    public int rkey() {
        return rkey;
    }

    /**
     * {@code ibv_inc_rkey}: the rkey with its low 8 bits (the key part) plus one, modulo 256; the usual
     * new rkey of a bind.
     */
    public static int incRkey(int rkey) {
        return (rkey & ~0xFF) | ((rkey + 1) & 0xFF);
    }

    /** @return the rkey the device holds for the window now (a completed bind's, or the allocated key) */
    public int deviceRkey() {
        return core.rkey();
    }

    void posted(int newRkey) {
        rkey = newRkey;
    }

    /** @return the type */
    public MwType type() {
        return type;
    }

    /** @return the PD */
    public ProtectionDomain pd() {
        return pd;
    }

    /** @return whether {@link #close()} ran */
    public boolean isClosed() {
        return closed;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is deallocated");
        }
    }

    /** Deallocates the window ({@code ibv_dealloc_mw}): its rkey stops working at once. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        pd.device.core.deallocMw(core);
        pd.mws.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
