package io.rxe4j.verbs;

/**
 * RDMA FLUSH operands ({@code ibv_wr_flush}; {@code rxe-facts.md} §2.2, §7.3): the placement type
 * (a bit set, carried in FETH bits 3..0) and the selectivity level (FETH bits 5..4).
 */
public final class Flush {
    /** IBV_FLUSH_GLOBAL: placement type bit 0, global visibility. */
    public static final int GLOBAL = 1;
    /** IBV_FLUSH_PERSISTENT: placement type bit 1, persistence. */
    public static final int PERSISTENT = 2;
    /** IBV_FLUSH_RANGE: flush the range named by remote address and length. */
    public static final int RANGE = 0;
    /** IBV_FLUSH_MR: flush the whole MR named by the rkey (address and length ignored). */
    public static final int MR = 1;

    private Flush() {}
}
