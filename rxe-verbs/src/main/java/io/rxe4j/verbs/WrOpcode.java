package io.rxe4j.verbs;

/**
 * Send work-request opcodes ({@code enum ibv_wr_opcode} / {@code IB_UVERBS_WR_*};
 * {@code rxe-facts.md} §6.7). {@link #value()} is the rdma-core number.
 */
public enum WrOpcode {
    /** IBV_WR_RDMA_WRITE. */
    RDMA_WRITE(0),
    /** IBV_WR_RDMA_WRITE_WITH_IMM. */
    RDMA_WRITE_WITH_IMM(1),
    /** IBV_WR_SEND. */
    SEND(2),
    /** IBV_WR_SEND_WITH_IMM. */
    SEND_WITH_IMM(3),
    /** IBV_WR_RDMA_READ. */
    RDMA_READ(4),
    /** IBV_WR_ATOMIC_CMP_AND_SWP. */
    ATOMIC_CMP_AND_SWP(5),
    /** IBV_WR_ATOMIC_FETCH_AND_ADD. */
    ATOMIC_FETCH_AND_ADD(6),
    /** IBV_WR_LOCAL_INV: invalidate a type 2B window ({@link SendWr#localInv}; RC). */
    LOCAL_INV(7),
    /** IBV_WR_BIND_MW: bind a type 2B window ({@link SendWr#bindMw}; RC, UC). */
    BIND_MW(8),
    /** IBV_WR_SEND_WITH_INV: a SEND that invalidates the peer's rkey ({@link SendWr#sendWithInv}; RC). */
    SEND_WITH_INV(9),
    /** IB_WR_MASKED_ATOMIC_CMP_AND_SWP (kernel/uverbs 12; rxe4j wire format, {@code extensions.md} §2). */
    MASKED_ATOMIC_CMP_AND_SWP(12),
    /** IB_WR_MASKED_ATOMIC_FETCH_AND_ADD (kernel/uverbs 13; rxe4j wire format, {@code extensions.md} §2). */
    MASKED_ATOMIC_FETCH_AND_ADD(13),
    /** IBV_WR_FLUSH ({@code rxe-facts.md} §7.3). */
    FLUSH(14),
    /** IBV_WR_ATOMIC_WRITE ({@code rxe-facts.md} §7.2). */
    ATOMIC_WRITE(15);

    private final int value;

    WrOpcode(int value) {
        this.value = value;
    }

    /** @return the rdma-core numeric value */
    public int value() {
        return value;
    }

    /** @return whether this is CMP_AND_SWP or FETCH_AND_ADD (masked or not) */
    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD
                || this == MASKED_ATOMIC_CMP_AND_SWP || this == MASKED_ATOMIC_FETCH_AND_ADD;
    }

    /** @return whether the opcode carries immediate data */
    public boolean hasImmediate() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }
}
