package io.rxe4j.core.tid;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.TidSegment;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.ResponderOps;
import io.rxe4j.core.rc.ResponderResources;
import io.rxe4j.core.stats.Counters;
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
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.TidRdmaParams;

/**
 * The data-source half of TID RDMA READ at the responder ({@code tid_rdma_rcv_read_request},
 * {@code tid_rdma_rcv_error}; {@code tid-opfn-facts.md} §5.3, §5.6): a READ_REQ asks for one
 * segment, which takes a responder resource ({@link ResponderResources.Type#TID_READ}) and is sent
 * as TID READ_RESP packets by TID entry and offset, in the responder's bounded reply batches.
 * Reached through {@link TidResponderHook}; uses the responder only through {@link ResponderOps}.
 * Loop only.
 */
public final class TidReadResponder {
    private final RxeQp qp;
    private final Counters counters;

    private final RcEngines rc;

    /** The TID READ responder of {@code qp}; {@code tid}: its fellow halves and the RC engines. */
    public TidReadResponder(RxeQp qp, TidEngines tid) {
        this.qp = qp;
        this.rc = tid.rc;
        this.counters = qp.counters;
    }

    /**
     * TID RDMA READ_REQ, one segment ({@code tid_rdma_rcv_read_request}; {@code tid-opfn-facts.md}
     * §5.3): length non-zero, a multiple of 4 KiB and at most this side's max_len, a TID list of
     * non-zero entries covering it (else NAK 0x61); R_Key (else NAK 0x62). The segment takes a
     * responder resource of its own, PSN and MSN advance by its packets and by one, and its data
     * goes out as READ_RESP packets by TID entry and offset ({@link #sendResponse}).
     */
    void execute(PacketView pkt, int p) {
        ResponderOps resp = rc.responder;
        int pmtu = qp.pmtu();
        ResponderResources resources = resp.resources();
        ResponderResources.Entry e = resources.allocate(ResponderResources.Type.TID_READ);
        long len = parse(pkt, e);
        if (len < 0) {
            e.type = ResponderResources.Type.NONE;
            resp.nakError(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        RxeMr mr = resp.remoteMr(e.rkey, e.va, len, Access.REMOTE_READ);
        if (mr == null) {
            e.type = ResponderResources.Type.NONE;
            resp.nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        int npkts = (int) ((len + pmtu - 1) / pmtu);
        e.firstPsn = p;
        e.lastPsn = Psn.add(p, npkts - 1);
        e.length = len;
        resp.accept(p, npkts);
        resp.startReply(e, mr, e.va, len, p, true);
    }

    /**
     * Reads a TID READ_REQ's RETH, flow and TID list into {@code e} (the TID list and flow are read
     * again for a duplicate: the requester may have re-programmed them).
     *
     * @return the segment length in bytes, or -1 if the request breaks a §5.3 rule
     */
    private long parse(PacketView pkt, ResponderResources.Entry e) {
        ByteBuf b = pkt.buf();
        int at = pkt.index(Header.KDETH);
        TidRdmaParams local = qp.opfn.local();
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

    /**
     * A duplicate TID READ_REQ ({@code tid_rdma_rcv_error}, §5.6): accepted only for the original
     * segment's first PSN and length; the TID list and flow are read again and the whole segment is
     * sent again (the data destination drops what it already placed).
     */
    void duplicate(PacketView pkt, int p) {
        ResponderOps resp = rc.responder;
        ResponderResources.Entry e = resp.resources().find(ResponderResources.Type.TID_READ, p);
        if (e == null || e.firstPsn != p || TidHeader.dmaLength(pkt.buf(), pkt.index(Header.KDETH)) != e.length) {
            counters.drop(DropReason.OTHER);
            return;
        }
        long len = e.length;
        if (parse(pkt, e) != len) {
            counters.drop(DropReason.OTHER);
            return;
        }
        RxeMr mr = resp.remoteMr(e.rkey, e.va, len, Access.REMOTE_READ); // looked up again
        if (mr == null) {
            resp.nakError(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        resp.startReply(e, mr, e.va, len, p, true);
    }

    /**
     * Sends the next TID READ_RESP of segment {@code e} ({@code make_rc_ack}, TID_OP(READ_RESP);
     * §5.3): payload min(path MTU, what is left of the current TID entry) read from the MR; BTH to the
     * requester's tid_flow_qp with the flow PSN; KDETH with the entry, OFFSET in 64-byte units, SH on
     * every packet but the segment's last, the peer's J_KEY; AETH; verbs_psn and verbs_qp.
     */
    void sendResponse(ResponderResources.Entry e) {
        ResponderOps resp = rc.responder;
        TidSegment seg = e.tid;
        int entry = seg.tidList[seg.tidIdx];
        int n = seg.packetBytes(qp.pmtu());
        boolean last = e.resid <= n;
        RxeMr mr = e.mr;
        if (mr == null || !mr.isValid()) {
            resp.readFault(e);
            return;
        }
        Opcode op = Opcode.TID_RDMA_READ_RESP;
        ByteBuf b = qp.host().allocPacket(op.headerLength() + n + (-n & 3) + Icrc.LENGTH);
        TidRdmaParams remote = qp.opfn.remote();
        Bth.write(b, 0, op.code(), false, -n & 3, Bth.DEFAULT_PKEY, seg.tidQpn, false,
                FlowPsn.of(seg.generation, seg.spsn + seg.pkt));
        int at = op.offset(Header.KDETH);
        TidHeader.clear(b, at);
        Kdeth.writeKdeth0(b, at, seg.tidOffset >>> Kdeth.OM_LARGE_SHIFT, true, TidEntry.idx(entry),
                TidEntry.ctrl(entry), !last && remote != null && remote.urg(), !last);
        Kdeth.writeKdeth1(b, at, remote != null ? remote.jkey() : 0);
        TidHeader.writeAeth(b, at, Aeth.ACK_UNLIMITED, resp.msn());
        TidHeader.setVerbsPsn(b, at, Psn.add(e.firstPsn, seg.pkt));
        TidHeader.setVerbsQp(b, at, qp.destQpn());
        if (!resp.transmitPayload(e, b, op.headerLength(), n)) {
            return;
        }
        e.curVa += n;
        e.resid -= n;
        seg.advance(n);
        if (last) {
            resp.endReply();
        }
    }
}
