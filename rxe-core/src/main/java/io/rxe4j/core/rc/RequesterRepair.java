package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.policy.RttEstimator;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.WrOpcodeInfo;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.QpState;

/**
 * The requester's repairs under adaptive recovery ({@code docs/reliability.md}, "Recovery on real
 * networks"): single packets sent again with the PSN they had, which RC allows at any time (the
 * responder treats a copy it has as a duplicate and answers it again):
 *
 * <ul>
 *   <li>the tail-loss probe ({@link io.rxe4j.core.policy.LossProbe}): the newest unacknowledged
 *       packet with AckReq, so a lost tail or a lost ACK is answered within a round trip instead of
 *       the IB local ACK timeout;
 *   <li>the RTT-derived timeout: a go-back-N from comp.psn that does not charge retry_cnt;
 *   <li>a PSN-sequence NAK towards a peer that holds out-of-order packets: only the NAKed packet
 *       is sent again, at most once per smoothed RTT. Whether the peer holds is learnt, never
 *       assumed ({@link PeerKind}): the first NAK is answered by sending only the NAKed packet, and
 *       if a response then covers a request sent after it but before the repair, the peer kept
 *       that request: {@link PeerKind#HOLDS}. Kernel {@code rdma_rxe} discards every packet after a
 *       gap, so it can never give that proof: after one retransmit timeout without it the peer is
 *       {@link PeerKind#DROPS} and every NAK gets a go-back-N, as between two {@code rdma_rxe}s. A
 *       fast-forward during a NAK's go-back-N (a response beyond the NAKed PSN for a request not
 *       resent yet) proves holding too.
 * </ul>
 *
 * <p>A repaired packet is not recorded again as unacknowledged (the original covers its PSN) and
 * takes no budget bytes; the packet it repairs gives no RTT sample (Karn's rule). Loop only.
 */
final class RequesterRepair {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RequesterRepair.class);
    private final Requester r;
    private final RxeQp qp;
    private final RcEngines rc;
    private final Counters counters;

    /** What the peer's responder does with requests after a gap (learnt, see the class comment). */
    enum PeerKind {
        /** Not known yet: the next NAK is answered by a repair that tells. */
        UNKNOWN,
        /** It holds them (rxe4j with adaptive recovery): NAKs are repaired selectively. */
        HOLDS,
        /** It discards them (rdma_rxe, RoCE NICs): NAKs get a go-back-N. */
        DROPS
    }

    /** What was learnt; {@link #kind()} is what counts. */
    PeerKind peer = PeerKind.UNKNOWN;

    /**
     * @return {@link PeerKind#HOLDS} when the connection manager agreed {@code
     *     EXT_HOLDS_OUT_OF_ORDER} with the peer (an rxe4j peer says so, nothing to learn), else what
     *     was learnt
     */
    PeerKind kind() {
        return (qp.peerExtensions() & io.rxe4j.verbs.provider.QpOps.EXT_HOLDS_OUT_OF_ORDER) != 0 ? PeerKind.HOLDS
                : peer;
    }
    /** While a repair tells what the peer is: the end of the repaired request and req.psn when it went (-1: none). */
    private int learnEnd = -1;
    private int learnHigh;
    private final io.rxe4j.core.policy.GapTimer learnTimer;
    /** A go-back-N after a sequence NAK is under way (-1: none); a fast-forward during it proves the peer holds. */
    int nakRewindPsn = -1;
    private int lastRepairPsn = -1;
    private long lastRepairAt;
    /** When each PSN was last sent again by a NAK or a selective NAK. */
    private final io.rxe4j.core.policy.RepairLog repaired = new io.rxe4j.core.policy.RepairLog();

    RequesterRepair(Requester r, RxeQp qp, RcEngines rc) {
        this.r = r;
        this.qp = qp;
        this.rc = rc;
        this.counters = qp.counters;
        this.learnTimer = new io.rxe4j.core.policy.GapTimer(qp.scheduler, qp.guard("repair verdict", this::onLearnTimeout));
    }

    /** A response covers PSN {@code psn} (comp.psn moved past it, or a READ response was placed there). */
    void onResponseAt(int psn) {
        if (learnEnd != -1 && Psn.diff(psn, learnEnd) > 0 && Psn.diff(psn, learnHigh) < 0) {
            learned(PeerKind.HOLDS, psn);
        }
    }

    private void learned(PeerKind k, int psn) {
        learnEnd = -1;
        learnTimer.close();
        if (peer != k) {
            peer = k;
            r.onPeerKind();
            LOG.debug("{}: the peer {} out-of-order requests (PSN 0x{}): sequence NAKs get {} from now on", qp,
                    k == PeerKind.HOLDS ? "holds" : "discards", Integer.toHexString(psn),
                    k == PeerKind.HOLDS ? "selective repairs" : "a go-back-N");
        }
    }

    /** No proof of holding within a retransmit timeout of the telling repair: the peer discards. */
    private void onLearnTimeout() {
        if (learnEnd == -1 || kind() != PeerKind.UNKNOWN) {
            return;
        }
        learned(PeerKind.DROPS, learnEnd);
        QpState s = qp.state();
        if ((s == QpState.RTS || s == QpState.SQD) && r.outstanding()) {
            r.retry(Requester.RetryCause.SEQUENCE_NAK); // the go-back-N the discarded requests need
            qp.host().flushTransport();
        }
    }

    /** comp.psn moved to {@code compPsn}. */
    void onProgress(int compPsn) {
        if (nakRewindPsn != -1 && Psn.diff(compPsn, r.sendHighWater()) >= 0) {
            nakRewindPsn = -1; // the go-back-N is over: everything sent before it is acknowledged
        }
    }

    /**
     * A fast-forward to {@code upTo} happened (a response beyond the resend position). When it
     * reaches the PSN of the NAK that started the go-back-N, the peer processed requests at or after
     * the gap that were sent before the rewind: it held them.
     */
    void onFastForward(int upTo) {
        if (r.adaptive && nakRewindPsn != -1 && kind() != PeerKind.HOLDS && Psn.diff(upTo, nakRewindPsn) >= 0) {
            learned(PeerKind.HOLDS, upTo);
        }
        onResponseAt(upTo);
    }

    /** The PSN of a sequence NAK beyond a pending READ/atomic whose go-back-N is about to start, or -1. */
    private int nakBeyond = -1;

    /** A sequence NAK for {@code psn} lies beyond a pending READ/atomic: the go-back-N that follows is a NAK's. */
    void nakBeyond(int psn) {
        nakBeyond = psn;
    }

    /** @return the PSN noted by {@link #nakBeyond} (cleared), or -1 */
    int takeNakBeyond() {
        int p = nakBeyond;
        nakBeyond = -1;
        return p;
    }

    /** A rewind: what the responder answers from now on tells nothing about a telling repair. */
    void cancelLearning() {
        learnEnd = -1;
        learnTimer.close();
    }

    /** A go-back-N other than for a sequence NAK started: what follows proves nothing about the peer. */
    void onOtherRewind() {
        nakRewindPsn = -1;
    }

    /** A go-back-N for a sequence NAK at {@code psn} started. */
    void onNakRewind(int psn) {
        nakRewindPsn = psn;
    }

    /**
     * A PSN-sequence NAK for {@code nakPsn} (comp.psn, already advanced to it).
     *
     * @return true when it was answered by a repair (or is the echo of one sent within the last
     *     smoothed RTT), false when the caller goes back N as {@code rdma_rxe}
     */
    boolean onSequenceNak(int nakPsn) {
        PeerKind kind = kind();
        if (!r.adaptive || kind == PeerKind.DROPS) {
            return false;
        }
        long now = qp.scheduler.nanoTime();
        RttEstimator rtt = r.pathRtt();
        if (kind == PeerKind.UNKNOWN) {
            if (learnEnd != -1) {
                return true; // a telling repair is out: its verdict decides
            }
            int end = requestEnd(nakPsn);
            if (rtt == null || !rtt.hasSample() || end == -1 || Psn.diff(r.psn, Psn.next(end)) <= 0
                    || !resend(nakPsn)) {
                return false; // nothing after it to tell by (or no timer to wait with): go back N
            }
            counters.inc(Counter.SELECTIVE_REPAIRS);
            learnEnd = end;
            learnHigh = r.psn;
            lastRepairPsn = nakPsn;
            lastRepairAt = now;
            learnTimer.open(now, rtt.retransmitTimeoutNanos());
            r.onLossSignal();
            return true;
        }
        long guard = rtt != null && rtt.hasSample() ? rtt.srttNanos() : 0;
        if ((nakPsn == lastRepairPsn && now - lastRepairAt < guard) || repaired.recentlyRepaired(nakPsn, now, guard)) {
            return true; // that packet was sent again less than a round trip ago (by a NAK or a selective NAK)
        }
        if (lastRepairPsn != -1 && nakPsn == Psn.next(lastRepairPsn)) {
            if (++successiveGaps >= MAX_SUCCESSIVE_SINGLE_REPAIRS) {
                successiveGaps = 0;
                lastRepairPsn = -1;
                return false; // the responder holds nothing after its gaps: go back N from here
            }
        } else {
            successiveGaps = 0;
        }
        if (!resend(nakPsn)) {
            return false;
        }
        counters.inc(Counter.SELECTIVE_REPAIRS);
        lastRepairPsn = nakPsn;
        lastRepairAt = now;
        repaired.onRepair(nakPsn, now);
        r.onLossSignal();
        return true;
    }

    /**
     * Sequence NAKs in a row, each for the PSN right after the one the previous NAK repaired, after
     * which the requester goes back N instead of repairing again: 3. A responder that holds what
     * follows a gap moves past it when the repair arrives; one that moves exactly one PSN each time
     * holds nothing there (it dropped it: beyond its span, after its time bound, or a burst was lost
     * whole), and one repair per NAK would then recover one packet per probe timeout (netlab, 1 Gbit/s
     * bottleneck: 58 PSNs in 30 s). Three adjacent losses each repaired alone are rare enough (10^-6
     * at 1 % loss) that a needless go-back-N there costs little.
     */
    static final int MAX_SUCCESSIVE_SINGLE_REPAIRS = 3;
    private int successiveGaps;

    /** Most packets one selective NAK may make the requester send again: 256 (bounded output per packet received). */
    static final int MAX_REPAIRS_PER_SELECTIVE_NAK = 256;

    /**
     * An rxe4j selective NAK ({@code docs/wire.md} "Selective NAK"; only from a peer that agreed
     * {@code EXT_SELECTIVE_NAK}): every PSN in its ranges that was sent, is not acknowledged yet and
     * was not repaired within the last smoothed RTT is sent again, at most {@link
     * #MAX_REPAIRS_PER_SELECTIVE_NAK} of them. The PSN-sequence NAK before it did the rest (comp.psn,
     * the congestion window). A payload that is not a whole number of ranges is dropped and counted.
     */
    void onSelectiveNak(io.rxe4j.core.wire.PacketView pkt) {
        int len = pkt.payloadLength();
        if (len == 0 || (len & 3) != 0) {
            counters.drop(io.rxe4j.core.wire.DropReason.OTHER);
            return;
        }
        if (!r.adaptive || !sending()) {
            return;
        }
        RttEstimator rtt = r.pathRtt();
        long guard = rtt != null && rtt.hasSample() ? rtt.srttNanos() : 0;
        long now = qp.scheduler.nanoTime();
        int comp = rc.completer.compPsn();
        ByteBuf b = pkt.buf();
        int at = pkt.payloadIndex();
        int budget = MAX_REPAIRS_PER_SELECTIVE_NAK;
        for (int k = 0; k < len && budget > 0; k += 4) {
            int word = b.getInt(at + k);
            int first = word & Psn.MASK;
            int n = (word >>> 24) + 1;
            for (int j = 0; j < n && budget > 0; j++) {
                int p = Psn.add(first, j);
                if (Psn.diff(p, comp) < 0 || Psn.diff(p, r.psn) >= 0 || repaired.recentlyRepaired(p, now, guard)
                        || ofRead(p)) {
                    continue; // acknowledged, never sent, sent again less than a round trip ago, or a READ's
                }
                if (resend(p)) {
                    counters.inc(Counter.SELECTIVE_REPAIRS);
                    repaired.onRepair(p, now);
                    budget--;
                }
            }
        }
        qp.host().flushTransport();
    }

    /**
     * @return whether {@code p} is a PSN of a sent READ. A selective NAK does not re-request READs:
     *     the PSNs after a READ's first carry no request packet of ours (the READ request stands for
     *     all of them), and a READ request sent again on a reordering that was no loss costs a whole
     *     READ reply; a lost READ request is repaired by the sequence NAK's single repair and the
     *     completer's own READ rules instead
     */
    private boolean ofRead(int p) {
        long prod = qp.sqProducer();
        for (long i = qp.sqCompleted(); i != prod; i++) {
            SendWqe w = qp.sqAt(i);
            if (w.state == SendWqe.State.POSTED || Psn.diff(p, w.firstPsn) < 0) {
                return false;
            }
            if (w.state != SendWqe.State.DONE && Psn.diff(p, w.lastPsn) <= 0) {
                return WrOpcodeInfo.of(w.opcode).family() == WrOpcodeInfo.Family.READ;
            }
        }
        return false;
    }

    /** @return the last PSN of the sent request that starts at {@code p} (a READ's last response PSN), or -1 */
    private int requestEnd(int p) {
        long prod = qp.sqProducer();
        for (long i = qp.sqCompleted(); i != prod; i++) {
            SendWqe w = qp.sqAt(i);
            if (w.state == SendWqe.State.POSTED) {
                return -1;
            }
            if (w.state != SendWqe.State.DONE && Psn.diff(p, w.firstPsn) >= 0 && Psn.diff(p, w.lastPsn) <= 0) {
                return WrOpcodeInfo.of(w.opcode).family() == WrOpcodeInfo.Family.READ ? w.lastPsn : p;
            }
        }
        return -1;
    }

    /** The tail-loss probe timeout passed: resend the newest unacknowledged packet with AckReq. */
    void onProbe() {
        if (!sending() || r.unacked.isEmpty()) {
            return;
        }
        counters.inc(Counter.TAIL_LOSS_PROBES);
        resend(r.unacked.newestFirstPsn());
        qp.host().flushTransport();
    }

    /** The RTT-derived retransmit timeout passed after a probe: go back N without charging retry_cnt. */
    void onEarlyTimeout() {
        if (!sending() || !r.outstanding()) {
            return;
        }
        counters.inc(Counter.RTT_TIMEOUTS);
        RttEstimator rtt = r.pathRtt();
        // the RTO passed without progress of this QP: a collapse if the whole path was silent as long
        r.onTimeoutSignal(qp.scheduler.nanoTime(), rtt != null && rtt.hasSample()
                ? rtt.retransmitTimeoutNanos() : r.retransmitPeriodNanos());
        onOtherRewind();
        r.rewind();
        r.run();
        qp.host().flushTransport();
    }

    private boolean sending() {
        QpState s = qp.state();
        return (s == QpState.RTS || s == QpState.SQD) && !r.rnrWaiting();
    }

    /**
     * Sends the request packet that carries PSN {@code p} again, as it was (AckReq set): a SEND/WRITE
     * packet from its offset, a READ request for what of the READ has not arrived from {@code p} on,
     * an atomic, ATOMIC WRITE or FLUSH whole. TID RDMA WQEs keep their own recovery.
     *
     * @return false when no sent WQE carries {@code p}, it is a TID WQE, or its memory is unreadable
     *     now (the normal send path then reports the error)
     */
    boolean resend(int p) {
        int pmtu = qp.pmtu();
        long prod = qp.sqProducer();
        for (long i = qp.sqCompleted(); i != prod; i++) {
            SendWqe w = qp.sqAt(i);
            if (w.state == SendWqe.State.DONE) {
                continue; // a TID WRITE's neighbour completed out of order
            }
            if (w.state == SendWqe.State.POSTED) {
                return false;
            }
            if (Psn.diff(p, w.firstPsn) < 0) {
                return false;
            }
            if (Psn.diff(p, w.lastPsn) > 0) {
                continue;
            }
            if (w.tid || w.isTidWrite()) {
                return false;
            }
            ByteBuf b;
            switch (WrOpcodeInfo.of(w.opcode).family()) {
                case SEND, WRITE -> {
                    long offset = (long) Psn.diff(p, w.firstPsn) * pmtu;
                    if (w.state == SendWqe.State.PROCESSING && offset >= w.sentBytes) {
                        return false; // not sent yet
                    }
                    b = r.packets.sendOrWrite(w, p, offset, pmtu, true);
                }
                case READ -> {
                    return rc.completer.reRequest(w, p) != -1;
                }
                case ATOMIC, ATOMIC_WRITE, FLUSH -> b = r.packets.single(w, w.firstPsn);
                default -> {
                    return false;
                }
            }
            if (b == null) {
                return false;
            }
            transmitRepair(b, p);
            return true;
        }
        return false;
    }

    /** Sends a repair packet for PSN {@code p}: counted as resent, its original gives no RTT sample. */
    void transmitRepair(ByteBuf b, int p) {
        counters.inc(Counter.RESENT_PKTS);
        qp.host().transmit(qp, b);
        r.unacked.markRetransmitted(p);
        r.probe.onSend();
    }
}
