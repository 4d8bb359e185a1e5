package io.rxe4j.core.rc;

import io.rxe4j.core.qp.WrOpcodeInfo;

import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.SgeCopy;
import io.rxe4j.core.policy.UnackedPackets;

import io.rxe4j.verbs.Counter;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.policy.PeerBudget;
import io.rxe4j.core.policy.RetransmitTimer;
import io.rxe4j.core.policy.RnrBackoff;
import io.rxe4j.core.policy.UnackedPackets;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;

/**
 * The requester ({@code rxe_req.c}; {@code rxe-facts.md} §4.2, §5.2–§5.4, §9.1): turns send WQEs
 * into packets (segmentation by path MTU, PSN assignment, AckReq, padding), honours the 128-PSN
 * window, the 64-packet output bound ({@link UnackedPackets}, resume below 16), max_rd_atomic
 * credits, IB_SEND_FENCE, the device's per-peer byte budget and congestion window ({@link
 * PeerBudget}: turns while other QPs wait, loss signals halve the window) and
 * the transport's writability, owns the retransmit ({@link RetransmitTimer}) and RNR timers, and
 * rewinds on a retry. Size (about 740 lines): the send gate ({@link Stall}), the packet builders
 * of each WR family and the output accounting share the requester's PSN and window state; retries
 * and rewinds are in {@link RequesterRetry}, TID in the {@link RequesterHook}.
 * Loop only.
 */
public final class Requester {
    /** {@code RXE_MAX_UNACKED_PSNS}. */
    static final int MAX_UNACKED_PSNS = 128;
    /**
     * AckReq at least on every 8th packet of a long message (rxe: every 65th), so that ACKs keep
     * coming back while at most {@link UnackedPackets#CAPACITY} packets may be unacknowledged.
     */
    static final int ACK_REQ_INTERVAL = 8;
    /** After the output bound was reached, sending resumes once fewer than 16 packets are unacknowledged. */
    static final int RESUME_BELOW = 16;
    /**
     * The PSN window under adaptive recovery: 4095 PSNs unacknowledged (4 MiB at path MTU 1024), the
     * span an rxe4j responder holds ahead of a gap ({@link io.rxe4j.core.policy.ReorderBuffer#MAX_PACKETS}
     * − 1): a request beyond it would be dropped after any loss before it (a READ request too, whose
     * PSNs count for its whole response), so a wider window only turns one loss into many.
     */
    static final int ADAPTIVE_PSN_WINDOW = io.rxe4j.core.policy.ReorderBuffer.MAX_PACKETS - 1;

    private final RxeQp qp;
    /** The QP's RC engines (its completer). */
    private final RcEngines rc;
    private final Scheduler scheduler;
    private final Counters counters;

    /** Next PSN to send (req.psn). */
    int psn;
    int credits;
    int noAckPkts;
    /** The first PSN never sent yet: a packet below it is a retransmission ({@code resent_pkts}). */
    int sendHighWater;
    /** The output bound was reached; wait until fewer than {@link #RESUME_BELOW} packets are unacknowledged. */
    boolean outputStalled;
    final UnackedPackets unacked = new UnackedPackets();
    private final RetransmitTimer retransmitTimer;
    /** The device's budget of bytes in flight to this QP's peer, with the path's congestion window; set with the AV. */
    io.rxe4j.core.policy.PeerBudget budget;
    /** Budget bytes sent in the current turn (for the fair quantum while other QPs wait). */
    private long turnBytes;
    int retryLeft;
    /** The RNR wait and rnr_retry count ({@code rxe-facts.md} §5.3). */
    private final RnrBackoff rnr;
    /** A retry sequence is running; NAKs and lost-response signals start no other until progress or a timeout. */
    boolean retryStarted;

    /** Retries: what starts one, retry_cnt, the rewind to comp.psn and the fast-forward. */
    private final RequesterRetry retries;
    /** Builds request packets (also again, for repairs and probes). */
    final RequestPackets packets;
    /** Adaptive recovery ({@code DeviceConfig.adaptiveRecovery}): RTT timers, repairs, the path-sized window. */
    final boolean adaptive;
    /** The tail-loss probe and RTT-derived retransmit timeout (adaptive recovery only). */
    final io.rxe4j.core.policy.LossProbe probe;
    /** Repairs of single packets: NAKed PSNs, tail-loss probes, READ parts. */
    final RequesterRepair repair;


    /** The requester of {@code qp}; {@code rc} holds its completer (built right after it). */
    public Requester(RxeQp qp, RcEngines rc) {
        this.qp = qp;
        this.rc = rc;
        this.scheduler = qp.scheduler;
        this.counters = qp.counters;
        this.retries = new RequesterRetry(this, qp, rc);
        this.packets = new RequestPackets(qp);
        this.adaptive = qp.host().config().adaptiveRecovery();
        this.retransmitTimer = new RetransmitTimer(scheduler, unacked,
                qp.guard("retransmit timer", retries::onRetransmitTimeout));
        this.repair = new RequesterRepair(this, qp, rc);
        this.probe = new io.rxe4j.core.policy.LossProbe(scheduler, unacked, new io.rxe4j.core.policy.LossProbe.Listener() {
            private final Runnable onProbe = qp.guard("loss probe", repair::onProbe);
            private final Runnable onTimeout = qp.guard("RTT retransmit timer", repair::onEarlyTimeout);

            @Override
            public void onProbe() {
                onProbe.run();
            }

            @Override
            public void onTimeout() {
                onTimeout.run();
            }
        });
        this.rnr = new RnrBackoff(scheduler, qp.guard("RNR timer", this::onRnrTimer));
        // a deadline passing while received datagrams wait to be read waits for them (a loaded host)
        java.util.function.BooleanSupplier backlogged = qp.host()::receiveBacklogged;
        Runnable deferred = () -> counters.inc(Counter.TIMER_DEFERRALS);
        retransmitTimer.deferWhile(backlogged, deferred);
        probe.deferWhile(backlogged, deferred);
    }

    /** Sets the next PSN to send (modify_qp sq_psn, 24 bits), and the completer's expected PSN with it. */
    public void setPsn(int p) {
        psn = p;
        sendHighWater = p;
        rc.completer.setPsn(p);
    }

    /** Sets the local ACK timeout attribute (0..31, 0 = infinite). */
    public void setTimeout(int timeout) {
        retransmitTimer.timeout(timeout);
        probe.ceiling(adaptive ? retransmitTimer.periodNanos() : 0);
    }

    /** Sets the max_rd_atomic credits for READs and atomics ({@code rxe-facts.md} §5.7). */
    public void resetCredits(int n) {
        credits = n;
    }

    /** A valid response arrived ({@code rxe-facts.md} §5.3): retry counts start over, a new retry may start. */
    public void resetRetryCounters() {
        retryLeft = qp.attr.retryCnt();
        rnr.resetCount(qp.attr.rnrRetry());
        retryStarted = false;
        qp.clearSendFailure();
    }

    /** @return the next PSN the requester sends (loop only) */
    public int psn() {
        return psn;
    }

    /** @return the retries retry_cnt still allows (loop only) */
    public int retryLeft() {
        return retryLeft;
    }

    /** Uses one retry of retry_cnt (an extension's retry, e.g. a TID RESYNC; loop only). */
    public void chargeRetry() {
        retryLeft--;
    }

    /** Back to the state of a new QP (RESET): timers stopped, budget returned, counts cleared. */
    public void reset() {
        stop();
        noAckPkts = 0;
        outputStalled = false;
        timeoutCap = Integer.MAX_VALUE;
        credits = qp.attr.maxRdAtomic();
    }

    /** Stops the timers and gives back every budget byte (QP to ERR, RESET or destroyed). */
    public void stop() {
        retransmitTimer.stop();
        probe.stop();
        rnr.stop();
        releaseBudget(unacked.clear(), false);
        qp.releaseTid();
    }

    /** @return the peer budget's state, for diagnostics */
    public String budgetState() {
        io.rxe4j.core.policy.PeerBudget b = budget;
        return (b == null ? "budget{-}" : b.toString() + " " + b.rtt()) + " rt{" + retransmitTimer.debugState(scheduler.nanoTime())
                + (adaptive ? " probe=" + probe.phase() + "/" + probe.backoff() + " win=" + unacked.limit() : "")
                + (rnr.waiting() ? " rnrWaiting" : "") + (retryStarted ? " retryStarted" : "") + " retryLeft=" + retryLeft
                + (outputStalled ? " stalled" : "") + (timeoutCap != Integer.MAX_VALUE ? " timeoutCap=" + timeoutCap : "") + '}';
    }

    /** The peer is {@code peer} (modify_qp AV): its budget is the one this QP's packets count against. */
    public void setPeer(java.net.InetSocketAddress peer) {
        releaseBudget(unacked.clear(), false);
        budget = qp.host().peerBudget(peer);
        probe.rtt(adaptive && budget != null ? budget.rtt() : null);
        onPeerKind();
    }

    /**
     * The peer was told or learnt to hold out-of-order requests (or the AV changed): the path's
     * budget may rise to its limit for such a peer ({@link io.rxe4j.core.policy.PeerBudget#peerHolds}).
     */
    public void onPeerKind() {
        if (adaptive && budget != null && repair.kind() == RequesterRepair.PeerKind.HOLDS) {
            budget.peerHolds();
        }
    }

    /** @return the RTT estimate of this QP's peer path, or null before the AV is set */
    public io.rxe4j.core.policy.RttEstimator pathRtt() {
        return budget == null ? null : budget.rtt();
    }

    /** Gives {@code bytes} back to the peer budget, after the unacknowledged packets that held them were forgotten. */
    void releaseBudget(long bytes, boolean acknowledged) {
        if (budget != null && bytes > 0) {
            budget.release(bytes, acknowledged, unacked.heldBytes());
        }
    }

    /** Gives back one max_rd_atomic credit (its READ or atomic completed). */
    public void returnCredit() {
        credits++;
    }

    /**
     * PSNs were recorded as unacknowledged without a packet being sent ({@link
     * RequesterRetry#fastForward}): the retransmit timer must run for them as for a sent packet, or
     * a READ whose responses then stop waits forever (the timer went idle at the expiry before).
     */
    void onRecordedUnsent(long now) {
        retransmitTimer.onSend(now);
    }

    /** @return whether some sent PSN is not yet acknowledged */
    boolean outstanding() {
        return Psn.diff(psn, rc.completer.compPsn()) > 0;
    }

    /** @return the first PSN never sent yet (PSNs below it were sent at least once) */
    int sendHighWater() {
        return sendHighWater;
    }

    /** @return the number of request packets sent and not yet acknowledged (at most 64) */
    public int unackedPackets() {
        return unacked.size();
    }

    /**
     * comp.psn moved forward to {@code compPsn} ({@code rxe-facts.md} §9.2 UPDATE_COMP / COMP_WQE):
     * forgets the acknowledged packets and restarts the retransmit deadline from now.
     */
    void onAcknowledged(int compPsn) {
        long now = scheduler.nanoTime();
        long sentAt = unacked.sampleSentAt(compPsn, rc.completer.previousResponseAt());
        if (sentAt != Long.MIN_VALUE && budget != null) {
            budget.rtt().sample(now - sentAt, now); // Karn: only packets sent once give samples
        }
        releaseBudget(unacked.acknowledgeBefore(compPsn), true);
        if (budget != null) {
            budget.onProgress(now);
        }
        growTimeoutCap(compPsn);
        retransmitTimer.onProgress(now);
        probe.onProgress();
        repair.onProgress(compPsn);
        repair.onResponseAt(Psn.add(compPsn, -1));
    }

    /**
     * Why the requester stops sending for now ({@code rxe_req.c}'s gates before {@code
     * get_wqe}/{@code check_init_depth}/{@code rxe_check_psn_window}; {@code rxe-facts.md} §4.2,
     * §5.2; extensions.md §6). {@link #gate} names the first that holds the WQE at req's position;
     * each names what runs the requester again.
     */
    public enum Stall {
        /** SQD: a WQE not started yet waits for RTS (modify_qp). */
        SQD,
        /** IB_SEND_FENCE: an earlier READ or atomic is not complete (its completion). */
        FENCE,
        /** No max_rd_atomic credit left for a READ or atomic (a READ/atomic completion returns one). */
        CREDITS,
        /** 128 PSNs unacknowledged ({@code RXE_MAX_UNACKED_PSNS}; an ACK). */
        PSN_WINDOW,
        /** The 64-packet output bound ({@link UnackedPackets#CAPACITY}): resume below {@link #RESUME_BELOW}. */
        UNACKED_BOUND,
        /** The transport is not writable (the lane runs the QP again when it drains). */
        NOT_WRITABLE,
        /** The peer's byte budget is used up or others queue before this QP (a release gives the turn). */
        PEER_BUDGET,
        /** This turn's quantum of the budget is used while other QPs wait (to the tail of the queue). */
        QUANTUM,
        /** An extension's window is full (TID WRITE: 8 outstanding or a RESYNC out; a WRITE_RESP, TID ACK). */
        EXTENSION_WINDOW,
        /** An extension's ordering interlock (TID RDMA §7; the completion of the WQE it waits for). */
        EXTENSION_INTERLOCK,
        /** An extension's WQE waits for its own resources (TID READ: peer max_read, flow, TID entries). */
        EXTENSION_RESOURCES,
        /** The QP entered ERR while a packet was built: the run ends. */
        QP_ERROR
    }

    RequesterHook hook = RequesterHook.NONE;
    /** Why the last run stopped before the end of the send queue, or null (tests, diagnostics). */
    private Stall lastStall;

    /** Registers the extension that carries some WQEs (TID RDMA); {@link RequesterHook#NONE} for none. */
    public void hook(RequesterHook h) {
        this.hook = h;
    }

    /** Sends as many packets as the window, the output bound, credits, fences and the transport allow. */
    public void run() {
        QpState s = qp.state();
        if (s != QpState.RTS && s != QpState.SQD) {
            return;
        }
        hook.onRun(); // e.g. TID WRITE data still to send
        if (rnr.waiting()) {
            return;
        }
        if (outputStalled) {
            if (unacked.size() >= (adaptive ? unacked.limit() - unacked.limit() / 4 : RESUME_BELOW)) {
                return; // an ACK brings the count down and runs the requester again
            }
            outputStalled = false;
        }
        turnBytes = 0;
        long prod = qp.sqProducer();
        boolean extensionPosted = qp.tidWritesPosted(); // after the acquire of sqProd: covers every WQE before prod
        lastStall = null;
        while (qp.sqReq() != prod) {
            SendWqe w = qp.sqAt(qp.sqReq());
            Stall stall = gate(w, s, extensionPosted);
            if (stall != null) {
                lastStall = stall;
                onStall(stall);
                break;
            }
            if (hook.carries(w)) {
                stall = hook.send(w);
                lastStall = stall;
                if (stall == Stall.QP_ERROR) {
                    return;
                }
                if (stall != null) {
                    break;
                }
                continue;
            }
            if (!sendPacket(w)) {
                return; // QP went to ERR
            }
        }
        qp.budgetPlace().endTurn(); // a turn lasts one run
    }

    /**
     * The send gates, in {@code rxe_req.c}'s order, for {@code w} at req's position: SQD, fence,
     * the extension's gate, credits (taken here when the WQE needs one and may go), the PSN
     * window, the output bound, the transport's writability, the peer budget and the quantum.
     *
     * @return the first stall that holds {@code w}, or null when its next packet may go
     */
    private Stall gate(SendWqe w, QpState s, boolean extensionPosted) {
        boolean posted = w.state == SendWqe.State.POSTED;
        if (posted && s == QpState.SQD) {
            return Stall.SQD;
        }
        if (posted && (w.sendFlags & SendFlags.FENCE) != 0 && readOrAtomicPendingBefore()) {
            return Stall.FENCE;
        }
        if (posted) {
            Stall ext = hook.gate(w, extensionPosted);
            if (ext != null) {
                return ext;
            }
        }
        if (w.isLocal()) {
            return null; // a local WQE waits only for SQD and its fence (rxe runs rxe_do_local_ops before the window checks)
        }
        if (w.needsCredit() && !w.creditHeld) {
            if (credits <= 0) {
                return Stall.CREDITS;
            }
            credits--;
            w.creditHeld = true;
        }
        if (!w.tid && Psn.diff(psn, rc.completer.compPsn()) >= psnWindow(w)) {
            return Stall.PSN_WINDOW; // (TID READ segments are bounded by the peer's max_read instead)
        }
        if (adaptive) {
            unacked.limit(windowPackets());
        }
        if (unacked.isFull() || unacked.size() >= timeoutCap) {
            return Stall.UNACKED_BOUND;
        }
        if (!qp.host().transportWritable()) {
            return Stall.NOT_WRITABLE;
        }
        // TID RDMA is paced by its own receiver-driven flow control (the responder's max_write
        // allocation and WRITE_RESPs, the peer's max_read and credits), not by the peer budget
        // a QP within its fair share of the path never waits for the bytes other QPs hold (a lossy
        // QP's lost packets hold theirs until its own timer fires)
        if (budget != null && !w.tid && !budget.withinFairShare(unacked.heldBytes(), budgetBytes(w))) {
            if (budget.mustQueue(qp) || !budget.fits(budgetBytes(w))) {
                return Stall.PEER_BUDGET; // behind the QPs already waiting; a release gives the turn
            }
            if (turnBytes >= io.rxe4j.core.policy.PeerBudget.QUANTUM_BYTES && budget.contended()) {
                return Stall.QUANTUM; // quantum used while others wait: to the tail
            }
        }
        return null;
    }

    /** @return why the last run of the send loop stopped short of the queue's end, or null */
    Stall lastStall() {
        return lastStall;
    }

    /** What a stall arranges so that the requester runs again once it is over. */
    private void onStall(Stall stall) {
        switch (stall) {
            case UNACKED_BOUND -> {
                outputStalled = true;
                counters.inc(Counter.OUTPUT_STALLS);
            }
            case NOT_WRITABLE -> qp.host().awaitWritable(qp); // the device runs this QP again when the transport drains
            case PEER_BUDGET, QUANTUM -> budget.await(qp);
            case EXTENSION_INTERLOCK -> counters.inc(Counter.TID_INTERLOCK_WAITS);
            default -> { }
        }
    }

    /**
     * Most bytes of a READ's response stream that its request holds of the peer budget: 256 KiB.
     * A READ up to this size holds all of its response bytes until its last response arrives, so
     * that READs, like WRITEs, keep to the path's congestion window (128 QPs with 8 READs each put
     * 64 MiB of responses at a 1 MiB bottleneck queue otherwise); a longer READ holds only this
     * much, so that one 1 GiB READ does not shut every other QP of the path out for as long as it
     * runs.
     */
    static final int READ_BUDGET_CAP_BYTES = 256 * 1024;

    /**
     * @return the bytes the next packet of {@code w} holds of the peer budget: a SEND/WRITE packet
     *     its payload plus headers; a READ request the response bytes still to come, at most {@link
     *     #READ_BUDGET_CAP_BYTES}, plus 64; an atomic, ATOMIC WRITE or FLUSH 64 bytes
     */
    private int budgetBytes(SendWqe w) {
        WrOpcodeInfo info = WrOpcodeInfo.of(w.opcode);
        if (info.payloadInBudget()) {
            return (int) Math.min(w.length - (w.state == SendWqe.State.POSTED ? 0 : w.sentBytes), qp.pmtu()) + 64;
        }
        if (info.family() == WrOpcodeInfo.Family.READ) {
            return (int) Math.min(w.length - w.readBytes, READ_BUDGET_CAP_BYTES) + 64;
        }
        return 64;
    }

    /**
     * The per-QP window in packets under adaptive recovery: this QP's fair share of the path's limit
     * in force (the smaller of the congestion window and the static budget, divided by the QPs that
     * hold bytes of it, this one included) in packets of its path MTU, at least {@link
     * UnackedPackets#CAPACITY} (rdma_rxe's bound), at most the span an rxe4j responder holds ahead of a
     * gap ({@link io.rxe4j.core.policy.ReorderBuffer#spanPackets}: 4095 packets at path MTU 1024, 2016
     * at 4096; beyond it one loss made the responder drop the rest of the window, which came back one
     * NAK per probe, netlab 1 Gbit/s bottleneck: no completion for 30 s). One QP alone fills a long
     * path; many QPs keep the 64-packet bound under which the budget's turns are fair (a QP far above
     * its share would take every byte that comes back before a waiting QP's turn runs).
     */
    private int windowPackets() {
        if (budget == null) {
            return UnackedPackets.CAPACITY;
        }
        long limit = budget.effectiveLimitBytes();
        int sharers = budget.sharers(unacked.heldBytes());
        long pkts = limit == Long.MAX_VALUE ? UnackedPackets.MAX_CAPACITY : limit / sharers / (qp.pmtu() + 64) + 16;
        int span = Math.min(UnackedPackets.MAX_CAPACITY, io.rxe4j.core.policy.ReorderBuffer.spanPackets(qp.pmtu()));
        return (int) Math.min(span, Math.max(UnackedPackets.CAPACITY, pkts));
    }

    /**
     * The PSN window for {@code w}'s next packet: {@link #ADAPTIVE_PSN_WINDOW} under adaptive recovery,
     * except for a READ or atomic towards a peer not known to hold out-of-order requests, which keeps
     * rdma_rxe's 128 ({@code RXE_MAX_UNACKED_PSNS}): kernel rdma_rxe as a READ responder with more
     * READ PSNs outstanding than its own requesters ever send stops answering (interop case
     * d-read_bw-q4-loops2-j2k: RETRY_EXC_ERR with 2^15, passes with 128).
     */
    private int psnWindow(SendWqe w) {
        if (!adaptive) {
            return MAX_UNACKED_PSNS;
        }
        if (w.isReadOrAtomic() && repair.kind() != RequesterRepair.PeerKind.HOLDS) {
            return MAX_UNACKED_PSNS;
        }
        return ADAPTIVE_PSN_WINDOW;
    }

    /** @return whether a READ or atomic (the hidden OPFN request included) before {@code w} is outstanding */
    public boolean readOrAtomicOutstandingBefore(SendWqe w) {
        for (long i = qp.sqCompleted(); i != qp.sqReq(); i++) {
            SendWqe e = qp.sqAt(i);
            if (e != w && e.isReadOrAtomic() && e.state != SendWqe.State.DONE) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- for the extension's send path

    /** @return the max_rd_atomic credits left (an extension's READ-like segment takes one each) */
    public int credits() {
        return credits;
    }

    /** Takes one max_rd_atomic credit (the caller checked {@link #credits()} first). */
    public void takeCredit() {
        credits--;
    }

    /**
     * Sends a request packet an extension built with BTH PSN {@code psn}, covering PSNs up to
     * {@code packetLastPsn} (AckReq set by the builder): records it as unacknowledged with its
     * retransmit period scaled by 2^{@code timeoutShift}, takes {@code budgetBytes} of the peer
     * budget, and moves req.psn to {@code nextPsn}.
     */
    public void sendForHook(ByteBuf b, int total, int packetLastPsn, int budgetBytes, int timeoutShift, int nextPsn) {
        noAckPkts = 0;
        b.writerIndex(total);
        transmit(b, psn, packetLastPsn, budgetBytes, timeoutShift);
        psn = nextPsn;
    }

    /** A WQE an extension carries could not be set up locally: the WQE fails, the QP enters ERR. */
    public void failTid(SendWqe w, WcStatus status, String why) {
        if (rc.completer.head() == w) {
            rc.completer.failHead(w, status, 0, why);
        } else {
            w.failStatus = status;
            qp.moveToError("send WQE " + w.wrId + " (TID READ) failed locally: " + status + ": " + why);
        }
    }

    private boolean readOrAtomicPendingBefore() {
        for (long i = qp.sqCompleted(); i != qp.sqReq(); i++) {
            SendWqe w = qp.sqAt(i);
            if (w.isReadOrAtomic() && !w.opfn && w.state != SendWqe.State.DONE) {
                return true;
            }
        }
        return false;
    }

    /** Builds and sends the next packet of {@code w}; advances sqReq after its last packet. */
    private boolean sendPacket(SendWqe w) {
        return switch (WrOpcodeInfo.of(w.opcode).family()) {
            case READ -> sendRead(w, qp.pmtu());
            case ATOMIC, ATOMIC_WRITE, FLUSH -> sendSingle(w);
            case SEND, WRITE -> sendSendOrWrite(w, qp.pmtu());
            case LOCAL -> executeLocal(w);
        };
    }

    /**
     * A local WQE (BIND_MW, LOCAL_INV) at req's position executes now, takes no PSN, and completes in
     * order once every WQE before it has ({@code rxe_do_local_ops}; {@code verbs-surface-facts.md}
     * §5.4 rule 6). A failure completes it with MW_BIND_ERR or LOC_QP_OP_ERR and the QP enters ERR.
     *
     * @return false when it failed
     */
    private boolean executeLocal(SendWqe w) {
        String why = w.localDone ? null : io.rxe4j.core.qp.LocalOps.execute(qp, w); // a rewind walks over it again
        if (why != null) {
            WcStatus st = io.rxe4j.core.qp.LocalOps.failureStatus(w.opcode);
            String reason = "send WQE " + w.wrId + " (" + w.opcode + ") failed: " + st + ": " + why;
            if (rc.completer.head() == w) {
                rc.completer.failHead(w, st, 0, why);
            } else {
                w.failStatus = st; // earlier WQEs complete or are flushed first, then this one with its status
                qp.moveToError(reason);
            }
            return false;
        }
        w.localDone = true;
        w.firstPsn = Psn.add(psn, -1);
        w.lastPsn = w.firstPsn;
        w.state = SendWqe.State.PENDING;
        qp.advanceSqReq();
        rc.completer.completeLocalOps();
        return true;
    }

    private boolean sendSendOrWrite(SendWqe w, int pmtu) {
        if (w.state == SendWqe.State.POSTED) {
            long npkts = Math.max(1, (w.length + pmtu - 1) / pmtu);
            w.firstPsn = psn;
            w.lastPsn = Psn.add(psn, (int) npkts - 1);
            w.sentBytes = 0;
            w.state = SendWqe.State.PROCESSING;
        }
        long remaining = w.length - w.sentBytes;
        int payload = (int) Math.min(remaining, pmtu);
        boolean last = remaining <= pmtu;
        ByteBuf b = packets.sendOrWrite(w, psn, w.sentBytes, pmtu, ackReq(last));
        if (b == null) {
            fail(w, WcStatus.LOC_PROT_ERR);
            return false;
        }
        transmit(b, psn, psn, b.writerIndex(), 0);
        psn = Psn.next(psn);
        w.sentBytes += payload;
        if (last) {
            w.state = SendWqe.State.PENDING;
            qp.advanceSqReq();
        }
        return true;
    }

    /**
     * AckReq on the last packet of a message, on every {@link #ACK_REQ_INTERVAL}-th packet, and on
     * the packet that reaches the output bound or the slow start's bound after a timeout (so the ACK
     * that lets the QP go on is asked for).
     */
    private boolean ackReq(boolean last) {
        boolean ackReq = last || noAckPkts + 1 >= ACK_REQ_INTERVAL
                || unacked.size() + 1 >= Math.min(unacked.limit(), timeoutCap) || mayStopAfterThis();
        if (ackReq) {
            noAckPkts = 0;
        } else {
            noAckPkts++;
        }
        return ackReq;
    }

    /**
     * Whether the peer budget may stop this QP after the packet being built: the next packet would
     * not fit, or QPs wait and this turn's quantum is nearly used. Then the packet asks for an ACK,
     * or its bytes (and those before it) would stay held until this QP sends again, which may need
     * exactly those bytes back.
     */
    private boolean mayStopAfterThis() {
        if (budget == null) {
            return false;
        }
        long packet = qp.pmtu() + 64L;
        if (budget.withinFairShare(unacked.heldBytes() + packet, packet)) {
            return false; // the next packet goes within this QP's fair share, whatever the others do
        }
        long next = 2 * packet; // this packet and the next, with headers
        return budget.mustQueue(qp) || !budget.fits(next)
                || (budget.contended() && turnBytes + next >= PeerBudget.QUANTUM_BYTES);
    }

    private boolean sendRead(SendWqe w, int pmtu) {
        long remaining = w.length - w.readBytes;
        int npkts = (int) Math.max(1, (remaining + pmtu - 1) / pmtu);
        w.firstPsn = psn;
        w.lastPsn = Psn.add(psn, npkts - 1);
        ByteBuf b = packets.read(w, psn, w.readBytes, remaining);
        noAckPkts = 0;
        transmit(b, psn, w.lastPsn, budgetBytes(w), 0);
        psn = Psn.add(psn, npkts);
        w.state = SendWqe.State.PENDING;
        qp.advanceSqReq();
        return true;
    }

    /** An atomic, ATOMIC WRITE or FLUSH: one packet, one PSN. */
    private boolean sendSingle(SendWqe w) {
        w.firstPsn = psn;
        w.lastPsn = psn;
        ByteBuf b = packets.single(w, psn);
        noAckPkts = 0;
        transmit(b, psn, psn, b.writerIndex(), 0);
        psn = Psn.next(psn);
        w.state = SendWqe.State.PENDING;
        qp.advanceSqReq();
        return true;
    }

    /**
     * Sends a built request packet with PSN {@code first} covering PSNs up to {@code packetLastPsn},
     * records it as unacknowledged with its retransmit period scaled by 2^{@code timeoutShift} (a
     * TID READ_REQ waits for a whole segment of responses) and takes {@code budgetBytes} of the peer
     * budget until it is acknowledged.
     */
    private void transmit(ByteBuf b, int first, int packetLastPsn, int budgetBytes, int timeoutShift) {
        boolean resent = Psn.diff(first, sendHighWater) < 0;
        if (resent) {
            counters.inc(Counter.RESENT_PKTS);
        }
        if (Psn.diff(packetLastPsn, sendHighWater) >= 0) {
            sendHighWater = Psn.next(packetLastPsn);
        }
        qp.host().transmit(qp, b);
        if (budget != null) {
            budget.take(budgetBytes, unacked.heldBytes());
        }
        long now = scheduler.nanoTime();
        unacked.add(first, packetLastPsn, now, budgetBytes, timeoutShift, resent);
        turnBytes += budgetBytes;
        retransmitTimer.onSend(now);
        probe.onSend(now);
    }

    /** A local failure while building a packet: the WQE completes in error and the QP enters ERR. */
    private void fail(SendWqe w, WcStatus status) {
        if (rc.completer.head() == w) {
            rc.completer.failHead(w, status, 0);
        } else {
            w.failStatus = status; // earlier WQEs are flushed first, then this one with its status
            qp.moveToError("send WQE " + w.wrId + " (" + w.opcode + ") failed locally: " + status);
        }
    }

    // ---------------------------------------------------------------- timers and retry

    /** Why a retry starts ({@code rxe-facts.md} §5.3; {@code extensions.md} §6). */
    public enum RetryCause {
        /** The local ACK timeout expired with packets unacknowledged. */
        TIMEOUT,
        /** A PSN-sequence-error NAK arrived. */
        SEQUENCE_NAK,
        /** An ACK beyond a pending READ/atomic: its response was lost. */
        LOST_RESPONSE,
        /** A READ response arrived beyond the expected PSN: re-request the missing tail at once. */
        READ_GAP,
        /** A TID READ_RESP broke the flow sequence: restart at the oldest incomplete segment (§5.5). */
        TID_SEQUENCE
    }

    /** Starts a retry from comp.psn, charging retry_cnt ({@link RequesterRetry#retry}). */
    public void retry(RetryCause cause) {
        retries.retry(cause);
    }

    /** A RESYNC renumbered TID READ segments being asked for: send again from comp.psn ({@link RequesterRetry#restartAfterResync}). */
    public void restartAfterResync() {
        retries.restartAfterResync();
    }

    /** Goes back to comp.psn and the oldest uncompleted WQE ({@link RequesterRetry#rewind}). */
    void rewind() {
        retries.rewind();
    }

    /**
     * A response names PSN {@code upTo}, sent before a rewind and not sent again yet: moves forward
     * as if it had been resent ({@link RequesterRetry#fastForward}).
     *
     * @return false if a WQE an extension carries lies in the way or the send queue ends first
     */
    boolean fastForward(int upTo) {
        return retries.fastForward(upTo);
    }

    /**
     * A congestion notification (CNP) from the peer: the window shrinks as on a loss signal (once
     * per loss episode); nothing is resent.
     */
    public void onCnp() {
        onCongestionSignal();
    }

    /**
     * A loss on this QP's path that may be noise ({@link io.rxe4j.core.policy.PeerBudget#onLoss}),
     * judged so only towards a peer that holds out-of-order requests (elsewhere a loss costs a
     * go-back-N and always counts): counts the window reduction, or the loss not taken as congestion.
     */
    void onLossSignal() {
        if (budget == null) {
            return;
        }
        switch (budget.onLoss(repair.kind() == RequesterRepair.PeerKind.HOLDS)) {
            case REDUCED -> counters.inc(Counter.CC_WINDOW_REDUCTIONS);
            case NOT_CONGESTION -> counters.inc(Counter.CC_RANDOM_LOSSES);
            default -> { }
        }
    }

    /** A CNP, a congestion signal that is never noise: the window shrinks once per episode. */
    void onCongestionSignal() {
        if (budget != null && budget.onCongestion()) {
            counters.inc(Counter.CC_WINDOW_REDUCTIONS);
        }
    }

    /**
     * A retransmit timeout (the IB timer, or the RTT-derived one) at {@code now} after {@code
     * silenceNanos} without progress of this QP: if the whole path acknowledged nothing for as long,
     * its window collapses to one segment, so
     * that the go-back-N that follows resends one segment and then slow-starts, not the whole window
     * again ({@link io.rxe4j.core.policy.PeerBudget#onTimeout}); else it shrinks as on a loss.
     */
    void onTimeoutSignal(long now, long silenceNanos) {
        if (budget != null && budget.onTimeout(now, silenceNanos)) {
            counters.inc(Counter.CC_WINDOW_REDUCTIONS);
        }
        // and this QP slow-starts on its own (a TCP connection's RTO, RFC 5681 §3.1): one segment's
        // packets unacknowledged at most, growing by each packet acknowledged, until its window is reached
        timeoutCap = (int) Math.max(1, io.rxe4j.core.policy.CongestionWindow.LOSS_WINDOW_BYTES / qp.pmtu());
        timeoutCapPsn = rc.completer.compPsn();
    }

    /**
     * The packets this QP may have unacknowledged after a retransmit timeout, while its slow start
     * lasts ({@link Integer#MAX_VALUE}: no such limit).
     */
    private int timeoutCap = Integer.MAX_VALUE;
    /** comp.psn when {@link #timeoutCap} was set or last grew. */
    private int timeoutCapPsn;

    /** comp.psn moved to {@code compPsn}: the slow start after a timeout grows by the packets acknowledged. */
    private void growTimeoutCap(int compPsn) {
        if (timeoutCap == Integer.MAX_VALUE) {
            return;
        }
        int acked = Psn.diff(compPsn, timeoutCapPsn);
        if (acked > 0) {
            timeoutCapPsn = compPsn;
            long grown = (long) timeoutCap + acked;
            timeoutCap = grown >= (adaptive ? windowPackets() : UnackedPackets.CAPACITY) ? Integer.MAX_VALUE : (int) grown;
        }
    }

    /** @return the IB local ACK timeout period in nanoseconds (0: off) */
    long retransmitPeriodNanos() {
        return retransmitTimer.periodNanos();
    }

    /** An rxe4j selective NAK from the peer: the missing PSNs it names go again ({@link RequesterRepair#onSelectiveNak}). */
    public void onSelectiveNak(io.rxe4j.core.wire.PacketView pkt) {
        repair.onSelectiveNak(pkt);
    }

    /** RNR NAK received: wait the responder's RNR time, then retry ({@code rxe-facts.md} §5.3; 7 = infinite). */
    void onRnrNak(int timerCode, boolean ignoreCount) {
        counters.inc(Counter.RCVD_RNR_ERR);
        // a TID WRITE's RNR does not count (IGN_RNR_CNT, §6.4)
        if (rnr.onRnrNak(timerCode, qp.attr.rnrRetry(), ignoreCount) == RnrBackoff.Verdict.EXHAUSTED) {
            counters.inc(Counter.RETRY_RNR_EXCEEDED_ERR);
            SendWqe head = rc.completer.head();
            if (head != null) {
                rc.completer.failHead(head, WcStatus.RNR_RETRY_EXC_ERR, 0, "rnr_retry " + qp.attr.rnrRetry()
                        + " exhausted: " + qp.av() + " QPN 0x" + Integer.toHexString(qp.destQpn())
                        + " had no receive WQE for PSN 0x" + Integer.toHexString(rc.completer.compPsn()));
            }
        }
    }

    /** The RNR wait ended ({@link RnrBackoff} cleared its flag): retry from comp.psn. */
    /** @return whether the requester waits for its RNR timer */
    boolean rnrWaiting() {
        return rnr.waiting();
    }

    private void onRnrTimer() {
        if (qp.state() != QpState.RTS && qp.state() != QpState.SQD) {
            return;
        }
        rewind();
        run();
        qp.host().flushTransport();
    }
}
