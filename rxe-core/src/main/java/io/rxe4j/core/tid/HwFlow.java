package io.rxe4j.core.tid;

import io.rxe4j.core.qp.RxeQp;

import io.rxe4j.core.wire.FlowPsn;

/**
 * A QP's hardware flow on the data-destination side ({@code struct tid_flow_state} and the flow
 * table entry; {@code tid-opfn-facts.md} §4, §9.5): the flow index it holds, its generation, the
 * next flow sequence to hand out to a segment, and the flow table's check state (the next
 * sequence expected, SW PSN mode). One per QP, shared by its TID READ-requester and TID
 * WRITE-responder roles, as in hfi1. Loop only.
 */
public final class HwFlow {
    private final RxeQp qp;
    /** Flow index, -1 while none is held. */
    int idx = -1;
    /** The index to ask for again ({@code last_index}). */
    private int lastIdx = -1;
    /** Generation programmed (13 bits). */
    int generation;
    /** Next flow sequence to hand out ({@code flow_state.psn}). */
    int nextSeq;
    /** The flow table's next expected sequence ({@code r_next_psn}). */
    int expectedSeq;
    /** SW PSN mode ({@code HFI1_R_TID_SW_PSN}): sequence errors are handled quietly by software. */
    boolean swPsn;
    /** A segment would not fit in the generation: nothing new until the pending ones complete. */
    boolean syncPoint;
    /** Segments given sequences on this flow and not completed, both roles. */
    int pendingSegs;
    /** TID requests using the flow (TID READs started, TID WRITE entries active). */
    int active;
    /** A generation forced by a RESYNC while no flow was held: used by the next allocation, else -1. */
    int pendingGeneration = -1;

    private final TidPool pool;

    /** The hardware flow of {@code qp}, taken from {@code pool} (the lane's receive context; null without TID RDMA). */
    public HwFlow(RxeQp qp, TidPool pool) {
        this.qp = qp;
        this.pool = pool;
    }

    /**
     * Makes sure the flow is held and can take a segment of {@code npkts} packets: at a sync point
     * it waits for the pending segments and then starts a new generation.
     *
     * @return false if the caller must wait (the QP is woken when a flow is freed or a segment completes)
     */
    boolean prepare(int npkts) {
        if (idx >= 0 && !FlowPsn.fitsInGeneration(nextSeq, npkts)) {
            syncPoint = true;
            if (pendingSegs > 0) {
                return false;
            }
            release();
        }
        if (idx < 0) {
            int i = pool.allocFlow(qp, lastIdx);
            if (i < 0) {
                return false;
            }
            idx = i;
            lastIdx = i;
            if (pendingGeneration >= 0) {
                pool.setGeneration(i, pendingGeneration);
                pendingGeneration = -1;
            }
            generation = pool.generation(i);
            nextSeq = 0;
            expectedSeq = 0;
            swPsn = false;
        }
        return true;
    }

    /** Hands out the sequences of a segment of {@code npkts} packets; {@link #prepare} returned true. */
    int take(int npkts) {
        int spsn = nextSeq;
        nextSeq += npkts;
        pendingSegs++;
        return spsn;
    }

    /** A segment on this flow completed: releases the flow at a drained sync point or when idle. */
    void segmentDone() {
        pendingSegs--;
        releaseIfIdle();
    }

    /** Releases the flow if nothing uses it any more, or a sync point has drained. */
    void releaseIfIdle() {
        if ((syncPoint && pendingSegs == 0) || (active == 0 && pendingSegs == 0)) {
            release();
        }
    }

    /** Releases the flow (its generation advances); SW PSN mode and the sync point end. */
    void release() {
        if (idx >= 0) {
            pool.releaseFlow(idx);
            idx = -1;
        }
        swPsn = false;
        syncPoint = false;
    }

    /** Forgets everything (QP to ERR, RESET or destroyed). */
    public void reset() {
        release();
        pendingSegs = 0;
        active = 0;
        pendingGeneration = -1;
    }

    @Override
    public String toString() {
        return "flow=" + idx + " gen=0x" + Integer.toHexString(generation) + " next=" + nextSeq + " expect="
                + expectedSeq + (swPsn ? " swpsn" : "") + (syncPoint ? " sync" : "") + " pending=" + pendingSegs
                + " active=" + active;
    }
}
