package io.rxe4j.verbs;


/**
 * QP creation attributes ({@code struct ibv_qp_init_attr}).
 *
 * @param sendCq CQ for send completions
 * @param recvCq CQ for receive completions (may be the same)
 * @param caps queue depths, SGE counts, inline size
 * @param qpType {@link QpType#RC}, {@link QpType#UC} or {@link QpType#UD}
 * @param sqSigAll every send WR completes with a CQE, signaled or not
 * @param srq the shared receive queue the QP takes its receive WQEs from, or null for its own receive
 *     queue ({@code verbs-surface-facts.md} §4)
 */
public record QpInitAttr(CompletionQueue sendCq, CompletionQueue recvCq, QpCaps caps, QpType qpType,
        boolean sqSigAll, SharedReceiveQueue srq) {
    /** @throws IllegalArgumentException if a CQ, the caps or the type is null */
    public QpInitAttr {
        if (sendCq == null || recvCq == null || caps == null || qpType == null) {
            throw new IllegalArgumentException("sendCq, recvCq, caps and qpType are required");
        }
    }

    /** Attributes of a QP with its own receive queue. */
    public QpInitAttr(CompletionQueue sendCq, CompletionQueue recvCq, QpCaps caps, QpType qpType, boolean sqSigAll) {
        this(sendCq, recvCq, caps, qpType, sqSigAll, null);
    }

    /** @return these attributes for a QP that takes its receive WQEs from {@code s} */
    public QpInitAttr withSrq(SharedReceiveQueue s) {
        return new QpInitAttr(sendCq, recvCq, caps, qpType, sqSigAll, s);
    }

    /** @return UC attributes with both queues 256 deep, 4 SGEs, 64 bytes inline, sq_sig_all off */
    public static QpInitAttr uc(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new QpInitAttr(sendCq, recvCq, new QpCaps(256, 256, 4, 4, 64), QpType.UC, false);
    }

    /** @return UD attributes with both queues 256 deep, 4 SGEs, 64 bytes inline, sq_sig_all off */
    public static QpInitAttr ud(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new QpInitAttr(sendCq, recvCq, new QpCaps(256, 256, 4, 4, 64), QpType.UD, false);
    }

    /** @return RC attributes with both queues 256 deep, 4 SGEs, 64 bytes inline, sq_sig_all off */
    public static QpInitAttr rc(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new QpInitAttr(sendCq, recvCq, new QpCaps(256, 256, 4, 4, 64), QpType.RC, false);
    }
}
