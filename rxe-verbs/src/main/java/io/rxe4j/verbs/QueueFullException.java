package io.rxe4j.verbs;

/**
 * The send or receive queue had no room for a work request ({@code ENOMEM} from {@code
 * ibv_post_send}/{@code ibv_post_recv}): as many work requests are outstanding as the QP was
 * created for ({@link QpCaps}). Poll completions and post again, or use {@link
 * QueuePair#tryPostSend}/{@link QueuePair#tryPostRecv}, which return false instead of throwing.
 * A subclass of {@link IllegalStateException} for code written against earlier versions.
 */
public final class QueueFullException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    QueueFullException(String message) {
        super(message);
    }
}
