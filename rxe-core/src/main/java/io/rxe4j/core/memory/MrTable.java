package io.rxe4j.core.memory;

/**
 * The device's MR key table. A key is {@code index << 8 | key8} ({@code rxe-facts.md} §6.4):
 * indices run from 1, so key 0 is never valid; the 8-bit part is drawn from a seeded generator
 * and differs from the previous key at the same index.
 *
 * <p>Registration and deregistration run on user threads (synchronized); lookup runs on the
 * device loops and is lock-free ({@link KeyTable}).
 */
public final class MrTable {
    /** Largest MR index: 2^19, as rdma_rxe ({@code RXE_MAX_MR}); indices above it name memory windows. */
    public static final int MAX_MR_INDEX = 1 << 19;

    private final KeyTable<RxeMr> slots;
    private final MwTable windows;

    /**
     * @param capacity maximum number of MRs (indices 1..capacity)
     * @param seed seed for the 8-bit key parts
     */
    public MrTable(int capacity, long seed) {
        this(capacity, seed, 1);
    }

    /**
     * @param capacity maximum number of MRs (indices 1..capacity)
     * @param seed seed for the 8-bit key parts
     * @param mwCapacity maximum number of memory windows ({@link MwTable})
     */
    public MrTable(int capacity, long seed, int mwCapacity) {
        if (capacity < 1 || capacity > MAX_MR_INDEX) {
            throw new IllegalArgumentException("MR table capacity must be 1..2^19, got " + capacity);
        }
        this.slots = new KeyTable<>("MR", 0, capacity, seed);
        this.windows = new MwTable(mwCapacity, seed ^ 0x6D77L);
    }

    /** A factory that builds the MR once its key is known. */
    @FunctionalInterface
    public interface MrFactory {
        /** @return the MR carrying {@code key} */
        RxeMr create(int key);
    }

    /**
     * Allocates a key and stores the MR built for it.
     *
     * @throws IllegalStateException when the table is full
     */
    public RxeMr register(MrFactory factory) {
        return slots.add(factory::create);
    }

    /** Removes the MR from the table and invalidates it; later lookups of its key fail. */
    public void unregister(RxeMr mr) {
        mr.invalidate();
        slots.remove(mr.lkey(), mr);
    }

    /**
     * @param key an lkey or rkey
     * @return the valid MR with exactly this key, or null
     */
    public RxeMr lookup(int key) {
        if (MwTable.isWindowKey(key)) {
            return null;
        }
        RxeMr mr = slots.at(key);
        if (mr == null || mr.lkey() != key || !mr.isValid()) {
            return null;
        }
        return mr;
    }

    /** @return the device's memory windows, whose rkeys this table resolves too ({@link #remote}) */
    public MwTable windows() {
        return windows;
    }

    /**
     * Resolves an rkey a request carries ({@code rxe_resp.c:check_rkey}): an MR's rkey, or a memory
     * window's ({@code verbs-surface-facts.md} §5.5, with the window's own bounds checked).
     *
     * @param pd the PD of the QP the request arrived on
     * @param qpn that QP's number (a type 2B window answers only the QP it is bound to)
     * @param va first virtual address the request names
     * @param len bytes, {@code >= 0}
     * @param access the {@link io.rxe4j.verbs.Access} bits the request needs
     * @return the MR whose memory holds {@code [va, va + len)}, or null when the access is refused
     *     (NAK 0x62)
     */
    public RxeMr remote(int rkey, RxePd pd, int qpn, long va, long len, int access) {
        if (MwTable.isWindowKey(rkey)) {
            RxeMw mw = windows.lookup(rkey);
            return mw == null ? null : mw.grant(rkey, pd, qpn, va, len, access);
        }
        RxeMr mr = lookup(rkey);
        return mr != null && mr.pd() == pd && mr.allows(va, len, access) ? mr : null;
    }

    /**
     * Why {@link #remote} refused an access, for the error reason of the QP that NAKs it (an error
     * path only: it allocates).
     *
     * @return a sentence naming the check that failed
     */
    public String whyRefused(int rkey, RxePd pd, int qpn, long va, long len, int access) {
        if (MwTable.isWindowKey(rkey)) {
            RxeMw mw = windows.lookup(rkey);
            return mw == null ? "no memory window with rkey 0x" + Integer.toHexString(rkey)
                    : mw.whyRefused(rkey, pd, qpn, va, len, access);
        }
        RxeMr mr = slots.at(rkey);
        if (mr == null || mr.lkey() != rkey) {
            return "no MR with rkey 0x" + Integer.toHexString(rkey) + " (never registered, or a stale key)";
        }
        if (!mr.isValid()) {
            return mr + " is deregistered";
        }
        if (mr.pd() != pd) {
            return mr + " is not in the QP's " + pd;
        }
        if ((mr.access() & access) != access) {
            return mr + " lacks " + io.rxe4j.verbs.Access.toString(access & ~mr.access());
        }
        return "[0x" + Long.toHexString(va) + ", +" + len + ") is not inside " + mr;
    }

    /** @return the number of registered MRs */
    public int size() {
        return slots.size();
    }
}
