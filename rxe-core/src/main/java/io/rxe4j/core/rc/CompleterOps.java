package io.rxe4j.core.rc;

import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.verbs.WcStatus;

/**
 * What an extension's responses (TID READ_RESP, WRITE_RESP, TID ACK; {@code tid-opfn-facts.md}
 * §5.5, §6.3) may do to the completer: find the head WQE, move comp.psn, complete a WQE, report a
 * valid response, fail the head. The completer's states stay its own ({@link Completer.State});
 * these are the steps {@code do_rc_ack} shares with them. Loop only.
 */
public interface CompleterOps {
    /** @return the oldest uncompleted WQE the requester has started, or null */
    SendWqe head();

    /** @return comp.psn, the next response PSN expected */
    int compPsn();

    /**
     * Moves comp.psn forward to {@code next} (never backwards) and tells the requester what is
     * acknowledged now ({@code rxe-facts.md} §9.2 UPDATE_COMP).
     */
    void advance(int next);

    /**
     * A valid response of the extension arrived: retry counts start over ({@code rxe-facts.md}
     * §5.3) and no READ response stream is in progress any more (comp.opcode cleared).
     */
    void onValidResponse();

    /**
     * Completes {@code w}, the oldest WQE, successfully (COMP_ACK): credit back, SQ consumer index
     * forward, CQE if signalled.
     *
     * @return false if the send CQ overflowed (the QP entered ERR)
     */
    boolean complete(SendWqe w);

    /**
     * Completes the head WQE with {@code st} and moves the QP to ERR ({@code rxe-facts.md} §6.8).
     *
     * @param vendorErr the NAK syndrome, or 0
     * @param why what happened, for the QP's error reason
     */
    void failHead(SendWqe w, WcStatus st, int vendorErr, String why);
}
