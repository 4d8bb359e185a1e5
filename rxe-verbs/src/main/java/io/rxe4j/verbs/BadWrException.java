package io.rxe4j.verbs;

/**
 * A list post ({@link QueuePair#postSend(java.util.List)}, {@link QueuePair#postRecv(java.util.List)})
 * stopped at a work request it could not post: the {@code bad_wr} of {@code ibv_post_send}. The
 * work requests before it were posted and will complete; it and those after it were not posted.
 * The cause says why: an {@link IllegalArgumentException} for an invalid work request, an {@link
 * IllegalStateException} for a QP in the wrong state, or {@link QueueFullException} when the queue
 * had no room.
 */
public final class BadWrException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int badWrIndex;
    private final long badWrId;

    BadWrException(int badWrIndex, long badWrId, RuntimeException cause) {
        super("work request [" + badWrIndex + "] (wr_id " + badWrId + ") was not posted, nor were those after it: "
                + cause.getMessage(), cause);
        this.badWrIndex = badWrIndex;
        this.badWrId = badWrId;
    }

    /** @return the index in the list of the first work request not posted */
    public int badWrIndex() {
        return badWrIndex;
    }

    /** @return that work request's wr_id */
    public long badWrId() {
        return badWrId;
    }
}
