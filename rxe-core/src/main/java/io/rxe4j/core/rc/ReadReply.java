package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;

/**
 * The READ reply under way at the responder (rdma_rxe's {@code qp->resp.res} and {@code
 * read_reply}; {@code rxe-facts.md} §5.5, {@code extensions.md} §6): a cursor in its responder
 * resource, sent at most {@link Responder#REPLY_BATCH} packets per turn while the transport is
 * writable; a duplicate READ replays from memory as a new stream (or, while that very reply is
 * under way, moves its cursor); memory that becomes unreadable ends the reply with NAK 0x62 and
 * the request's PSN. A reply of an extension's resource is sent by its {@link ResponderHook}.
 * Loop only.
 */
final class ReadReply {
    private final Responder resp;
    private final RxeQp qp;
    private final Counters counters;
    /** The reply being sent, or null. */
    private ResponderResources.Entry entry;
    /** Adaptive recovery: re-requests of the reply under way are merged into it (parts already sent). */
    private final boolean adaptive;
    /** Most parts of the reply under way waiting to be sent again. */
    static final int MAX_REPAIRS = 32;
    private final int[] repairPsn = new int[MAX_REPAIRS];
    private final long[] repairVa = new long[MAX_REPAIRS];
    private final int[] repairPkts = new int[MAX_REPAIRS];
    /** Per queued part: the end of its READ (VA + length), its READ's first PSN, and the MR. */
    private final long[] repairEnd = new long[MAX_REPAIRS];
    private final int[] repairFirst = new int[MAX_REPAIRS];
    private final RxeMr[] repairMr = new RxeMr[MAX_REPAIRS];
    private int repairs;

    ReadReply(Responder resp, RxeQp qp) {
        this.resp = resp;
        this.qp = qp;
        this.counters = qp.counters;
        this.adaptive = qp.host().config().adaptiveRecovery();
    }

    /**
     * A duplicate READ for resource {@code e}: it must ask for the original or a subset of it (same
     * rkey, VA range inside); the MR is looked up again and the data sent again from memory as a
     * new response stream starting at the duplicate's PSN ({@code extensions.md} §6). If the MR is
     * gone or no longer covers the range: NAK 0x62 with the duplicate's PSN.
     */
    void replay(PacketView pkt, ResponderResources.Entry e, int p, boolean sendNow) {
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
            mr = resp.remoteMr(rkey, va, len, Access.REMOTE_READ); // looked up again (rxe-facts §5.5)
            if (mr == null) {
                resp.nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
        }
        resp.startReply(e, mr, va, len, p, sendNow);
    }

    /**
     * While a reply is under way: a duplicate READ of the very resource being answered moves the
     * cursor to the PSN it asks for (the requester has everything before it), instead of queueing
     * a second full replay behind the first.
     *
     * @return whether {@code pkt} was handled
     */
    boolean retarget(PacketView pkt, int ePsn) {
        if (pkt.opcode() != Opcode.RC_RDMA_READ_REQUEST) {
            return false;
        }
        int p = pkt.psn();
        if (Psn.diff(p, ePsn) >= 0 || resp.resources().find(ResponderResources.Type.READ, p) != entry) {
            return false;
        }
        counters.inc(Counter.DUPLICATE_REQUEST);
        if (adaptive && entry.tid == null) {
            merge(pkt, p);
            return true;
        }
        replay(pkt, entry, p, false); // no extra output now: the cursor moves, the next turn sends
        return true;
    }

    /**
     * Adaptive recovery: a re-request of the reply under way never starts a second stream and never
     * drops the rest of this one ({@code docs/reliability.md}: at most one stream per READ). The part
     * it asks for at or after the cursor is merged (the stream sends it anyway); the part before the
     * cursor, already sent once, is queued to go again before the stream goes on, unless a queued
     * part covers it. So a READ costs its bytes plus what was asked for again, never a replay per
     * duplicate.
     */
    private void merge(PacketView pkt, int p) {
        ResponderResources.Entry e = entry;
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        int rkey = Reth.rkey(pkt.buf(), reth);
        long len = Reth.dmaLength(pkt.buf(), reth);
        long off = va - e.va;
        if (rkey != e.rkey || Long.compareUnsigned(va, e.va) < 0 || Long.compareUnsigned(off, e.length) > 0
                || len > e.length - off || Psn.diff(p, e.firstPsn) < 0) {
            counters.drop(DropReason.OTHER);
            return;
        }
        int behind = Psn.diff(e.curPsn, p);
        if (behind <= 0) {
            return; // at or after the cursor: the stream still sends it
        }
        int pmtu = qp.pmtu();
        int pkts = (int) Math.min(behind, Math.max(1, (len + pmtu - 1) / pmtu));
        queueRepair(e, e.mr, p, va, pkts);
    }

    private void queueRepair(ResponderResources.Entry e, RxeMr mr, int p, long va, int pkts) {
        for (int i = 0; i < repairs; i++) {
            int d = Psn.diff(p, repairPsn[i]);
            if (d >= 0 && d + pkts <= repairPkts[i]) {
                return; // already queued
            }
        }
        if (repairs == MAX_REPAIRS) {
            counters.drop(DropReason.RESPONDER_BUSY); // asked again later
            return;
        }
        repairPsn[repairs] = p;
        repairVa[repairs] = va;
        repairPkts[repairs] = pkts;
        repairEnd[repairs] = e.va + e.length;
        repairFirst[repairs] = e.firstPsn;
        repairMr[repairs] = mr;
        repairs++;
    }

    /**
     * Adaptive recovery: while the reply of another READ is under way, a duplicate READ for a
     * strict part of READ {@code e} that ends before {@code e}'s end (as only a requester that places
     * responses by offset asks: a go-back-N requester asks for the whole tail), or, once this
     * requester was seen to ask for such parts, for any part after {@code e}'s first PSN, is queued
     * as a part of the reply under way, so the missing part goes now instead of after every READ
     * queued behind.
     *
     * @return whether it was queued (else the caller queues the request as any other)
     */
    /** This QP's requester asked for a strict part of a READ once: it places responses by offset. */
    private boolean requesterPlaces;

    boolean repairOther(PacketView pkt, ResponderResources.Entry e) {
        if (!adaptive || entry == null || entry.tid != null || e.tid != null || e == entry) {
            return false;
        }
        int reth = pkt.index(Header.RETH);
        long va = Reth.va(pkt.buf(), reth);
        int rkey = Reth.rkey(pkt.buf(), reth);
        long len = Reth.dmaLength(pkt.buf(), reth);
        long off = va - e.va;
        int p = pkt.psn();
        if (rkey != e.rkey || Long.compareUnsigned(va, e.va) < 0 || off < 0 || len <= 0 || off + len > e.length
                || Psn.diff(p, e.firstPsn) <= 0) {
            return false;
        }
        if (off + len == e.length && !requesterPlaces) {
            return false; // a tail, as a go-back-N requester asks: answered in order
        }
        if (off + len < e.length) {
            requesterPlaces = true; // only a requester that places by offset asks for a strict part
        }
        RxeMr mr = resp.remoteMr(rkey, va, len, Access.REMOTE_READ);
        if (mr == null) {
            return false; // the normal duplicate path NAKs it
        }
        int pmtu = qp.pmtu();
        counters.inc(Counter.DUPLICATE_REQUEST);
        queueRepair(e, mr, p, va, (int) ((len + pmtu - 1) / pmtu));
        return true;
    }


    /** @return the reply under way, or null */
    ResponderResources.Entry entry() {
        return entry;
    }

    /**
     * Starts (or restarts) the reply of {@code e} for {@code [va, va+len)} as a new response stream
     * (FIRST … LAST, or ONLY) from PSN {@code psn}; its packets go out in {@link #sendBatch}.
     */
    void start(ResponderResources.Entry e, RxeMr mr, long va, long len, int psn) {
        e.mr = mr;
        e.window = qp.host().mrs().windows().lookup(e.rkey);
        e.curVa = va;
        e.resid = len;
        e.curPsn = psn;
        e.requestPsn = psn;
        e.streamStart = true;
        mainDone = false;
        repairs = 0;
        repairStarted = false;
        if (e.tid != null) {
            e.tid.seek(0, qp.pmtu());
        }
        entry = e;
    }

    /** The reply is complete (or abandoned). */
    void end() {
        java.util.Arrays.fill(repairMr, null);
        repairs = 0;
        repairStarted = false;
        mainDone = false;
        if (entry != null) {
            entry.mr = null;
            entry = null;
        }
    }

    /** Sends up to {@link Responder#REPLY_BATCH} packets of the reply under way, while the transport is writable. */
    void sendBatch() {
        for (int i = 0; i < Responder.REPLY_BATCH && entry != null; i++) {
            if (!qp.host().transportWritable()) {
                qp.host().awaitWritable(qp);
                return;
            }
            if (entry.type == ResponderResources.Type.TID_READ) {
                resp.hook().sendReply(entry); // a TID READ_RESP of the extension's segment
            } else if (repairs > 0) {
                sendRepair(entry);
            } else {
                sendReadResponse(entry);
            }
        }
    }

    /** Sends the next packet of the oldest queued part that goes again (of {@code e} or another READ). */
    private void sendRepair(ResponderResources.Entry e) {
        int pmtu = qp.pmtu();
        int psn = repairPsn[0];
        long va = repairVa[0];
        long toEnd = repairEnd[0] - va;
        int n = (int) Math.max(0, Math.min(toEnd, pmtu));
        // as rdma_rxe's replay: FIRST/ONLY only at the READ's own first PSN, else MIDDLE/LAST
        boolean firstOfPart = !repairStarted && psn == repairFirst[0];
        boolean last = toEnd <= pmtu;
        Opcode op = firstOfPart ? (last ? Opcode.RC_RDMA_READ_RESPONSE_ONLY : Opcode.RC_RDMA_READ_RESPONSE_FIRST)
                : (last ? Opcode.RC_RDMA_READ_RESPONSE_LAST : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE);
        RxeMr mr = repairMr[0];
        boolean ok = n == 0 || (mr != null && mr.isValid());
        ByteBuf b = null;
        if (ok) {
            b = qp.host().allocPacket(qp, op.headerLength() + n + (-n & 3) + Icrc.LENGTH);
            Bth.write(b, 0, op.code(), false, -n & 3, Bth.DEFAULT_PKEY, qp.destQpn(), false, psn);
            if (op.has(Header.AETH)) {
                Aeth.write(b, op.offset(Header.AETH), Aeth.ACK_UNLIMITED, resp.msn());
            }
            int hdr = op.headerLength();
            try {
                if (n > 0) {
                    MemoryCopy.toBuf(mr.segment(), mr.offset(va), b, hdr, n);
                }
            } catch (IllegalStateException released) {
                b.release();
                ok = false;
            }
            if (ok) {
                for (int i = 0; i < (-n & 3); i++) {
                    b.setByte(hdr + n + i, 0);
                }
                b.writerIndex(hdr + n + (-n & 3) + Icrc.LENGTH);
                qp.host().transmit(qp, b);
            }
        }
        if (!ok) {
            counters.drop(DropReason.OTHER); // the memory went away: this part is not sent again
            repairPkts[0] = 1;
            last = true;
        }
        repairStarted = true;
        if (--repairPkts[0] == 0 || last) {
            repairStarted = false;
            repairs--;
            System.arraycopy(repairPsn, 1, repairPsn, 0, repairs);
            System.arraycopy(repairVa, 1, repairVa, 0, repairs);
            System.arraycopy(repairPkts, 1, repairPkts, 0, repairs);
            System.arraycopy(repairEnd, 1, repairEnd, 0, repairs);
            System.arraycopy(repairFirst, 1, repairFirst, 0, repairs);
            System.arraycopy(repairMr, 1, repairMr, 0, repairs);
            repairMr[repairs] = null;
            if (repairs == 0 && mainDone) {
                end();
            }
        } else {
            repairPsn[0] = Psn.next(psn);
            repairVa[0] = va + n;
        }
    }

    /** The queued part being sent has sent its first packet. */
    private boolean repairStarted;
    /** The stream itself is sent; only queued parts are left. */
    private boolean mainDone;

    /** Sends the next READ response packet of {@code e}; ends the reply after its last packet or on a memory fault. */
    private void sendReadResponse(ResponderResources.Entry e) {
        int pmtu = qp.pmtu();
        int n = (int) Math.min(e.resid, pmtu);
        boolean last = e.resid <= pmtu;
        Opcode op = e.streamStart
                ? (last ? Opcode.RC_RDMA_READ_RESPONSE_ONLY : Opcode.RC_RDMA_READ_RESPONSE_FIRST)
                : (last ? Opcode.RC_RDMA_READ_RESPONSE_LAST : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE);
        RxeMr mr = e.mr;
        if (n > 0 && (mr == null || !mr.isValid() || (e.window != null && !e.window.stillGrants(e.rkey)))) {
            readFault(e); // a window revoked under a multi-packet READ (rxe_recheck_mr)
            return;
        }
        ByteBuf b = qp.host().allocPacket(qp, op.headerLength() + n + (-n & 3) + Icrc.LENGTH);
        Bth.write(b, 0, op.code(), false, -n & 3, Bth.DEFAULT_PKEY, qp.destQpn(), false, e.curPsn);
        if (op.has(Header.AETH)) {
            Aeth.write(b, op.offset(Header.AETH), Aeth.ACK_UNLIMITED, resp.msn());
        }
        if (!transmitPayload(e, b, op.headerLength(), n)) {
            return;
        }
        e.curVa += n;
        e.resid -= n;
        e.curPsn = Psn.next(e.curPsn);
        e.streamStart = false;
        if (last && repairs == 0) {
            end();
        } else if (last) {
            mainDone = true; // the stream is sent; queued parts still go
        }
    }

    /**
     * Completes response packet {@code b} of READ reply {@code e} (headers written): copies {@code n}
     * bytes from the MR at {@code e.curVa} after the {@code hdr}-byte headers, zeroes the pad, leaves
     * room for the ICRC and transmits it.
     *
     * @return false if the MR was released under the copy ({@link #readFault} has run, {@code b} is freed)
     */
    boolean transmitPayload(ResponderResources.Entry e, ByteBuf b, int hdr, int n) {
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
        qp.host().transmit(qp, b);
        return true;
    }

    /** The memory under a READ reply became unreadable: no more payload, NAK 0x62 with the request's PSN (extensions §6). */
    void readFault(ResponderResources.Entry e) {
        int p = e.requestPsn;
        end();
        resp.nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
    }
}
