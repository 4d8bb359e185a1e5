package io.rxe4j.core.qp;

import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;

/**
 * A send queue entry: a copy of the posted {@link SendWr} plus the requester/completer progress.
 * Preallocated per SQ slot and reused; only the device loop reads it after posting.
 */
public final class SendWqe {
    public enum State { POSTED, PROCESSING, PENDING, DONE }

    // --- copied from the WR at post time ---
    public long wrId;
    public WrOpcode opcode;
    public int sendFlags;
    public int numSge;
    public final long[] sgeAddr;
    public final int[] sgeLength;
    public final int[] sgeLkey;
    public int immData;
    public long remoteAddr;
    public int rkey;
    public long compareAdd;
    public long swap;
    public long compareAddMask;
    public long swapMask;
    public long atomicWriteValue;
    public int flushType;
    public int flushLevel;
    /** Total message length in bytes (ATOMIC_WRITE 8; FLUSH the flush length). */
    public long length;
    /** UD: the destination (IP, UDP port) of the WR's address handle, copied at post time. */
    public java.net.InetSocketAddress udPeer;
    /** UD: the destination QP number (24 bits). */
    public int remoteQpn;
    /** UD: the Q_Key the WR gave (bit 31 set: the QP's own). */
    public int remoteQkey;
    /** SEND_WITH_INV / LOCAL_INV: the rkey to invalidate ({@code ex.invalidate_rkey}). */
    public int invalidateRkey;
    /** BIND_MW ({@code wr.mw}, {@code verbs-surface-facts.md} §5.2): the window's rkey when posted; {@link #rkey} is the new one. */
    public int bindMwRkey;
    /** BIND_MW: the lkey of the MR to bind (0 when there is none). */
    public int bindMrLkey;
    /** BIND_MW: first virtual address of the window. */
    public long bindAddr;
    /** BIND_MW: the window's length in bytes. */
    public long bindLength;
    /** BIND_MW: the {@link io.rxe4j.verbs.Access} bits the window grants. */
    public int bindAccess;
    /** A local WQE (BIND_MW, LOCAL_INV) has executed: a rewind walks over it again without running it twice. */
    public boolean localDone;
    /** Inline payload (IBV_SEND_INLINE), copied at post time, or null. */
    public byte[] inline;
    public int inlineLength;

    /** The hidden OPFN request in the reserved slot: no credit, no CQE ({@code tid-opfn-facts.md} §1.2). */
    public boolean opfn;

    // --- TID RDMA READ and WRITE (tid-opfn-facts §5, §6; decided at post time) ---
    /**
     * Carried as TID RDMA: an RDMA_READ as TID READ (one READ_REQ per segment of {@link #segLen}
     * bytes), an RDMA_WRITE as TID WRITE (one WRITE_REQ, one verbs PSN per segment).
     */
    public boolean tid;
    /** Segment length in bytes (the peer's max_len, at most the message). */
    public int segLen;
    /** Segments of the message. */
    public int totalSegs;
    /** Packets (verbs PSNs) per full segment. */
    public int pktsPerSeg;
    /** Segments whose READ_REQ went out since the last rewind ({@code cur_seg}). */
    public int curSeg;
    /** Segments completed ({@code comp_seg}). */
    public int compSeg;
    /** Segments given flow sequence numbers and TID entries ({@code setup_head}). */
    public int setupHead;
    /** max_rd_atomic credits held: one per segment sent and not completed. */
    public int segCredits;
    /** TID WRITE: its WRITE_REQ went out at least once (its PSNs are assigned). */
    public boolean tidStarted;
    /** TID WRITE: WRITE_RESPs received ({@code comp_seg} at the requester); their segments may send data. */
    public int respSeg;
    /** TID WRITE: segments whose data went out completely ({@code cur_seg}). */
    public int dataSeg;
    /** TID WRITE: segments TID-ACKed ({@code ack_seg}); the WQE completes when all are. */
    public int ackSeg;
    /** The software flows, a ring of {@link TidSegment#RING} (allocated the first time the slot carries TID). */
    public TidSegment[] segs;

    // --- progress ---
    public State state;
    /** PSN of the first packet (READ: of the current request, after a rewind). */
    public int firstPsn;
    /** PSN of the last packet (READ: last expected response). */
    public int lastPsn;
    /** Bytes of the message sent so far (SEND/WRITE). */
    public long sentBytes;
    /** READ: bytes of response data received and placed so far. */
    public long readBytes;
    /** Holds a max_rd_atomic credit. */
    public boolean creditHeld;
    /** A local error found while sending it; its completion status when the QP is flushed. */
    public WcStatus failStatus;

    SendWqe(int maxSge, int maxInline) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
        inline = maxInline > 0 ? new byte[maxInline] : null;
    }

    /**
     * rxe's {@code WR_ATOMIC_OR_READ_MASK}: a WQE only its own response completes (a later ACK
     * means that response was lost), and that IB_SEND_FENCE waits for.
     */
    public boolean isReadOrAtomic() {
        return WrOpcodeInfo.of(opcode).isAny(WrOpcodeInfo.ATOMIC_OR_READ_MASK);
    }

    /**
     * Resets the progress of a slot just filled at post time: POSTED, nothing sent, read or held.
     *
     * @param hidden the hidden OPFN request (reserved slot, no credit, no CQE)
     */
    void posted(boolean hidden) {
        opfn = hidden;
        state = State.POSTED;
        sentBytes = 0;
        readBytes = 0;
        creditHeld = false;
        failStatus = null;
        localDone = false;
        firstPsn = 0;
        lastPsn = 0;
    }

    /** @return a local operation (BIND_MW, LOCAL_INV): no packet, no PSN */
    public boolean isLocal() {
        return WrOpcodeInfo.of(opcode).family() == WrOpcodeInfo.Family.LOCAL;
    }

    /** @return a TID RDMA WRITE */
    public boolean isTidWrite() {
        return tid && opcode == WrOpcode.RDMA_WRITE;
    }

    /** @return a TID RDMA READ */
    boolean isTidRead() {
        return tid && opcode == WrOpcode.RDMA_READ;
    }

    /** Takes a max_rd_atomic credit: READ, atomics and ATOMIC_WRITE ({@code rxe-facts.md} §5.7). */
    public boolean needsCredit() {
        return !opfn && !tid && WrOpcodeInfo.of(opcode).usesRdAtomicCredit(); // TID: per segment
    }
}
