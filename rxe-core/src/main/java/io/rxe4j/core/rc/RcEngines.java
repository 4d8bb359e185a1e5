package io.rxe4j.core.rc;

import io.rxe4j.core.qp.RxeQp;

/**
 * The three RC engines of one QP, built together so that each one reaches the others through this
 * holder instead of through the QP: the {@link Requester} ({@code rxe_req.c}), the {@link Completer}
 * ({@code rxe_comp.c}) and the {@link Responder} ({@code rxe_resp.c}); {@code rxe-facts.md} §5.
 * Built (and owned) by the device's per-QP runner; the TID RDMA halves get it too. Loop only.
 */
public final class RcEngines {
    /** The requester (send side: packets of the send WQEs, retries, timers). */
    public final Requester requester;
    /** The completer (ACKs, NAKs, READ and atomic responses; send completions). */
    public final Completer completer;
    /** The responder (receive side: requests, ACKs, READ replies, receive completions). */
    public final Responder responder;

    /** Builds the RC engines of {@code qp}, in the order requester, completer, responder. */
    public RcEngines(RxeQp qp) {
        this.requester = new Requester(qp, this);
        this.completer = new Completer(qp, this);
        this.responder = new Responder(qp, this);
    }
}
