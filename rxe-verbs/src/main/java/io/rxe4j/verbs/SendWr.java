package io.rxe4j.verbs;

/**
 * A send work request ({@code struct ibv_send_wr} and the extended-QP operands). Mutable and
 * reusable: the QP copies it at post time. Remote addresses are virtual addresses (bytes) of the
 * peer's MR; {@code rkey} is the peer MR's remote key.
 */
public final class SendWr {
    /** User cookie returned in the completion. */
    public long wrId;
    /** The operation. */
    public WrOpcode opcode = WrOpcode.SEND;
    /** {@link SendFlags} bits. */
    public int sendFlags;
    /** Gather list (scatter list for READ and atomics); the first {@link #numSge} are used. */
    public Sge[] sgList = new Sge[0];
    /** Number of SGEs used. */
    public int numSge;
    /** Immediate data for *_WITH_IMM, carried opaquely. */
    public int immData;
    /** Remote virtual address for RDMA and atomic operations. */
    public long remoteAddr;
    /** Remote key for RDMA and atomic operations. */
    public int rkey;
    /** CMP_AND_SWP: the compare value; FETCH_AND_ADD: the value to add. */
    public long compareAdd;
    /** CMP_AND_SWP: the swap value. */
    public long swap;
    /** Masked atomics: compare mask (masked CAS) or field boundary (masked FAA). */
    public long compareAddMask;
    /** Masked CAS: swap mask. */
    public long swapMask;
    /**
     * ATOMIC_WRITE: the 8 bytes to store, as the native-order bytes of this {@code long} (they go
     * on the wire unchanged, as rxe copies the user's 8 bytes; a native {@code long} load of the
     * remote word then reads this value).
     */
    public long atomicWriteValue;
    /** FLUSH: placement type, {@link Flush#GLOBAL} and/or {@link Flush#PERSISTENT}. */
    public int flushType;
    /** FLUSH: selectivity level, {@link Flush#RANGE} or {@link Flush#MR}. */
    public int flushLevel;
    /** FLUSH: bytes to flush from {@link #remoteAddr} (level RANGE), unsigned 32-bit on the wire. */
    public long flushLength;

    /** Creates an empty WR. */
    public SendWr() {}

    /** Clears every field to its default. @return this */
    public SendWr reset() {
        wrId = 0;
        opcode = WrOpcode.SEND;
        sendFlags = 0;
        sgList = new Sge[0];
        numSge = 0;
        immData = 0;
        remoteAddr = 0;
        rkey = 0;
        compareAdd = 0;
        swap = 0;
        compareAddMask = 0;
        swapMask = 0;
        atomicWriteValue = 0;
        flushType = 0;
        flushLevel = 0;
        flushLength = 0;
        return this;
    }

    /** Sets wr_id, opcode, flags and SGEs. @return this */
    public SendWr set(long wrId, WrOpcode opcode, int sendFlags, Sge... sges) {
        this.wrId = wrId;
        this.opcode = opcode;
        this.sendFlags = sendFlags;
        this.sgList = sges;
        this.numSge = sges.length;
        return this;
    }

    /** Sets the remote address and key. @return this */
    public SendWr remote(long remoteAddr, int rkey) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        return this;
    }

    /** Sets atomic operands. @return this */
    public SendWr atomic(long compareAdd, long swap) {
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    /** Sets masked-atomic masks: compare mask / field boundary, and swap mask. @return this */
    public SendWr masks(long compareAddMask, long swapMask) {
        this.compareAddMask = compareAddMask;
        this.swapMask = swapMask;
        return this;
    }

    /** Sets FLUSH operands (placement type bits, selectivity level, length in bytes). @return this */
    public SendWr flush(int type, int level, long length) {
        this.flushType = type;
        this.flushLevel = level;
        this.flushLength = length;
        return this;
    }

    /** Sets immediate data. @return this */
    public SendWr imm(int immData) {
        this.immData = immData;
        return this;
    }

    /** @return total bytes of the used SGEs */
    public long totalLength() {
        long n = 0;
        for (int i = 0; i < numSge; i++) {
            n += Integer.toUnsignedLong(sgList[i].length);
        }
        return n;
    }
}
