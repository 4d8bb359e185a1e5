package io.rxe4j.core.rc;

import io.rxe4j.core.qp.Opfn;
import io.rxe4j.core.qp.RecvWqe;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.core.qp.TidSegment;
import io.rxe4j.core.tid.TidWriteResponder;

import io.rxe4j.verbs.Counter;

import io.rxe4j.core.wire.DropReason;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.core.wire.FlowPsn;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.TidEntry;
import io.rxe4j.core.wire.TidHeader;
import java.lang.invoke.VarHandle;

/**
 * The responder ({@code rxe_resp.c}; {@code rxe-facts.md} §1.3, §4.2, §5.5–§5.7, §6.3, §9.3):
 * CHK_PSN → CHK_OP_SEQ → CHK_OP_VALID → CHK_RESOURCE → CHK_LENGTH → CHK_RKEY → EXECUTE →
 * COMPLETE → ACKNOWLEDGE. Class C errors send a NAK with the packet's PSN and move the QP to ERR;
 * out-of-sequence requests get one PSN-sequence NAK per gap; duplicates are answered without
 * re-executing, a duplicate SEND/WRITE with an ACK of its own PSN ({@code extensions.md} §6).
 *
 * <p>Bounded output ({@code extensions.md} §6): a READ reply (or its replay) is sent from a
 * cursor in its responder resource, at most {@link #REPLY_BATCH} packets per turn, and only while
 * the transport is writable; between turns the device serves its other QPs. Requests that arrive
 * while a reply is under way wait, in order, in a bounded queue ({@link #MAX_WAITING} packets;
 * beyond it they are dropped and counted, and the requester resends them), except a duplicate of
 * the READ being answered, which moves the cursor to the PSN it asks for (as rxe does). A reply
 * whose memory becomes unreadable (MR deregistered) ends with NAK 0x62 carrying the request's PSN.
 * Loop only.
 */
public final class Responder {
    /** Most READ response packets one turn of a QP produces. */
    static final int REPLY_BATCH = 16;
    /** Most request packets held while a READ reply is under way. */
    static final int MAX_WAITING = 256;
    /** At most one CNP per QP per 50 µs (DCQCN's notification point), in nanoseconds. */
    static final long CNP_INTERVAL_NANOS = 50_000;
    /** When the last CNP was sent (scheduler nanoseconds), or {@link Long#MIN_VALUE}. */
    private long lastCnpAt = Long.MIN_VALUE;

    private enum InMessage { NONE, SEND, WRITE }

    /** Maximum RETH DMA length ({@code RXE_PORT_MAX_MSG_SZ}). */
    private static final long MAX_MSG = 1L << 31;

    private final RxeQp qp;
    private final Counters counters;
    private final ResponderResources resources = new ResponderResources();

    /** Expected PSN (resp.psn). */
    private int ePsn;
    /** Message sequence number, 24-bit. */
    private int msn;
    private boolean nakSent;
    private InMessage inMessage = InMessage.NONE;
    private RecvWqe recv;
    private long recvOffset;
    private RxeMr writeMr;
    private long writeVa;
    private long writeResid;
    private long writeLength;
    /** The READ reply being sent (rxe's {@code qp->resp.res}), or null. */
    private ResponderResources.Entry reply;
    /** Requests that arrived while {@link #reply} was under way (retained slices), oldest first. */
    private final java.util.ArrayDeque<ByteBuf> waiting = new java.util.ArrayDeque<>();
    private final PacketView waitingView = new PacketView();

    public Responder(RxeQp qp) {
        this.qp = qp;
        this.counters = qp.counters;
    }

    /** @return a one-line summary; read without synchronisation (may be slightly inconsistent off the loop) */
    public String debugState() {
        ResponderResources.Entry r = reply;
        return "resp{epsn=0x" + Integer.toHexString(ePsn) + " msn=" + msn + " in=" + inMessage + " nakSent=" + nakSent
                + (r != null ? " reply@0x" + Integer.toHexString(r.curPsn) + " resid=" + r.resid : "")
                + " waiting=" + waiting.size() + "}";
    }

    /** @return whether a READ reply is under way or requests wait behind one */
    boolean busy() {
        return reply != null || !waiting.isEmpty() || interlocked;
    }

    /** A READ waits for the TID WRITEs being received (the responder half of READ-after-WRITE, §7). */
    private boolean interlocked;

    public void setExpectedPsn(int p) {
        ePsn = p;
    }

    public void resizeResources(int n) {
        resources.resize(n);
    }

    public void reset() {
        ePsn = qp.rqPsn;
        msn = 0;
        nakSent = false;
        abortMessage();
        resources.clear();
    }

    /** Drops the message in progress, the READ reply under way and the waiting requests (ERR, RESET, destroy). */
    public void abortMessage() {
        interlocked = false;
        inMessage = InMessage.NONE;
        recv = null;
        writeMr = null;
        endReply();
        ByteBuf b;
        while ((b = waiting.poll()) != null) {
            b.release();
        }
    }

    private void endReply() {
        if (reply != null) {
            reply.mr = null;
            reply = null;
        }
    }

    /**
     * Entry point for a request packet: processed at once, or, while a READ reply is under way,
     * queued behind it (or, for a duplicate of that READ, turned into a new position of its cursor).
     */
    public void onRequest(PacketView pkt) {
        if (pkt.opcode() == Opcode.TID_RDMA_WRITE_REQ && Psn.diff(pkt.psn(), ePsn) < 0) {
            // a duplicate TID WRITE request only re-sends WRITE_RESPs of an entry being received
            // (tid_rdma_rcv_error acts at once): it must not wait behind a READ reply or behind a READ
            // that itself waits for this very TID WRITE (the §7 interlock)
            counters.inc(Counter.DUPLICATE_REQUEST);
            qp.tidWriteResp.onDuplicate(pkt, pkt.psn());
            return;
        }
        if (!busy() && heldByInterlock(pkt)) {
            interlocked = true;
            counters.inc(Counter.TID_INTERLOCK_WAITS);
        }
        if (busy()) {
            if (reply != null && retargetReply(pkt)) {
                return;
            }
            if (waiting.size() >= MAX_WAITING) {
                counters.drop(DropReason.RESPONDER_BUSY);
                return;
            }
            waiting.add(pkt.buf().retainedSlice(pkt.bthIndex(), pkt.length()));
            return;
        }
        process(pkt);
    }

    /**
     * One turn of this QP's responder output (called by the device, fairly with its other QPs):
     * the next batch of the READ reply, then the requests that waited behind it until another
     * reply starts.
     */
    public void onService() {
        if (reply != null) {
            sendReplyBatch();
        }
        int n = 0;
        while (reply == null && !interlocked && !waiting.isEmpty() && n++ < MAX_WAITING) {
            ByteBuf b = waiting.peek();
            if (waitingView.parse(b, b.readerIndex(), b.readableBytes()) == null && heldByInterlock(waitingView)) {
                interlocked = true; // it waits on, and everything behind it
                counters.inc(Counter.TID_INTERLOCK_WAITS);
                break;
            }
            waiting.poll();
            try {
                if (waitingView.parse(b, b.readerIndex(), b.readableBytes()) == null) {
                    process(waitingView);
                } else {
                    counters.drop(DropReason.OTHER);
                }
            } finally {
                b.release();
            }
        }
        if (busy() && qp.state != io.rxe4j.verbs.QpState.ERR) {
            qp.lane.requestService(qp);
        }
    }

    private void process(PacketView pkt) {
        Opcode op = pkt.opcode();
        int p = pkt.psn();
        // CHK_PSN
        int d = Psn.diff(p, ePsn);
        if (d > 0) {
            counters.inc(Counter.OUT_OF_SEQ_REQUEST);
            if (!nakSent) {
                nakSent = true;
                sendAck(Aeth.NAK_PSN_SEQ_ERROR, ePsn);
            }
            return;
        }
        if (d < 0) {
            counters.inc(Counter.DUPLICATE_REQUEST);
            duplicate(pkt, op, p);
            return;
        }
        nakSent = false;
        // CHK_OP_SEQ
        boolean seqOk = switch (inMessage) {
            case NONE -> op.isFirst();
            case SEND -> op.operation() == Opcode.Operation.SEND && !op.isFirst();
            case WRITE -> op.operation() == Opcode.Operation.WRITE && !op.isFirst();
        };
        if (!seqOk) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        // CHK_OP_VALID
        int need = switch (op.operation()) {
            case SEND -> op.hasInvalidate() ? -1 : 0; // no memory windows / invalidation yet
            case WRITE -> Access.REMOTE_WRITE;
            case READ -> Access.REMOTE_READ;
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> Access.REMOTE_ATOMIC;
            case ATOMIC_WRITE -> Access.REMOTE_WRITE; // not REMOTE_ATOMIC (rxe-facts §6.3)
            case TID_READ_REQUEST -> qp.opfn.remote() != null ? Access.REMOTE_READ : -1; // only once negotiated
            case TID_WRITE_REQUEST -> qp.opfn.remote() != null ? Access.REMOTE_WRITE : -1;
            case FLUSH -> flushAccess(Feth.placementType(pkt.buf(), pkt.index(Header.FETH)));
            default -> -1;
        };
        boolean opfnRequest = isOpfnRequest(pkt);
        if (opfnRequest) {
            need = 0; // accepted without REMOTE_ATOMIC (tid-opfn-facts §1.2)
        }
        if (need < 0 || (qp.accessFlags & need) != need) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        // CHK_RESOURCE (before CHK_LENGTH, as rxe-facts §9.3): a receive WQE for SEND FIRST/ONLY and
        // WRITE WITH IMMEDIATE, else RNR NAK; responder resources for READ and atomics
        if (op.consumesRecvWqe()) {
            RecvWqe r = qp.peekRecv();
            if (r == null) {
                rnrNak(p);
                return;
            }
            recv = r;
            recvOffset = 0;
        }
        if (needsRdAtomicResource(op.operation()) && qp.maxDestRdAtomic == 0 && !opfnRequest) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        // CHK_LENGTH (packet level)
        int pmtu = qp.pmtu();
        int n = pkt.payloadLength();
        boolean lenOk = switch (op.payload()) {
            case NONE -> n == 0;
            case PMTU -> n == pmtu;
            case NON_EMPTY -> n >= 1 && n <= pmtu;
            case ANY -> n <= pmtu;
            case EIGHT -> n == 8;
        };
        if (!lenOk) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        switch (op.operation()) {
            case SEND -> executeSend(pkt, op, p, n);
            case WRITE -> executeWrite(pkt, op, p, n, pmtu);
            case READ -> executeRead(pkt, p, pmtu);
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> {
                if (opfnRequest) {
                    executeOpfn(pkt, p);
                } else {
                    executeAtomic(pkt, op, p);
                }
            }
            case ATOMIC_WRITE -> executeAtomicWrite(pkt, p);
            case FLUSH -> executeFlush(pkt, p);
            case TID_READ_REQUEST -> executeTidRead(pkt, p, pmtu);
            case TID_WRITE_REQUEST -> executeTidWrite(pkt, p);
            default -> nakError(Aeth.NAK_INVALID_REQUEST, p);
        }
    }

    // ------------------------------------------------------------------ execute

    private static boolean needsRdAtomicResource(Opcode.Operation o) {
        return switch (o) {
            case READ, COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD, ATOMIC_WRITE,
                    TID_READ_REQUEST -> true;
            default -> false;
        };
    }

    private void executeSend(PacketView pkt, Opcode op, int p, int n) {
        if (recvOffset + n > recv.length) {
            nakError(Aeth.NAK_INVALID_REQUEST, p); // receive buffer too small (rxe-facts §5.6)
            return;
        }
        if (!scatterToRecv(recv, recvOffset, pkt.buf(), pkt.payloadIndex(), n)) {
            nakError(Aeth.NAK_REMOTE_OP_ERROR, p); // malformed receive WQE
            return;
        }
        recvOffset += n;
        if (op.isLast()) {
            int flags = WorkCompletion.WC_GRH;
            int imm = 0;
            if (op.hasImmediate()) {
                flags |= WorkCompletion.WC_WITH_IMM;
                imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
            }
            RecvWqe r = recv;
            recv = null;
            inMessage = InMessage.NONE;
            msn = Psn.next(msn);
            long wrId = r.wrId;
            qp.consumeRecv(); // free the slot first (see RxeQp.completeSend)
            if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) recvOffset, flags, imm,
                    Bth.se(pkt.buf(), pkt.bthIndex()))) {
                qp.moveToError("receive CQ overflow");
                return;
            }
        } else {
            inMessage = InMessage.SEND;
        }
        accept(pkt, p);
    }

    private void executeWrite(PacketView pkt, Opcode op, int p, int n, int pmtu) {
        // WRITE_WITH_IMM took its receive WQE in CHK_RESOURCE, so a later class C error completes
        // that WQE with the error status (rxe_resp.c do_complete) rather than flushing it
        if (op.isFirst()) {
            int reth = pkt.index(Header.RETH);
            long va = Reth.va(pkt.buf(), reth);
            int rkey = Reth.rkey(pkt.buf(), reth);
            long len = Reth.dmaLength(pkt.buf(), reth);
            if (len > MAX_MSG) {
                nakError(Aeth.NAK_INVALID_REQUEST, p);
                return;
            }
            RxeMr mr = null;
            if (len > 0) { // C9-88: a zero-length WRITE checks no rkey
                mr = remoteMr(rkey, va, len, Access.REMOTE_WRITE);
                if (mr == null) {
                    nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                    return;
                }
            }
            writeMr = mr;
            writeVa = va;
            writeResid = len;
            writeLength = len;
        }
        boolean fits = writeResid > pmtu ? (n == pmtu && !op.isLast()) : (n == writeResid && op.isLast());
        if (!fits) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        if (n > 0) {
            RxeMr mr = writeMr;
            if (mr == null || !mr.isValid()) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
            try {
                MemoryCopy.fromBuf(pkt.buf(), pkt.payloadIndex(), mr.segment(), mr.offset(writeVa), n);
            } catch (IllegalStateException closed) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
            writeVa += n;
            writeResid -= n;
        }
        if (op.isLast()) {
            inMessage = InMessage.NONE;
            writeMr = null;
            msn = Psn.next(msn);
            if (op.hasImmediate()) {
                RecvWqe r = recv;
                recv = null;
                int imm = ImmDt.imm(pkt.buf(), pkt.index(Header.IMM_DT));
                long wrId = r.wrId;
                qp.consumeRecv();
                if (!qp.completeRecv(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) writeLength,
                        WorkCompletion.WC_GRH | WorkCompletion.WC_WITH_IMM, imm,
                        Bth.se(pkt.buf(), pkt.bthIndex()))) {
                    qp.moveToError("receive CQ overflow");
                    return;
                }
            }
        } else {
            inMessage = InMessage.WRITE;
        }
        accept(pkt, p);
    }

    private void executeRead(PacketView pkt, int p, int pmtu) {
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        int rkey = Reth.rkey(pkt.buf(), reth);
        long len = Reth.dmaLength(pkt.buf(), reth);
        if (len > MAX_MSG) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        RxeMr mr = null;
        if (len > 0) {
            mr = remoteMr(rkey, va, len, Access.REMOTE_READ);
            if (mr == null) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
        }
        int npkts = (int) Math.max(1, (len + pmtu - 1) / pmtu);
        ResponderResources.Entry e = resources.allocate(ResponderResources.Type.READ);
        e.firstPsn = p;
        e.lastPsn = Psn.add(p, npkts - 1);
        e.va = va;
        e.length = len;
        e.rkey = rkey;
        msn = Psn.next(msn);
        ePsn = Psn.add(p, npkts);
        startReply(e, mr, va, len, p, true);
    }

    /**
     * @return whether {@code pkt} is an OPFN request: a COMPARE_SWAP to VA 0xFFFFFFFFFFFFFFFF
     *     ({@code HFI1_VERBS_E_ATOMIC_VADDR}) while this device runs OPFN; without OPFN it is an
     *     ordinary atomic (and fails its rkey check)
     */
    private boolean isOpfnRequest(PacketView pkt) {
        return pkt.opcode() == Opcode.RC_COMPARE_SWAP && qp.opfn.enabled()
                && AtomicEth.va(pkt.buf(), pkt.index(Header.ATOMIC_ETH)) == -1L;
    }

    /**
     * An OPFN request ({@code tid-opfn-facts.md} §1.2): takes a responder resource (so a duplicate
     * gets the same answer), hands the compare word to {@link Opfn#onRequest}, and answers with
     * ATOMIC ACKNOWLEDGE carrying this side's word; PSN and MSN advance by one, as for an atomic.
     */
    private void executeOpfn(PacketView pkt, int p) {
        long word = AtomicEth.compare(pkt.buf(), pkt.index(Header.ATOMIC_ETH));
        ResponderResources.Entry e = resources.allocate(ResponderResources.Type.OPFN);
        e.original = qp.opfn.onRequest(word, e.original);
        e.firstPsn = p;
        e.lastPsn = p;
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        sendAtomicAck(p, e.original);
    }

    /**
     * TID RDMA READ_REQ, one segment ({@code tid_rdma_rcv_read_request}; {@code tid-opfn-facts.md}
     * §5.3): length non-zero, a multiple of 4 KiB and at most this side's max_len, a TID list of
     * non-zero entries covering it (else NAK 0x61); R_Key (else NAK 0x62). The segment takes a
     * responder resource of its own, PSN and MSN advance by its packets and by one, and its data
     * goes out as READ_RESP packets by TID entry and offset ({@link #sendTidReadResponse}).
     */
    private void executeTidRead(PacketView pkt, int p, int pmtu) {
        ResponderResources.Entry e = resources.allocate(ResponderResources.Type.TID_READ);
        long len = parseTidRead(pkt, e);
        if (len < 0) {
            e.type = ResponderResources.Type.NONE;
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        RxeMr mr = remoteMr(e.rkey, e.va, len, Access.REMOTE_READ);
        if (mr == null) {
            e.type = ResponderResources.Type.NONE;
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        int npkts = (int) ((len + pmtu - 1) / pmtu);
        e.firstPsn = p;
        e.lastPsn = Psn.add(p, npkts - 1);
        e.length = len;
        msn = Psn.next(msn);
        ePsn = Psn.add(p, npkts);
        startReply(e, mr, e.va, len, p, true);
    }

    /**
     * TID RDMA WRITE_REQ ({@code tid-opfn-facts.md} §6.2, §6.4): handed to the {@link
     * TidWriteResponder}; accepted, PSN advances by its segments (one verbs PSN each) and MSN by one;
     * refused with NAK 0x61/0x62; or answered RNR (nothing could be allocated: the requester asks
     * again after the timer, without counting it against rnr_retry).
     */
    private void executeTidWrite(PacketView pkt, int p) {
        switch (qp.tidWriteResp.onRequest(pkt, p)) {
            case TidWriteResponder.ACCEPTED -> {
                msn = Psn.next(msn);
                ePsn = Psn.add(p, qp.tidWriteResp.lastSegments());
                qp.tidWriteResp.allocateAndRespond(); // a WRITE_RESP for every segment allocated now
            }
            case TidWriteResponder.NAK_ACCESS -> nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            case TidWriteResponder.RNR -> {
                counters.inc(Counter.SEND_RNR_ERR);
                sendAck(Aeth.TYPE_RNR_NAK | (qp.tidWriteResp.rnrTimerIndex() & 0x1F), p);
            }
            default -> nakError(Aeth.NAK_INVALID_REQUEST, p);
        }
    }

    /** @return the next request PSN expected (resp.psn) */
    public int expectedPsn() {
        return ePsn;
    }

    /** @return the current MSN (24 bits), for the AETH of TID responses */
    public int msn() {
        return msn;
    }

    /**
     * The TID WRITEs being received are done: READs held by the READ-after-WRITE interlock (§7) and
     * everything queued behind them may go.
     */
    public void releaseInterlock() {
        if (interlocked) {
            interlocked = false;
            qp.lane.requestService(qp);
        }
    }

    /** @return whether {@code pkt} is a READ or TID READ that must wait for the TID WRITEs being received (§7) */
    private boolean heldByInterlock(PacketView pkt) {
        Opcode.Operation o = pkt.opcode().operation();
        return (o == Opcode.Operation.READ || o == Opcode.Operation.TID_READ_REQUEST) && qp.tidWriteResp.hasActive()
                && Psn.diff(pkt.psn(), ePsn) == 0;
    }

    /**
     * Reads a TID READ_REQ's RETH, flow and TID list into {@code e} (the TID list and flow are read
     * again for a duplicate: the requester may have re-programmed them).
     *
     * @return the segment length in bytes, or -1 if the request breaks a §5.3 rule
     */
    private long parseTidRead(PacketView pkt, ResponderResources.Entry e) {
        io.netty.buffer.ByteBuf b = pkt.buf();
        int at = pkt.index(Header.KDETH);
        io.rxe4j.verbs.TidRdmaParams local = qp.opfn.local();
        long len = TidHeader.dmaLength(b, at);
        if (local == null || len == 0 || (len & (TidEntry.PAGE_SIZE - 1)) != 0 || len > local.maxLen()) {
            return -1;
        }
        int n = TidEntry.count(pkt.payloadLength());
        if (e.tid == null) {
            e.tid = new TidSegment();
        }
        TidSegment seg = e.tid;
        long covered = 0;
        for (int i = 0; i < n; i++) {
            int entry = TidEntry.read(b, pkt.payloadIndex(), i);
            if (TidEntry.lengthPages(entry) == 0) {
                return -1;
            }
            seg.tidList[i] = entry;
            covered += TidEntry.lengthBytes(entry);
        }
        if (n == 0 || covered < len) {
            return -1;
        }
        int flowPsn = TidHeader.tidFlowPsn(b, at);
        int npkts = (int) ((len + qp.pmtu() - 1) / qp.pmtu());
        if (!FlowPsn.fitsInGeneration(FlowPsn.sequence(flowPsn), npkts)) {
            return -1; // the segment's flow sequences would reach the reserved 0x7FF
        }
        seg.count = n;
        seg.length = (int) len;
        seg.npkts = npkts;
        seg.tidQpn = TidHeader.tidFlowQp(b, at) & Bth.MASK_24;
        seg.generation = FlowPsn.generation(flowPsn);
        seg.spsn = FlowPsn.sequence(flowPsn);
        e.va = TidHeader.va(b, at);
        e.rkey = TidHeader.rkey(b, at);
        return len;
    }

    private void executeAtomic(PacketView pkt, Opcode op, int p) {
        boolean maskedCas = op == Opcode.RC_MASKED_COMPARE_SWAP;
        int at = maskedCas ? pkt.index(Header.MASKED_CMP_SWAP_ETH) : pkt.index(Header.ATOMIC_ETH);
        ByteBuf b = pkt.buf();
        long va = maskedCas ? MaskedCmpSwapEth.va(b, at) : AtomicEth.va(b, at);
        int rkey = maskedCas ? MaskedCmpSwapEth.rkey(b, at) : AtomicEth.rkey(b, at);
        RxeMr mr = remoteMr(rkey, va, 8, Access.REMOTE_ATOMIC);
        if (mr == null) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        if ((va & 7) != 0) {
            nakError(Aeth.NAK_INVALID_REQUEST, p); // misaligned atomic (A19.4.2)
            return;
        }
        long original;
        try {
            original = switch (op) {
                case RC_COMPARE_SWAP -> mr.compareAndExchange(va, AtomicEth.compare(b, at), AtomicEth.swapAdd(b, at));
                case RC_FETCH_ADD -> mr.getAndAdd(va, AtomicEth.swapAdd(b, at));
                case RC_MASKED_COMPARE_SWAP -> mr.maskedCompareAndSwap(va, MaskedCmpSwapEth.compare(b, at),
                        MaskedCmpSwapEth.compareMask(b, at), MaskedCmpSwapEth.swap(b, at),
                        MaskedCmpSwapEth.swapMask(b, at));
                default -> mr.maskedFetchAndAdd(va, AtomicEth.swapAdd(b, at), AtomicEth.compare(b, at));
            };
        } catch (IllegalStateException closed) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        record(ResponderResources.Type.ATOMIC, p).original = original;
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        sendAtomicAck(p, original);
    }

    /**
     * ATOMIC WRITE ({@code rxe-facts.md} §7.2, {@code extensions.md} §3): checks in rxe's order,
     * then one untorn 64-bit release store. Earlier WRITEs of this QP were placed by this same loop
     * thread before it (program order), so a reader that acquires the new value sees them too.
     */
    private void executeAtomicWrite(PacketView pkt, int p) {
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        RxeMr mr = remoteMr(Reth.rkey(pkt.buf(), reth), va, 8, Access.REMOTE_WRITE);
        if (mr == null) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        if (Reth.dmaLength(pkt.buf(), reth) != 8 || pkt.padCount() != 0 || (va & 7) != 0) {
            nakError(Aeth.NAK_INVALID_REQUEST, p); // length or misaligned (A19.4.2)
            return;
        }
        long raw = pkt.buf().getLong(pkt.payloadIndex()); // the 8 wire bytes, big-endian read
        try {
            mr.setLongRelease(va, NATIVE_LE ? Long.reverseBytes(raw) : raw); // stored byte for byte
        } catch (IllegalStateException closed) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        record(ResponderResources.Type.ATOMIC_WRITE, p);
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        sendEmptyReadResponse(p);
    }

    /**
     * RDMA FLUSH ({@code rxe-facts.md} §7.3, {@code extensions.md} §4): global visibility is a full
     * fence after every earlier placement; persistence forces the range (or the whole MR) to the
     * storage device. The response is sent only after both returned.
     */
    private void executeFlush(PacketView pkt, int p) {
        ByteBuf b = pkt.buf();
        int feth = pkt.index(Header.FETH);
        int reth = pkt.index(Header.RETH);
        int plt = Feth.placementType(b, feth);
        int sel = Feth.selectivity(b, feth);
        long va = Reth.va(b, reth);
        long len = Reth.dmaLength(b, reth);
        int need = flushAccess(plt);
        RxeMr mr = qp.device.mrs().lookup(Reth.rkey(b, reth));
        if (mr == null || mr.pd() != qp.pd || (mr.access() & need) != need) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        if (sel == Feth.SEL_MR) {
            va = mr.iova();
            len = mr.length();
        } else if (sel != Feth.SEL_RANGE) {
            nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        } else if (!mr.allows(va, len, need)) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        VarHandle.fullFence(); // global visibility of every earlier placement
        if ((plt & Feth.PLT_PERSISTENT) != 0) {
            try {
                mr.persist(va, len);
            } catch (RuntimeException ioOrReleased) { // UncheckedIOException, or the MR was released
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
        }
        record(ResponderResources.Type.FLUSH, p);
        msn = Psn.next(msn);
        ePsn = Psn.next(p);
        sendEmptyReadResponse(p);
    }

    /** @return the QP/MR access a FLUSH placement type needs, or -1 for an invalid type (NAK 0x61) */
    private static int flushAccess(int plt) {
        if (plt == 0 || (plt & ~(Feth.PLT_GLOBAL | Feth.PLT_PERSISTENT)) != 0) {
            return -1;
        }
        return ((plt & Feth.PLT_GLOBAL) != 0 ? Access.FLUSH_GLOBAL : 0)
                | ((plt & Feth.PLT_PERSISTENT) != 0 ? Access.FLUSH_PERSISTENT : 0);
    }

    /** Records a one-PSN request so that its duplicate is answered without executing it again. */
    private ResponderResources.Entry record(ResponderResources.Type type, int p) {
        ResponderResources.Entry e = resources.allocate(type);
        e.firstPsn = p;
        e.lastPsn = p;
        return e;
    }

    /** Whether a native {@code long} is little-endian. */
    private static final boolean NATIVE_LE = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    /** Accepts a SEND/WRITE packet: advance the expected PSN and ACK if asked. */
    private void accept(PacketView pkt, int p) {
        ePsn = Psn.next(p);
        if (pkt.ackReq()) {
            sendAck(Aeth.ACK_UNLIMITED, p);
        }
    }

    // ------------------------------------------------------------------ duplicates

    private void duplicate(PacketView pkt, Opcode op, int p) {
        switch (op.operation()) {
            // C9-105: acknowledge again, with the duplicate's own PSN: ePsn − 1 could be a later
            // READ's or atomic's PSN, which would acknowledge it implicitly (extensions §6)
            case SEND, WRITE -> sendAck(Aeth.ACK_UNLIMITED, p);
            case TID_READ_REQUEST -> duplicateTidRead(pkt, p);
            case TID_WRITE_REQUEST -> qp.tidWriteResp.onDuplicate(pkt, p);
            case READ -> {
                ResponderResources.Entry e = resources.find(ResponderResources.Type.READ, p);
                if (e == null) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                replayRead(pkt, e, p, true);
            }
            case ATOMIC_WRITE, FLUSH -> {
                ResponderResources.Type t = op.operation() == Opcode.Operation.FLUSH
                        ? ResponderResources.Type.FLUSH : ResponderResources.Type.ATOMIC_WRITE;
                ResponderResources.Entry e = resources.find(t, p);
                if (e == null) { // evicted: a later response completes the WQE at the requester
                    counters.drop(DropReason.OTHER);
                    return;
                }
                if (e.firstPsn != p) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                sendEmptyReadResponse(p); // answered again, not executed again
            }
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> {
                ResponderResources.Entry e = resources.find(ResponderResources.Type.ATOMIC, p);
                if (e == null) {
                    e = resources.find(ResponderResources.Type.OPFN, p); // answered again, not negotiated again
                }
                if (e == null || e.firstPsn != p) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                sendAtomicAck(p, e.original); // memory is not touched again
            }
            default -> counters.drop(DropReason.OTHER);
        }
    }

    /**
     * A duplicate READ for resource {@code e}: it must ask for the original or a subset of it (same
     * rkey, VA range inside); the MR is looked up again and the data sent again from memory as a
     * new response stream starting at the duplicate's PSN ({@code extensions.md} §6). If the MR is
     * gone or no longer covers the range: NAK 0x62 with the duplicate's PSN.
     */
    private void replayRead(PacketView pkt, ResponderResources.Entry e, int p, boolean sendNow) {
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        int rkey = Reth.rkey(pkt.buf(), reth);
        long len = Reth.dmaLength(pkt.buf(), reth);
        long off = va - e.va;
        boolean subset = rkey == e.rkey && Long.compareUnsigned(va, e.va) >= 0
                && Long.compareUnsigned(off, e.length) <= 0 && len <= e.length - off;
        if (!subset) {
            counters.drop(DropReason.OTHER);
            return;
        }
        RxeMr mr = null;
        if (len > 0) {
            mr = remoteMr(rkey, va, len, Access.REMOTE_READ); // looked up again (rxe-facts §5.5)
            if (mr == null) {
                nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
        }
        startReply(e, mr, va, len, p, sendNow);
    }

    /**
     * A duplicate TID READ_REQ ({@code tid_rdma_rcv_error}, §5.6): accepted only for the original
     * segment's first PSN and length; the TID list and flow are read again and the whole segment is
     * sent again (the data destination drops what it already placed).
     */
    private void duplicateTidRead(PacketView pkt, int p) {
        ResponderResources.Entry e = resources.find(ResponderResources.Type.TID_READ, p);
        if (e == null || e.firstPsn != p || TidHeader.dmaLength(pkt.buf(), pkt.index(Header.KDETH)) != e.length) {
            counters.drop(DropReason.OTHER);
            return;
        }
        long len = e.length;
        if (parseTidRead(pkt, e) != len) {
            counters.drop(DropReason.OTHER);
            return;
        }
        RxeMr mr = remoteMr(e.rkey, e.va, len, Access.REMOTE_READ); // looked up again
        if (mr == null) {
            nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        startReply(e, mr, e.va, len, p, true);
    }

    /**
     * While a reply is under way: a duplicate READ of the very resource being answered moves the
     * cursor to the PSN it asks for (the requester has everything before it), instead of queueing
     * a second full replay behind the first.
     *
     * @return whether {@code pkt} was handled
     */
    private boolean retargetReply(PacketView pkt) {
        if (pkt.opcode() != Opcode.RC_RDMA_READ_REQUEST) {
            return false;
        }
        int p = pkt.psn();
        if (Psn.diff(p, ePsn) >= 0 || resources.find(ResponderResources.Type.READ, p) != reply) {
            return false;
        }
        counters.inc(Counter.DUPLICATE_REQUEST);
        replayRead(pkt, reply, p, false); // no extra output now: the cursor moves, the next turn sends
        return true;
    }

    /**
     * CHK_RKEY: the MR named by {@code rkey}, if it is valid, of this QP's PD, holds
     * {@code [va, va+len)} and grants {@code access}; else null (NAK 0x62).
     */
    private RxeMr remoteMr(int rkey, long va, long len, int access) {
        RxeMr mr = qp.device.mrs().lookup(rkey);
        return mr != null && mr.pd() == qp.pd && mr.allows(va, len, access) ? mr : null;
    }

    // ------------------------------------------------------------------ errors

    private void rnrNak(int p) {
        counters.inc(Counter.SEND_RNR_ERR);
        sendAck(Aeth.TYPE_RNR_NAK | (qp.minRnrTimer & 0x1F), p);
    }

    /** Class C error: NAK with the packet PSN, complete a receive WQE in use, QP → ERR. */
    private void nakError(int syndrome, int p) {
        String reason = "responder sent NAK 0x" + Integer.toHexString(syndrome) + " for PSN 0x"
                + Integer.toHexString(p) + " (in message: " + inMessage + ")";
        qp.noteErrorReason(reason);
        sendAck(syndrome, p);
        RecvWqe r = recv;
        if (r != null) {
            WcStatus st = switch (syndrome) {
                case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                case Aeth.NAK_REMOTE_OP_ERROR -> WcStatus.LOC_QP_OP_ERR;
                default -> WcStatus.REM_INV_REQ_ERR;
            };
            recv = null;
            long wrId = r.wrId;
            qp.consumeRecv();
            qp.completeRecv(wrId, st, WcOpcode.RECV, (int) recvOffset, 0, 0);
        }
        qp.moveToError(reason);
    }

    // ------------------------------------------------------------------ packets out

    private boolean scatterToRecv(RecvWqe r, long msgOffset, ByteBuf b, int index, int len) {
        return SgeCopy.copy(qp.device.mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge, msgOffset, b, index,
                len, false, Access.LOCAL_WRITE);
    }

    public void sendAck(int syndrome, int psn) {
        qp.lane.transmit(qp, headerOnlyResponse(Opcode.RC_ACKNOWLEDGE, psn, syndrome));
    }

    private void sendAtomicAck(int psn, long original) {
        Opcode op = Opcode.RC_ATOMIC_ACKNOWLEDGE;
        ByteBuf b = headerOnlyResponse(op, psn, Aeth.ACK_UNLIMITED);
        AtomicAckEth.write(b, op.offset(Header.ATOMIC_ACK_ETH), original);
        qp.lane.transmit(qp, b);
    }

    /** Answers ATOMIC WRITE and FLUSH: one zero-length READ RESPONSE ONLY with PSN {@code psn}. */
    private void sendEmptyReadResponse(int psn) {
        qp.lane.transmit(qp, headerOnlyResponse(Opcode.RC_RDMA_READ_RESPONSE_ONLY, psn, Aeth.ACK_UNLIMITED));
    }

    /**
     * @return a response packet with no payload: BTH (to the requester's QP, PSN {@code psn}) and
     *     AETH ({@code syndrome}, this QP's MSN), its other headers left for the caller, writer index
     *     at its end (ICRC included)
     */
    private ByteBuf headerOnlyResponse(Opcode op, int psn, int syndrome) {
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.lane.allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn, false, psn);
        Aeth.write(b, op.offset(Header.AETH), syndrome, msn);
        b.writerIndex(total);
        return b;
    }

    /**
     * A request arrived marked CE: sends a CNP to the requester (opcode 0x81, BECN set, DestQP = the
     * requester's QP, 16 reserved bytes), at most one per {@link #CNP_INTERVAL_NANOS}.
     */
    public void onCongestionExperienced() {
        long now = qp.scheduler.nanoTime();
        if (lastCnpAt != Long.MIN_VALUE && now - lastCnpAt < CNP_INTERVAL_NANOS) {
            return;
        }
        lastCnpAt = now;
        Opcode op = Opcode.CNP;
        int reserved = 16;
        int total = op.headerLength() + reserved + Icrc.LENGTH;
        ByteBuf b = qp.lane.allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn, false, 0);
        b.setInt(Bth.DEST_QP_WORD_OFFSET, b.getInt(Bth.DEST_QP_WORD_OFFSET) | Bth.BECN_BIT);
        b.setZero(op.headerLength(), reserved);
        b.writerIndex(total);
        counters.inc(Counter.CNP_SENT);
        qp.lane.transmit(qp, b);
    }

    /**
     * Starts (or restarts) the READ reply of {@code e} for {@code [va, va+len)} as a new response
     * stream (FIRST … LAST, or ONLY) from PSN {@code psn}.
     *
     * @param sendNow whether to send the first batch at once (else at the QP's next turn)
     */
    private void startReply(ResponderResources.Entry e, RxeMr mr, long va, long len, int psn,
            boolean sendNow) {
        e.mr = mr;
        e.curVa = va;
        e.resid = len;
        e.curPsn = psn;
        e.requestPsn = psn;
        e.streamStart = true;
        if (e.tid != null) {
            e.tid.seek(0, qp.pmtu());
        }
        reply = e;
        if (sendNow) {
            sendReplyBatch();
        }
        if (busy()) {
            qp.lane.requestService(qp);
        }
    }

    /** Sends up to {@link #REPLY_BATCH} packets of the reply under way, while the transport is writable. */
    private void sendReplyBatch() {
        for (int i = 0; i < REPLY_BATCH && reply != null; i++) {
            if (!qp.lane.transportWritable()) {
                qp.lane.awaitWritable(qp);
                return;
            }
            if (reply.type == ResponderResources.Type.TID_READ) {
                sendTidReadResponse(reply);
            } else {
                sendReadResponse(reply);
            }
        }
    }

    /**
     * Sends the next TID READ_RESP of segment {@code e} ({@code make_rc_ack}, TID_OP(READ_RESP);
     * §5.3): payload min(path MTU, what is left of the current TID entry) read from the MR; BTH to the
     * requester's tid_flow_qp with the flow PSN; KDETH with the entry, OFFSET in 64-byte units, SH on
     * every packet but the segment's last, the peer's J_KEY; AETH; verbs_psn and verbs_qp.
     */
    private void sendTidReadResponse(ResponderResources.Entry e) {
        TidSegment seg = e.tid;
        int entry = seg.tidList[seg.tidIdx];
        int n = seg.packetBytes(qp.pmtu());
        boolean last = e.resid <= n;
        RxeMr mr = e.mr;
        if (mr == null || !mr.isValid()) {
            readFault(e);
            return;
        }
        Opcode op = Opcode.TID_RDMA_READ_RESP;
        ByteBuf b = qp.lane.allocPacket(op.headerLength() + n + (-n & 3) + Icrc.LENGTH);
        io.rxe4j.verbs.TidRdmaParams remote = qp.opfn.remote();
        Bth.write(b, 0, op.code(), false, -n & 3, Bth.DEFAULT_PKEY, seg.tidQpn, false,
                FlowPsn.of(seg.generation, seg.spsn + seg.pkt));
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeKdeth0(b, at, seg.tidOffset >>> Kdeth.OM_LARGE_SHIFT, true, TidEntry.idx(entry),
                TidEntry.ctrl(entry), !last && remote != null && remote.urg(), !last);
        Kdeth.writeKdeth1(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.writeAeth(b, at, Aeth.ACK_UNLIMITED, msn);
        TidHeader.setVerbsPsn(b, at, Psn.add(e.firstPsn, seg.pkt));
        TidHeader.setVerbsQp(b, at, qp.destQpn);
        if (!transmitPayload(e, b, op.headerLength(), n)) {
            return;
        }
        e.curVa += n;
        e.resid -= n;
        seg.advance(n);
        if (last) {
            endReply();
        }
    }

    /** Sends the next READ response packet of {@code e}; ends the reply after its last packet or on a memory fault. */
    private void sendReadResponse(ResponderResources.Entry e) {
        int pmtu = qp.pmtu();
        int n = (int) Math.min(e.resid, pmtu);
        boolean last = e.resid <= pmtu;
        Opcode op = e.streamStart
                ? (last ? Opcode.RC_RDMA_READ_RESPONSE_ONLY : Opcode.RC_RDMA_READ_RESPONSE_FIRST)
                : (last ? Opcode.RC_RDMA_READ_RESPONSE_LAST : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE);
        RxeMr mr = e.mr;
        if (n > 0 && (mr == null || !mr.isValid())) {
            readFault(e);
            return;
        }
        ByteBuf b = qp.lane.allocPacket(op.headerLength() + n + (-n & 3) + Icrc.LENGTH);
        Bth.write(b, 0, op.code(), false, -n & 3, Bth.DEFAULT_PKEY, qp.destQpn, false, e.curPsn);
        if (op.has(Header.AETH)) {
            Aeth.write(b, op.offset(Header.AETH), Aeth.ACK_UNLIMITED, msn);
        }
        if (!transmitPayload(e, b, op.headerLength(), n)) {
            return;
        }
        e.curVa += n;
        e.resid -= n;
        e.curPsn = Psn.next(e.curPsn);
        e.streamStart = false;
        if (last) {
            endReply();
        }
    }

    /**
     * Completes response packet {@code b} of READ reply {@code e} (headers written): copies {@code n}
     * bytes from the MR at {@code e.curVa} after the {@code hdr}-byte headers, zeroes the pad, leaves
     * room for the ICRC and transmits it.
     *
     * @return false if the MR was released under the copy ({@link #readFault} has run, {@code b} is freed)
     */
    private boolean transmitPayload(ResponderResources.Entry e, ByteBuf b, int hdr, int n) {
        if (n > 0) {
            RxeMr mr = e.mr;
            try {
                MemoryCopy.toBuf(mr.segment(), mr.offset(e.curVa), b, hdr, n);
            } catch (IllegalStateException released) {
                b.release();
                readFault(e);
                return false;
            }
        }
        int pad = -n & 3;
        for (int i = 0; i < pad; i++) {
            b.setByte(hdr + n + i, 0);
        }
        b.writerIndex(hdr + n + pad + Icrc.LENGTH);
        qp.lane.transmit(qp, b);
        return true;
    }

    /** The memory under a READ reply became unreadable: no more payload, NAK 0x62 with the request's PSN (extensions §6). */
    private void readFault(ResponderResources.Entry e) {
        int p = e.requestPsn;
        endReply();
        nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
    }
}
