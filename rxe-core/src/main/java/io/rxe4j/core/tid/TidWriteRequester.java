package io.rxe4j.core.tid;

import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.core.qp.TidSegment;
import io.rxe4j.core.rc.CompleterOps;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.Requester;

import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.TidRdmaParams;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.FlowPsn;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.TidEntry;
import io.rxe4j.core.wire.TidHeader;

/**
 * The data-source half of TID RDMA WRITE at the requester ({@code tid-opfn-facts.md} §6.2–§6.3,
 * §6.7–§6.8): it takes WRITE_RESPs (one per segment, carrying the responder's TID list and flow),
 * sends the segments' data packets (the "second leg"), takes TID ACKs (completing the WQE when every
 * segment is acknowledged) and TID NAKs (resuming data at the PSN the responder expects), and runs
 * the TID retry timer, which halts the QP and sends a RESYNC that moves the flow to a new
 * generation. The WRITE_REQ itself is built by the {@link Requester}. Loop only.
 */
public final class TidWriteRequester {
    /** Most TID WRITE requests outstanding per QP ({@code HFI1_TID_RDMA_WRITE_CNT}). */
    static final int MAX_REQUESTS = TidLimits.WRITE_CNT;
    /** Most data packets one turn sends before other QPs get the loop. */
    static final int DATA_BATCH = 16;

    private final RxeQp qp;
    private final Counters counters;
    private final Scheduler scheduler;
    private final Runnable timerTask;
    private Scheduler.Cancellable retryTimer;
    /** A RESYNC is out: no new requests, no data, only its ACK counts ({@code HFI1_S_WAIT_HALT}). */
    private boolean halted;
    /** The PSN of the RESYNC out ({@code s_resync_psn}). */
    private int resyncPsn;
    /** Generation of the most recently received WRITE_RESP's flow (the RESYNC's base). */
    private int lastRespGeneration = -1;
    /** The responder's flow index and the generation its last RESYNC moved it to, or -1. */
    private int resyncFlowIdx = -1;
    private int resyncGeneration;
    /** The last verbs PSN of the requests sent before that RESYNC's ACK: later WRITE_RESPs are never stale. */
    private int resyncVerbsHi;

    private final RcEngines rc;

    /** The TID WRITE requester of {@code qp}; {@code tid}: its fellow halves and the RC engines. */
    public TidWriteRequester(RxeQp qp, TidEngines tid) {
        this.qp = qp;
        this.rc = tid.rc;
        this.counters = qp.counters;
        this.scheduler = qp.scheduler;
        this.timerTask = qp.guard("TID retry timer", this::onRetryTimeout);
    }

    /** @return a short description for diagnostics */
    public String debugState() {
        StringBuilder sb = new StringBuilder("tidw{").append(halted ? "halted resync=0x"
                + Integer.toHexString(resyncPsn) : "run").append(retryTimer != null ? " timer" : "");
        SendWqe w = oldestUnacked();
        if (w != null && w.tidStarted) {
            sb.append(" resp=").append(w.respSeg).append(" data=").append(w.dataSeg).append(" ack=").append(w.ackSeg)
                    .append('/').append(w.totalSegs);
            if (w.dataSeg < w.respSeg || w.ackSeg < w.respSeg) {
                TidSegment seg = w.segs[Math.min(w.dataSeg, w.respSeg - 1) % TidSegment.RING];
                sb.append(" seg").append(seg.index).append("{gen=0x").append(Integer.toHexString(seg.generation))
                        .append(" spsn=").append(seg.spsn).append(" n=").append(seg.npkts).append(" pkt=")
                        .append(seg.pkt).append(" rcvd=").append(seg.received).append('}');
            }
        }
        return sb.append('}').toString();
    }

    /** @return whether the first leg must not send new requests (a RESYNC is out) */
    public boolean halted() {
        return halted;
    }

    // ------------------------------------------------------------------ post time

    /** @return how many TID WRITEs before {@code upTo} (SQ index) are started and not complete */
    public int outstandingBefore(long upTo) {
        int n = 0;
        for (long i = qp.sqCompleted(); i != upTo; i++) {
            SendWqe w = qp.sqAt(i);
            if (w.isTidWrite() && w.state != SendWqe.State.DONE) {
                n++;
            }
        }
        return n;
    }

    // ------------------------------------------------------------------ WRITE_REQ

    /**
     * Sends the WRITE_REQ of TID WRITE {@code w} ({@code hfi1_build_tid_rdma_write_req}; §6.2)
     * through the requester: PSN = the first segment without a WRITE_RESP, RETH = the rest of the
     * range, no payload; the WQE holds one verbs PSN per segment.
     */
    void sendRequest(SendWqe w) {
        Requester req = rc.requester;
        int psn = req.psn();
        if (!w.tidStarted) {
            w.firstPsn = psn;
            w.lastPsn = Psn.add(psn, w.totalSegs - 1);
            w.tidStarted = true;
            counters.inc(Counter.TID_WRITE_REQUESTS_SENT);
        }
        int reqPsn = Psn.add(w.firstPsn, w.respSeg);
        if (reqPsn != psn) {
            throw new IllegalStateException("TID WRITE request PSN 0x" + Integer.toHexString(reqPsn)
                    + ", the requester is at 0x" + Integer.toHexString(psn));
        }
        TidRdmaParams remote = qp.opfn.remote();
        Opcode op = Opcode.TID_RDMA_WRITE_REQ;
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, remote != null ? remote.qp() : 0, true, psn);
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeControl(b, at, remote != null ? remote.jkey() : 0);
        long done = (long) w.respSeg * w.segLen;
        TidHeader.writeReth(b, at, w.remoteAddr + done, w.rkey, w.length - done);
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        req.sendForHook(b, total, w.lastPsn, 64, 0, Psn.next(w.lastPsn));
        w.state = SendWqe.State.PENDING;
        qp.advanceSqReq();
    }

    // ------------------------------------------------------------------ WRITE_RESP

    /**
     * A WRITE_RESP for TID WRITE {@code w} with verbs PSN {@code psn} arrived ({@code do_rc_ack}):
     * like a READ response it implicitly completes earlier SEND/WRITE WQEs (a lost earlier
     * READ/atomic response is retried instead) and moves comp.psn past it; earlier TID WRITEs are
     * left to their TID ACKs.
     *
     * @return whether it counts
     */
    private boolean acknowledgeWriteResp(SendWqe w, int psn) {
        CompleterOps comp = rc.completer;
        for (long i = qp.sqCompleted(); i != qp.sqReq(); i++) {
            SendWqe h = qp.sqAt(i);
            if (h == w) {
                break;
            }
            if (h.isTidWrite() || h.state == SendWqe.State.DONE) {
                continue;
            }
            if (h.isReadOrAtomic() || h.state != SendWqe.State.PENDING || i != qp.sqCompleted()) {
                rc.requester.retry(Requester.RetryCause.LOST_RESPONSE);
                return false;
            }
            comp.advance(Psn.next(h.lastPsn));
            if (!comp.complete(h)) {
                return false;
            }
            i = qp.sqCompleted() - 1;
        }
        comp.onValidResponse();
        comp.advance(Psn.next(psn));
        return true;
    }

    /**
     * Every segment of TID WRITE {@code w} was TID-ACKed: an ordinary RDMA_WRITE completion. TID
     * ACKs come in order, so {@code w} is the oldest WQE.
     *
     * @return false if it was not (the QP enters ERR) or the CQ overflowed
     */
    private boolean completeWrite(SendWqe w) {
        if (qp.sqAt(qp.sqCompleted()) != w) {
            qp.moveToError("TID ACK completed a TID WRITE that is not the oldest WQE");
            return false;
        }
        CompleterOps comp = rc.completer;
        if (Psn.diff(comp.compPsn(), w.lastPsn) <= 0) {
            comp.advance(Psn.next(w.lastPsn)); // (a coalesced ACK can arrive before the last WRITE_RESP is seen)
        }
        return comp.complete(w);
    }

    /**
     * A WRITE_RESP ({@code hfi1_rc_rcv_tid_rdma_write_resp}): in the window, for the next segment of
     * a TID WRITE, with room in the flow ring; its flow and TID list are stored, comp.psn moves past
     * it, and the segment's data may go.
     */
    public void onWriteResp(PacketView p) {
        ByteBuf b = p.buf();
        int at = p.index(Header.KDETH);
        int psn = p.psn();
        if (Psn.diff(psn, rc.completer.compPsn()) < 0 || Psn.diff(psn, rc.requester.psn()) >= 0) {
            counters.inc(Counter.DUPLICATE_RESPONSE);
            return;
        }
        SendWqe w = tidCur();
        if (w == null || Psn.diff(psn, Psn.add(w.firstPsn, w.respSeg)) != 0) {
            // not the next segment of the TID WRITE awaiting responses (s_tid_cur): a lost WRITE_RESP
            // is asked for again by the RC timer, and nothing of a later WQE is taken before it
            counters.inc(Counter.OUT_OF_SEQ_RESPONSE);
            return;
        }
        int k = w.respSeg;
        if (k - w.ackSeg >= TidSegment.RING) {
            counters.drop(DropReason.OTHER); // no room in front of acked_tail: ACKs were lost
            return;
        }
        int syndrome = TidHeader.syndrome(b, at);
        if (Aeth.type(syndrome) != Aeth.TYPE_ACK) {
            counters.drop(DropReason.OTHER);
            return;
        }
        TidSegment seg = w.segs[k % TidSegment.RING];
        long offset = (long) k * w.segLen;
        int length = (int) Math.min(w.segLen, w.length - offset);
        int n = TidEntry.count(p.payloadLength());
        long covered = 0;
        for (int i = 0; i < n; i++) {
            int e = TidEntry.read(b, p.payloadIndex(), i);
            seg.tidList[i] = e;
            covered += TidEntry.lengthBytes(e);
            if (TidEntry.lengthPages(e) == 0) {
                covered = -1;
                break;
            }
        }
        if (covered < length) {
            rc.completer.failHead(w, WcStatus.LOC_LEN_ERR, 0, "WRITE_RESP PSN 0x" + Integer.toHexString(psn)
                    + " carries a TID list that does not cover segment " + k);
            return;
        }
        int flowPsn = TidHeader.tidFlowPsn(b, at);
        int flowQp = TidHeader.tidFlowQp(b, at);
        if (TidHeader.flowIndex(flowQp) == resyncFlowIdx && Psn.diff(psn, resyncVerbsHi) <= 0
                && olderGeneration(FlowPsn.generation(flowPsn), resyncGeneration)) {
            // sent before the RESYNC that renumbered its segment (delayed on the way): its flow
            // sequences are no longer the responder's; the RC timer asks for it again
            counters.inc(Counter.DUPLICATE_RESPONSE);
            return;
        }
        if (!acknowledgeWriteResp(w, psn)) {
            return;
        }
        seg.count = n;
        seg.index = k;
        seg.offset = offset;
        seg.length = length;
        seg.npkts = (length + qp.pmtu() - 1) / qp.pmtu();
        seg.generation = FlowPsn.generation(flowPsn);
        seg.spsn = FlowPsn.sequence(flowPsn);
        seg.respIbPsn = psn;
        seg.received = 0;
        seg.tidQpn = TidHeader.tidFlowQp(b, at) & Bth.MASK_24;
        seg.seek(0, qp.pmtu());
        lastRespGeneration = seg.generation;
        w.respSeg++;
        rc.requester.run();
    }

    /** @return the oldest started TID WRITE still waiting for WRITE_RESPs ({@code s_tid_cur}), or null */
    private SendWqe tidCur() {
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.isTidWrite() && w.tidStarted && w.state != SendWqe.State.DONE && w.respSeg < w.totalSegs) {
                return w;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ data (second leg)

    /**
     * Sends data packets of the segments whose WRITE_RESP arrived, oldest first, at most {@link
     * #DATA_BATCH} per turn and while the transport is writable ({@code hfi1_make_tid_rdma_pkt}).
     *
     * @return whether data is left to send (the caller asks the device for another turn)
     */
    public boolean sendData() {
        if (halted) {
            return false;
        }
        int sent = 0;
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (!w.isTidWrite() || w.state == SendWqe.State.DONE) {
                continue;
            }
            while (w.dataSeg < w.respSeg) {
                TidSegment seg = w.segs[w.dataSeg % TidSegment.RING];
                if (seg.pkt >= seg.npkts) {
                    w.dataSeg++; // every packet of it went (a resume may start at its very end)
                    continue;
                }
                if (!qp.host().transportWritable()) {
                    qp.host().awaitWritable(qp); // a turn when the transport drains
                    return false;
                }
                if (sent >= DATA_BATCH) {
                    return true;
                }
                if (!sendDataPacket(w, seg)) {
                    return false;
                }
                sent++;
            }
        }
        return false;
    }

    private boolean sendDataPacket(SendWqe w, TidSegment seg) {
        int pmtu = qp.pmtu();
        int n = seg.packetBytes(pmtu);
        boolean segLast = seg.pkt == seg.npkts - 1;
        boolean msgLast = segLast && seg.index == w.totalSegs - 1;
        Opcode op = msgLast ? Opcode.TID_RDMA_WRITE_DATA_LAST : Opcode.TID_RDMA_WRITE_DATA;
        int pad = -n & 3;
        int hdr = op.headerLength();
        int total = hdr + n + pad + Icrc.LENGTH;
        TidRdmaParams remote = qp.opfn.remote();
        ByteBuf b = qp.host().allocPacket(total);
        try {
            Bth.write(b, 0, op.code(), false, pad, Bth.DEFAULT_PKEY, seg.tidQpn, segLast,
                    FlowPsn.of(seg.generation, seg.spsn + seg.pkt));
            int at = op.offset(Header.KDETH);
            TidHeader.clear(b, at);
            int entry = seg.tidList[seg.tidIdx];
            Kdeth.writeKdeth0(b, at, seg.tidOffset >>> Kdeth.OM_LARGE_SHIFT, true, TidEntry.idx(entry),
                    TidEntry.ctrl(entry), !segLast && remote != null && remote.urg(), !segLast);
            Kdeth.writeKdeth1(b, at, remote != null ? remote.jkey() : 0);
            TidHeader.setVerbsQp(b, at, qp.destQpn());
            if (!SgeCopy.copy(qp.host().mrs(), qp.pd, w.sgeAddr, w.sgeLength, w.sgeLkey, w.numSge,
                    seg.offset + seg.byteOffset, b, hdr, n, true, 0)) {
                b.release();
                rc.requester.failTid(w, WcStatus.LOC_PROT_ERR, "local SGE of TID WRITE no longer readable");
                return false;
            }
            for (int i = 0; i < pad; i++) {
                b.setByte(hdr + n + i, 0);
            }
        } catch (RuntimeException e) {
            b.release();
            throw e;
        }
        b.writerIndex(total);
        qp.host().transmit(qp, b);
        counters.inc(Counter.TID_WRITE_DATA_PKTS);
        seg.advance(n);
        if (segLast) {
            w.dataSeg++;
            armRetryTimer(); // the segment asked for an ACK (AckReq on its last packet)
        }
        return true;
    }

    // ------------------------------------------------------------------ TID ACK / NAK

    /** A TID ACK ({@code hfi1_rc_rcv_tid_rdma_ack}): acknowledges segments, a NAK resumes data, a RESYNC ACK renumbers. */
    public void onTidAck(PacketView p) {
        ByteBuf b = p.buf();
        int at = p.index(Header.KDETH);
        int psn = p.psn();
        int syndrome = TidHeader.syndrome(b, at);
        SendWqe w = oldestUnacked();
        if (w == null) {
            counters.inc(Counter.DUPLICATE_RESPONSE);
            return;
        }
        if (halted) {
            if (psn != resyncPsn) {
                counters.inc(Counter.DUPLICATE_RESPONSE); // only the RESYNC's ACK counts while halted
                return;
            }
            onResyncAck(TidHeader.ackVerbsPsn(b, at), TidHeader.ackTidFlowPsn(b, at), psn);
            return;
        }
        if (Aeth.type(syndrome) == Aeth.TYPE_NAK && syndrome == Aeth.NAK_PSN_SEQ_ERROR) {
            ackThrough(TidHeader.ackVerbsPsn(b, at), false); // what the responder has completely
            onTidNak(psn);
            return;
        }
        if (Aeth.type(syndrome) != Aeth.TYPE_ACK) {
            rc.completer.failHead(w, WcStatus.REM_OP_ERR, syndrome, "TID ACK with syndrome 0x"
                    + Integer.toHexString(syndrome));
            return;
        }
        ackThrough(TidHeader.ackVerbsPsn(b, at), true);
    }

    /** @return the oldest TID WRITE with segments not yet acknowledged, or null */
    private SendWqe oldestUnacked() {
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.isTidWrite() && w.tidStarted && w.state != SendWqe.State.DONE && w.ackSeg < w.totalSegs) {
                return w;
            }
        }
        return null;
    }

    /**
     * Acknowledges, oldest first, every data-complete segment whose WRITE_RESP PSN is at most
     * {@code verbsPsn}; completes each TID WRITE whose segments are all acknowledged.
     */
    private void ackThrough(int verbsPsn, boolean staleIfNone) {
        boolean progress = false;
        SendWqe w;
        while ((w = oldestUnacked()) != null) {
            if (w.ackSeg >= w.respSeg) {
                break;
            }
            TidSegment seg = w.segs[w.ackSeg % TidSegment.RING];
            if (Psn.diff(seg.respIbPsn, verbsPsn) > 0) {
                break;
            }
            // the responder has every packet of it, even if a NAK had moved this side's data
            // cursor back before it: it is acknowledged and not sent again
            w.ackSeg++;
            if (w.dataSeg < w.ackSeg) {
                w.dataSeg = w.ackSeg;
            }
            progress = true;
            counters.inc(Counter.TID_WRITE_SEGMENTS_ACKED);
            if (w.ackSeg == w.totalSegs) {
                if (!completeWrite(w)) {
                    return;
                }
            }
        }
        if (!progress) {
            if (staleIfNone) {
                counters.inc(Counter.DUPLICATE_RESPONSE); // stale
            }
            return;
        }
        rc.requester.resetRetryCounters();
        stopRetryTimer();
        if (anySentUnacked()) {
            armRetryTimer();
        } else if (oldestUnacked() == null) {
            resyncFlowIdx = -1; // every renumbered segment is acknowledged
        }
        rc.requester.run();
    }

    /**
     * A TID NAK (AETH 0x60, BTH PSN = the KDETH PSN the responder expects; §6.7): segments before
     * the one holding that PSN are acknowledged; data resumes at exactly that packet, later
     * segments from their start.
     */
    private void onTidNak(int expectedFlowPsn) {
        int gen = FlowPsn.generation(expectedFlowPsn);
        int seq = FlowPsn.sequence(expectedFlowPsn);
        // the segment holding the expected PSN, among those sent and not acknowledged
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe x = qp.sqAt(i);
            if (!x.isTidWrite() || x.state == SendWqe.State.DONE) {
                continue;
            }
            for (int k = x.ackSeg; k < x.respSeg; k++) {
                TidSegment seg = x.segs[k % TidSegment.RING];
                if (seg.generation == gen && seq >= seg.spsn && seq <= seg.lpsn()) {
                    counters.inc(Counter.TID_NAKS_RCVD);
                    resumeFrom(x, k, seq - seg.spsn);
                    return;
                }
            }
        }
        counters.inc(Counter.DUPLICATE_RESPONSE); // not a segment in flight: stale
    }

    /** Data resumes with packet {@code pkt} of segment {@code k} of {@code w}; later segments and WQEs from their start. */
    private void resumeFrom(SendWqe w, int k, int pkt) {
        stopRetryTimer();
        rc.requester.resetRetryCounters();
        boolean found = false;
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe x = qp.sqAt(i);
            if (!x.isTidWrite() || x.state == SendWqe.State.DONE) {
                continue;
            }
            if (x == w) {
                found = true;
                x.segs[k % TidSegment.RING].seek(pkt, qp.pmtu());
                for (int j = k + 1; j < x.respSeg; j++) {
                    x.segs[j % TidSegment.RING].seek(0, qp.pmtu());
                }
                x.dataSeg = k;
            } else if (found) {
                x.dataSeg = x.ackSeg;
                for (int j = x.ackSeg; j < x.respSeg; j++) {
                    x.segs[j % TidSegment.RING].seek(0, qp.pmtu());
                }
            }
        }
        counters.inc(Counter.RESENT_PKTS);
        rc.requester.run();
    }

    private boolean anySentUnacked() {
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.isTidWrite() && w.state != SendWqe.State.DONE && w.ackSeg < w.dataSeg) {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------ retry timer and RESYNC

    private void armRetryTimer() {
        long period = qp.attr.timeout() == 0 ? 0 : RetransmitTimer.UNIT_NANOS << qp.attr.timeout();
        if (period == 0 || retryTimer != null) {
            return;
        }
        retryTimer = scheduler.schedule(timerTask, period);
    }

    private void stopRetryTimer() {
        if (retryTimer != null) {
            retryTimer.cancel();
            retryTimer = null;
        }
    }

    /**
     * The TID retry timer expired with data unacknowledged (§6.8): out of retries, the oldest TID
     * WRITE completes with RETRY_EXC_ERR and the QP enters ERR; otherwise the QP halts and sends a
     * RESYNC moving the flow to the next generation.
     */
    private void onRetryTimeout() {
        retryTimer = null;
        if (qp.state() != QpState.RTS && qp.state() != QpState.SQD) {
            return;
        }
        SendWqe w = oldestUnacked();
        if (w == null || !anySentUnacked() && !halted) {
            return;
        }
        counters.inc(Counter.TID_RETRY_TIMEOUTS);
        if (rc.requester.retryLeft() <= 0) {
            counters.inc(Counter.RETRY_EXCEEDED_ERR);
            rc.completer.failHead(w, WcStatus.RETRY_EXC_ERR, 0, "retry_cnt " + qp.attr.retryCnt()
                    + " exhausted: no TID ACK from " + qp.av() + " QPN 0x" + Integer.toHexString(qp.destQpn()));
            return;
        }
        rc.requester.chargeRetry();
        halted = true;
        // the generation the data in flight uses: that of the oldest unacknowledged segment (after a
        // RESYNC every known segment was renumbered into it); hfi1 takes the last WRITE_RESP's flow,
        // the same thing on a network that does not reorder: a WRITE_RESP delayed from before a
        // RESYNC would name a stale generation and repeat an old RESYNC PSN
        int gen = lastRespGeneration >= 0 ? lastRespGeneration : 0;
        if (w.ackSeg < w.respSeg) {
            gen = w.segs[w.ackSeg % TidSegment.RING].generation;
        }
        resyncPsn = FlowPsn.resyncPsn(gen);
        sendResync();
        armRetryTimer();
        qp.host().flushTransport();
    }

    private void sendResync() {
        Opcode op = Opcode.TID_RDMA_RESYNC;
        int total = op.headerLength() + Icrc.LENGTH;
        TidRdmaParams remote = qp.opfn.remote();
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, remote != null ? remote.qp() : 0, true, resyncPsn);
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeControl(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        b.writerIndex(total);
        qp.host().transmit(qp, b);
        counters.inc(Counter.TID_RESYNCS_SENT);
    }

    /**
     * The ACK of the RESYNC: segments up to {@code verbsPsn} are acknowledged; the others are
     * renumbered into the new generation from sequence 0, the first one without the packets the
     * responder already has ({@code lastGood}, the last good KDETH PSN), and data resumes there.
     */
    private void onResyncAck(int verbsPsn, int lastGood, int psn) {
        stopRetryTimer();
        halted = false;
        int newGen = FlowPsn.resyncGeneration(psn);
        SendWqe w0 = oldestUnacked();
        if (w0 != null && w0.ackSeg < w0.respSeg
                && Psn.diff(w0.segs[w0.ackSeg % TidSegment.RING].respIbPsn, verbsPsn) <= 0) {
            ackThrough(verbsPsn, false);
        }
        SendWqe w = oldestUnacked();
        rc.requester.resetRetryCounters();
        if (w == null) {
            rc.requester.run();
            return;
        }
        int next = 0;
        boolean first = true;
        int resumeSeg = -1;
        int resumePkt = 0;
        for (long i = qp.sqCompleted(); i != qp.sqProducer(); i++) {
            SendWqe x = qp.sqAt(i);
            if (!x.isTidWrite() || x.state == SendWqe.State.DONE) {
                continue;
            }
            for (int k = x.ackSeg; k < x.respSeg; k++) {
                TidSegment seg = x.segs[k % TidSegment.RING];
                int got = 0;
                if (first) {
                    // packets of the segment the responder has: what an earlier RESYNC confirmed, or
                    // more if the last good PSN lies in the segment's current numbering (a last good
                    // PSN in an older generation means nothing new arrived since that RESYNC)
                    got = seg.received;
                    int g = FlowPsn.generation(lastGood);
                    int q = FlowPsn.sequence(lastGood);
                    if (g == seg.generation && q >= seg.spsn && q <= seg.lpsn()) {
                        got = q - seg.spsn + 1;
                    }
                    got = Math.min(got, seg.npkts - 1); // the responder acknowledges a complete segment itself
                    seg.received = got;
                    resumeSeg = k;
                    resumePkt = got;
                    first = false;
                }
                seg.generation = newGen;
                seg.spsn = next - got;
                next += seg.npkts - got;
            }
        }
        lastRespGeneration = newGen;
        // until the segments renumbered now are acknowledged, a WRITE_RESP of that flow with an older
        // generation is a copy from before this RESYNC (the responder held the flow throughout)
        resyncFlowIdx = w.ackSeg < w.respSeg ? TidHeader.flowIndex(w.segs[w.ackSeg % TidSegment.RING].tidQpn) : -1;
        resyncGeneration = newGen;
        resyncVerbsHi = Psn.add(rc.requester.psn(), -1);
        if (resumeSeg >= 0) {
            resumeFrom(w, resumeSeg, resumePkt);
        } else {
            rc.requester.run();
        }
    }

    /** @return whether generation {@code g} comes before {@code ref} on one flow (13-bit serial arithmetic) */
    private static boolean olderGeneration(int g, int ref) {
        int d = (ref - g) & FlowPsn.GENERATION_MASK;
        return d != 0 && d < (FlowPsn.GENERATION_MASK + 1) / 2;
    }

    // ------------------------------------------------------------------ rewind, stop

    /** A rewind of the RC requester: a TID WRITE re-sends its WRITE_REQ for the segments without a WRITE_RESP. */
    void onRewind(SendWqe w) {
        // data already promised by WRITE_RESPs keeps flowing; nothing else changes
    }

    /** Stops the timer and forgets the halt (QP to ERR, RESET or destroyed). */
    public void releaseAll() {
        stopRetryTimer();
        halted = false;
        lastRespGeneration = -1;
        resyncFlowIdx = -1;
    }
}
