package io.rxe4j.verbs.provider;

import io.rxe4j.verbs.WorkCompletion;

/** A provider's completion queue ({@code ibv_cq}); safe for one consumer thread at a time. */
public interface CqOps {
    /** @return the capacity in completions */
    int capacity();

    /** @return the number of completions waiting to be polled */
    int size();

    /**
     * {@code ibv_poll_cq}: copies up to {@code max} completions into {@code out[0..]}.
     *
     * @return the number copied
     */
    int poll(WorkCompletion[] out, int max);

    /**
     * Blocks until a completion is there or {@code timeoutNanos} passes.
     *
     * @return whether a completion is there
     */
    boolean await(long timeoutNanos);

    /**
     * {@code ibv_req_notify_cq}: arms the CQ for one completion event.
     *
     * @return false if completions are already waiting (poll again instead of sleeping)
     */
    boolean reqNotify(boolean solicitedOnly);

    /** Sets where completion events and overflows go, or null. */
    void events(Events events);

    /** What a CQ reports; called on the producing event loop, must not block. */
    interface Events {
        /** An armed CQ got a (matching) completion. */
        void completionEvent();

        /** A completion did not fit: the CQ overflowed ({@code IBV_EVENT_CQ_ERR}). */
        void overflow();
    }
}
