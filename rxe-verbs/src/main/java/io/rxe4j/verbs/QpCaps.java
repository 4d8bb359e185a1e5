package io.rxe4j.verbs;

/**
 * QP capacities ({@code struct ibv_qp_cap}).
 *
 * @param maxSendWr send queue depth in WRs, 1..2^20
 * @param maxRecvWr receive queue depth in WRs, 1..2^20
 * @param maxSendSge SGEs per send WR, 1..32
 * @param maxRecvSge SGEs per receive WR, 1..32
 * @param maxInlineData bytes of inline data per send WR, 0..4096
 */
public record QpCaps(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    /** Device limit on WRs per queue ({@code rxe_param.h} max_qp_wr). */
    public static final int MAX_WR = 1 << 20;
    /** Device limit on SGEs per WR ({@code rxe_param.h} max_sge). */
    public static final int MAX_SGE = 32;
    /** Device limit on inline data in bytes. */
    public static final int MAX_INLINE = 4096;

    /**
     * @throws IllegalArgumentException naming the first value out of range
     */
    public QpCaps {
        check("maxSendWr", maxSendWr, 1, MAX_WR);
        check("maxRecvWr", maxRecvWr, 1, MAX_WR);
        check("maxSendSge", maxSendSge, 1, MAX_SGE);
        check("maxRecvSge", maxRecvSge, 1, MAX_SGE);
        check("maxInlineData", maxInlineData, 0, MAX_INLINE);
    }

    private static void check(String name, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " must be " + min + ".." + max + ", got " + v);
        }
    }
}
