package io.rxe4j.core.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Masked atomics ({@code extensions.md} §2, {@code rxe-facts.md} §8.2) checked against reference
 * models written straight from the definitions: a bit-serial ripple adder whose carry into bit
 * i + 1 is dropped when bit i of the field boundary is set, and a bit-by-bit masked
 * compare-and-swap. Every random case is seeded.
 */
class MaskedAtomicsTest {
    private static final int CASES = 100_000;
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_ATOMIC;
    private static final long HALVES_16 = 0x8000_8000_8000_8000L;

    private Arena arena;
    private MemorySegment seg;
    private RxeMr mr;

    @BeforeEach
    void allocate() {
        arena = Arena.ofShared();
        seg = arena.allocate(4096, 4096);
        mr = new RxeMr(null, seg, null, ACCESS, 0x1_01);
    }

    @AfterEach
    void free() {
        arena.close();
    }

    // ------------------------------------------------------------------ reference models

    /** Bit-serial add: sum_i = a_i ^ b_i ^ c_i; carry into i+1 = majority(a_i, b_i, c_i) & !boundary_i. */
    static long refFieldAdd(long a, long b, long boundary) {
        long sum = 0;
        long carry = 0;
        for (int i = 0; i < 64; i++) {
            long ai = (a >>> i) & 1;
            long bi = (b >>> i) & 1;
            long s = ai ^ bi ^ carry;
            long carryOut = (ai & bi) | (ai & carry) | (bi & carry);
            sum |= s << i;
            carry = carryOut & ~((boundary >>> i) & 1) & 1;
        }
        return sum;
    }

    /** Masked CAS, bit by bit: the new memory value. */
    static long refMaskedCas(long old, long compare, long compareMask, long swap, long swapMask) {
        boolean equal = true;
        for (int i = 0; i < 64; i++) {
            if (((compareMask >>> i) & 1) == 1 && ((compare >>> i) & 1) != ((old >>> i) & 1)) {
                equal = false;
            }
        }
        if (!equal) {
            return old;
        }
        long next = 0;
        for (int i = 0; i < 64; i++) {
            long bit = ((swapMask >>> i) & 1) == 1 ? (swap >>> i) & 1 : (old >>> i) & 1;
            next |= bit << i;
        }
        return next;
    }

    // ------------------------------------------------------------------ generators

    /** A field boundary: uniform, regular 8/16/32-bit fields, random widths, sparse, dense, 0, all-ones, bit 63. */
    static long boundary(SplittableRandom r) {
        switch (r.nextInt(10)) {
            case 0: return r.nextLong();
            case 1: return 0x8080_8080_8080_8080L;
            case 2: return HALVES_16;
            case 3: return 0x8000_0000_8000_0000L;
            case 4: { // random field widths
                long m = 0;
                int bit = -1;
                while (true) {
                    bit += 1 + r.nextInt(20);
                    if (bit > 63) {
                        break;
                    }
                    m |= 1L << bit;
                }
                return m;
            }
            case 5: return r.nextLong() & r.nextLong() & r.nextLong(); // sparse
            case 6: return r.nextLong() | r.nextLong() | r.nextLong(); // dense
            case 7: return switch (r.nextInt(3)) {
                case 0 -> 0L;
                case 1 -> -1L;
                default -> 1L << 63;
            };
            case 8: return 1L << r.nextInt(64); // one split
            default: return ~(1L << r.nextInt(64)); // all but one
        }
    }

    /** An operand biased towards long carry chains (runs of ones) and boundary values. */
    static long operand(SplittableRandom r) {
        return switch (r.nextInt(6)) {
            case 0 -> -1L;
            case 1 -> r.nextLong() | r.nextLong() | r.nextLong(); // mostly ones: long carries
            case 2 -> r.nextLong() & r.nextLong(); // mostly zeros
            case 3 -> 1L << r.nextInt(64);
            case 4 -> 0x0001_0001_0001_0001L * r.nextInt(1 << 16);
            default -> r.nextLong();
        };
    }

    static long mask(SplittableRandom r) {
        return switch (r.nextInt(6)) {
            case 0 -> 0L;
            case 1 -> -1L;
            case 2 -> r.nextLong() & r.nextLong() & r.nextLong(); // sparse
            case 3 -> r.nextLong() | r.nextLong() | r.nextLong(); // dense
            case 4 -> 0xFFFFL << (16 * r.nextInt(4)); // one 16-bit field
            default -> r.nextLong();
        };
    }

    // ------------------------------------------------------------------ model checks

    @Test
    void fieldAddMatchesBitSerialModel() {
        SplittableRandom r = new SplittableRandom(0x5EED_0001L);
        for (int i = 0; i < CASES; i++) {
            long a = operand(r);
            long b = operand(r);
            long boundary = boundary(r);
            long expected = refFieldAdd(a, b, boundary);
            long got = RxeMr.fieldAdd(a, b, boundary);
            if (got != expected) {
                throw new AssertionError(String.format("case %d: fieldAdd(%016x, %016x, boundary %016x) = %016x,"
                        + " model %016x", i, a, b, boundary, got, expected));
            }
        }
    }

    @Test
    void maskedFetchAndAddMatchesModelOnNativeMemory() {
        SplittableRandom r = new SplittableRandom(0x5EED_0002L);
        for (int i = 0; i < CASES; i++) {
            long off = 8L * r.nextInt(512);
            long va = mr.iova() + off;
            long old = operand(r);
            long add = operand(r);
            long boundary = boundary(r);
            seg.set(ValueLayout.JAVA_LONG, off, old);
            long returned = mr.maskedFetchAndAdd(va, add, boundary);
            long stored = seg.get(ValueLayout.JAVA_LONG, off);
            long expected = refFieldAdd(old, add, boundary);
            if (returned != old || stored != expected) {
                throw new AssertionError(String.format("case %d: MFetchAdd(old %016x, add %016x, boundary %016x)"
                        + " returned %016x stored %016x, model stores %016x", i, old, add, boundary, returned, stored,
                        expected));
            }
        }
    }

    @Test
    void maskedCompareAndSwapMatchesModelOnNativeMemory() {
        SplittableRandom r = new SplittableRandom(0x5EED_0003L);
        int swapped = 0;
        int kept = 0;
        for (int i = 0; i < CASES; i++) {
            long off = 8L * r.nextInt(512);
            long va = mr.iova() + off;
            long old = r.nextLong();
            long compareMask = mask(r);
            long swapMask = mask(r);
            long swap = r.nextLong();
            // half the cases compare equal on the masked bits (differences only outside the mask)
            long compare = r.nextBoolean() ? old ^ (r.nextLong() & ~compareMask) : old ^ (1L << r.nextInt(64));
            seg.set(ValueLayout.JAVA_LONG, off, old);
            long returned = mr.maskedCompareAndSwap(va, compare, compareMask, swap, swapMask);
            long stored = seg.get(ValueLayout.JAVA_LONG, off);
            long expected = refMaskedCas(old, compare, compareMask, swap, swapMask);
            if (returned != old || stored != expected) {
                throw new AssertionError(String.format("case %d: MskCmpSwap(old %016x, cmp %016x/%016x, swap"
                        + " %016x/%016x) returned %016x stored %016x, model stores %016x", i, old, compare,
                        compareMask, swap, swapMask, returned, stored, expected));
            }
            if (((compare ^ old) & compareMask) == 0) {
                swapped++;
            } else {
                kept++;
            }
        }
        assertThat(swapped).as("cases that compared equal").isGreaterThan(CASES / 3);
        assertThat(kept).as("cases that compared unequal").isGreaterThan(CASES / 10);
    }

    @Test
    void modelSanity() {
        // the model itself against hand-computed values
        assertThat(refFieldAdd(0x01FF_7F80_00FF_FF01L, 0x0101_0101_0101_0101L, 0x8080_8080_8080_8080L))
                .isEqualTo(0x0200_8081_0100_0002L);
        assertThat(refFieldAdd(-1L, 1L, 0)).isZero();
        assertThat(refFieldAdd(0x0000_0000_FFFF_FFFFL, 1L, 0x8000_0000_8000_0000L)).isZero();
        assertThat(refMaskedCas(0x1111_2222_3333_4444L, 0x4444L, 0xFFFFL, 0xAAAA_0000_0000_0000L,
                0xFFFF_0000_0000_0000L)).isEqualTo(0xAAAA_2222_3333_4444L);
    }

    // ------------------------------------------------------------------ edge cases

    @Test
    void boundaryZeroAndBit63AreAPlainAdd() {
        SplittableRandom r = new SplittableRandom(0x5EED_0004L);
        for (int i = 0; i < 10_000; i++) {
            long a = operand(r);
            long b = operand(r);
            assertThat(RxeMr.fieldAdd(a, b, 0)).isEqualTo(a + b);
            assertThat(RxeMr.fieldAdd(a, b, 1L << 63)).isEqualTo(a + b);
            // on memory: masked FAA with boundary 0 behaves as getAndAdd on a twin word
            seg.set(ValueLayout.JAVA_LONG, 0, a);
            seg.set(ValueLayout.JAVA_LONG, 8, a);
            long boundary = r.nextBoolean() ? 0 : 1L << 63;
            assertThat(mr.maskedFetchAndAdd(mr.iova(), b, boundary)).isEqualTo(mr.getAndAdd(mr.iova() + 8, b));
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(seg.get(ValueLayout.JAVA_LONG, 8));
        }
    }

    @Test
    void boundaryAllOnesIsXor() {
        SplittableRandom r = new SplittableRandom(0x5EED_0005L);
        for (int i = 0; i < 10_000; i++) {
            long a = operand(r);
            long b = operand(r);
            assertThat(RxeMr.fieldAdd(a, b, -1L)).isEqualTo(a ^ b);
        }
        assertThat(RxeMr.fieldAdd(-1L, -1L, -1L)).isZero();
        seg.set(ValueLayout.JAVA_LONG, 16, 0xF0F0_F0F0_F0F0_F0F0L);
        assertThat(mr.maskedFetchAndAdd(mr.iova() + 16, 0xFFFF_0000_FFFF_0000L, -1L)).isEqualTo(0xF0F0_F0F0_F0F0_F0F0L);
        assertThat(seg.get(ValueLayout.JAVA_LONG, 16)).isEqualTo(0x0F0F_F0F0_0F0F_F0F0L);
    }

    @Test
    void carriesRippleInsideFieldsButNeverAcrossThem() {
        // bytes: every byte wraps on its own
        assertThat(RxeMr.fieldAdd(0x01FF_7F80_00FF_FF01L, 0x0101_0101_0101_0101L, 0x8080_8080_8080_8080L))
                .isEqualTo(0x0200_8081_0100_0002L);
        // 16-bit fields: a carry ripples through 8 bits inside each field, none leaves it
        assertThat(RxeMr.fieldAdd(0x00FF_FFFF_7FFF_00FFL, 0x0001_0001_0001_0001L, HALVES_16))
                .isEqualTo(0x0100_0000_8000_0100L);
        // two 32-bit fields: the low one wraps to 0 without touching the high one
        assertThat(RxeMr.fieldAdd(0x1234_5678_FFFF_FFFFL, 1L, 0x8000_0000_8000_0000L))
                .isEqualTo(0x1234_5678_0000_0000L);
        // a field boundary at bit 0 makes bit 0 a one-bit field
        assertThat(RxeMr.fieldAdd(1L, 1L, 1L)).isZero();
        assertThat(RxeMr.fieldAdd(3L, 1L, 1L)).isEqualTo(2L);
        // uneven fields: bits 0..2, 3..40, 41..63
        long boundary = (1L << 2) | (1L << 40);
        assertThat(RxeMr.fieldAdd(0x7L | (0x1FF_FFFF_FFFFL & ~0x7L & ((1L << 41) - 1)), 0x9L, boundary))
                .isEqualTo(refFieldAdd(0x7L | (0x1FF_FFFF_FFFFL & ~0x7L & ((1L << 41) - 1)), 0x9L, boundary));
        assertThat(RxeMr.fieldAdd((1L << 41) - 1, 1L | (1L << 3), boundary)).isEqualTo(0L);
        // several fields all carrying at once, on memory
        seg.set(ValueLayout.JAVA_LONG, 24, -1L);
        assertThat(mr.maskedFetchAndAdd(mr.iova() + 24, 0x0001_0001_0001_0001L, HALVES_16)).isEqualTo(-1L);
        assertThat(seg.get(ValueLayout.JAVA_LONG, 24)).isZero();
    }

    @Test
    void maskedCasWithFullMasksIsCompareAndExchange() {
        SplittableRandom r = new SplittableRandom(0x5EED_0006L);
        for (int i = 0; i < 10_000; i++) {
            long old = r.nextLong();
            long compare = r.nextBoolean() ? old : r.nextLong();
            long swap = r.nextLong();
            seg.set(ValueLayout.JAVA_LONG, 0, old);
            seg.set(ValueLayout.JAVA_LONG, 8, old);
            long m = mr.maskedCompareAndSwap(mr.iova(), compare, -1L, swap, -1L);
            long p = mr.compareAndExchange(mr.iova() + 8, compare, swap);
            assertThat(m).isEqualTo(p).isEqualTo(old);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(seg.get(ValueLayout.JAVA_LONG, 8))
                    .isEqualTo(compare == old ? swap : old);
        }
    }

    @Test
    void compareMaskZeroAlwaysSwapsAndSwapMaskZeroNeverChangesMemory() {
        SplittableRandom r = new SplittableRandom(0x5EED_0007L);
        for (int i = 0; i < 10_000; i++) {
            long old = r.nextLong();
            long compare = r.nextLong();
            long swap = r.nextLong();
            long swapMask = mask(r);
            seg.set(ValueLayout.JAVA_LONG, 0, old);
            assertThat(mr.maskedCompareAndSwap(mr.iova(), compare, 0L, swap, swapMask)).isEqualTo(old);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo((old & ~swapMask) | (swap & swapMask));
            // swap_mask 0: whatever the compare, memory stays
            seg.set(ValueLayout.JAVA_LONG, 8, old);
            long cm = mask(r);
            long cmp = r.nextBoolean() ? old : compare;
            assertThat(mr.maskedCompareAndSwap(mr.iova() + 8, cmp, cm, swap, 0L)).isEqualTo(old);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(old);
        }
        // compare_mask 0 and swap_mask -1 is an unconditional exchange
        seg.set(ValueLayout.JAVA_LONG, 16, 42L);
        assertThat(mr.maskedCompareAndSwap(mr.iova() + 16, 7L, 0L, 99L, -1L)).isEqualTo(42L);
        assertThat(seg.get(ValueLayout.JAVA_LONG, 16)).isEqualTo(99L);
    }

    // ------------------------------------------------------------------ concurrency

    @Test
    void concurrentMaskedAddsOnDisjointFieldsAreEachExactMixedWithPlainAtomics() throws Exception {
        int threads = 4;
        int n = 100_000;
        int sharedN = 30_000; // on word 32 each field gets 2 * 30000 < 2^16, so plain adds never carry out
        long w0 = mr.iova();      // masked FAA only, starting near the wrap of every field
        long w8 = mr.iova() + 8;  // plain getAndAdd
        long w16 = mr.iova() + 16; // plain compareAndExchange increments
        long w24 = mr.iova() + 24; // masked CAS increments of the thread's own field
        long w32 = mr.iova() + 32; // masked FAA and plain getAndAdd on the same field
        long start = 0xFFF0_FFF0_FFF0_FFF0L;
        seg.set(ValueLayout.JAVA_LONG, 0, start);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int shift = 16 * t;
                fs.add(pool.submit(() -> {
                    go.await();
                    long one = 1L << shift;
                    long field = 0xFFFFL << shift;
                    for (int i = 0; i < n; i++) {
                        mr.maskedFetchAndAdd(w0, one, HALVES_16);
                        mr.getAndAdd(w8, 1);
                        long cur = mr.getLongVolatile(w16);
                        while (true) {
                            long w = mr.compareAndExchange(w16, cur, cur + 1);
                            if (w == cur) {
                                break;
                            }
                            cur = w;
                        }
                        // masked CAS increment of this thread's own field: compare and swap only it
                        long seen = mr.getLongVolatile(w24);
                        while (true) {
                            long mine = seen & field;
                            long next = ((mine + one) & field);
                            long ret = mr.maskedCompareAndSwap(w24, mine, field, next, field);
                            if ((ret & field) == mine) {
                                break;
                            }
                            seen = ret;
                        }
                        if (i < sharedN) {
                            mr.maskedFetchAndAdd(w32, one, HALVES_16);
                            mr.getAndAdd(w32, one);
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int t = 0; t < threads; t++) {
            int shift = 16 * t;
            assertThat((mr.getLongVolatile(w0) >>> shift) & 0xFFFF).as("field %d of the masked-FAA word", t)
                    .isEqualTo((0xFFF0L + n) % 65536);
            assertThat((mr.getLongVolatile(w24) >>> shift) & 0xFFFF).as("field %d of the masked-CAS word", t)
                    .isEqualTo((long) n % 65536);
            assertThat((mr.getLongVolatile(w32) >>> shift) & 0xFFFF).as("field %d of the mixed word", t)
                    .isEqualTo(2L * sharedN);
        }
        assertThat(mr.getLongVolatile(w8)).isEqualTo((long) threads * n);
        assertThat(mr.getLongVolatile(w16)).isEqualTo((long) threads * n);
    }
}
