package io.rxe4j.core.qp;

import io.rxe4j.core.wire.Psn;

/**
 * Responder resources ({@code rxe-facts.md} §5.5, §5.7, §9.3): a ring of max_dest_rd_atomic
 * entries recording READ and ATOMIC requests, so that duplicates are answered from the record
 * (READ data re-read from memory; atomics replay the cached original value without touching
 * memory again). The oldest entry is overwritten. Loop only.
 */
final class ResponderResources {
    enum Type { NONE, READ, ATOMIC, ATOMIC_WRITE, FLUSH }

    static final class Entry {
        Type type = Type.NONE;
        int firstPsn;
        int lastPsn;
        long va;
        long length;
        int rkey;
        long original;
    }

    private Entry[] ring = new Entry[] {new Entry()};
    private int next;

    void resize(int n) {
        int size = Math.max(1, n);
        ring = new Entry[size];
        for (int i = 0; i < size; i++) {
            ring[i] = new Entry();
        }
        next = 0;
    }

    void clear() {
        for (Entry e : ring) {
            e.type = Type.NONE;
        }
        next = 0;
    }

    /** @return the entry to fill for a new request (overwrites the oldest) */
    Entry allocate() {
        Entry e = ring[next];
        next = (next + 1) % ring.length;
        return e;
    }

    /** @return the entry whose PSN range holds {@code psn}, or null */
    Entry find(int psn) {
        for (Entry e : ring) {
            if (e.type != Type.NONE && Psn.diff(psn, e.firstPsn) >= 0 && Psn.diff(psn, e.lastPsn) <= 0) {
                return e;
            }
        }
        return null;
    }
}
