package io.rxe4j.core.memory;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Slots for objects named by a 32-bit key {@code index << 8 | key8} ({@code rxe-facts.md} §6.4,
 * {@code verbs-surface-facts.md} §5.1): indices run from {@code base + 1} to {@code base +
 * capacity}; the 8-bit part is drawn from a seeded generator and differs from the previous key at
 * the same index, so a stale key never names the slot's next occupant by accident.
 *
 * <p>Adding and removing run on user threads (synchronized); {@link #at} runs on the device loops
 * and is lock-free (an {@link AtomicReferenceArray} read).
 *
 * @param <T> what the slots hold
 */
final class KeyTable<T> {
    private final String what;
    private final int base;
    private final AtomicReferenceArray<T> slots;
    private final byte[] lastKey8;
    private final SplittableRandom random;
    private int nextHint = 1;
    private int count;

    /**
     * @param what the name of the objects, for messages ("MR", "MW")
     * @param base the index before the first slot (0 for MRs, 2^19 for MWs)
     * @param capacity number of slots
     */
    KeyTable(String what, int base, int capacity, long seed) {
        this.what = what;
        this.base = base;
        this.slots = new AtomicReferenceArray<>(capacity + 1);
        this.lastKey8 = new byte[capacity + 1];
        this.random = new SplittableRandom(seed);
    }

    /**
     * Draws a key for a free slot and stores what {@code factory} builds for it.
     *
     * @throws IllegalStateException when every slot is taken
     */
    synchronized T add(IntFunction<T> factory) {
        int capacity = slots.length() - 1;
        if (count >= capacity) {
            throw new IllegalStateException(what + " table full (" + capacity + " " + what + "s)");
        }
        int slot = nextHint;
        while (slots.get(slot) != null) {
            slot = slot == capacity ? 1 : slot + 1;
        }
        nextHint = slot == capacity ? 1 : slot + 1;
        int key8;
        do {
            key8 = random.nextInt(256);
        } while (key8 == (lastKey8[slot] & 0xFF));
        lastKey8[slot] = (byte) key8;
        T t = factory.apply((base + slot) << 8 | key8);
        slots.set(slot, t);
        count++;
        return t;
    }

    /** Frees the slot of {@code key} if it still holds {@code t}. */
    synchronized void remove(int key, T t) {
        int slot = (key >>> 8) - base;
        if (slot > 0 && slot < slots.length() && slots.get(slot) == t) {
            slots.set(slot, null);
            count--;
        }
    }

    /** @return what the slot named by {@code key}'s index holds (whatever its 8-bit part), or null */
    T at(int key) {
        int slot = (key >>> 8) - base;
        return slot > 0 && slot < slots.length() ? slots.get(slot) : null;
    }

    /** Calls {@code action} with every occupied slot's object (a snapshot walk; any thread). */
    void forEach(java.util.function.Consumer<T> action) {
        for (int i = 1; i < slots.length(); i++) {
            T t = slots.get(i);
            if (t != null) {
                action.accept(t);
            }
        }
    }

    /** @return the number of occupied slots */
    synchronized int size() {
        return count;
    }
}
