package io.rxe4j.verbs;

/**
 * The failure of a work request posted with {@link QueuePair#postSendAsync}, {@link
 * QueuePair#submit} or {@link QueuePair#execute}: its completion had a
 * status other than {@link WcStatus#SUCCESS} (for example RETRY_EXC_ERR for an unreachable peer,
 * REM_ACCESS_ERR for an rkey the peer refused, WR_FLUSH_ERR after the QP entered ERR); the message
 * ends with the QP's {@link QueuePair#errorReason()} when the QP had entered ERR.
 */
public final class WorkCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient WorkCompletion completion;

    WorkCompletionException(WorkCompletion completion) {
        this(completion, null);
    }

    /** @param qpReason the QP's {@link QueuePair#errorReason()} when it failed, or null */
    WorkCompletionException(WorkCompletion completion, String qpReason) {
        super("work request " + completion.wrId + " on QP 0x" + Integer.toHexString(completion.qpNum) + " completed with "
                + completion.status + " (" + completion.opcode + ", vendor_err 0x" + Integer.toHexString(completion.vendorErr)
                + ")" + (qpReason != null ? ": " + qpReason : ""));
        this.completion = completion;
    }

    /** @return the completion (a copy owned by this exception) */
    public WorkCompletion completion() {
        return completion;
    }

    /** @return the completion's status */
    public WcStatus status() {
        return completion.status;
    }
}
