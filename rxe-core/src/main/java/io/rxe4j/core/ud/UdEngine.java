package io.rxe4j.core.ud;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.qp.QpAttributes;
import io.rxe4j.core.qp.RecvWqe;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Deth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Grh;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The engine of a UD QP ({@code verbs-surface-facts.md} §2; {@code rxe_req.c}, {@code
 * rxe_resp.c} and {@code rxe_comp.c} for {@code IB_QPT_UD}).
 *
 * <p>Sender: each send WQE becomes one UD SEND ONLY (0x64) or SEND ONLY WITH IMMEDIATE (0x65)
 * packet: BTH with P_Key 0xFFFF, DestQP the WR's remote QPN, AckReq 0, SE from the WR, the QP's
 * running PSN (+1 per message); DETH with the WR's Q_Key (bit 31 set: the QP's own, IBTA's rule that
 * RNICs implement; {@code rdma_rxe} copies the WR's value) and this QP's number; to the WR's address
 * handle. The WQE completes (IBV_WC_SEND) as soon as the packet is handed to the transport: nothing
 * acknowledges a datagram and nothing resends it (§2.9). A WQE whose memory cannot be read
 * completes with LOC_PROT_ERR and the QP enters ERR.
 *
 * <p>Receiver, in {@code rxe_recv.c} / {@code rxe_resp.c}'s order (§2.8): the Q_Key must be the
 * QP's (else {@code drop_bad_qkey}); a receive WQE must be posted (else {@code drop_no_recv_wqe}:
 * class D, no completion); the 40-byte GRH ({@link Grh}) and the payload must fit it (else {@code
 * drop_recv_length}, the WQE stays posted); then the GRH and the payload are scattered through its
 * SGEs (a fault: LOC_QP_OP_ERR, the QP enters ERR) and it completes: IBV_WC_RECV, byte_len 40 +
 * payload, {@link WorkCompletion#WC_GRH} (and WITH_IMM), {@code src_qp} from the DETH (§2.7). No
 * PSN check, no ACK, no NAK. Loop only; nothing allocated per packet.
 */
public final class UdEngine extends io.rxe4j.core.qp.UnreliableEngine {
    /** The Q_Key of the GSI QP (QP1), on every packet it sends and receives: 0x80010000. */
    public static final int GSI_QKEY = 0x8001_0000;

    /** The PSN of the next datagram (modify_qp sq_psn; +1 per message). */
    private int psn;
    /** The GRH, built here and scattered into the receive WQE (40 bytes, heap). */
    private final ByteBuf grh = Unpooled.buffer(Grh.LENGTH, Grh.LENGTH);
    /** The last (sender, recipient) and their GRH bytes, the recipient's in the sender's family (one lookup per new pair). */
    private InetAddress lastSrc;
    private byte[] lastSrcBytes;
    private InetAddress lastDst;
    private byte[] lastDstBytes;

    /** The engine of {@code qp} (a UD QP), built with it. */
    public UdEngine(RxeQp qp) {
        super(qp);
    }

    /** @return the Q_Key datagrams to this QP must carry: the QP's, 0x80010000 for QP1 */
    private int expectedQkey() {
        return qp.qpn() == 1 ? GSI_QKEY : qp.attr.qkey();
    }

    @Override
    public void applyAttributes(QpAttributes attr, int mask) {
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            psn = attr.sqPsn();
        }
    }

    @Override
    public void reset() {
        psn = 0;
    }

    @Override
    public void stop() {
        // nothing in flight: a datagram is done once sent
    }

    @Override
    public void run() {
        QpState s = qp.state();
        if (s != QpState.RTS) {
            return; // SQD: WQEs not started wait for RTS (a UD WQE is never half sent)
        }
        long prod = qp.sqProducer();
        while (qp.sqReq() != prod) {
            if (!qp.host().transportWritable()) {
                qp.host().awaitWritable(qp);
                return;
            }
            long idx = qp.sqReq();
            SendWqe w = qp.sqAt(idx);
            ByteBuf b = datagram(w);
            if (b == null) {
                failSend(w, idx, WcStatus.LOC_PROT_ERR, "UD send WQE " + w.wrId + ": its local memory cannot be read");
                return;
            }
            qp.host().transmitTo(qp, b, w.udPeer);
            if (qp.qpn() == 1) {
                counters.inc(io.rxe4j.verbs.Counter.GSI_SENT_MADS);
            }
            psn = Psn.next(psn);
            if (!finishSend(w, idx, WcStatus.SUCCESS)) {
                return;
            }
        }
    }

    /** @return the one packet of {@code w}, or null when its SGEs cannot be read */
    private ByteBuf datagram(SendWqe w) {
        boolean imm = w.opcode == WrOpcode.SEND_WITH_IMM;
        Opcode op = imm ? Opcode.UD_SEND_ONLY_WITH_IMMEDIATE : Opcode.UD_SEND_ONLY;
        int payload = (int) w.length;
        int pad = -payload & 3;
        int hdr = op.headerLength();
        int total = hdr + payload + pad + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        try {
            boolean se = (w.sendFlags & SendFlags.SOLICITED) != 0;
            Bth.write(b, 0, op.code(), se, pad, Bth.DEFAULT_PKEY, w.remoteQpn, false, psn);
            int qkey = qp.qpn() == 1 ? GSI_QKEY : w.remoteQkey < 0 ? qp.attr.qkey() : w.remoteQkey;
            Deth.write(b, op.offset(Header.DETH), qkey, qp.qpn());
            if (imm) {
                ImmDt.write(b, op.offset(Header.IMM_DT), w.immData);
            }
            if (!SgeCopy.payload(qp, w, 0, b, hdr, payload, pad)) {
                b.release();
                return null;
            }
        } catch (RuntimeException e) {
            b.release();
            throw e;
        }
        b.writerIndex(total);
        return b;
    }

    @Override
    public void onRequest(PacketView pkt) {
        counters.drop(DropReason.WRONG_TRANSPORT); // the receive checks hand UD QPs datagrams only
    }

    @Override
    public void onDatagram(PacketView pkt, InetSocketAddress sender, InetSocketAddress recipient) {
        ByteBuf buf = pkt.buf();
        int deth = pkt.index(Header.DETH);
        if (Deth.qkey(buf, deth) != expectedQkey()) {
            counters.drop(DropReason.BAD_QKEY);
            return;
        }
        RecvWqe r = qp.peekRecv();
        if (r == null) {
            counters.drop(DropReason.NO_RECV_WQE);
            return;
        }
        int n = pkt.payloadLength();
        if (Grh.LENGTH + (long) n > r.length) {
            counters.drop(DropReason.RECV_LENGTH);
            completeTakenWqe(WcStatus.REM_INV_REQ_ERR); // with an SRQ the WQE was taken: class E (§2.6 rule 2)
            return;
        }
        writeGrh(sender, recipient, pkt.length());
        boolean ok = SgeCopy.copy(qp.host().mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge, 0, grh, 0,
                Grh.LENGTH, false, Access.LOCAL_WRITE)
                && (n == 0 || SgeCopy.copy(qp.host().mrs(), qp.pd, r.sgeAddr, r.sgeLength, r.sgeLkey, r.numSge,
                        Grh.LENGTH, buf, pkt.payloadIndex(), n, false, Access.LOCAL_WRITE));
        long wrId = r.wrId;
        qp.consumeRecv();
        if (!ok) {
            String why = "UD receive WQE " + wrId + ": its memory cannot be written (lkey, bounds or LOCAL_WRITE)";
            qp.noteErrorReason(why);
            if (qp.completeRecv(wrId, WcStatus.LOC_QP_OP_ERR, io.rxe4j.verbs.WcOpcode.RECV, 0, 0, 0)) {
                qp.moveToError(why);
            } else {
                qp.moveToError("receive CQ overflow");
            }
            return;
        }
        boolean imm = pkt.opcode().has(Header.IMM_DT);
        int flags = WorkCompletion.WC_GRH | (imm ? WorkCompletion.WC_WITH_IMM : 0);
        if (!qp.completeDatagram(wrId, Grh.LENGTH + n, flags, imm ? ImmDt.imm(buf, pkt.index(Header.IMM_DT)) : 0,
                pkt.solicited(), Deth.srcQp(buf, deth))) {
            qp.moveToError("receive CQ overflow");
            return;
        }
        RxeQp.DatagramListener l = qp.datagramListener();
        if (l != null) {
            l.received(sender); // the GSI QP's owner takes the MAD out of its CQ now
        }
    }

    /** Builds the GRH of a packet of {@code length} bytes (BTH to ICRC) from {@code sender} to {@code recipient}. */
    private void writeGrh(InetSocketAddress sender, InetSocketAddress recipient, int length) {
        InetAddress src = sender.getAddress();
        InetAddress dst = recipient.getAddress();
        if (src != lastSrc || dst != lastDst) { // once per new peer, never per packet
            lastSrc = src;
            lastDst = dst;
            lastSrcBytes = Grh.addressBytes(src);
            byte[] d = Grh.addressBytes(dst);
            if (d.length != lastSrcBytes.length) { // a dual-stack socket: the sender's family is the packet's
                d = lastSrcBytes.length == 4 ? new byte[4] : mapped(d);
            }
            lastDstBytes = d;
        }
        Grh.write(grh, 0, lastSrcBytes, lastDstBytes, length);
        grh.writerIndex(Grh.LENGTH);
    }

    private static byte[] mapped(byte[] v4) {
        return new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xFF, (byte) 0xFF, v4[0], v4[1], v4[2], v4[3]};
    }

    @Override
    public void appendSenderState(StringBuilder sb) {
        sb.append(" ud{sq.psn=0x").append(Integer.toHexString(psn)).append('}');
    }

    @Override
    public void appendReceiverState(StringBuilder sb) {
        sb.append("ud{qkey=0x").append(Integer.toHexString(expectedQkey())).append('}');
    }
}
