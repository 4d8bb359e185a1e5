package io.rxe4j.core.tid;

import io.rxe4j.core.qp.Opfn;
import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.TidSegment;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.ResponderOps;
import io.rxe4j.core.rc.Requester;

import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.core.policy.RnrBackoff;
import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.TidRdmaParams;
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
 * The data-destination half of TID RDMA WRITE at the responder ({@code tid-opfn-facts.md} §6.2–§6.8):
 * a ring of 8 TID WRITE entries (the extra ack-queue entries hfi1 keeps for TID WRITE), resource
 * allocation ahead of responses (at most the local max_write segments allocated
 * and not yet received), one WRITE_RESP per segment in ring order, the flow table's check of the
 * data packets with in-order placement by TID entry, TID ACK per completed segment, TID NAK on a
 * sequence or generation error, RESYNC, RNR when nothing can be allocated for a new request, the
 * resource ("reap") timer, and the READ-after-WRITE interlock's responder half.
 *
 * <p>An entry is active from its WRITE_REQ until the last packet of its last segment was placed;
 * a new request never overwrites an active entry (it is NAKed instead), which is the invariant the
 * hfi1 ack-queue fix is about (§6.5). Loop only.
 */
public final class TidWriteResponder {
    /**
     * Slots of the TID WRITE ring: {@code HFI1_TID_RDMA_WRITE_CNT} (8) usable entries and one that
     * stays empty, so that a full ring is told from an empty one (hfi1's ack queue is likewise one
     * longer than its usable entries, §6.5).
     */
    static final int RING = TidLimits.WRITE_CNT + 1;
    /** {@link #onRequest} results. */
    public static final int ACCEPTED = 0;
    static final int NAK_INVALID = 1;
    public static final int NAK_ACCESS = 2;
    public static final int RNR = 3;
    /** Egress rate assumed by the RNR timer formula, bytes per microsecond (100 Gb/s; §6.4). */
    private static final long EGRESS_BYTES_PER_US = 12_500;

    /** One TID WRITE request being received. */
    static final class Entry {
        boolean active;
        int psn;
        int nsegs;
        int segLen;
        long va;
        int rkey;
        long length;
        RxeMr mr;
        int allocSeg;
        int respSeg;
        int compSeg;
        final TidSegment[] segs = new TidSegment[TidSegment.RING];

        Entry() {
            for (int i = 0; i < segs.length; i++) {
                segs[i] = new TidSegment();
            }
        }
    }

    private final RxeQp qp;
    private final Counters counters;
    private final HwFlow flow;
    private final Scheduler scheduler;
    private final Entry[] ring = new Entry[RING];
    /** Oldest active entry ({@code r_tid_tail}) and the next free one ({@code r_tid_head}). */
    private int tail;
    private int head;
    /** Segments allocated and not fully received, QP-wide ({@code alloc_w_segs}). */
    private int allocW;
    /** A TID NAK was sent for this expected flow PSN (one per episode), or -1. */
    private int nakPsn = -1;
    /** verbs PSN of the WRITE_RESP of the last segment received completely (what an ACK acknowledges). */
    private int lastDoneRespPsn = -1;
    /** PSN of the last RESYNC taken, or -1, and the last good KDETH PSN its ACK carried. */
    private int lastResyncPsn = -1;
    private int lastResyncGood;
    /** A data packet was placed since the last RESYNC was taken. */
    private boolean placedSinceResync;
    private Scheduler.Cancellable reapTimer;
    private final Runnable reapTask;
    /** The count of entries ever accepted (for the invariant checks of the tests). */
    long accepted;

    private final RcEngines rc;
    private final TidPool pool;
    /** The QP's TID halves (its TID READ requester, for the READ-after-WRITE interlock). */
    private final TidEngines tidEngines;

    /** The TID WRITE responder of {@code qp}; {@code tid}: its fellow halves, the RC engines, the pool. */
    public TidWriteResponder(RxeQp qp, TidEngines tid) {
        this.qp = qp;
        this.counters = qp.counters;
        this.rc = tid.rc;
        this.pool = tid.pool;
        this.tidEngines = tid;
        this.flow = tid.hwFlow;
        this.scheduler = qp.scheduler;
        for (int i = 0; i < RING; i++) {
            ring[i] = new Entry();
        }
        this.reapTask = qp.guard("TID resource timer", this::onReapTimeout);
    }

    /** @return whether a TID WRITE is being received (READs arriving now wait: §7) */
    public boolean hasActive() {
        return tail != head;
    }

    /** @return a short description for diagnostics */
    public String debugState() {
        StringBuilder sb = new StringBuilder("tidw-resp{tail=").append(tail).append(" head=").append(head)
                .append(" allocW=").append(allocW);
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            sb.append(" [psn=0x").append(Integer.toHexString(e.psn)).append(" segs=").append(e.nsegs)
                    .append(" alloc=").append(e.allocSeg).append(" resp=").append(e.respSeg).append(" comp=")
                    .append(e.compSeg);
            if (e.compSeg < e.allocSeg) {
                TidSegment seg = e.segs[e.compSeg % TidSegment.RING];
                sb.append(" seg").append(seg.index).append("{gen=0x").append(Integer.toHexString(seg.generation))
                        .append(" spsn=").append(seg.spsn).append(" n=").append(seg.npkts).append(" rcvd=")
                        .append(seg.received).append('}');
            }
            sb.append(']');
        }
        return sb.append('}').toString();
    }

    /**
     * Checks the §6.5 invariants and throws if one is broken (for tests): entries between tail and
     * head are active and the others are not; per entry comp ≤ resp ≤ alloc ≤ nsegs; allocW is the
     * sum of alloc − comp; at most max_write segments allocated and unreceived. Run after every
     * step when assertions are on ({@code -ea}, as in the test suite).
     *
     * @return true (for {@code assert})
     */
    boolean checkInvariants() {
        int sum = 0;
        for (int i = 0; i < RING; i++) {
            Entry e = ring[i];
            boolean inWindow = tail <= head ? i >= tail && i < head : i >= tail || i < head;
            if (e.active != inWindow) {
                throw new IllegalStateException("entry " + i + " active=" + e.active + " outside/inside [" + tail
                        + "," + head + ")");
            }
            if (e.active) {
                if (!(e.compSeg <= e.respSeg && e.respSeg <= e.allocSeg && e.allocSeg <= e.nsegs)) {
                    throw new IllegalStateException("entry " + i + " breaks comp<=resp<=alloc<=nsegs: " + debugState());
                }
                sum += e.allocSeg - e.compSeg;
            }
        }
        if (sum != allocW) {
            throw new IllegalStateException("allocW " + allocW + " != " + sum);
        }
        TidRdmaParams local = qp.opfn.local();
        if (local != null && allocW > local.maxWrite()) {
            throw new IllegalStateException("allocW " + allocW + " > max_write " + local.maxWrite());
        }
        return true;
    }

    // ------------------------------------------------------------------ WRITE_REQ

    /**
     * A WRITE_REQ at the expected PSN ({@code hfi1_rc_rcv_tid_rdma_write_req}): length non-zero and
     * a multiple of 4 KiB (else NAK 0x61), R_Key (NAK 0x62), a free entry (else NAK 0x61: an
     * active entry is never overwritten); then resources for its first segments. When nothing at all
     * can be allocated for it the responder answers RNR and forgets the request.
     *
     * @return {@link #ACCEPTED} (the caller advances the PSN by {@link #lastSegments()} and the MSN
     *     by one), {@link #NAK_INVALID}, {@link #NAK_ACCESS} or {@link #RNR} (then {@link
     *     #rnrTimerIndex()} is the timer to send)
     */
    public int onRequest(PacketView pkt, int p) {
        TidRdmaParams local = qp.opfn.local();
        ByteBuf b = pkt.buf();
        int at = pkt.index(Header.KDETH);
        long len = TidHeader.dmaLength(b, at);
        if (local == null || len == 0 || (len & (TidEntry.PAGE_SIZE - 1)) != 0 || len > (1L << 31)) {
            return NAK_INVALID;
        }
        long va = TidHeader.va(b, at);
        int rkey = TidHeader.rkey(b, at);
        RxeMr mr = qp.host().mrs().remote(rkey, qp.pd, qp.qpn(), va, len, Access.REMOTE_WRITE);
        if (mr == null) {
            return NAK_ACCESS;
        }
        Entry e = ring[head];
        if (e.active || (head + 1) % RING == tail) {
            counters.inc(Counter.TID_WRITE_RING_FULL);
            return NAK_INVALID; // never overwrite a TID WRITE still being received (§6.5)
        }
        e.psn = p;
        e.segLen = local.maxLen();
        e.nsegs = (int) ((len + e.segLen - 1) / e.segLen);
        e.va = va;
        e.rkey = rkey;
        e.length = len;
        e.mr = mr;
        e.allocSeg = 0;
        e.respSeg = 0;
        e.compSeg = 0;
        e.active = true;
        head = (head + 1) % RING;
        lastAccepted = e;
        flow.active++;
        allocate();
        if (e.allocSeg == 0 && allocW == 0 && tail == (head + RING - 1) % RING) {
            // nothing could be allocated (no flow or no TID entries): RNR, the request is forgotten
            head = (head + RING - 1) % RING;
            e.active = false;
            e.mr = null;
            flow.active--;
            flow.releaseIfIdle();
            pool.forget(qp); // the requester asks again after the RNR timer
            qp.kickTid(); // (a TID READ of this QP that waited too tries again)
            rnrIndex = rnrTimerIndex(e.nsegs);
            counters.inc(Counter.TID_WRITE_RNR);
            return RNR;
        }
        accepted++;
        counters.inc(Counter.TID_WRITE_REQUESTS);
        assert checkInvariants();
        return ACCEPTED;
    }

    private Entry lastAccepted;
    private int rnrIndex;

    /** @return the segments (verbs PSNs) of the request just accepted */
    public int lastSegments() {
        return lastAccepted.nsegs;
    }

    /**
     * TID RDMA WRITE_REQ at the responder, EXECUTE ({@code tid-opfn-facts.md} §6.2, §6.4): accepted
     * (PSN advances by its segments, one verbs PSN each, MSN by one, and a WRITE_RESP goes for every
     * segment allocated now); refused with NAK 0x61/0x62; or answered RNR (nothing could be
     * allocated: the requester asks again after the timer, without counting it against rnr_retry).
     */
    void execute(PacketView pkt, int p) {
        ResponderOps resp = rc.responder;
        switch (onRequest(pkt, p)) {
            case ACCEPTED -> {
                resp.accept(p, lastSegments());
                allocateAndRespond(); // a WRITE_RESP for every segment allocated now
            }
            case NAK_ACCESS -> resp.nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            case RNR -> resp.rnrNak(rnrTimerIndex(), p);
            default -> resp.nakError(Aeth.NAK_INVALID_REQUEST, p);
        }
    }

    /** @return the RNR timer index of the last {@link #RNR} answer */
    public int rnrTimerIndex() {
        return rnrIndex;
    }

    /**
     * {@code hfi1_compute_tid_rnr_timeout}: the smallest RNR timer index 1..31 whose time covers
     * {@code segs} segments of 256 KiB at the egress rate, else 0.
     */
    private static int rnrTimerIndex(int segs) {
        long needUs = (long) Math.min(segs, 64) * TidRdmaParams.SEGMENT_SIZE / EGRESS_BYTES_PER_US;
        return RnrBackoff.codeCovering(needUs);
    }

    /**
     * A duplicate WRITE_REQ (PSN below the expected one; §6.6): the WRITE_RESPs of its entry from
     * that PSN on are sent again (their segments keep their flows and TID entries).
     */
    public void onDuplicate(PacketView pkt, int p) {
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            int k = Psn.diff(p, e.psn);
            if (k >= 0 && k < e.nsegs) {
                if (k < e.respSeg) {
                    e.respSeg = Math.max(k, e.compSeg);
                }
                respond();
                return;
            }
        }
        counters.drop(DropReason.OTHER); // a request already received completely, or unknown
    }

    // ------------------------------------------------------------------ allocation and WRITE_RESP

    /** Allocates and answers what it can (also when the pool frees resources). */
    public void allocateAndRespond() {
        allocate();
        respond();
        assert checkInvariants();
    }

    /**
     * Allocates resources for segments, entries in ring order ({@code hfi1_tid_write_alloc_resources}):
     * while fewer than max_write segments are allocated and unreceived, a flow (sync points
     * included) and TID entries mapping the target range; stops (the QP waits) when none are free.
     */
    private void allocate() {
        TidRdmaParams local = qp.opfn.local();
        if (local == null) {
            return;
        }
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            while (e.allocSeg < e.nsegs) {
                if (allocW >= local.maxWrite()) {
                    return;
                }
                int k = e.allocSeg;
                TidSegment seg = e.segs[k % TidSegment.RING];
                long offset = (long) k * e.segLen;
                int length = (int) Math.min(e.segLen, e.length - offset);
                int npkts = (length + qp.pmtu() - 1) / qp.pmtu();
                if (!flow.prepare(npkts)) {
                    return; // waiting for a flow (or for the sync point to drain)
                }
                int pieces = (length + TidPool.MAX_ENTRY_BYTES - 1) / TidPool.MAX_ENTRY_BYTES;
                if (!pool.allocEntries(qp, pieces, seg.handles)) {
                    flow.releaseIfIdle();
                    return; // waiting for TID entries
                }
                long addr = e.va + offset;
                int left = length;
                for (int h = 0; h < pieces; h++) {
                    int piece = Math.min(left, TidPool.MAX_ENTRY_BYTES);
                    pool.program(seg.handles[h], e.mr, addr, piece);
                    seg.tidList[h] = TidEntry.encode(seg.handles[h], TidEntry.CTRL_EVEN, piece >>> TidEntry.PAGE_SHIFT);
                    addr += piece;
                    left -= piece;
                }
                seg.count = pieces;
                seg.index = k;
                seg.offset = offset;
                seg.length = length;
                seg.npkts = npkts;
                seg.generation = flow.generation;
                seg.spsn = flow.take(npkts);
                seg.received = 0;
                seg.respIbPsn = Psn.add(e.psn, k);
                e.allocSeg++;
                allocW++;
            }
        }
    }

    /** Sends the WRITE_RESPs of allocated segments, strictly in ring and segment order. */
    private void respond() {
        boolean sent = false;
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            while (e.respSeg < e.allocSeg) {
                sendWriteResp(e, e.segs[e.respSeg % TidSegment.RING]);
                e.respSeg++;
                sent = true;
            }
            if (e.respSeg < e.nsegs) {
                break; // a later entry answers only after this one answered every segment
            }
        }
        if (allocW > 0) {
            armReapTimer(sent); // armed with the first WRITE_RESP, re-armed whenever one goes (again)
        }
    }

    /**
     * WRITE_RESP of one segment ({@code hfi1_build_tid_rdma_write_resp}): PSN = the entry's PSN +
     * segment index; AETH; the flow (generation, first sequence) and this side's KDETH QP with the
     * flow index; payload the segment's TID list.
     */
    private void sendWriteResp(Entry e, TidSegment seg) {
        Opcode op = Opcode.TID_RDMA_WRITE_RESP;
        int list = seg.count * TidEntry.LENGTH;
        int total = op.headerLength() + list + Icrc.LENGTH;
        TidRdmaParams remote = qp.opfn.remote();
        TidRdmaParams local = qp.opfn.local();
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, remote != null ? remote.qp() : 0, false,
                seg.respIbPsn);
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeControl(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.writeAeth(b, at, Aeth.ACK_UNLIMITED, rc.responder.msn());
        TidHeader.setTidFlowPsn(b, at, FlowPsn.of(seg.generation, seg.spsn));
        TidHeader.setTidFlowQp(b, at, TidHeader.flowQpn(local != null ? local.qp()
                : TidHeader.kdethQpn(Opfn.CONTEXT), flow.idx));
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        for (int i = 0; i < seg.count; i++) {
            TidEntry.write(b, op.headerLength(), i, seg.tidList[i]);
        }
        b.writerIndex(total);
        qp.host().transmit(qp, b);
        counters.inc(Counter.TID_WRITE_RESPS);
    }

    // ------------------------------------------------------------------ data and RESYNC

    /**
     * A WRITE_DATA / WRITE_DATA_LAST packet ({@code hfi1_rc_rcv_tid_rdma_write_data}, §6.6–§6.7):
     * the flow table's check (a generation or sequence error sends one TID NAK with the expected
     * PSN, then SW PSN mode ignores what is behind and NAKs what is ahead), placement, and the
     * completion of a segment on its last packet.
     */
    public void onData(PacketView pkt) {
        ByteBuf b = pkt.buf();
        int at = pkt.index(Header.KDETH);
        Entry e = oldestReceiving();
        if (e == null || flow.idx < 0) {
            counters.drop(DropReason.OTHER); // nothing is expected
            return;
        }
        int flowPsn = pkt.psn();
        int gen = FlowPsn.generation(flowPsn);
        int seq = FlowPsn.sequence(flowPsn);
        if (gen != flow.generation) {
            counters.inc(Counter.TID_FLOW_GEN_ERRORS);
            nak();
            return;
        }
        if (seq != flow.expectedSeq) {
            counters.inc(Counter.TID_FLOW_SEQ_ERRORS);
            if (!flow.swPsn) {
                flow.swPsn = true;
                nak();
            } else if (seq > flow.expectedSeq) {
                nak();
            }
            return; // behind the expected PSN: still in flight from before, ignored
        }
        TidSegment seg = e.segs[e.compSeg % TidSegment.RING];
        if (seq < seg.spsn || seq > seg.lpsn()) {
            counters.drop(DropReason.OTHER);
            return;
        }
        switch (pool.place(qp, pkt, at, Access.REMOTE_WRITE)) {
            case TidPool.NOT_MINE -> {
                counters.drop(DropReason.OTHER); // not a TID entry of this QP, or outside it
                return;
            }
            case TidPool.FAULT -> {
                fatal("the MR under TID entry " + Kdeth.tid(b, at) + " was deregistered during a TID WRITE");
                return;
            }
            default -> { }
        }
        nakPsn = -1;
        placedSinceResync = true;
        flow.expectedSeq++;
        seg.received++;
        counters.inc(Counter.TID_WRITE_DATA_PKTS_RCVD);
        armReapTimer(true);
        if (seq == seg.lpsn()) {
            segmentDone(e, seg);
        }
        assert checkInvariants();
    }

    private Entry oldestReceiving() {
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            if (e.compSeg < e.allocSeg) {
                return e;
            }
            if (e.compSeg < e.nsegs) {
                return null; // its next segment is not allocated yet: no data may come
            }
        }
        return null;
    }

    /** The last packet of a segment was placed: free its TIDs, ACK it, retire the entry after its last. */
    private void segmentDone(Entry e, TidSegment seg) {
        pool.releaseEntries(seg.handles, seg.count);
        seg.count = 0;
        e.compSeg++;
        allocW--;
        flow.segmentDone();
        lastDoneRespPsn = seg.respIbPsn;
        counters.inc(Counter.TID_WRITE_SEGMENTS_RCVD);
        sendTidAck(FlowPsn.of(seg.generation, seg.lpsn()), seg.respIbPsn, 0, Aeth.ACK_UNLIMITED);
        if (e.compSeg == e.nsegs) {
            e.active = false;
            e.mr = null;
            tail = (tail + 1) % RING;
            flow.active--;
            flow.releaseIfIdle();
            if (!hasActive()) {
                rc.responder.releaseInterlock();
            }
        }
        if (allocW == 0) {
            stopReapTimer();
        }
        allocateAndRespond();
    }

    /** Sends one TID NAK for the expected PSN (none again until a packet is placed or the PSN changes). */
    private void nak() {
        int expected = FlowPsn.of(flow.generation, flow.expectedSeq);
        if (nakPsn == expected) {
            return;
        }
        nakPsn = expected;
        counters.inc(Counter.TID_NAKS_SENT);
        sendTidAck(expected, receivedThroughPsn(), 0, Aeth.NAK_PSN_SEQ_ERROR);
    }

    /**
     * RESYNC ({@code hfi1_rc_rcv_tid_rdma_resync}, §6.8): the generation it names (the current or
     * the next one) is programmed with sequence 0; every segment not received completely is
     * renumbered into it, the first one without the packets already placed; the ACK carries the
     * last good KDETH PSN.
     *
     * <p>The flow is the QP's one hardware flow, which its TID READ requester uses too (§4): the TID
     * READ segments not yet received move to the new generation after the TID WRITE segments (which
     * must start at sequence 0, as the peer renumbers them), and those already asked for are asked
     * for again in it at once ({@link TidReadRequester#renumber}). hfi1 renumbers only the TID WRITE
     * entries and so leaves such a READ in the old generation, where every response is a generation
     * error (issue 19; docs/tid-rdma.md, RESYNC).
     */
    public void onResync(PacketView pkt) {
        int psn = pkt.psn();
        int newGen = FlowPsn.resyncGeneration(psn);
        counters.inc(Counter.TID_RESYNCS_RCVD);
        if (psn == lastResyncPsn) {
            if (placedSinceResync) {
                counters.drop(DropReason.OTHER); // a stale copy: data has flowed in the new numbering since
                return;
            }
            // the same RESYNC again (its ACK was lost): answer again with the saved last good PSN,
            // renumber nothing (what the renumbering saw cannot be recomputed)
            sendTidAck(psn, receivedThroughPsn(), lastResyncGood, Aeth.ACK_UNLIMITED);
            return;
        }
        if (flow.idx >= 0 && newGen != flow.generation && newGen != FlowPsn.nextGeneration(flow.generation)) {
            counters.drop(DropReason.OTHER);
            return;
        }
        int lastGood = Psn.add(FlowPsn.of(flow.generation, flow.expectedSeq), -1);
        lastResyncPsn = psn;
        lastResyncGood = lastGood;
        placedSinceResync = false;
        if (flow.idx >= 0) {
            pool.setGeneration(flow.idx, newGen);
            flow.generation = newGen;
        } else {
            flow.pendingGeneration = newGen;
        }
        flow.expectedSeq = 0;
        flow.swPsn = false;
        nakPsn = -1;
        int next = 0;
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            for (int k = e.compSeg; k < e.allocSeg; k++) {
                TidSegment seg = e.segs[k % TidSegment.RING];
                seg.generation = newGen;
                seg.spsn = next - seg.received;
                next += seg.npkts - seg.received;
            }
        }
        next = tidEngines.read.renumber(newGen, next); // the same QP's TID READ segments, after the WRITE's
        flow.nextSeq = next;
        sendTidAck(psn, receivedThroughPsn(), lastGood, Aeth.ACK_UNLIMITED);
        tidEngines.read.requestRenumbered();
        assert checkInvariants();
    }

    /**
     * @return the verbs PSN through which every TID WRITE segment was received completely: just
     *     before the WRITE_RESP PSN of the oldest segment still missing data (so an ACK never covers
     *     a segment being received), or the PSN before the next request when nothing is pending
     */
    private int receivedThroughPsn() {
        for (int i = tail; i != head; i = (i + 1) % RING) {
            Entry e = ring[i];
            if (e.compSeg < e.nsegs) {
                return Psn.add(e.psn, e.compSeg - 1);
            }
        }
        return lastDoneRespPsn >= 0 ? lastDoneRespPsn : Psn.add(rc.responder.expectedPsn(), -1);
    }

    /**
     * TID ACK ({@code hfi1_build_tid_rdma_write_ack}): BTH PSN = the acknowledged segment's last
     * flow PSN (or the expected PSN of a NAK, or the RESYNC's PSN), AETH, verbs_psn = that segment's
     * WRITE_RESP PSN, tid_flow_psn = the last good KDETH PSN for a RESYNC's ACK (else 0).
     */
    private void sendTidAck(int bthPsn, int verbsPsn, int tidFlowPsn, int syndrome) {
        Opcode op = Opcode.TID_RDMA_ACK;
        int total = op.headerLength() + Icrc.LENGTH;
        TidRdmaParams remote = qp.opfn.remote();
        TidRdmaParams local = qp.opfn.local();
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, remote != null ? remote.qp() : 0, false, bthPsn);
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeControl(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.writeAeth(b, at, syndrome, rc.responder.msn());
        TidHeader.setAckTidFlowPsn(b, at, tidFlowPsn);
        TidHeader.setAckVerbsPsn(b, at, verbsPsn & Bth.MASK_24);
        TidHeader.setTidFlowQp(b, at, TidHeader.flowQpn(local != null ? local.qp()
                : TidHeader.kdethQpn(Opfn.CONTEXT), Math.max(flow.idx, 0)));
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        b.writerIndex(total);
        qp.host().transmit(qp, b);
        counters.inc(Counter.TID_ACKS_SENT);
    }

    // ------------------------------------------------------------------ reap timer, stop

    private void armReapTimer(boolean restart) {
        TidRdmaParams remote = qp.opfn.remote();
        if (remote == null) {
            return;
        }
        if (reapTimer != null) {
            if (!restart) {
                return;
            }
            reapTimer.cancel();
        }
        long period = 56L * (RetransmitTimer.UNIT_NANOS << remote.timeout()); // 56 × 4.096 µs × 2^timeout
        reapTimer = scheduler.schedule(reapTask, period);
    }

    private void stopReapTimer() {
        if (reapTimer != null) {
            reapTimer.cancel();
            reapTimer = null;
        }
    }

    /** The resource timer expired with segments allocated and no data for them: QP fatal. */
    private void onReapTimeout() {
        reapTimer = null;
        if (allocW == 0) {
            return;
        }
        counters.inc(Counter.TID_REAP_TIMEOUTS);
        fatal("TID WRITE resource timer expired: no data for " + allocW + " allocated segments (RESP_TIMEOUT_ERR)");
    }

    private void fatal(String why) {
        qp.moveToError(why);
    }

    /** Frees every TID entry and entry (QP to ERR, RESET or destroyed). */
    public void releaseAll() {
        stopReapTimer();
        for (Entry e : ring) {
            if (e.active && pool != null) {
                for (int k = e.compSeg; k < e.allocSeg; k++) {
                    TidSegment seg = e.segs[k % TidSegment.RING];
                    pool.releaseEntries(seg.handles, seg.count);
                    seg.count = 0;
                }
            }
            e.active = false;
            e.mr = null;
        }
        tail = 0;
        head = 0;
        allocW = 0;
        nakPsn = -1;
        lastDoneRespPsn = -1;
        lastResyncPsn = -1;
    }
}
