package io.rxe4j.core.tid;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.rc.RcEngines;

/**
 * The TID RDMA halves of one QP (hfi1's {@code tid_rdma.c}; {@code docs/tid-rdma.md}), built
 * together and hooked into the QP's RC engines: the hardware flow of the data-destination roles
 * ({@link HwFlow}), the TID READ requester and responder, the TID WRITE requester and responder.
 * Each half reaches the RC engines through {@link #rc} and the lane's receive context through
 * {@link #pool}, never through the QP. Built (and owned) by the device's per-QP runner. Loop only.
 */
public final class TidEngines {
    /** The QP's RC engines. */
    public final RcEngines rc;
    /** The lane's TID RDMA receive context (entries, hardware flows), or null without TID RDMA. */
    final TidPool pool;
    /** The hardware flow of this QP's data-destination roles (TID READ requester, TID WRITE responder). */
    public final HwFlow hwFlow;
    /** TID RDMA READ, data-destination half (flow, segments, placement). */
    public final TidReadRequester read;
    /** TID RDMA WRITE, data-source half (WRITE_RESP, data, TID ACK, RESYNC). */
    public final TidWriteRequester write;
    /** TID RDMA WRITE, data-destination half (entries, allocation, WRITE_RESP, placement, TID ACK). */
    public final TidWriteResponder writeResp;
    /** TID RDMA READ, data-source half (READ_REQ, READ_RESP). */
    public final TidReadResponder readResp;

    /**
     * Builds the TID halves of {@code qp} and hooks them into its requester ({@link TidSendHook}) and
     * responder ({@link TidResponderHook}).
     *
     * @param pool the lane's receive context, or null when the device runs without TID RDMA
     */
    public TidEngines(RxeQp qp, RcEngines rc, TidPool pool) {
        this.rc = rc;
        this.pool = pool;
        this.hwFlow = new HwFlow(qp, pool);
        this.read = new TidReadRequester(qp, this);
        this.write = new TidWriteRequester(qp, this);
        this.writeResp = new TidWriteResponder(qp, this);
        this.readResp = new TidReadResponder(qp, this);
        rc.requester.hook(new TidSendHook(qp, rc, read, write));
        rc.responder.hook(new TidResponderHook(qp, rc, readResp, writeResp));
    }
}
