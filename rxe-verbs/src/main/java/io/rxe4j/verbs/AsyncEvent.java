package io.rxe4j.verbs;

/**
 * An asynchronous event of a device ({@code struct ibv_async_event}, or a librdmacm connection
 * event), delivered to the listeners added with {@link RdmaDevice#addAsyncEventListener} and
 * queued for {@link RdmaDevice#getAsyncEvent}.
 *
 * @param type what happened
 * @param qp the QP concerned, or null (for {@link AsyncEventType#CQ_ERR})
 * @param cq the CQ concerned, or null (for every type but {@link AsyncEventType#CQ_ERR})
 * @param reason a human-readable explanation: for {@link AsyncEventType#QP_FATAL} the QP's {@link
 *     QueuePair#errorReason()}, for {@link AsyncEventType#DISCONNECTED} who ended the connection
 * @param srq the shared receive queue concerned ({@link AsyncEventType#SRQ_LIMIT_REACHED}), or null
 */
public record AsyncEvent(AsyncEventType type, QueuePair qp, CompletionQueue cq, String reason, SharedReceiveQueue srq) {
    /** @throws IllegalArgumentException if {@code type} or {@code reason} is null */
    public AsyncEvent {
        if (type == null || reason == null) {
            throw new IllegalArgumentException("type and reason are required, got " + type + ", " + reason);
        }
    }

    /** An event of a QP or a CQ (no SRQ). */
    public AsyncEvent(AsyncEventType type, QueuePair qp, CompletionQueue cq, String reason) {
        this(type, qp, cq, reason, null);
    }
}
