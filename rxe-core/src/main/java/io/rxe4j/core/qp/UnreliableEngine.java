package io.rxe4j.core.qp;

import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.PacketView;

/**
 * The part of a {@link QpEngine} that UC and UD engines share: they have no responses, no congestion
 * signals, no negotiated extensions and no TID RDMA, so the packets of those kinds that reach them
 * (the receive checks send none) are dropped as of the wrong transport, and the rest of those entry
 * points do nothing ({@code verbs-surface-facts.md} §2–§3). Loop only.
 */
public abstract class UnreliableEngine implements QpEngine {
    /** The QP whose engine this is. */
    protected final RxeQp qp;
    /** Its counters. */
    protected final Counters counters;

    /** @param qp the UC or UD QP */
    protected UnreliableEngine(RxeQp qp) {
        this.qp = qp;
        this.counters = qp.counters;
    }

    @Override
    public void onService() {
        run();
    }

    @Override
    public void onCongestionExperienced() {
        // no CNP: rdma_rxe sends CNPs for RC only
    }

    @Override
    public void onCnp() {
        // no congestion window without acknowledgements
    }

    @Override
    public void onPeerExtensions() {
        // the extensions are RC's
    }

    @Override
    public void onSelectiveNak(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT);
    }

    @Override
    public void onResponse(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT);
    }

    @Override
    public void onTidReadResponse(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT);
    }

    @Override
    public void onTidWriteData(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT);
    }

    @Override
    public void onTidWriteResponse(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT);
    }

    @Override
    public void onTidKick() {
    }

    @Override
    public void releaseTid() {
    }

    @Override
    public void failOnSendRefused(boolean response, int psn, String why) {
        // a packet handed over counts as sent (its WQE may have completed); the QP enters ERR (RxeQp.onSendRefused)
    }

    /**
     * Completes the send WQE at SQ index {@code idx} with {@code st}: copies what the CQE needs, frees
     * the slot, then publishes the CQE (as the RC completer).
     *
     * @return false if the CQ overflowed (the QP is then in ERR)
     */
    protected final boolean finishSend(SendWqe w, long idx, io.rxe4j.verbs.WcStatus st) {
        w.state = SendWqe.State.DONE;
        long wrId = w.wrId;
        io.rxe4j.verbs.WrOpcode op = w.opcode;
        int flags = w.sendFlags;
        long length = w.length;
        int imm = w.immData;
        qp.sqReq(idx + 1);
        qp.retireSqHead(w, idx + 1);
        if (!qp.completeSend(wrId, op, flags, length, imm, st, 0)) {
            qp.moveToError("send CQ overflow");
            return false;
        }
        return true;
    }

    /** The WQE at {@code idx} fails with {@code st} for {@code why}; the QP enters ERR. */
    protected final void failSend(SendWqe w, long idx, io.rxe4j.verbs.WcStatus st, String why) {
        qp.noteErrorReason(why);
        if (finishSend(w, idx, st)) {
            qp.moveToError(why);
        }
    }

    /**
     * With an SRQ, a message dropped after its receive WQE was taken completes that WQE with {@code st}
     * (class E, {@code verbs-surface-facts.md} §4.4: the WQE cannot go back to the SRQ); the QP stays
     * up. Without an SRQ, or with no WQE taken, nothing happens (class D).
     */
    protected final void completeTakenWqe(io.rxe4j.verbs.WcStatus st) {
        RecvWqe r = qp.takenSrqWqe();
        if (r == null) {
            return;
        }
        long wrId = r.wrId;
        qp.consumeRecv();
        if (!qp.completeRecv(wrId, st, io.rxe4j.verbs.WcOpcode.RECV, 0, 0, 0)) {
            qp.moveToError("receive CQ overflow");
        }
    }
}
