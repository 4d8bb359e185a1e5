package io.rxe4j.core.qp;

/** A receive queue entry: a copy of the posted receive WR. Preallocated per RQ slot. */
final class RecvWqe {
    long wrId;
    int numSge;
    final long[] sgeAddr;
    final int[] sgeLength;
    final int[] sgeLkey;
    long length;

    RecvWqe(int maxSge) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
    }
}
