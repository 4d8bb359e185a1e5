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
    /** Remote key for RDMA and atomic operations; BIND_MW: the window's new rkey. */
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
    /**
     * Inline data from memory that need not be registered (heap {@code byte[]} or any segment), or
     * null: when set, the WR carries these bytes instead of its SGEs (which must be unused,
     * {@code numSge} 0), as with {@link SendFlags#INLINE}. The bytes are copied at post time, up
     * to the QP's {@code max_inline_data}. SEND and RDMA WRITE (with or without immediate) only.
     */
    public java.lang.foreign.MemorySegment inlineData;
    /** UD: the destination ({@code wr.ud.ah}); ignored on other QP types. */
    public AddressHandle ah;
    /** UD: the destination QP number, 24 bits ({@code wr.ud.remote_qpn}). */
    public int remoteQpn;
    /**
     * UD: the Q_Key the packet carries ({@code wr.ud.remote_qkey}); a value with bit 31 set means
     * "the sending QP's own Q_Key" (IBTA's privileged-Q_Key rule, which RNICs implement; {@code
     * verbs-surface-facts.md} §2.4 rule 1).
     */
    public int remoteQkey;
    /**
     * SEND_WITH_INV: the rkey the peer invalidates on receipt (IETH; a type 2B window of the peer
     * bound to the receiving QP); LOCAL_INV: the rkey to invalidate locally ({@code
     * ex.invalidate_rkey}).
     */
    public int invalidateRkey;
    /** BIND_MW: the type 2B window to bind ({@code bind_mw.mw}); {@link #rkey} holds the new rkey. */
    public MemoryWindow mw;
    /** BIND_MW: what to put behind the window ({@code bind_mw.bind_info}). */
    public MwBindInfo bindInfo;

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
        inlineData = null;
        ah = null;
        remoteQpn = 0;
        remoteQkey = 0;
        invalidateRkey = 0;
        mw = null;
        bindInfo = null;
        return this;
    }

    // ---- one typed setter per operation: each clears the other fields first ----

    /** A SEND of the bytes the SGEs gather ({@code IBV_WR_SEND}). @return this */
    public SendWr send(long wrId, Sge... sges) {
        return reset().set(wrId, WrOpcode.SEND, 0, sges);
    }

    /** A SEND with 32-bit immediate data ({@code IBV_WR_SEND_WITH_IMM}). @return this */
    public SendWr sendWithImm(long wrId, int immData, Sge... sges) {
        return reset().set(wrId, WrOpcode.SEND_WITH_IMM, 0, sges).imm(immData);
    }

    /**
     * A SEND that also invalidates {@code invalidateRkey} at the peer ({@code IBV_WR_SEND_WITH_INV};
     * RC only; {@code verbs-surface-facts.md} §5.6): the peer's receive completion carries {@link
     * WorkCompletion#WC_WITH_INV} and the rkey, which names a type 2B window bound to the receiving
     * QP; the window is FREE afterwards.
     *
     * @return this
     */
    public SendWr sendWithInv(long wrId, int invalidateRkey, Sge... sges) {
        reset().set(wrId, WrOpcode.SEND_WITH_INV, 0, sges);
        this.invalidateRkey = invalidateRkey;
        return this;
    }

    /**
     * Invalidates a type 2B window of this QP locally ({@code IBV_WR_LOCAL_INV}; RC only): executed
     * in order with the QP's other WRs; completes with {@link WcOpcode#LOCAL_INV}, or
     * LOC_QP_OP_ERR (QP to ERR) when {@code invalidateRkey} names no window this QP may invalidate.
     *
     * @return this
     */
    public SendWr localInv(long wrId, int invalidateRkey) {
        reset().set(wrId, WrOpcode.LOCAL_INV, 0);
        this.invalidateRkey = invalidateRkey;
        return this;
    }

    /**
     * Binds a type 2B window to this QP ({@code IBV_WR_BIND_MW}; RC and UC;
     * {@code verbs-surface-facts.md} §5.2–§5.4): executed in order with the QP's other WRs, takes no
     * PSN; completes with {@link WcOpcode#BIND_MW}, or MW_BIND_ERR (QP to ERR) when a check fails.
     * Afterwards peers reach {@code bindInfo}'s range under {@code newRkey}.
     *
     * @param newRkey the window's new rkey: its low 8 bits replace the key part of {@code mw}'s
     *     rkey (the index never changes; {@code ibv_inc_rkey(mw.rkey())} is the usual choice)
     * @return this
     */
    public SendWr bindMw(long wrId, MemoryWindow mw, int newRkey, MwBindInfo bindInfo) {
        reset().set(wrId, WrOpcode.BIND_MW, 0);
        this.mw = mw;
        this.rkey = newRkey;
        this.bindInfo = bindInfo;
        return this;
    }

    /**
     * An RDMA WRITE of the bytes the SGEs gather to the peer's {@code remoteAddr} ({@code
     * IBV_WR_RDMA_WRITE}).
     *
     * @param remoteAddr the peer MR's virtual address (bytes)
     * @param rkey the peer MR's remote key
     * @return this
     */
    public SendWr rdmaWrite(long wrId, long remoteAddr, int rkey, Sge... sges) {
        return reset().set(wrId, WrOpcode.RDMA_WRITE, 0, sges).remote(remoteAddr, rkey);
    }

    /** An RDMA WRITE that also consumes a receive WQE at the peer ({@code IBV_WR_RDMA_WRITE_WITH_IMM}). @return this */
    public SendWr rdmaWriteWithImm(long wrId, long remoteAddr, int rkey, int immData, Sge... sges) {
        return reset().set(wrId, WrOpcode.RDMA_WRITE_WITH_IMM, 0, sges).remote(remoteAddr, rkey).imm(immData);
    }

    /** An RDMA READ of the peer's bytes at {@code remoteAddr} into the SGEs ({@code IBV_WR_RDMA_READ}). @return this */
    public SendWr rdmaRead(long wrId, long remoteAddr, int rkey, Sge... sges) {
        return reset().set(wrId, WrOpcode.RDMA_READ, 0, sges).remote(remoteAddr, rkey);
    }

    /**
     * A 64-bit COMPARE_SWAP at the peer's 8-byte aligned {@code remoteAddr}; the original value
     * lands in {@code result} (8 bytes, LOCAL_WRITE) ({@code IBV_WR_ATOMIC_CMP_AND_SWP}).
     *
     * @return this
     */
    public SendWr compareAndSwap(long wrId, long remoteAddr, int rkey, long compare, long swap, Sge result) {
        return reset().set(wrId, WrOpcode.ATOMIC_CMP_AND_SWP, 0, result).remote(remoteAddr, rkey).atomic(compare, swap);
    }

    /**
     * A 64-bit FETCH_AND_ADD at the peer's 8-byte aligned {@code remoteAddr}; the original value
     * lands in {@code result} ({@code IBV_WR_ATOMIC_FETCH_AND_ADD}).
     *
     * @return this
     */
    public SendWr fetchAndAdd(long wrId, long remoteAddr, int rkey, long add, Sge result) {
        return reset().set(wrId, WrOpcode.ATOMIC_FETCH_AND_ADD, 0, result).remote(remoteAddr, rkey).atomic(add, 0);
    }

    /**
     * A masked COMPARE_SWAP: the bits of {@code compareMask} are compared, the bits of {@code
     * swapMask} swapped ({@code IBV_EXP_WR_EXT_MASKED_ATOMIC_CMP_AND_SWP}; rxe4j peers only, opcode
     * 0xF0, {@code docs/extended-ops.md}).
     *
     * @return this
     */
    public SendWr maskedCompareAndSwap(long wrId, long remoteAddr, int rkey, long compare, long compareMask,
            long swap, long swapMask, Sge result) {
        return reset().set(wrId, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, 0, result).remote(remoteAddr, rkey)
                .atomic(compare, swap).masks(compareMask, swapMask);
    }

    /**
     * A field-wise FETCH_AND_ADD: {@code add} is added to each field of the 64-bit word, a set bit
     * of {@code fieldBoundary} marking the most significant bit of a field (carries stop there;
     * {@code IBV_EXP_WR_EXT_MASKED_ATOMIC_FETCH_AND_ADD}; rxe4j peers only, opcode 0xF1).
     *
     * @return this
     */
    public SendWr maskedFetchAndAdd(long wrId, long remoteAddr, int rkey, long add, long fieldBoundary, Sge result) {
        return reset().set(wrId, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, 0, result).remote(remoteAddr, rkey)
                .atomic(add, 0).masks(fieldBoundary, 0);
    }

    /**
     * An ATOMIC WRITE of 8 bytes to the peer's 8-byte aligned {@code remoteAddr}, placed after
     * every earlier WRITE of the QP is visible (release order; {@code IBV_WR_ATOMIC_WRITE}, opcode
     * 0x1D). {@code value}'s native-order bytes go on the wire unchanged.
     *
     * @return this
     */
    public SendWr atomicWrite(long wrId, long remoteAddr, int rkey, long value) {
        SendWr w = reset().set(wrId, WrOpcode.ATOMIC_WRITE, 0).remote(remoteAddr, rkey);
        w.atomicWriteValue = value;
        return w;
    }

    /**
     * An RDMA FLUSH of {@code length} bytes at the peer's {@code remoteAddr} ({@code
     * IBV_WR_FLUSH}, opcode 0x1C): completes once the data written before it is globally visible
     * ({@link Flush#GLOBAL}) and/or persistent ({@link Flush#PERSISTENT}, file-backed MRs).
     *
     * @param type {@link Flush#GLOBAL} and/or {@link Flush#PERSISTENT}
     * @param level {@link Flush#RANGE} (this range) or {@link Flush#MR} (the whole MR)
     * @param length bytes, 0..2^32-1 (level RANGE)
     * @return this
     */
    public SendWr flush(long wrId, long remoteAddr, int rkey, int type, int level, long length) {
        return reset().set(wrId, WrOpcode.FLUSH, 0).remote(remoteAddr, rkey).flush(type, level, length);
    }

    /**
     * Addresses a UD send ({@code wr.ud}): call it after {@link #send} or {@link #sendWithImm}, which
     * clear it ({@code verbs-surface-facts.md} §2.3–§2.5).
     *
     * @param ah the destination, an address handle of the sending QP's PD
     * @param remoteQpn the destination QP number (24 bits; 1 for the peer's GSI QP)
     * @param remoteQkey the Q_Key the destination QP expects (bit 31 set: the sending QP's own Q_Key)
     * @return this
     */
    public SendWr ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn;
        this.remoteQkey = remoteQkey;
        return this;
    }

    /** Adds {@link SendFlags#SIGNALED}: a successful completion produces a CQE. @return this */
    public SendWr signaled() {
        sendFlags |= SendFlags.SIGNALED;
        return this;
    }

    /** Adds {@link SendFlags#SOLICITED}: the peer's solicited-only armed CQ fires. @return this */
    public SendWr solicited() {
        sendFlags |= SendFlags.SOLICITED;
        return this;
    }

    /** Adds {@link SendFlags#FENCE}. @return this */
    public SendWr fence() {
        sendFlags |= SendFlags.FENCE;
        return this;
    }

    /**
     * Carries {@code data} as inline data (copied at post time; no MR needed): sets {@link
     * #inlineData} and {@link SendFlags#INLINE}, and clears the SGEs.
     *
     * @return this
     */
    public SendWr inline(byte[] data) {
        return inline(java.lang.foreign.MemorySegment.ofArray(data));
    }

    /** As {@link #inline(byte[])}, from any memory segment (heap or native). @return this */
    public SendWr inline(java.lang.foreign.MemorySegment data) {
        this.inlineData = data;
        this.sendFlags |= SendFlags.INLINE;
        this.sgList = new Sge[0];
        this.numSge = 0;
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
        if (inlineData != null) {
            return inlineData.byteSize();
        }
        long n = 0;
        for (int i = 0; i < numSge; i++) {
            n += Integer.toUnsignedLong(sgList[i].length);
        }
        return n;
    }
}
