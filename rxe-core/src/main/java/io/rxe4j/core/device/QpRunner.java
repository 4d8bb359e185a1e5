package io.rxe4j.core.device;

import io.rxe4j.core.qp.QpAttributes;
import io.rxe4j.core.qp.QpEngine;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.tid.TidEngines;
import io.rxe4j.core.tid.TidPool;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.WcStatus;

/**
 * The engines of one QP, built and owned here, and the one place that drives them for the QP
 * ({@link QpEngine}): the RC engines ({@link RcEngines}: requester, completer, responder; {@code
 * rxe_req.c}, {@code rxe_comp.c}, {@code rxe_resp.c}) and the TID RDMA halves ({@link TidEngines},
 * hooked into the RC engines). One per QP, built by {@link RxeDevice#createQp} with the {@link
 * RxeQp} and registered on it; the device layer is the only one that names both the QP and its
 * engines ({@code design/redesign.md} §3). Loop only.
 */
public final class QpRunner implements QpEngine {
    private final RxeQp qp;
    /** The QP's RC engines. */
    public final RcEngines rc;
    /** The QP's TID RDMA halves. */
    public final TidEngines tid;
    private final TidPool pool;

    /**
     * Builds the engines of {@code qp} (called from the QP's constructor, once its queues exist).
     *
     * @param pool the lane's TID RDMA receive context, or null without TID RDMA
     */
    QpRunner(RxeQp qp, TidPool pool) {
        this.qp = qp;
        this.pool = pool;
        this.rc = new RcEngines(qp);
        this.tid = new TidEngines(qp, rc, pool);
    }

    /** @return the runner of {@code qp} (a QP of an {@link RxeDevice}), for tests and diagnostics */
    public static QpRunner of(RxeQp qp) {
        return (QpRunner) qp.engine();
    }

    @Override
    public void applyAttributes(QpAttributes attr, int mask) {
        if ((mask & QpAttrMask.AV) != 0) {
            rc.requester.setPeer(attr.av());
        }
        if ((mask & QpAttrMask.TIMEOUT) != 0) {
            rc.requester.setTimeout(attr.timeout());
        }
        if ((mask & (QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY)) != 0) {
            rc.requester.resetRetryCounters();
        }
        if ((mask & QpAttrMask.MAX_QP_RD_ATOMIC) != 0) {
            rc.requester.resetCredits(attr.maxRdAtomic());
        }
        if ((mask & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0) {
            rc.responder.resizeResources(attr.maxDestRdAtomic());
        }
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            rc.requester.setPsn(attr.sqPsn());
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            rc.responder.setExpectedPsn(attr.rqPsn());
        }
    }

    @Override
    public void reset() {
        rc.requester.reset();
        rc.completer.reset();
        rc.responder.reset();
    }

    @Override
    public void stop() {
        rc.requester.stop();
        rc.responder.abortMessage();
    }

    @Override
    public void run() {
        rc.requester.run();
    }

    @Override
    public void onService() {
        rc.responder.onService();
        rc.requester.run();
    }

    @Override
    public void onRequest(PacketView pkt) {
        rc.responder.onRequest(pkt);
    }

    @Override
    public void onCongestionExperienced() {
        rc.responder.onCongestionExperienced();
    }

    @Override
    public void onCnp() {
        rc.requester.onCnp();
    }

    @Override
    public void onPeerExtensions() {
        rc.requester.onPeerKind();
    }

    @Override
    public void onSelectiveNak(PacketView pkt) {
        rc.requester.onSelectiveNak(pkt);
    }

    @Override
    public void onResponse(PacketView pkt) {
        rc.completer.onResponse(pkt);
    }

    @Override
    public void onTidReadResponse(PacketView pkt) {
        tid.read.onResponse(pkt);
    }

    @Override
    public void onTidWriteData(PacketView pkt) {
        if (pkt.opcode() == Opcode.TID_RDMA_RESYNC) {
            tid.writeResp.onResync(pkt);
        } else {
            tid.writeResp.onData(pkt);
        }
    }

    @Override
    public void onTidWriteResponse(PacketView pkt) {
        if (pkt.opcode() == Opcode.TID_RDMA_WRITE_RESP) {
            tid.write.onWriteResp(pkt);
        } else {
            tid.write.onTidAck(pkt);
        }
    }

    @Override
    public void onTidKick() {
        tid.writeResp.allocateAndRespond();
        rc.requester.run();
    }

    @Override
    public void releaseTid() {
        tid.read.releaseAll();
        tid.write.releaseAll();
        tid.writeResp.releaseAll();
        tid.hwFlow.reset();
        if (pool != null) {
            pool.forget(qp);
        }
    }

    @Override
    public void failOnSendRefused(boolean response, int psn, String why) {
        if (response) {
            rc.responder.sendAck(Aeth.NAK_REMOTE_OP_ERROR, psn);
        }
        SendWqe w = rc.completer.head();
        if (w != null) {
            rc.completer.failHead(w, WcStatus.LOC_QP_OP_ERR, 0, why);
        }
    }

    @Override
    public void appendSenderState(StringBuilder sb) {
        sb.append(" req.psn=0x").append(Integer.toHexString(rc.requester.psn()))
                .append(' ').append(rc.completer.debugState())
                .append(" unacked=").append(rc.requester.unackedPackets()).append(' ')
                .append(rc.requester.budgetState());
    }

    @Override
    public void appendReceiverState(StringBuilder sb) {
        sb.append(rc.responder.debugState()).append(' ').append(tid.read.debugState())
                .append(' ').append(tid.write.debugState()).append(' ').append(tid.writeResp.debugState());
    }
}
