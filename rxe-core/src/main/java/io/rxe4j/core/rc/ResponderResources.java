package io.rxe4j.core.rc;

import io.rxe4j.core.qp.TidSegment;

import io.rxe4j.core.wire.Psn;

/**
 * Responder resources ({@code rxe-facts.md} §5.5, §5.7, §9.3): a ring of max_dest_rd_atomic
 * entries recording READ, ATOMIC and ATOMIC WRITE requests, so that duplicates are answered from
 * the record (READ data re-read from memory; atomics replay the cached original value without
 * touching memory again). The oldest entry is overwritten; that is safe because the requester
 * keeps at most max_rd_atomic ≤ max_dest_rd_atomic of them outstanding (each takes a credit).
 *
 * <p>FLUSH and the OPFN request take no credit, so their records live in a ring of their own:
 * they can never push out the record of an outstanding READ or atomic ({@code extensions.md} §4,
 * {@code tid-opfn-facts.md} §1.2). Loop only.
 */
public final class ResponderResources {
    /** What a resource records. */
    public enum Type { NONE, READ, ATOMIC, ATOMIC_WRITE, FLUSH, OPFN, TID_READ }

    /** One recorded request, with the cursor of its reply. */
    public static final class Entry {
        public Type type = Type.NONE;
        public int firstPsn;
        public int lastPsn;
        public long va;
        public long length;
        public int rkey;
        public long original;
        // ---- READ reply cursor (the responder sends a reply in bounded batches from here) ----
        /** The MR being read, looked up when the reply (or replay) started. */
        public io.rxe4j.core.memory.RxeMr mr;
        /** The memory window the rkey names, or null (an MR's rkey): checked again before each response packet. */
        public io.rxe4j.core.memory.RxeMw window;
        /** Next VA to send. */
        public long curVa;
        /** Bytes still to send. */
        public long resid;
        /** PSN of the next response packet. */
        public int curPsn;
        /** PSN of the request being answered (the original or the duplicate), for a NAK. */
        public int requestPsn;
        /** The next packet starts a response stream (FIRST or ONLY). */
        public boolean streamStart;
        /**
         * TID READ (tid-opfn-facts §5.3): the requester's TID list, flow and tid_flow_qp for the
         * segment, and the cursor of the next READ_RESP in it; allocated on the entry's first TID READ.
         */
        public TidSegment tid;
    }

    private Entry[] ring = newRing(1);
    private int next;
    private Entry[] flushRing = newRing(1);
    private int flushNext;

    private static Entry[] newRing(int n) {
        Entry[] r = new Entry[Math.max(1, n)];
        for (int i = 0; i < r.length; i++) {
            r[i] = new Entry();
        }
        return r;
    }

    void resize(int n) {
        ring = newRing(n);
        next = 0;
        flushRing = newRing(n);
        flushNext = 0;
    }

    void clear() {
        for (Entry e : ring) {
            e.type = Type.NONE;
            e.mr = null;
        }
        for (Entry e : flushRing) {
            e.type = Type.NONE;
        }
        next = 0;
        flushNext = 0;
    }

    /** @return the entry to fill for a new request of {@code type} (overwrites the oldest of its ring) */
    public Entry allocate(Type type) {
        Entry e;
        if (type == Type.FLUSH || type == Type.OPFN) {
            e = flushRing[flushNext];
            flushNext = (flushNext + 1) % flushRing.length;
        } else {
            e = ring[next];
            next = (next + 1) % ring.length;
        }
        e.type = type;
        e.mr = null;
        return e;
    }

    /** @return the entry of {@code type} whose PSN range holds {@code psn}, or null */
    public Entry find(Type type, int psn) {
        for (Entry e : type == Type.FLUSH || type == Type.OPFN ? flushRing : ring) {
            if (e.type == type && Psn.diff(psn, e.firstPsn) >= 0 && Psn.diff(psn, e.lastPsn) <= 0) {
                return e;
            }
        }
        return null;
    }
}
