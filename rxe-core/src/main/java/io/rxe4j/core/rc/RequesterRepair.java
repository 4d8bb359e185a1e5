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
 *   <li>a PSN-sequence NAK towards a peer known to hold out-of-order packets: only the NAKed packet
 *       is sent again, at most once per smoothed RTT. Whether the peer holds is learnt, never
 *       assumed: a NAK first gets a go-back-N (as {@code rdma_rxe}), and when a cumulative ACK
 *       during that go-back-N names PSNs beyond what was resent (a fast-forward), the peer must have
 *       kept them. Kernel {@code rdma_rxe} discards every packet after a gap, so it can never give
 *       that proof and is always answered with go-back-N.
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

    /** The peer holds out-of-order requests (learnt, see the class comment). */
    boolean peerHolds;
    /** A go-back-N after a sequence NAK is under way (-1: none); a fast-forward during it proves the peer holds. */
    int nakRewindPsn = -1;
    private int lastRepairPsn = -1;
    private long lastRepairAt;

    RequesterRepair(Requester r, RxeQp qp, RcEngines rc) {
        this.r = r;
        this.qp = qp;
        this.rc = rc;
        this.counters = qp.counters;
    }

    /** comp.psn moved to {@code compPsn}. */
    void onProgress(int compPsn) {
        if (nakRewindPsn != -1 && Psn.diff(compPsn, r.sendHighWater()) >= 0) {
            nakRewindPsn = -1; // the go-back-N is over: everything sent before it is acknowledged
        }
    }

    /** A fast-forward happened (a cumulative ACK beyond the resend position). */
    void onFastForward() {
        if (r.adaptive && nakRewindPsn != -1 && !peerHolds) {
            peerHolds = true;
            LOG.debug("{}: the peer holds out-of-order requests (fast-forward after the NAK for PSN 0x{}):"
                    + " sequence NAKs are repaired selectively from now on", qp, Integer.toHexString(nakRewindPsn));
        }
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
        if (!r.adaptive || !peerHolds) {
            return false;
        }
        long now = qp.scheduler.nanoTime();
        RttEstimator rtt = r.pathRtt();
        long guard = rtt != null && rtt.hasSample() ? rtt.srttNanos() : 0;
        if (nakPsn == lastRepairPsn && now - lastRepairAt < guard) {
            return true; // that packet was sent again less than a round trip ago
        }
        if (!resend(nakPsn)) {
            return false;
        }
        counters.inc(Counter.SELECTIVE_REPAIRS);
        lastRepairPsn = nakPsn;
        lastRepairAt = now;
        if (r.budget != null && r.budget.onLoss()) {
            counters.inc(Counter.CC_WINDOW_REDUCTIONS);
        }
        return true;
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
        if (r.budget != null && r.budget.onLoss()) {
            counters.inc(Counter.CC_WINDOW_REDUCTIONS);
        }
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
                    return rc.completer.reRequest(w, p);
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
