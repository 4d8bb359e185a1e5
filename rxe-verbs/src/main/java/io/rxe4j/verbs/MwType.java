package io.rxe4j.verbs;

/**
 * Memory-window types ({@code enum ibv_mw_type}; {@code verbs-surface-facts.md} §5). {@link
 * #value()} is the libibverbs number.
 */
public enum MwType {
    /**
     * IBV_MW_TYPE_1: bound with {@link QueuePair#bindMw}, through any QP of the window's PD, and
     * usable through any of them; unbound by a bind with length 0; cannot be invalidated.
     */
    TYPE_1(1),
    /**
     * IBV_MW_TYPE_2 with type 2B semantics (as rdma_rxe, which offers no 2A): bound by a {@link
     * WrOpcode#BIND_MW} work request ({@link SendWr#bindMw}) to the QP that posts it, usable only
     * through that QP, and invalidated by LOCAL_INV or the peer's SEND_WITH_INV, after which it may
     * be bound again.
     */
    TYPE_2B(2);

    private final int value;

    MwType(int value) {
        this.value = value;
    }

    /** @return the libibverbs value: 1 or 2 */
    public int value() {
        return value;
    }
}
