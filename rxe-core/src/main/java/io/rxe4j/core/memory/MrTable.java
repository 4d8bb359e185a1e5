package io.rxe4j.core.memory;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The device's MR key table. A key is {@code index << 8 | key8} ({@code rxe-facts.md} §6.4):
 * indices run from 1, so key 0 is never valid; the 8-bit part is drawn from a seeded generator
 * and differs from the previous key at the same index.
 *
 * <p>Registration and deregistration run on user threads (synchronized); lookup runs on the
 * device loop and is lock-free (an {@link AtomicReferenceArray} read).
 */
public final class MrTable {
    private final AtomicReferenceArray<RxeMr> slots;
    private final byte[] lastKey8;
    private final SplittableRandom random;
    private int nextHint = 1;
    private int count;

    /**
     * @param capacity maximum number of MRs (indices 1..capacity)
     * @param seed seed for the 8-bit key parts
     */
    public MrTable(int capacity, long seed) {
        if (capacity < 1 || capacity > (1 << 19)) {
            throw new IllegalArgumentException("MR table capacity must be 1..2^19, got " + capacity);
        }
        this.slots = new AtomicReferenceArray<>(capacity + 1);
        this.lastKey8 = new byte[capacity + 1];
        this.random = new SplittableRandom(seed);
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
    public synchronized RxeMr register(MrFactory factory) {
        int capacity = slots.length() - 1;
        if (count >= capacity) {
            throw new IllegalStateException("MR table full (" + capacity + " MRs)");
        }
        int index = nextHint;
        while (slots.get(index) != null) {
            index = index == capacity ? 1 : index + 1;
        }
        nextHint = index == capacity ? 1 : index + 1;
        int key8;
        do {
            key8 = random.nextInt(256);
        } while (key8 == (lastKey8[index] & 0xFF));
        lastKey8[index] = (byte) key8;
        RxeMr mr = factory.create(index << 8 | key8);
        slots.set(index, mr);
        count++;
        return mr;
    }

    /** Removes the MR from the table and invalidates it; later lookups of its key fail. */
    public synchronized void unregister(RxeMr mr) {
        mr.invalidate();
        int index = mr.lkey() >>> 8;
        if (index < slots.length() && slots.get(index) == mr) {
            slots.set(index, null);
            count--;
        }
    }

    /**
     * @param key an lkey or rkey
     * @return the valid MR with exactly this key, or null
     */
    public RxeMr lookup(int key) {
        int index = key >>> 8;
        if (index == 0 || index >= slots.length()) {
            return null;
        }
        RxeMr mr = slots.get(index);
        if (mr == null || mr.lkey() != key || !mr.isValid()) {
            return null;
        }
        return mr;
    }

    /** @return the number of registered MRs */
    public synchronized int size() {
        return count;
    }
}
