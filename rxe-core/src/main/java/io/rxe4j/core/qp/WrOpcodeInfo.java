package io.rxe4j.core.qp;

import io.rxe4j.core.wire.Opcode;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WrOpcode;

/**
 * The work-request opcode table: one immutable row per {@link WrOpcode}, as rdma_rxe's {@code
 * rxe_wr_opcode_info[]} ({@code rxe_opcode.c}) plus what rxe spreads over {@code rxe_req.c} and
 * {@code rxe_comp.c}: the QP types that accept the opcode (an {@code rxe_wr_mask} per {@link
 * QpType}), the work-completion opcode ({@code wr_to_wc_opcode}), how the WQE length and the
 * send completion's byte_len are computed ({@code rxe-facts.md} §6.6), whether it takes a
 * max_rd_atomic credit (§5.7), the access it needs at the responder (§6.3) and on its local
 * SGEs, and the packet family with the RC packet opcodes it produces ({@code next_opcode_rc}).
 *
 * <p>Code asks this table instead of switching on the WR opcode ({@link #of} is an array index:
 * no allocation, no lookup cost beyond one load). Rows are immutable and shared; this class has
 * no mutable state and is safe on any thread.
 *
 * <p>Masks: the {@code *_MASK} bits are rxe's {@code enum rxe_wr_mask} ({@code rxe_opcode.h});
 * {@link #mask(QpType)} is 0 for a QP type that does not accept the opcode (rxe's post-time
 * "bad wr opcode for qp type", EINVAL). The RC, UC and UD columns are rxe's, except SEND_WITH_INV,
 * which rxe4j takes on RC only (rxe accepts it on UC and UD and fails it at execution: there is no
 * such UC or UD packet). Every row is {@link #implemented()} now; the flag stays for rows a
 * future opcode adds before its engine does. The masked atomics are an rxe4j extension ({@code
 * extensions.md} §2), absent from rxe's table ({@link #rxeExtension()}).
 */
public final class WrOpcodeInfo {
    /** {@code WR_INLINE_MASK}: IBV_SEND_INLINE / inline data allowed. */
    public static final int INLINE_MASK = 1 << 0;
    /** {@code WR_ATOMIC_MASK}: CMP_AND_SWP or FETCH_AND_ADD (masked too, in rxe4j). */
    public static final int ATOMIC_MASK = 1 << 1;
    /** {@code WR_SEND_MASK}: a SEND (consumes a receive WQE at the peer). */
    public static final int SEND_MASK = 1 << 2;
    /** {@code WR_READ_MASK}: an RDMA READ. */
    public static final int READ_MASK = 1 << 3;
    /** {@code WR_WRITE_MASK}: an RDMA WRITE. */
    public static final int WRITE_MASK = 1 << 4;
    /** {@code WR_LOCAL_OP_MASK}: a local operation (no packet: LOCAL_INV, BIND_MW, REG_MR). */
    public static final int LOCAL_OP_MASK = 1 << 5;
    /** {@code WR_FLUSH_MASK}: an RDMA FLUSH ({@code rxe-facts.md} §7.3). */
    public static final int FLUSH_MASK = 1 << 6;
    /** {@code WR_ATOMIC_WRITE_MASK}: an ATOMIC WRITE ({@code rxe-facts.md} §7.2). */
    public static final int ATOMIC_WRITE_MASK = 1 << 7;
    /** {@code WR_ATOMIC_OR_READ_MASK}: only its own response completes it; IB_SEND_FENCE waits for it. */
    public static final int ATOMIC_OR_READ_MASK = ATOMIC_MASK | READ_MASK;
    /** {@code WR_READ_OR_WRITE_MASK}. */
    public static final int READ_OR_WRITE_MASK = READ_MASK | WRITE_MASK;
    /** {@code WR_WRITE_OR_SEND_MASK}. */
    public static final int WRITE_OR_SEND_MASK = WRITE_MASK | SEND_MASK;

    /** Which request packets a WR opcode produces ({@code next_opcode_rc}). */
    public enum Family {
        /** SEND FIRST/MIDDLE/LAST/ONLY (with IMM or INV on the last). */
        SEND,
        /** RDMA WRITE FIRST/MIDDLE/LAST/ONLY (with IMM on the last). */
        WRITE,
        /** One RDMA READ request (re-sent from the first missing response after a rewind). */
        READ,
        /** One CMP_SWAP / FETCH_ADD request (masked: rxe4j's opcodes 0xF0/0xF1). */
        ATOMIC,
        /** One ATOMIC WRITE request (RETH + 8 bytes). */
        ATOMIC_WRITE,
        /** One FLUSH request (FETH + RETH). */
        FLUSH,
        /** No packet: a local operation ({@code rxe_do_local_ops}). */
        LOCAL
    }

    /** How the WQE's message length (and so the send completion's byte_len) is computed at post time. */
    public enum Length {
        /** The sum of the SGE lengths, or the inline data length. */
        SGE_TOTAL,
        /** 8 bytes: the operand travels in the WR ({@code atomic_wr.compare_add}/ATOMIC WRITE value). */
        EIGHT,
        /** The WR's flush length ({@code rdma_flush} length; 0..2^32-1 bytes). */
        FLUSH_LENGTH
    }

    private static final WrOpcodeInfo[] ROWS = new WrOpcodeInfo[WrOpcode.values().length];

    static {
        // RC, UC, UD masks: rxe_wr_opcode_info[] (rxe_opcode.c)
        row(WrOpcode.RDMA_WRITE, INLINE_MASK | WRITE_MASK, INLINE_MASK | WRITE_MASK, 0)
                .wc(WcOpcode.RDMA_WRITE).family(Family.WRITE, Access.REMOTE_WRITE).budgetsPayload()
                .packets(Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST,
                        Opcode.RC_RDMA_WRITE_ONLY);
        row(WrOpcode.RDMA_WRITE_WITH_IMM, INLINE_MASK | WRITE_MASK, INLINE_MASK | WRITE_MASK, 0).immediate()
                .wc(WcOpcode.RDMA_WRITE).family(Family.WRITE, Access.REMOTE_WRITE).budgetsPayload()
                .packets(Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE,
                        Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
        row(WrOpcode.SEND, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK)
                .wc(WcOpcode.SEND).family(Family.SEND, 0).budgetsPayload()
                .packets(Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST, Opcode.RC_SEND_ONLY);
        row(WrOpcode.SEND_WITH_IMM, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK)
                .immediate().wc(WcOpcode.SEND).family(Family.SEND, 0).budgetsPayload()
                .packets(Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST_WITH_IMMEDIATE,
                        Opcode.RC_SEND_ONLY_WITH_IMMEDIATE);
        row(WrOpcode.RDMA_READ, READ_MASK, 0, 0)
                .wc(WcOpcode.RDMA_READ).family(Family.READ, Access.REMOTE_READ).credit().localWrite()
                .packets(null, null, null, Opcode.RC_RDMA_READ_REQUEST);
        row(WrOpcode.ATOMIC_CMP_AND_SWP, ATOMIC_MASK, 0, 0)
                .wc(WcOpcode.COMP_SWAP).family(Family.ATOMIC, Access.REMOTE_ATOMIC).credit().localWrite()
                .eightByteCompletion().packets(null, null, null, Opcode.RC_COMPARE_SWAP);
        row(WrOpcode.ATOMIC_FETCH_AND_ADD, ATOMIC_MASK, 0, 0)
                .wc(WcOpcode.FETCH_ADD).family(Family.ATOMIC, Access.REMOTE_ATOMIC).credit().localWrite()
                .eightByteCompletion().packets(null, null, null, Opcode.RC_FETCH_ADD);
        row(WrOpcode.LOCAL_INV, LOCAL_OP_MASK, 0, 0)
                .wc(WcOpcode.LOCAL_INV).family(Family.LOCAL, 0);
        row(WrOpcode.BIND_MW, LOCAL_OP_MASK, LOCAL_OP_MASK, 0)
                .wc(WcOpcode.BIND_MW).family(Family.LOCAL, 0);
        // rxe's UC and UD columns take SEND_WITH_INV at post time and fail it when it executes
        // (next_opcode_uc/ud have no such packet: LOC_QP_OP_ERR); there is no UC or UD opcode for it,
        // so rxe4j refuses it at post time (docs/verbs.md)
        row(WrOpcode.SEND_WITH_INV, INLINE_MASK | SEND_MASK, 0, 0)
                .wc(WcOpcode.SEND).family(Family.SEND, 0).budgetsPayload()
                .packets(Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST_WITH_INVALIDATE,
                        Opcode.RC_SEND_ONLY_WITH_INVALIDATE);
        row(WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, ATOMIC_MASK, 0, 0).extension()
                .wc(WcOpcode.MASKED_COMP_SWAP).family(Family.ATOMIC, Access.REMOTE_ATOMIC).credit().localWrite()
                .eightByteCompletion().packets(null, null, null, Opcode.RC_MASKED_COMPARE_SWAP);
        row(WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, ATOMIC_MASK, 0, 0).extension()
                .wc(WcOpcode.MASKED_FETCH_ADD).family(Family.ATOMIC, Access.REMOTE_ATOMIC).credit().localWrite()
                .eightByteCompletion().packets(null, null, null, Opcode.RC_MASKED_FETCH_ADD);
        row(WrOpcode.FLUSH, FLUSH_MASK, 0, 0)
                .wc(WcOpcode.FLUSH).family(Family.FLUSH, Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT)
                .operandInWr(Length.FLUSH_LENGTH).packets(null, null, null, Opcode.RC_FLUSH);
        row(WrOpcode.ATOMIC_WRITE, ATOMIC_WRITE_MASK, 0, 0)
                .wc(WcOpcode.ATOMIC_WRITE).family(Family.ATOMIC_WRITE, Access.REMOTE_WRITE).credit()
                .operandInWr(Length.EIGHT).packets(null, null, null, Opcode.RC_ATOMIC_WRITE);
        for (WrOpcode op : WrOpcode.values()) {
            if (ROWS[op.ordinal()] == null || ROWS[op.ordinal()].wcOpcode == null
                    || ROWS[op.ordinal()].family == null) {
                throw new ExceptionInInitializerError("WR opcode table has no complete row for " + op);
            }
        }
    }

    private final WrOpcode opcode;
    private final int[] maskByQpType = new int[QpType.values().length];
    private boolean implemented = true;
    private boolean extension;
    private boolean immediate;
    private WcOpcode wcOpcode;
    private Family family;
    private Length length = Length.SGE_TOTAL;
    private boolean eightByteCompletion;
    private boolean operandInWr;
    private boolean payloadInBudget;
    private boolean credit;
    private int remoteAccess;
    private int localAccess;
    private Opcode first;
    private Opcode middle;
    private Opcode last;
    private Opcode only;

    private WrOpcodeInfo(WrOpcode opcode) {
        this.opcode = opcode;
    }

    // ---- table construction (class initialisation only; rows are never written afterwards) ----

    private static WrOpcodeInfo row(WrOpcode op, int rc, int uc, int ud) {
        WrOpcodeInfo r = new WrOpcodeInfo(op);
        r.maskByQpType[QpType.RC.ordinal()] = rc;
        r.maskByQpType[QpType.UC.ordinal()] = uc;
        r.maskByQpType[QpType.UD.ordinal()] = ud;
        ROWS[op.ordinal()] = r;
        return r;
    }

    private WrOpcodeInfo notImplemented() {
        implemented = false;
        return this;
    }

    private WrOpcodeInfo extension() {
        extension = true;
        return this;
    }

    private WrOpcodeInfo immediate() {
        immediate = true;
        return this;
    }

    private WrOpcodeInfo wc(WcOpcode wc) {
        wcOpcode = wc;
        return this;
    }

    private WrOpcodeInfo family(Family f, int remote) {
        family = f;
        remoteAccess = remote;
        return this;
    }

    private WrOpcodeInfo budgetsPayload() {
        payloadInBudget = true;
        return this;
    }

    private WrOpcodeInfo credit() {
        credit = true;
        return this;
    }

    private WrOpcodeInfo localWrite() {
        localAccess = Access.LOCAL_WRITE;
        return this;
    }

    private WrOpcodeInfo eightByteCompletion() {
        eightByteCompletion = true;
        return this;
    }

    private WrOpcodeInfo operandInWr(Length len) {
        operandInWr = true;
        length = len;
        return this;
    }

    private WrOpcodeInfo packets(Opcode f, Opcode m, Opcode l, Opcode o) {
        first = f;
        middle = m;
        last = l;
        only = o;
        return this;
    }

    // ---- lookups ----

    /** @return the row of {@code op} (an array load: no allocation); never null */
    public static WrOpcodeInfo of(WrOpcode op) {
        return ROWS[op.ordinal()];
    }

    /** @return the WR opcode of this row */
    public WrOpcode opcode() {
        return opcode;
    }

    /**
     * @return the {@code *_MASK} bits for a QP of type {@code type}, as in {@code
     *     rxe_wr_opcode_info[op].mask[qpt]}; 0 if that QP type does not accept the opcode
     */
    public int mask(QpType type) {
        return maskByQpType[type.ordinal()];
    }

    /** @return whether a QP of {@code type} accepts the opcode and rxe4j carries it (post_send's check) */
    public boolean allowed(QpType type) {
        return implemented && maskByQpType[type.ordinal()] != 0;
    }

    /** @return whether the RC mask has every bit of {@code mask} */
    public boolean is(int mask) {
        return (maskByQpType[QpType.RC.ordinal()] & mask) == mask;
    }

    /** @return whether the RC mask has any bit of {@code mask} */
    public boolean isAny(int mask) {
        return (maskByQpType[QpType.RC.ordinal()] & mask) != 0;
    }

    /** @return whether rxe4j's engine carries this opcode (false: rejected at post time for now) */
    public boolean implemented() {
        return implemented;
    }

    /** @return whether the row is an rxe4j extension, absent from rxe's table (the masked atomics) */
    public boolean rxeExtension() {
        return extension;
    }

    /** @return whether the WR carries immediate data (the send completion gets IBV_WC_WITH_IMM) */
    public boolean immediateData() {
        return immediate;
    }

    /** @return the send completion's opcode ({@code rxe_comp.c:wr_to_wc_opcode}, {@code rxe-facts.md} §6.6) */
    public WcOpcode wcOpcode() {
        return wcOpcode;
    }

    /** @return the packets this opcode produces */
    public Family family() {
        return family;
    }

    /** @return how the WQE's message length is computed at post time */
    public Length length() {
        return length;
    }

    /**
     * @return the send completion's byte_len for a WQE of {@code wqeLength} bytes: 8 for the
     *     atomics (the local SGE they fill), else the WQE's length (the bytes sent or requested;
     *     ATOMIC WRITE 8, FLUSH the flush length; {@code rxe-facts.md} §6.6)
     */
    public int completionByteLen(long wqeLength) {
        return eightByteCompletion ? 8 : (int) wqeLength;
    }

    /** @return whether the operand travels in the WR itself and the WR takes no SGEs (ATOMIC WRITE, FLUSH) */
    public boolean operandInWr() {
        return operandInWr;
    }

    /**
     * @return whether a packet of this opcode holds its payload of the peer byte budget (SEND,
     *     WRITE); the others hold a request's 64 bytes, a READ also (part of) its response bytes
     *     ({@code Requester.budgetBytes})
     */
    public boolean payloadInBudget() {
        return payloadInBudget;
    }

    /**
     * @return whether the WQE takes a max_rd_atomic credit: READ, the atomics and ATOMIC WRITE
     *     ({@code rxe-facts.md} §5.7; a TID READ takes one per segment instead)
     */
    public boolean usesRdAtomicCredit() {
        return credit;
    }

    /**
     * @return the {@link Access} bits the responder needs in the QP's access flags and the MR
     *     ({@code rxe-facts.md} §6.3): SEND none, WRITE and ATOMIC WRITE REMOTE_WRITE, READ
     *     REMOTE_READ, atomics REMOTE_ATOMIC; FLUSH both FLUSH bits, of which a request needs the
     *     ones of its placement type (GLOBAL → FLUSH_GLOBAL, PERSISTENT → FLUSH_PERSISTENT)
     */
    public int remoteAccess() {
        return remoteAccess;
    }

    /** @return the {@link Access} bits the local SGEs' MRs must grant: LOCAL_WRITE where a response lands (READ, atomics) */
    public int localAccess() {
        return localAccess;
    }

    /**
     * @return the RC packet opcode of one packet of a SEND or WRITE message ({@code
     *     next_opcode_rc}): FIRST, MIDDLE, LAST or ONLY; for the one-packet families the ONLY
     *     opcode whatever the flags (READ request, atomic, ATOMIC WRITE, FLUSH); null for a
     *     local operation
     */
    public Opcode packetOpcode(boolean isFirst, boolean isLast) {
        if (first == null) {
            return only;
        }
        return isFirst ? (isLast ? only : first) : (isLast ? last : middle);
    }

    @Override
    public String toString() {
        return "WrOpcodeInfo{" + opcode + ", rc=0x" + Integer.toHexString(mask(QpType.RC)) + ", " + family + ", "
                + wcOpcode + '}';
    }
}
