package io.rxe4j.core.memory;

import io.rxe4j.verbs.spi.Persistence;
import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A registered memory region ({@code ibv_mr}): a native {@link MemorySegment}, the virtual
 * address range {@code [iova, iova + length)} peers and SGEs name it by, its access flags and its
 * keys. The iova is the segment's native address, as a real HCA would see it.
 *
 * <p>Range checks are written so that no {@code va + length} can overflow: a range that wraps
 * past 2^64 is refused. 64-bit words used by atomics are accessed through a {@link VarHandle}
 * in host byte order (as {@code rdma_rxe}), so they are atomic across QPs and threads.
 *
 * <p>Thread-safety: keys, bounds and access are immutable; {@link #isValid()} is volatile.
 * Data is read and written by the device loop; after {@link #invalidate()} the loop never touches
 * the memory again.
 */
public final class RxeMr implements io.rxe4j.verbs.provider.MrOps {
    /** Host-order, 8-byte-aligned 64-bit word handle: coordinates (MemorySegment, long offset). */
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final RxePd pd;
    private final MemorySegment segment;
    private final Arena arena;
    private final long iova;
    private final long length;
    private final int access;
    private final int lkey;
    private final int rkey;
    private final Persistence persistence;
    private volatile boolean valid = true;
    /** Memory windows bound to this MR now ({@code num_mw}): deregistration is refused while any is. */
    private final java.util.concurrent.atomic.AtomicInteger windows = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * @param pd owning protection domain
     * @param segment native memory; {@code segment.byteSize()} is the MR length in bytes
     * @param arena the arena to close on deregistration, or null if the caller owns the memory
     * @param access {@link Access} bits
     * @param key the lkey/rkey ({@code index << 8 | key8})
     */
    public RxeMr(RxePd pd, MemorySegment segment, Arena arena, int access, int key) {
        this(pd, segment, arena, access, key, null);
    }

    /**
     * @param pd owning protection domain
     * @param segment native memory; {@code segment.byteSize()} is the MR length in bytes
     * @param arena the arena to close on deregistration, or null if the caller owns the memory
     * @param access {@link Access} bits
     * @param key the lkey/rkey ({@code index << 8 | key8})
     * @param persistence how to make ranges durable, or null for ordinary (volatile) memory
     */
    public RxeMr(RxePd pd, MemorySegment segment, Arena arena, int access, int key,
            Persistence persistence) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("MR memory must be a native (off-heap) segment, got " + segment);
        }
        this.pd = pd;
        this.segment = segment;
        this.arena = arena;
        this.iova = segment.address();
        this.length = segment.byteSize();
        this.access = access;
        this.lkey = key;
        this.rkey = key;
        this.persistence = persistence;
    }

    /** @return whether the MR is persistent memory (a memory-mapped file): only then FLUSH_PERSISTENT applies */
    public boolean isPersistent() {
        return persistence != null;
    }

    /**
     * Makes {@code [va, va + len)} durable (FLUSH with placement type persistence). The caller has
     * checked the range.
     *
     * @throws IllegalStateException if the MR is not persistent
     */
    public void persist(long va, long len) {
        if (persistence == null) {
            throw new IllegalStateException(this + " is not persistent memory");
        }
        persistence.force(segment, offset(va), len);
    }

    /** @return the owning PD */
    public RxePd pd() {
        return pd;
    }

    /** @return the memory */
    public MemorySegment segment() {
        return segment;
    }

    /** @return the first virtual address of the region */
    public long iova() {
        return iova;
    }

    /** @return the length in bytes */
    public long length() {
        return length;
    }

    /** @return the {@link Access} flags */
    public int access() {
        return access;
    }

    /** @return the local key */
    public int lkey() {
        return lkey;
    }

    /** @return the remote key (equal to the lkey, as rxe) */
    public int rkey() {
        return rkey;
    }

    /** @return whether the MR is still registered */
    public boolean isValid() {
        return valid;
    }

    /** @return the number of memory windows bound to this MR now */
    public int boundWindows() {
        return windows.get();
    }

    void windowBound() {
        windows.incrementAndGet();
    }

    void windowUnbound() {
        windows.decrementAndGet();
    }

    /** Marks the MR deregistered: every later access check fails. */
    public void invalidate() {
        valid = false;
    }

    /** Releases the memory if the MR owns it. Call only after {@link #invalidate()} on the device loop. */
    public void release() {
        valid = false;
        if (arena != null) {
            arena.close();
        }
    }

    /**
     * Checks that {@code [va, va + len)} lies in this MR, without overflow.
     *
     * @param va virtual address (unsigned 64-bit)
     * @param len length in bytes, {@code >= 0}
     * @return whether the range is inside the MR
     */
    public boolean contains(long va, long len) {
        if (len < 0) {
            return false;
        }
        long off = va - iova;
        return Long.compareUnsigned(va, iova) >= 0 && Long.compareUnsigned(off, length) <= 0 && len <= length - off;
    }

    /**
     * Checks validity, range and rights for an access.
     *
     * @param va virtual address
     * @param len bytes
     * @param required {@link Access} bits all of which must be granted
     * @return whether the access is allowed
     */
    public boolean allows(long va, long len, int required) {
        return valid && (access & required) == required && contains(va, len);
    }

    /** @return the segment offset of {@code va}; the caller has checked the range */
    public long offset(long va) {
        return va - iova;
    }

    /** Atomic compare-and-exchange of the 8-byte word at {@code va}; returns the old value. */
    public long compareAndExchange(long va, long expect, long update) {
        return (long) LONG.compareAndExchange(segment, offset(va), expect, update);
    }

    /** Atomic get-and-add on the 8-byte word at {@code va}; returns the old value. */
    public long getAndAdd(long va, long delta) {
        return (long) LONG.getAndAdd(segment, offset(va), delta);
    }

    /** Volatile read of the 8-byte word at {@code va}. */
    public long getLongVolatile(long va) {
        return (long) LONG.getVolatile(segment, offset(va));
    }

    /** Acquire load of the 8-byte word at {@code va} (pairs with {@link #setLongRelease}). */
    public long getLongAcquire(long va) {
        return (long) LONG.getAcquire(segment, offset(va));
    }

    /**
     * Masked compare-and-swap ({@code extensions.md} §2, {@code rxe-facts.md} §8.2), atomic with
     * respect to every other atomic on the word: if {@code ((compare ^ old) & compareMask) == 0}
     * the word becomes {@code (old & ~swapMask) | (swap & swapMask)}.
     *
     * @return the original value, whether or not it was swapped
     */
    public long maskedCompareAndSwap(long va, long compare, long compareMask, long swap, long swapMask) {
        long off = offset(va);
        long old = (long) LONG.getVolatile(segment, off);
        while (true) {
            if (((compare ^ old) & compareMask) != 0) {
                return old;
            }
            long next = (old & ~swapMask) | (swap & swapMask);
            long witness = (long) LONG.compareAndExchange(segment, off, old, next);
            if (witness == old) {
                return old;
            }
            old = witness;
        }
    }

    /**
     * Masked fetch-and-add ({@code extensions.md} §2): adds {@code add} field by field, where a set
     * bit i of {@code fieldBoundary} marks the top bit of a field (the carry out of bit i is
     * dropped). Atomic with respect to every other atomic on the word (a CAS loop).
     *
     * @return the original value
     */
    public long maskedFetchAndAdd(long va, long add, long fieldBoundary) {
        long off = offset(va);
        long old = (long) LONG.getVolatile(segment, off);
        while (true) {
            long next = fieldAdd(old, add, fieldBoundary);
            long witness = (long) LONG.compareAndExchange(segment, off, old, next);
            if (witness == old) {
                return old;
            }
            old = witness;
        }
    }

    /**
     * Adds {@code b} to {@code a} with the carry out of every bit set in {@code boundary} dropped.
     * Each field (from the bit above the previous boundary up to and including the next boundary
     * bit, the last one up to bit 63) is added on its own and masked, so no carry leaves it.
     * {@code boundary == 0} is a plain 64-bit add.
     *
     * @return the per-field sum
     */
    public static long fieldAdd(long a, long b, long boundary) {
        if (boundary == 0) {
            return a + b;
        }
        // Add each field separately: clear the bits above a field before adding, so no carry leaves it.
        long result = 0;
        int low = 0;
        while (low < 64) {
            long rest = boundary >>> low;
            int high = rest == 0 ? 63 : low + Long.numberOfTrailingZeros(rest); // top bit of this field
            long mask = high == 63 ? -1L << low : ((1L << (high + 1)) - 1) & (-1L << low);
            result |= ((a & mask) + (b & mask)) & mask;
            low = high + 1;
        }
        return result;
    }

    /** Release store of the 8-byte word at {@code va} (ATOMIC WRITE, {@code extensions.md} §3). */
    public void setLongRelease(long va, long value) {
        LONG.setRelease(segment, offset(va), value);
    }

    @Override
    public String toString() {
        return "MR{lkey=0x" + Integer.toHexString(lkey) + ", iova=0x" + Long.toHexString(iova) + ", length=" + length
                + ", access=" + Access.toString(access) + ", " + pd + (valid ? "" : ", deregistered") + '}';
    }
}
