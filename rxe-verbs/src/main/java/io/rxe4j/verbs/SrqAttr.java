package io.rxe4j.verbs;

/**
 * Shared receive queue attributes ({@code struct ibv_srq_attr}) as {@link SharedReceiveQueue#query}
 * reports them and {@link SharedReceiveQueue#modify} takes them.
 *
 * @param maxWr receive WRs the SRQ holds
 * @param maxSge SGEs per receive WR
 * @param srqLimit the armed limit, 0 when none is armed (also after the limit event fired)
 */
public record SrqAttr(int maxWr, int maxSge, int srqLimit) {
    /** {@code IBV_SRQ_MAX_WR}: resize to {@link #maxWr}. */
    public static final int MAX_WR = 1;
    /** {@code IBV_SRQ_LIMIT}: arm (or with 0 disarm) {@link #srqLimit}. */
    public static final int LIMIT = 1 << 1;
}
