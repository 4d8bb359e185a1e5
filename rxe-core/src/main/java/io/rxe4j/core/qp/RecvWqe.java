package io.rxe4j.core.qp;

/** A receive queue entry: a copy of the posted receive WR. Preallocated per RQ slot. */
public final class RecvWqe {
    public long wrId;
    public int numSge;
    public final long[] sgeAddr;
    public final int[] sgeLength;
    public final int[] sgeLkey;
    public long length;

    RecvWqe(int maxSge) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
    }

    /** Fills this slot from {@code wr} (already validated; {@code total} its length in bytes). */
    void fill(io.rxe4j.verbs.RecvWr wr, long total) {
        wrId = wr.wrId;
        numSge = wr.numSge;
        for (int i = 0; i < wr.numSge; i++) {
            sgeAddr[i] = wr.sgList[i].addr;
            sgeLength[i] = wr.sgList[i].length;
            sgeLkey[i] = wr.sgList[i].lkey;
        }
        length = total;
    }

    /** Copies {@code o} into this slot (which has room for its SGEs). */
    void copyFrom(RecvWqe o) {
        wrId = o.wrId;
        numSge = o.numSge;
        System.arraycopy(o.sgeAddr, 0, sgeAddr, 0, o.numSge);
        System.arraycopy(o.sgeLength, 0, sgeLength, 0, o.numSge);
        System.arraycopy(o.sgeLkey, 0, sgeLkey, 0, o.numSge);
        length = o.length;
    }
}
