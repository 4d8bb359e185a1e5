package io.rxe4j.core.tid;

import io.rxe4j.core.qp.Opfn;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.TidSegment;
import io.rxe4j.core.rc.CompleterOps;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.Requester;

import io.rxe4j.verbs.Counter;

import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.TidRdmaParams;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.FlowPsn;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Bth;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.TidEntry;
import io.rxe4j.core.wire.TidHeader;

/**
 * The data-destination half of TID RDMA READ at the requester ({@code tid-opfn-facts.md} §4,
 * §5.2, §5.4–§5.6, §9.5): the QP's hardware flow (index, generation, next sequence to hand out),
 * the software copy of the hardware flow table's check (expected generation and sequence, SW PSN
 * mode), segment setup (flow sequence range and TID entries from the device's {@link TidPool}, with
 * sync points), in-order placement of READ_RESP payload by TID entry and KDETH offset, and
 * segment completion. READ_REQs go out through the {@link Requester} ({@link TidSendHook}); completions go through the
 * completer's {@link CompleterOps}. Loop only.
 */
public final class TidReadRequester {
    /** A segment's setup had to wait (flow, TID entries, sync point). */
    static final int WAIT = 0;
    /** A segment was set up. */
    public static final int READY = 1;

    private final RxeQp qp;
    private final Counters counters;

    /** The QP's hardware flow (shared with the TID WRITE responder). */
    private final HwFlow flow;
    /**
     * The expected flow sequence at which the last restart was asked for, or -1 ({@code
     * RVT_R_RDMAR_SEQ} per gap): one restart per gap, also in SW PSN mode (docs/tid-rdma.md).
     */
    private int restartSeq = -1;

    private final RcEngines rc;
    private final TidPool pool;

    /** The TID READ requester of {@code qp}; {@code tid}: its fellow halves, the RC engines, the pool. */
    public TidReadRequester(RxeQp qp, TidEngines tid) {
        this.qp = qp;
        this.counters = qp.counters;
        this.rc = tid.rc;
        this.pool = tid.pool;
        this.flow = tid.hwFlow;
    }

    /** @return a short description for diagnostics */
    public String debugState() {
        return "tid{" + flow + '}';
    }

    /** @return the hardware flow index held, or -1 */
    int flowIndex() {
        return flow.idx;
    }

    // ------------------------------------------------------------------ post time

    // ------------------------------------------------------------------ setup (requester side)

    /** A TID READ WQE starts (its first segment is about to be set up). */
    public void onStart(SendWqe w) {
        if (w.setupHead == 0 && w.compSeg == 0 && w.curSeg == 0) {
            flow.active++;
            counters.inc(Counter.TID_READ_REQUESTS);
        }
    }

    /**
     * Sets up segment {@code w.setupHead} ({@code hfi1_build_tid_rdma_read_req} steps 1–4): the
     * hardware flow (waiting at a sync point until the flow's segments completed, then a new
     * generation), the flow sequence range, and TID entries for the local buffer pieces.
     *
     * @return {@link #READY}, or {@link #WAIT} (the QP is woken when what it waits for is freed)
     */
    public int setup(SendWqe w, int firstPsn) {
        int k = w.setupHead;
        TidSegment seg = w.segs[k % TidSegment.RING];
        long offset = (long) k * w.segLen;
        int length = (int) Math.min(w.segLen, w.length - offset);
        int npkts = (length + qp.pmtu() - 1) / qp.pmtu();
        boolean had = flow.idx >= 0;
        if (!flow.prepare(npkts)) {
            return WAIT; // a freed flow or a completed segment runs the requester again
        }
        if (!had) {
            restartSeq = -1;
        }
        // TID entries: one per piece of a local SGE, each at most 2 MiB
        int pieces = 0;
        long skip = offset;
        int left = length;
        for (int i = 0; i < w.numSge && left > 0; i++) {
            long sl = w.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            long n = Math.min(sl - skip, left);
            pieces += (int) ((n + TidPool.MAX_ENTRY_BYTES - 1) / TidPool.MAX_ENTRY_BYTES);
            left -= (int) n;
            skip = 0;
        }
        if (pieces > TidEntry.MAX_ENTRIES) {
            rc.requester.failTid(w, WcStatus.LOC_LEN_ERR, "segment " + k + " needs " + pieces
                    + " TID entries (at most 64)");
            return WAIT;
        }
        if (!pool.allocEntries(qp, pieces, seg.handles)) {
            return WAIT;
        }
        int h = 0;
        skip = offset;
        left = length;
        for (int i = 0; i < w.numSge && left > 0; i++) {
            long sl = w.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            long addr = w.sgeAddr[i] + skip;
            long n = Math.min(sl - skip, left);
            RxeMr mr = qp.host().mrs().lookup(w.sgeLkey[i]);
            while (n > 0) {
                int piece = (int) Math.min(n, TidPool.MAX_ENTRY_BYTES);
                int handle = seg.handles[h];
                pool.program(handle, mr, addr, piece);
                seg.tidList[h] = TidEntry.encode(handle, TidEntry.CTRL_EVEN, piece >>> TidEntry.PAGE_SHIFT);
                h++;
                addr += piece;
                n -= piece;
                left -= piece;
            }
            skip = 0;
        }
        seg.count = pieces;
        seg.index = k;
        seg.offset = offset;
        seg.length = length;
        seg.npkts = npkts;
        seg.ibSpsn = Psn.add(firstPsn, k * w.pktsPerSeg);
        seg.generation = flow.generation;
        seg.spsn = flow.take(npkts);
        w.setupHead++;
        return READY;
    }

    /** @return the tid_flow_qp this side sends: its KDETH QP with the flow index (§3.4) */
    public int flowQpn() {
        TidRdmaParams local = qp.opfn.local();
        int kdeth = local != null ? local.qp() : TidHeader.kdethQpn(Opfn.CONTEXT);
        return TidHeader.flowQpn(kdeth, flow.idx);
    }

    // ------------------------------------------------------------------ send (READ_REQ)

    /**
     * Sends the READ_REQ of the next segment of TID READ {@code w} ({@code
     * hfi1_build_tid_rdma_read_req}; {@code tid-opfn-facts.md} §5.2), through the requester (its
     * PSNs, credits and retransmit timer): at most the peer's max_read segments outstanding, one
     * max_rd_atomic credit each; the segment's flow and TID entries are set up first (which may
     * wait). A TID READ starts only when no earlier READ or atomic is outstanding (the
     * READ-after-READ interlock of §7, applied to atomics and OPFN as well).
     *
     * @return null if a READ_REQ went out, else why not ({@link Requester.Stall#QP_ERROR}: the QP entered ERR)
     */
    Requester.Stall sendSegment(SendWqe w) {
        Requester req = rc.requester;
        int psn = req.psn();
        if (w.state == SendWqe.State.POSTED) {
            if (req.readOrAtomicOutstandingBefore(w)) {
                counters.inc(Counter.TID_INTERLOCK_WAITS);
                return Requester.Stall.EXTENSION_INTERLOCK; // the completion of that WQE runs the requester again
            }
            if (w.compSeg == 0 && w.curSeg == 0) {
                w.firstPsn = psn;
                w.lastPsn = Psn.add(psn, (int) ((w.length + qp.pmtu() - 1) / qp.pmtu()) - 1);
            }
            w.state = SendWqe.State.PROCESSING;
            onStart(w);
        }
        TidRdmaParams remote = qp.opfn.remote();
        int window = Math.min(remote != null ? Math.max(1, remote.maxRead()) : 1, TidSegment.RING - 1);
        if (w.curSeg - w.compSeg >= window || req.credits() <= 0) {
            return Requester.Stall.EXTENSION_RESOURCES; // a segment completion returns the credit and runs the requester
        }
        if (w.curSeg >= w.setupHead) {
            if (setup(w, w.firstPsn) != READY) {
                return qp.state() == io.rxe4j.verbs.QpState.ERR
                        ? Requester.Stall.QP_ERROR : Requester.Stall.EXTENSION_RESOURCES;
            }
        }
        TidSegment seg = w.segs[w.curSeg % TidSegment.RING];
        if (seg.ibSpsn != psn) {
            throw new IllegalStateException("TID READ segment " + w.curSeg + " has PSN 0x"
                    + Integer.toHexString(seg.ibSpsn) + ", the requester is at 0x" + Integer.toHexString(psn));
        }
        req.takeCredit();
        w.segCredits++;
        Opcode op = Opcode.TID_RDMA_READ_REQ;
        int list = seg.count * TidEntry.LENGTH;
        int total = op.headerLength() + list + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, remote != null ? remote.qp() : 0, true, psn);
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeControl(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.writeReth(b, at, w.remoteAddr + seg.offset, w.rkey, seg.length);
        TidHeader.setTidFlowPsn(b, at, FlowPsn.of(seg.generation, seg.spsn));
        TidHeader.setTidFlowQp(b, at, flowQpn());
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        for (int i = 0; i < seg.count; i++) {
            TidEntry.write(b, op.headerLength(), i, seg.tidList[i]);
        }
        int lastPsn = Psn.add(psn, seg.npkts - 1);
        // the RC timer of a READ_REQ is scaled by the packets of a segment (timeout_shift, §2)
        int shift = 32 - Integer.numberOfLeadingZeros(Math.max(1, seg.npkts) - 1);
        req.sendForHook(b, total, lastPsn, 64, shift, Psn.add(psn, seg.npkts));
        counters.inc(Counter.TID_READ_SEGMENTS);
        w.curSeg++;
        if (w.curSeg == w.totalSegs) {
            w.state = SendWqe.State.PENDING;
            qp.advanceSqReq();
        }
        return null;
    }

    // ------------------------------------------------------------------ receive (READ_RESP)

    /**
     * A TID READ_RESP arrived: the flow table's check, then in-order placement; the segment's last
     * packet (KDETH SH = 0) completes the segment ({@code hfi1_rc_rcv_tid_rdma_read_resp},
     * {@code handle_read_kdeth_eflags}).
     */
    public void onResponse(PacketView p) {
        int at = p.index(Header.KDETH);
        io.netty.buffer.ByteBuf b = p.buf();
        int verbsPsn = TidHeader.verbsPsn(b, at);
        CompleterOps comp = rc.completer;
        if (Psn.diff(verbsPsn, comp.compPsn()) < 0 || Psn.diff(verbsPsn, rc.requester.psn()) >= 0) {
            counters.inc(Counter.DUPLICATE_RESPONSE); // outside [s_last_psn, s_psn]: stale
            return;
        }
        if (flow.idx < 0) {
            counters.drop(DropReason.OTHER); // no flow programmed: nothing may be placed
            return;
        }
        int flowPsn = p.psn();
        if (FlowPsn.generation(flowPsn) != flow.generation) {
            counters.inc(Counter.TID_FLOW_GEN_ERRORS); // a stale generation: dropped (the flow rides through it)
            return;
        }
        int seq = FlowPsn.sequence(flowPsn);
        if (seq != flow.expectedSeq) {
            counters.inc(Counter.TID_FLOW_SEQ_ERRORS);
            // hardware mode: the first error turns on SW PSN mode and restarts the oldest incomplete
            // segment (§5.5). A packet behind the expected one is a duplicate or from before a
            // restart: dropped. One ahead is a gap: like an ordinary READ's gap (extensions.md §6)
            // it restarts at once, once per gap, where hfi1 would wait for the (64× longer) timer
            boolean gap = seq > flow.expectedSeq || !flow.swPsn;
            flow.swPsn = true;
            if (!gap) {
                restartSeq = -1; // the retransmission has started to arrive (hfi1 clears RDMAR_SEQ)
            } else if (restartSeq != flow.expectedSeq) {
                restartSeq = flow.expectedSeq;
                counters.inc(Counter.TID_RESTARTS);
                rc.requester.retry(Requester.RetryCause.TID_SEQUENCE);
            }
            return;
        }
        switch (pool.place(qp, p, at, Access.LOCAL_WRITE)) {
            case TidPool.NOT_MINE -> {
                counters.drop(DropReason.OTHER); // not a TID entry of this QP, or outside it
                return;
            }
            case TidPool.FAULT -> {
                failHead(WcStatus.LOC_PROT_ERR, "TID entry " + Kdeth.tid(b, at) + " no longer maps writable memory");
                return;
            }
            default -> { }
        }
        flow.expectedSeq++;
        // a response that advanced the flow is progress: retry_cnt starts over, as for every valid
        // response of an ordinary READ (hfi1's driver sees only a segment's last packet; docs/tid-rdma.md)
        rc.requester.resetRetryCounters();
        if (!Kdeth.sh(b, at)) {
            segmentDone(verbsPsn);
        }
    }

    private void failHead(WcStatus st, String why) {
        SendWqe head = rc.completer.head();
        if (head != null) {
            rc.completer.failHead(head, st, 0, why);
        }
    }

    /** The last packet of a segment was placed: complete the segment (and the WQE after its last). */
    private void segmentDone(int verbsPsn) {
        SendWqe w = findWqe(verbsPsn);
        if (w == null) {
            counters.drop(DropReason.OTHER);
            return;
        }
        int k = Psn.diff(verbsPsn, w.firstPsn) / w.pktsPerSeg;
        TidSegment seg = w.segs[k % TidSegment.RING];
        if (k != w.compSeg || k >= w.setupHead || seg.index != k
                || verbsPsn != Psn.add(seg.ibSpsn, seg.npkts - 1)) {
            counters.drop(DropReason.OTHER); // not the segment the flow is at
            return;
        }
        if (!acknowledgeSegment(w, verbsPsn)) {
            return; // an earlier READ/atomic was restarted instead
        }
        counters.inc(Counter.TID_READ_SEGMENTS_DONE);
        pool.releaseEntries(seg.handles, seg.count);
        seg.count = 0;
        w.compSeg++;
        w.readBytes += seg.length;
        if (w.segCredits > 0) {
            w.segCredits--;
            rc.requester.returnCredit();
        }
        if (w.compSeg == w.totalSegs) {
            flow.active--;
            rc.completer.complete(w); // an ordinary RDMA_READ completion
        }
        flow.segmentDone();
        if (flow.idx < 0) {
            restartSeq = -1;
        }
        if (qp.state() == io.rxe4j.verbs.QpState.RTS || qp.state() == io.rxe4j.verbs.QpState.SQD) {
            rc.requester.run();
        }
    }

    /**
     * A TID READ segment of {@code w} ended with verbs PSN {@code lastPsn} (its last packet was
     * placed): like a READ response, it implicitly completes the SEND/WRITE WQEs before {@code w}
     * and moves comp.psn past the segment ({@code do_rc_ack} in {@code
     * hfi1_rc_rcv_tid_rdma_read_resp}). An earlier READ or atomic cannot be outstanding (the
     * requester holds a TID READ behind them); should one be, it is restarted instead.
     *
     * @return whether the segment counts (comp.psn moved past it)
     */
    private boolean acknowledgeSegment(SendWqe w, int lastPsn) {
        CompleterOps comp = rc.completer;
        SendWqe h;
        while ((h = comp.head()) != null && h != w) {
            if (h.isReadOrAtomic() || h.state != SendWqe.State.PENDING) {
                rc.requester.retry(Requester.RetryCause.LOST_RESPONSE);
                return false;
            }
            comp.advance(Psn.next(h.lastPsn));
            if (!comp.complete(h)) {
                return false;
            }
        }
        if (h == null) {
            return false;
        }
        comp.onValidResponse();
        comp.advance(Psn.next(lastPsn));
        return true;
    }

    private SendWqe findWqe(int verbsPsn) {
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.state == SendWqe.State.POSTED && !w.tid) {
                return null; // never started: nothing after it was sent either
            }
            if (w.tid && w.setupHead > 0 && Psn.diff(verbsPsn, w.firstPsn) >= 0
                    && Psn.diff(verbsPsn, w.lastPsn) <= 0) {
                return w;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ RESYNC of the shared flow

    /**
     * The QP's hardware flow was moved to generation {@code gen} by a RESYNC of the TID WRITE this
     * QP receives ({@link TidWriteResponder#onResync}; the flow serves both roles, §4): every TID
     * READ segment set up and not completed takes the next sequences of {@code gen} from {@code
     * next}, in send-queue and segment order. A segment is renumbered whole, also when some of its
     * responses were placed already, because a re-request asks for a segment from its first packet
     * (§5.6) and the responder answers it from the flow the request names (the data is placed again
     * by TID entry and offset, so the bytes come out the same).
     *
     * @param gen the new generation
     * @param next the first sequence not taken by the TID WRITE segments renumbered before
     * @return the first sequence not taken after the TID READ segments
     */
    int renumber(int gen, int next) {
        restartSeq = -1;
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (!w.tid || w.segs == null) {
                continue;
            }
            for (int k = w.compSeg; k < w.setupHead; k++) {
                TidSegment seg = w.segs[k % TidSegment.RING];
                seg.generation = gen;
                seg.spsn = next;
                next += seg.npkts;
            }
        }
        return next;
    }

    /**
     * After {@link #renumber}: if a renumbered segment's READ_REQ was already sent, its responses
     * come in the old generation and are dropped, so the requester asks again now, in the new
     * numbering, rather than after the READ_REQ's RC timer (64 × the QP's period).
     */
    void requestRenumbered() {
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.tid && w.segs != null && w.curSeg > w.compSeg) {
                rc.requester.restartAfterResync();
                return;
            }
        }
    }

    // ------------------------------------------------------------------ rewind, stop

    /** A rewind: WQE {@code w} resends from its oldest incomplete segment (same flows, same TID entries). */
    public void onRewind(SendWqe w) {
        w.curSeg = w.compSeg;
        while (w.segCredits > 0) {
            w.segCredits--;
            rc.requester.returnCredit();
        }
    }

    /** Frees every TID entry and the flow (QP to ERR, RESET or destroyed). */
    public void releaseAll() {
        restartSeq = -1;
        if (pool == null) {
            return;
        }
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (!w.tid || w.segs == null) {
                continue;
            }
            for (int k = w.compSeg; k < w.setupHead; k++) {
                TidSegment seg = w.segs[k % TidSegment.RING];
                pool.releaseEntries(seg.handles, seg.count);
                seg.count = 0;
            }
            w.setupHead = w.compSeg;
            w.segCredits = 0;
        }
    }
}
