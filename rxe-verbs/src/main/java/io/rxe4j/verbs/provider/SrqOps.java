package io.rxe4j.verbs.provider;

import io.rxe4j.verbs.RecvWr;

/** A provider's shared receive queue ({@code ibv_srq}). Thread-safe. */
public interface SrqOps {
    /**
     * {@code ibv_post_srq_recv} of one WR.
     *
     * @return false if the SRQ is full
     * @throws IllegalArgumentException for too many SGEs, an SGE outside a registered MR of the SRQ's PD
     *     or without LOCAL_WRITE, or more than 2^31 bytes
     */
    boolean tryPost(RecvWr wr);

    /**
     * {@code ibv_modify_srq}.
     *
     * @param mask {@code SrqAttr.MAX_WR} and/or {@code SrqAttr.LIMIT}
     * @throws IllegalArgumentException for a value out of range, or a new max_wr below the armed limit or
     *     below the WRs now queued
     */
    void modify(int maxWr, int srqLimit, int mask);

    /** @return {max_wr, max_sge, srq_limit} now */
    int[] query();

    /** Sets what runs (on the consuming QP's event loop; must not block) when the armed limit is reached. */
    void onLimitReached(Runnable listener);

    /** @return the WRs queued now */
    int queued();
}
