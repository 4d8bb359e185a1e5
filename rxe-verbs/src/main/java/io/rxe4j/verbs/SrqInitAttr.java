package io.rxe4j.verbs;

/**
 * Shared receive queue creation attributes ({@code struct ibv_srq_init_attr}; {@code
 * verbs-surface-facts.md} §4.1).
 *
 * @param maxWr receive WRs the SRQ holds, 1..{@link #MAX_WR}
 * @param maxSge SGEs per receive WR, 1..{@link #MAX_SGE} (0 is raised to 1, as {@code rdma_rxe})
 * @param srqLimit the limit armed at creation (0: none): when fewer WRs than this remain after one
 *     is taken, SRQ_LIMIT_REACHED is raised once and the limit disarms
 */
public record SrqInitAttr(int maxWr, int maxSge, int srqLimit) {
    /** Largest SRQ: 2^20 WRs ({@code RXE_MAX_SRQ_WR}). */
    public static final int MAX_WR = 1 << 20;
    /** Most SGEs per SRQ WR: 27 ({@code RXE_MAX_SRQ_SGE}). */
    public static final int MAX_SGE = 27;

    /** @throws IllegalArgumentException for a value out of range, named */
    public SrqInitAttr {
        if (maxWr < 1 || maxWr > MAX_WR) {
            throw new IllegalArgumentException("SRQ max_wr must be 1.." + MAX_WR + ", got " + maxWr);
        }
        if (maxSge < 0 || maxSge > MAX_SGE) {
            throw new IllegalArgumentException("SRQ max_sge must be 1.." + MAX_SGE + ", got " + maxSge);
        }
        if (srqLimit < 0 || srqLimit > maxWr) {
            throw new IllegalArgumentException("srq_limit must be 0..max_wr (" + maxWr + "), got " + srqLimit);
        }
        maxSge = Math.max(1, maxSge);
    }
}
