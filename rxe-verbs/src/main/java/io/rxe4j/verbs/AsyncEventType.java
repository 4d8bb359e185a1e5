package io.rxe4j.verbs;

/**
 * What an {@link AsyncEvent} reports: the asynchronous events of libibverbs ({@code enum
 * ibv_event_type}) that an rxe4j device raises, and the connection events of librdmacm ({@code enum
 * rdma_cm_event_type}) that the connection manager raises.
 */
public enum AsyncEventType {
    /**
     * A QP entered ERR on its own ({@code IBV_EVENT_QP_FATAL}): a retry count exhausted (the peer is
     * unreachable or dead), a fatal NAK received or sent, a CQ overflow, an internal error. The
     * event's reason is the QP's {@link QueuePair#errorReason()}. Not raised by {@code modify} to
     * ERR or by a disconnect.
     */
    QP_FATAL,
    /**
     * A CQ ran out of room ({@code IBV_EVENT_CQ_ERR}); raised once per CQ. The QP whose completion
     * did not fit also enters ERR ({@link #QP_FATAL}).
     */
    CQ_ERR,
    /**
     * A connection made by {@link io.rxe4j.verbs.cm.RdmaConnection#connect} or {@link io.rxe4j.verbs.cm.ConnectRequest#accept} is up:
     * the QP is in RTS ({@code RDMA_CM_EVENT_ESTABLISHED}).
     */
    ESTABLISHED,
    /**
     * A connection ended ({@code RDMA_CM_EVENT_DISCONNECTED}): this side or the peer called {@link
     * io.rxe4j.verbs.cm.RdmaConnection#disconnect()} (a DREQ went out or came in), the device closed,
     * or the peer rejected the established connection (REJ). The QP has been moved to ERR, so
     * outstanding work requests complete with WR_FLUSH_ERR. A peer that dies without a DREQ is not
     * seen here but by the QP, as on Linux: its work requests fail with RETRY_EXC_ERR.
     */
    DISCONNECTED,
    /**
     * A shared receive queue's armed limit was reached ({@code IBV_EVENT_SRQ_LIMIT_REACHED}): a WQE was
     * taken and fewer than the limit remain; the limit is disarmed (0) and fires again only after
     * {@link SharedReceiveQueue#modify} arms it ({@code verbs-surface-facts.md} §4.2 rule 6).
     * {@link AsyncEvent#srq()} names the SRQ.
     */
    SRQ_LIMIT_REACHED,
    /**
     * An SRQ-attached QP entered ERR: it takes no more WQEs from its SRQ ({@code
     * IBV_EVENT_QP_LAST_WQE_REACHED}); the WQEs still in the SRQ stay there for its other QPs (§4.3).
     */
    QP_LAST_WQE_REACHED
}
