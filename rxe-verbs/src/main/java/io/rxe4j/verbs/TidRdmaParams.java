package io.rxe4j.verbs;

/**
 * One side's TID RDMA parameters ({@code struct tid_rdma_params}; {@code tid-opfn-facts.md} §1.3,
 * §2) and their 64-bit OPFN negotiation word. Each QP keeps its own ({@code local}) and the
 * peer's ({@code remote}); no minimum is negotiated: each side applies the peer's values by role.
 *
 * <p>Word layout (capability code 1, TID RDMA), bit 63 first: QP context number 63:56 · KDETH QP
 * prefix 55:48 · max_len 47:37 as (bytes / 4096) − 1 · timeout 36:32 · reserved 31:26 · urg 25 ·
 * version 24:22 (never encoded) · J_KEY 21:16 (6 bits travel) · max_read 15:10 · max_write 9:4 ·
 * capcode 3:0.
 *
 * @param qp the KDETH QP of this side's receive context: prefix 0x80 in bits 23:16, the context
 *     index in bits 7:0 (only these 16 bits travel)
 * @param maxLen the largest TID segment this side accepts, in bytes: a multiple of 4096, 4 KiB … 8 MiB
 *     (hfi1: {@code TID_RDMA_MAX_SEGMENT_SIZE} = 256 KiB)
 * @param jkey J_KEY of the receive context, 0..63 (hfi1 kernel contexts: 32)
 * @param maxRead TID READ segments in flight per request, 0..63 (hfi1: 6; 0 disables TID RDMA)
 * @param maxWrite TID WRITE segments allocatable at once, 0..63 (hfi1: 4; 0 disables TID RDMA)
 * @param timeout the sender QP's local ACK timeout exponent, 0..31 (4.096 µs × 2^timeout)
 * @param urg the "urgent-capable" flag (rxe4j sends false, {@code tid-opfn-facts.md} §9.7)
 */
public record TidRdmaParams(int qp, int maxLen, int jkey, int maxRead, int maxWrite, int timeout, boolean urg) {
    /** {@code STL_VERBS_EXTD_TID_RDMA}: the capability code in bits 3:0 of the word. */
    public static final int CAPCODE = 1;
    /** {@code RVT_KDETH_QP_PREFIX}: bits 23:16 of a KDETH QPN. */
    public static final int KDETH_QP_PREFIX = 0x80;
    /** {@code TID_RDMA_MAX_SEGMENT_SIZE} (and {@code TID_RDMA_MIN_SEGMENT_SIZE}): 256 KiB. */
    public static final int SEGMENT_SIZE = 256 * 1024;
    /** {@code TID_RDMA_MAX_READ_SEGS_PER_REQ}. */
    public static final int DEFAULT_MAX_READ = 6;
    /** {@code TID_RDMA_MAX_WRITE_SEGS_PER_REQ}. */
    public static final int DEFAULT_MAX_WRITE = 4;
    /** {@code TID_RDMA_JKEY}. */
    public static final int DEFAULT_JKEY = 32;

    /**
     * @throws IllegalArgumentException naming a field out of range
     */
    public TidRdmaParams {
        if (maxLen < 0 || (maxLen & 0xFFF) != 0 || maxLen > (8 << 20)) {
            throw new IllegalArgumentException("maxLen must be a multiple of 4096 up to 8 MiB, got " + maxLen);
        }
        check("jkey", jkey, 63);
        check("maxRead", maxRead, 63);
        check("maxWrite", maxWrite, 63);
        check("timeout", timeout, 31);
        if ((qp & ~0xFF_FFFF) != 0) {
            throw new IllegalArgumentException("qp must be a 24-bit KDETH QPN, got 0x" + Integer.toHexString(qp));
        }
    }

    private static void check(String name, int v, int max) {
        if (v < 0 || v > max) {
            throw new IllegalArgumentException(name + " must be 0.." + max + ", got " + v);
        }
    }

    /**
     * @param context the receive context index, 0..255
     * @param timeout the QP's local ACK timeout exponent
     * @return hfi1's local defaults ({@code tid_rdma_opfn_init}): KDETH QP {@code 0x80 << 16 | context},
     *     256 KiB segments, J_KEY 32, max_read 6, max_write 4, urg off
     */
    public static TidRdmaParams defaults(int context, int timeout) {
        return new TidRdmaParams(KDETH_QP_PREFIX << 16 | (context & 0xFF), SEGMENT_SIZE, DEFAULT_JKEY,
                DEFAULT_MAX_READ, DEFAULT_MAX_WRITE, timeout, false);
    }

    /** @return whether these parameters permit TID RDMA at all (max_read and max_write non-zero) */
    public boolean usable() {
        return maxRead > 0 && maxWrite > 0 && maxLen > 0;
    }

    /**
     * @return the 64-bit OPFN word for these parameters with capcode 1. As in hfi1, max_len is
     *     encoded as ((maxLen / 4096) − 1) masked to 11 bits, so all-zero parameters still give
     *     0x7FF there ({@code tid-opfn-facts.md} §1.3 quirk)
     */
    public long encode() {
        return ((long) (qp & 0xFF) << 56)
                | ((long) ((qp >>> 16) & 0xFF) << 48)
                | ((long) (((maxLen >>> 12) - 1) & 0x7FF) << 37)
                | ((long) (timeout & 0x1F) << 32)
                | ((urg ? 1L : 0L) << 25)
                | ((long) (jkey & 0x3F) << 16)
                | ((long) (maxRead & 0x3F) << 10)
                | ((long) (maxWrite & 0x3F) << 4)
                | CAPCODE;
    }

    /**
     * Decodes a peer's OPFN word ({@code tid_rdma_conn_reply}).
     *
     * @return the peer's parameters, or null when the word disables TID RDMA: zero once the capcode
     *     is masked off, or max_read / max_write zero (what an hfi1 side with a path MTU other than
     *     4096/8192 sends; {@code tid-opfn-facts.md} §1.3)
     */
    public static TidRdmaParams decode(long word) {
        if ((word & ~0xFL) == 0) {
            return null;
        }
        int ctxt = (int) (word >>> 56) & 0xFF;
        int prefix = (int) (word >>> 48) & 0xFF;
        int maxLen = ((int) (word >>> 37) & 0x7FF) + 1;
        int timeout = (int) (word >>> 32) & 0x1F;
        boolean urg = ((word >>> 25) & 1) != 0;
        int jkey = (int) (word >>> 16) & 0x3F;
        int maxRead = (int) (word >>> 10) & 0x3F;
        int maxWrite = (int) (word >>> 4) & 0x3F;
        TidRdmaParams p = new TidRdmaParams(prefix << 16 | ctxt, maxLen << 12, jkey, maxRead, maxWrite, timeout, urg);
        return p.usable() ? p : null;
    }
}
