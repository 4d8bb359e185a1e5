package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.tid.TidPool;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.TidHeader;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.TidRdmaParams;
import java.net.InetSocketAddress;
import java.util.function.BooleanSupplier;

/**
 * The receive checks of one lane ({@code rxe_recv.c}: {@code rxe_rcv}, {@code hdr_check}, {@code
 * check_keys}, {@code check_addr}; {@code rxe-facts.md} §4.1), each once, in this order, then the
 * dispatch on the opcode table's {@link Opcode.Handler handler column} ({@code rxe_rcv_pkt}):
 *
 * <ol>
 *   <li>structure: {@link PacketView#parse} (length, opcode, headers, payload rule, pad);
 *   <li>ICRC ({@link DeviceConfig#checkIcrc()}); P_Key (the default partition, 0x7FFF);
 *   <li>transport: TID RDMA only when this lane has a {@link TidPool};
 *   <li>QP: {@link #verbsQpn} in the {@link QpTable}, not destroyed, owned by this lane;
 *   <li>transport of the opcode: RC, TID or CNP for an RC QP, UD for a UD QP (UC is not served);
 *       TID: the J_KEY; a UD datagram then goes to its QP in RTR or later, from any sender;
 *   <li>peer: the packet's IP source is the QP's peer ({@link #fromPeer});
 *   <li>state: requests need RTR or later, responses RTS, SQD or SQE.
 * </ol>
 *
 * <p>A failing check drops the packet and counts its {@link DropReason} in the lane's counters; no
 * check throws. Loop only; no allocation per packet.
 */
final class ReceiveChecks {
    private final RxeLane lane;
    private final QpTable qps;
    private final BooleanSupplier closed;
    private final DeviceConfig config;
    private final TidPool tidPool;
    private final Counters counters;
    private final Icrc icrc;
    private final PacketView view = new PacketView();

    ReceiveChecks(RxeLane lane, QpTable qps, BooleanSupplier closed, DeviceConfig config, TidPool tidPool,
            Counters counters) {
        this.lane = lane;
        this.qps = qps;
        this.closed = closed;
        this.config = config;
        this.tidPool = tidPool;
        this.counters = counters;
        this.icrc = new Icrc().rxeFlushCompat(config.rxeFlushCompat());
    }

    /** @return the ICRC codec of this lane (the output path writes with the same settings) */
    Icrc icrc() {
        return icrc;
    }

    /**
     * The verbs QPN a packet is for: the BTH DestQP, except for TID RDMA, whose BTH DestQP is a KDETH
     * QPN: there it is the KDETH block's verbs_qp ({@code tid-opfn-facts.md} §3.2, §9.1).
     *
     * @param op the packet's opcode, or null when unknown (then the BTH DestQP)
     * @param parsed for a TID opcode, a view that holds this packet parsed without error
     */
    static int verbsQpn(ByteBuf packet, int at, Opcode op, PacketView parsed) {
        return op != null && op.transport() == Opcode.Transport.TID
                ? TidHeader.verbsQp(packet, parsed.index(Header.KDETH)) : Bth.destQp(packet, at);
    }

    /**
     * {@code rxe-facts.md} §4.1: the packet's IP source must be the QP's peer; the UDP source port is
     * not checked (a kernel rdma_rxe peer sends from a hashed port to 4791).
     */
    static boolean fromPeer(RxeQp qp, InetSocketAddress sender) {
        InetSocketAddress av = qp.av();
        return av != null && sender.getAddress().equals(av.getAddress());
    }

    /**
     * Checks a packet whose QP (if any) belongs to this lane and hands it to its QP; drops and counts
     * it otherwise. The caller flushes.
     *
     * @param ceMarked the network marked the packet CE (Congestion Experienced)
     */
    void receive(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        counters.inc(Counter.RCVD_PKTS);
        if (PacketTrace.LOG.isTraceEnabled()) {
            PacketTrace.trace("rx", packet, packet.readerIndex(), packet.readableBytes(), sender, recipient);
        }
        if (closed.getAsBoolean()) {
            return;
        }
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        DropReason reason = view.parse(packet, at, len);
        if (reason != null) {
            counters.drop(reason);
            return;
        }
        if (config.checkIcrc() && !icrc.check(packet, at, len, sender, recipient)) {
            counters.drop(DropReason.BAD_ICRC);
            return;
        }
        if ((view.pkey() & 0x7FFF) != 0x7FFF) {
            counters.drop(DropReason.BAD_PKEY);
            return;
        }
        Opcode op = view.opcode();
        boolean tid = op.transport() == Opcode.Transport.TID;
        if (tid && tidPool == null) {
            counters.drop(DropReason.WRONG_TRANSPORT); // TID RDMA is off on this device
            return;
        }
        RxeQp qp = qps.get(verbsQpn(packet, at, op, view));
        if (qp == null || qp.isDestroyed() || qp.host() != lane) {
            counters.drop(DropReason.NO_QP);
            return;
        }
        Opcode.Handler handler = op.handler();
        boolean ud = op.transport() == Opcode.Transport.UD;
        boolean uc = op.transport() == Opcode.Transport.UC;
        QpType type = qp.type();
        if (ud != (type == QpType.UD) || uc != (type == QpType.UC)
                || (type == QpType.RC && op.transport() != Opcode.Transport.RC && !tid && handler != Opcode.Handler.CNP)) {
            counters.drop(DropReason.WRONG_TRANSPORT); // the opcode's transport is not the QP's
            return;
        }
        if (ud) {
            receiveDatagram(qp, sender, recipient);
            return;
        }
        if (tid && (Kdeth.jkey(packet, view.index(Header.KDETH)) & Kdeth.JKEY_DRIVER_MASK)
                != TidRdmaParams.DEFAULT_JKEY) {
            counters.drop(DropReason.BAD_JKEY); // the receive context's J_KEY (tid-opfn-facts §9.7)
            return;
        }
        if (!fromPeer(qp, sender)) {
            counters.drop(DropReason.WRONG_PEER);
            return;
        }
        if (handler == Opcode.Handler.REPAIR
                && (qp.peerExtensions() & io.rxe4j.verbs.provider.QpOps.EXT_SELECTIVE_NAK) == 0) {
            counters.drop(DropReason.WRONG_TRANSPORT); // rxe4j's selective NAK from a peer that did not agree on it
            return;
        }
        qp.counters().inc(Counter.RCVD_PKTS);
        if (handler == Opcode.Handler.CNP) {
            onCnp(qp);
            return;
        }
        QpState s = qp.state();
        boolean sending = s == QpState.RTS || s == QpState.SQD || s == QpState.SQE;
        if (!(sending || (op.isRequest() && s == QpState.RTR))) {
            counters.drop(DropReason.QP_STATE); // requests need RTR or later, responses RTS or later
            return;
        }
        if (config.opfn() && op.transport() == Opcode.Transport.RC && Bth.extended(packet, at)) {
            qp.onExtendedBit(); // before the packet is handled, requests and responses alike (hfi1_rc_rcv)
        }
        if (ceMarked && config.ecn() && op.isRequest()) {
            qp.onCongestionExperienced();
        }
        try {
            switch (handler) {
                case RESPONDER -> qp.onRequest(view);
                case COMPLETER -> qp.onResponse(view);
                case TID_DATA -> qp.onTidWriteData(view); // the flow table's path, not the ordered request queue
                case TID_READ_RESPONSE -> qp.onTidReadResponse(view);
                case TID_RESPONSE -> qp.onTidWriteResponse(view); // WRITE_RESP, TID ACK
                case REPAIR -> qp.onSelectiveNak(view);
                case CNP -> throw new AssertionError("handled above");
            }
        } catch (RuntimeException e) {
            lane.internalError(qp, op + " PSN 0x" + Integer.toHexString(view.psn()), e);
        }
    }

    /**
     * A UD datagram for UD QP {@code qp} ({@code verbs-surface-facts.md} §2.8): any sender (no peer
     * check), the QP in RTR or later; the Q_Key and the rest are the engine's.
     */
    private void receiveDatagram(RxeQp qp, InetSocketAddress sender, InetSocketAddress recipient) {
        QpState s = qp.state();
        if (s != QpState.RTR && s != QpState.RTS && s != QpState.SQD && s != QpState.SQE) {
            counters.drop(DropReason.QP_STATE);
            return;
        }
        qp.counters().inc(Counter.RCVD_PKTS);
        try {
            qp.onDatagram(view, sender, recipient);
        } catch (RuntimeException e) {
            lane.internalError(qp, view.opcode() + " from " + sender, e);
        }
    }

    /** A CNP for {@code qp}'s requester (RoCEv2 ECN), from its peer: acted on only with ECN on. */
    private void onCnp(RxeQp qp) {
        qp.counters().inc(Counter.CNP_RCVD);
        if (config.ecn()) {
            try {
                qp.onCnp();
            } catch (RuntimeException e) {
                lane.internalError(qp, "CNP", e);
            }
        }
    }
}
