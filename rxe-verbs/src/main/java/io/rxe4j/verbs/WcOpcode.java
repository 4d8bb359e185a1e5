package io.rxe4j.verbs;

/**
 * Work-completion opcodes ({@code enum ibv_wc_opcode}, kernel numbers for the masked ones;
 * {@code rxe-facts.md} §6.6). {@link #value()} is the rdma-core number.
 */
public enum WcOpcode {
    /** IBV_WC_SEND. */
    SEND(0),
    /** IBV_WC_RDMA_WRITE. */
    RDMA_WRITE(1),
    /** IBV_WC_RDMA_READ. */
    RDMA_READ(2),
    /** IBV_WC_COMP_SWAP. */
    COMP_SWAP(3),
    /** IBV_WC_FETCH_ADD. */
    FETCH_ADD(4),
    /** IBV_WC_BIND_MW. */
    BIND_MW(5),
    /** IBV_WC_LOCAL_INV. */
    LOCAL_INV(6),
    /** IBV_WC_TSO. */
    TSO(7),
    /** IBV_WC_FLUSH. */
    FLUSH(8),
    /** IBV_WC_ATOMIC_WRITE. */
    ATOMIC_WRITE(9),
    /** IB_WC_REG_MR (kernel only). */
    REG_MR(10),
    /** IB_WC_MASKED_COMP_SWAP (kernel only). */
    MASKED_COMP_SWAP(11),
    /** IB_WC_MASKED_FETCH_ADD (kernel only). */
    MASKED_FETCH_ADD(12),
    /** IBV_WC_RECV: a SEND was received. */
    RECV(128),
    /** IBV_WC_RECV_RDMA_WITH_IMM: an RDMA WRITE with immediate was received. */
    RECV_RDMA_WITH_IMM(129);

    private final int value;

    WcOpcode(int value) {
        this.value = value;
    }

    /** @return the rdma-core numeric value */
    public int value() {
        return value;
    }
}
