package io.rxe4j.core.memory;

/**
 * The device's memory-window key table ({@code verbs-surface-facts.md} §5.1): an MW's rkey is
 * {@code index << 8 | key8} with indices 2^19 + 1 … 2^19 + capacity, above every MR index, so
 * {@link #isWindowKey} tells an MW's rkey from an MR's by its index alone (rdma_rxe's {@code
 * rkey_is_mw}).
 *
 * <p>Allocation and deallocation run on user threads; {@link #lookup} runs on the device loops
 * and is lock-free.
 */
public final class MwTable {
    /** Most memory windows a device holds: 2^19 − 1, as rdma_rxe ({@code RXE_MAX_MW}). */
    public static final int MAX_MW = (1 << 19) - 1;

    private final KeyTable<RxeMw> slots;

    /**
     * @param capacity maximum number of MWs, 1 … {@link #MAX_MW}
     * @param seed seed for the 8-bit key parts
     */
    public MwTable(int capacity, long seed) {
        if (capacity < 1 || capacity > MAX_MW) {
            throw new IllegalArgumentException("MW table capacity must be 1..2^19-1, got " + capacity);
        }
        this.slots = new KeyTable<>("MW", MrTable.MAX_MR_INDEX, capacity, seed);
    }

    /** @return whether {@code key}'s index is in the memory-window range (above 2^19) */
    public static boolean isWindowKey(int key) {
        return (key >>> 8) > MrTable.MAX_MR_INDEX;
    }

    /**
     * Allocates an MW of {@code type} in {@code pd} ({@code ibv_alloc_mw}).
     *
     * @throws IllegalStateException when the table is full (ENOMEM)
     */
    public RxeMw allocate(RxePd pd, RxeMw.Type type) {
        return slots.add(key -> new RxeMw(pd, type, key));
    }

    /** Deallocates {@code mw} ({@code ibv_dealloc_mw}): it is invalidated and its slot freed. */
    public void deallocate(RxeMw mw) {
        mw.deallocate();
        slots.remove(mw.index() << 8, mw);
    }

    /** @return the MW whose index {@code key} names (whatever its 8-bit part: the caller compares keys), or null */
    public RxeMw lookup(int key) {
        return isWindowKey(key) ? slots.at(key) : null;
    }

    /**
     * The QP {@code qpn} is destroyed: every type 2B window bound to it goes back to FREE (IBTA: a
     * destroyed QP's type 2B windows are invalidated), so that a later QP given the same QPN is never
     * granted them. A walk over the table; destroying a QP is rare.
     */
    public void releaseQp(int qpn) {
        slots.forEach(mw -> mw.releaseQp(qpn));
    }

    /** @return the number of allocated MWs */
    public int size() {
        return slots.size();
    }
}
