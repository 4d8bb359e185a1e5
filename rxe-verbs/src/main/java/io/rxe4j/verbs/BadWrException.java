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

    /**
     * Posts {@code wrs} in order through {@code post}, stopping at the first that cannot be posted
     * ({@code ibv_post_recv}'s {@code bad_wr}), for a QP's and an SRQ's receive lists alike.
     *
     * @throws BadWrException naming the first WR not posted (its index and wr_id) and why
     */
    static void postEach(java.util.List<RecvWr> wrs, java.util.function.Consumer<RecvWr> post) {
        for (int i = 0; i < wrs.size(); i++) {
            RecvWr wr = wrs.get(i);
            if (wr == null) {
                throw new BadWrException(i, 0, new IllegalArgumentException("work request [" + i + "] is null"));
            }
            try {
                post.accept(wr);
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw new BadWrException(i, wr.wrId, e);
            }
        }
    }
}
