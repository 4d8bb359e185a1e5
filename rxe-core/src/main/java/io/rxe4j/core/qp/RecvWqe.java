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
}
