package io.rxe4j.core.policy;

import io.rxe4j.verbs.Counter;
import java.util.ArrayDeque;

/**
 * The bytes a device lane may have in flight towards one peer, summed over all of its QPs to that peer
 * (issue 9: local backpressure and congestion control of the peer path). A requester takes the
 * bytes of a packet when it sends it (a SEND/WRITE packet's wire bytes; 64 for a READ request or an
 * atomic, whose responses the responder paces) and gives them back when the packet is acknowledged,
 * or when it is given up (a rewind sends it again; the QP stops).
 *
 * <p>The limit is the smaller of a static one ({@code DeviceConfig.peerBudgetBytes}, by default the
 * transport's hint, e.g. derived from the UDP socket buffers) and the path's {@link
 * CongestionWindow}, which halves on loss signals from any QP of the path and grows as bytes are
 * acknowledged.
 *
 * <p>Fairness: QPs that find the budget spent wait in a FIFO. While any QP waits, no other QP may
 * send outside its turn (not even one whose own ACK just freed bytes): it joins the FIFO too. As bytes
 * come back, the QPs at the head get a turn each ({@link #QUANTUM_BYTES} per turn, as far as the
 * freed bytes go) and are told so ({@link BudgetWaiter#onBudgetTurn()}: the device schedules them on
 * their lane's service queue); a QP that used
 * its quantum and still has work goes to the tail. That is round robin with a fixed quantum, so one
 * QP with a deep queue cannot take every byte that comes back. A single packet larger than the whole
 * budget is allowed when nothing is in flight, so that a tiny budget never deadlocks.
 *
 * <p>Isolation: a QP that holds less than its fair share of the limit in force (that limit divided
 * by the QPs holding bytes or waiting for some, itself included) sends without waiting in the FIFO and beyond the
 * congestion window, though never beyond the static limit ({@link #withinFairShare}). The bytes a
 * lossy QP's lost packets hold stay "in flight" until its own retransmit timer fires; without this
 * rule every other QP to the same peer would wait for that timer (issue 19: a loss-free ping-pong
 * beside a lossy stream had a p99 of the stream's ACK timeout). The shares add up to the limit, so
 * the window is exceeded only by what QPs above their share took earlier, at most once more the
 * window.
 *
 * <p>The waiting parties are {@link BudgetWaiter}s: the budget names no QP and no lane. Units: bytes
 * (a packet's wire bytes as the requester counts them). Source: no IBTA or rdma_rxe counterpart
 * (rdma_rxe bounds only the packets per QP); rxe4j issue 9 and issue 19, {@code docs/performance.md}.
 * Loop only.
 */
public final class PeerBudget {
    /** Bytes a QP may send per turn while other QPs wait for the budget: 64 KiB. */
    public static final int QUANTUM_BYTES = 64 * 1024;

    private long limitBytes;
    /** The static limit once the peer is known to hold out-of-order requests ({@link #peerHolds}). */
    private final long holdingPeerLimitBytes;
    private boolean holds;
    private final CongestionWindow window;
    private long inFlightBytes;
    /** When a QP of the path last made progress, and whether one ever did ({@link #onProgress}). */
    private long lastProgressAt;
    private boolean progressed;
    /** QPs that hold bytes of this budget now. */
    private int holders;
    private final ArrayDeque<BudgetWaiter> waiters = new ArrayDeque<>();
    private final RttEstimator rtt = new RttEstimator();
    private final ReorderWindow reorder = new ReorderWindow(rtt);

    /**
     * @param limitBytes the static limit in bytes, at least 1 ({@link Long#MAX_VALUE}: unlimited)
     * @param congestionControl whether the path's {@link CongestionWindow} is in force
     */
    public PeerBudget(long limitBytes, boolean congestionControl) {
        this(limitBytes, limitBytes, congestionControl);
    }

    /**
     * @param limitBytes the static limit in bytes, at least 1 ({@link Long#MAX_VALUE}: unlimited)
     * @param holdingPeerLimitBytes the static limit once a QP learns or is told that the peer holds
     *     out-of-order requests ({@link #peerHolds}), at least {@code limitBytes}
     * @param congestionControl whether the congestion window is in force
     */
    public PeerBudget(long limitBytes, long holdingPeerLimitBytes, boolean congestionControl) {
        this.holdingPeerLimitBytes = Math.max(limitBytes, holdingPeerLimitBytes);
        this.limitBytes = limitBytes;
        this.window = new CongestionWindow(congestionControl);
    }

    /** @return the static limit in bytes ({@link Long#MAX_VALUE}: unlimited) */
    public long limitBytes() {
        return limitBytes;
    }

    /** @return the path's round-trip time estimate (adaptive recovery's timers derive from it) */
    public RttEstimator rtt() {
        return rtt;
    }

    /** @return the path's reordering window (responder NAKs, completer READ re-requests) */
    public ReorderWindow reorder() {
        return reorder;
    }

    /** @return the path's congestion window */
    public CongestionWindow window() {
        return window;
    }

    /**
     * A QP of this path learnt or was told (the connection manager's extensions) that the peer holds
     * out-of-order requests: the peer is rxe4j with adaptive recovery, a loss costs one packet, and
     * the static limit may rise to the one given for such a peer, and the window grows by the long-path
     * rule ({@link CongestionWindow#onAcknowledged(long, long, long, boolean)}). Never undone.
     */
    public void peerHolds() {
        limitBytes = holdingPeerLimitBytes;
        holds = true;
    }

    /** @return whether a QP of this path learnt or was told that the peer holds out-of-order requests */
    public boolean holds() {
        return holds;
    }

    /** @return the limit in force now: the smaller of the static limit and the congestion window, in bytes */
    public long effectiveLimitBytes() {
        return Math.min(limitBytes, window.windowBytes());
    }

    /** What a loss signal did to the path's congestion window ({@link #onLoss}). */
    public enum LossVerdict {
        /** The window was reduced (the first signal of a loss episode). */
        REDUCED,
        /** Part of the loss episode under way: no further reduction. */
        SAME_EPISODE,
        /** Not taken as congestion: the path shows no queueing delay (a lossy link, not a full queue). */
        NOT_CONGESTION
    }

    /**
     * Least queueing delay ({@link RttEstimator#queueingDelayNanos()}) that makes a loss count as
     * congestion, in nanoseconds: 250 µs, or half the minimum RTT when that is more.
     */
    public static final long MIN_QUEUEING_NANOS = 250_000;

    /**
     * A loss on this path that may be noise (any QP's sequence NAK, READ gap, lost response): it
     * reduces the congestion window only when the path shows a queue, i.e. when every recent RTT
     * sample exceeds the minimum RTT by more than max(minimum RTT / 2, {@link #MIN_QUEUEING_NANOS})
     * (loss discrimination, as in TCP Westwood or Veno: a full tail-drop queue raises the delay of
     * every packet before it drops one, a lossy link does not). Without an RTT sample every loss
     * counts.
     *
     * @return what the signal did
     */
    public LossVerdict onLoss() {
        return onLoss(true);
    }

    /**
     * As {@link #onLoss()}, with loss discrimination only if {@code discriminate}: towards a peer that
     * discards requests after a gap (kernel {@code rdma_rxe}, RoCE NICs) every loss costs a go-back-N
     * of the window, so there every loss counts, as in TCP Reno.
     */
    public LossVerdict onLoss(boolean discriminate) {
        if (discriminate && window.enabled() && rtt.hasSample()
                && rtt.queueingDelayNanos() <= Math.max(rtt.minRttNanos() / 2, MIN_QUEUEING_NANOS)) {
            return LossVerdict.NOT_CONGESTION;
        }
        return window.onLoss(inFlightBytes) ? LossVerdict.REDUCED : LossVerdict.SAME_EPISODE;
    }

    /**
     * A congestion signal that is never noise: a CNP (the network marked a queue).
     *
     * @return whether the congestion window was reduced (once per loss episode)
     */
    public boolean onCongestion() {
        return window.onLoss(inFlightBytes);
    }

    /**
     * A QP of this path made progress at {@code now} (scheduler nanoseconds): the path is alive
     * ({@link #onTimeout}).
     */
    public void onProgress(long now) {
        lastProgressAt = now;
        progressed = true;
    }

    /**
     * A QP's retransmit timer (the IB one, or the RTT-derived one) expired at {@code now} after
     * {@code silenceNanos} without its own progress. If no QP of the path made progress for as long either, the path is stalled (the peer
     * is down or drowning): the window collapses to one segment and slow-starts again ({@link
     * CongestionWindow#onTimeout}, RFC 5681 §3.1). If others did, the path is alive and this is one
     * QP's loss: the window shrinks as on a loss signal (once per episode), or 256 QPs at a
     * bottleneck, whose timers expire one after the other, would hold it at one segment.
     *
     * @return whether the congestion window was reduced
     */
    public boolean onTimeout(long now, long silenceNanos) {
        if (progressed && now - lastProgressAt < silenceNanos) {
            return window.onLoss(inFlightBytes);
        }
        return window.onTimeout(inFlightBytes);
    }

    /** @return the bytes in flight now */
    public long inFlightBytes() {
        return inFlightBytes;
    }

    /** @return whether QPs are waiting for bytes (then every sender keeps to {@link #QUANTUM_BYTES} per turn) */
    public boolean contended() {
        return !waiters.isEmpty();
    }

    /**
     * @return whether a packet holding {@code bytes} may be sent now: it fits, or nothing is in
     *     flight (a packet larger than the whole budget must still be able to go)
     */
    public boolean fits(long bytes) {
        return inFlightBytes + bytes <= effectiveLimitBytes() || inFlightBytes == 0;
    }

    /**
     * @return the QPs the limit is shared by, for a QP holding {@code heldBytes}: those holding bytes
     *     and those waiting for some (a waiter may be counted twice: the share errs on the small
     *     side), the asking QP included
     */
    public int sharers(long heldBytes) {
        return Math.max(1, holders + waiters.size() + (heldBytes == 0 ? 1 : 0));
    }

    /** @return the QPs that hold bytes of this budget now */
    public int holders() {
        return holders;
    }

    /**
     * Takes {@code bytes} for a packet just sent (after {@link #fits} or {@link #withinFairShare}).
     *
     * @param heldBefore the bytes the sending QP held before this packet
     */
    public void take(long bytes, long heldBefore) {
        if (bytes <= 0) {
            return;
        }
        if (heldBefore == 0) {
            holders++;
        }
        inFlightBytes += bytes;
    }

    /**
     * @return whether a QP that holds {@code heldBytes} may send a packet holding {@code bytes} at
     *     once, ahead of the QPs waiting and beyond the congestion window: it stays within its fair
     *     share (the limit in force divided by the QPs holding bytes, itself included) and the
     *     static limit is not exceeded
     */
    public boolean withinFairShare(long heldBytes, long bytes) {
        int n = sharers(heldBytes);
        return heldBytes + bytes <= effectiveLimitBytes() / Math.max(1, n)
                && (inFlightBytes + bytes <= limitBytes || inFlightBytes == 0);
    }

    /**
     * Gives back {@code bytes}; the waiting QPs get turns if any.
     *
     * @param acknowledged whether the peer acknowledged them (progress, which opens the congestion
     *     window) rather than the requester giving them up
     * @param heldAfter the bytes the releasing QP still holds
     */
    public void release(long bytes, boolean acknowledged, long heldAfter) {
        if (bytes <= 0) {
            return;
        }
        if (heldAfter == 0 && holders > 0) {
            holders--;
        }
        if (acknowledged) {
            // the long-path growth only towards a peer that holds (a loss there costs one packet; a kernel
            // peer that discards after a gap, and whose receive path is slow, keeps Reno's growth); the
            // queueing delay ends slow start and the long-path growth towards any peer
            boolean sampled = rtt.hasSample();
            window.onAcknowledged(bytes, sampled ? rtt.minRttNanos() : 0, sampled ? rtt.queueingDelayNanos() : 0, holds);
        }
        inFlightBytes -= bytes;
        if (inFlightBytes < 0) {
            inFlightBytes = 0; // defensive: never let a bookkeeping slip block the peer forever
        }
        grantTurns();
    }

    /** Gives the QPs at the head of the FIFO a turn each, as far as the free bytes go (at least one). */
    private void grantTurns() {
        long free = effectiveLimitBytes() - inFlightBytes;
        BudgetWaiter w;
        boolean first = true;
        while ((first || free > 0) && (w = waiters.poll()) != null) {
            first = false;
            w.budgetPlace().grantTurn();
            w.onBudgetTurn();
            free -= QUANTUM_BYTES;
        }
    }

    /**
     * @return whether {@code waiter} must wait behind others before it sends: others are waiting, some
     *     bytes are in flight (their release will give the turns), and {@code waiter} holds no turn
     */
    public boolean mustQueue(BudgetWaiter waiter) {
        return !waiters.isEmpty() && !waiter.budgetPlace().holdsTurn() && inFlightBytes > 0;
    }

    @Override
    public String toString() {
        return "budget{inFlight=" + inFlightBytes + "B limit=" + (limitBytes == Long.MAX_VALUE ? "-" : limitBytes + "B")
                + " " + window + " holders=" + holders + " waiting=" + waiters.size() + "}";
    }

    /**
     * {@code waiter} cannot send now (the budget is spent, or others wait): it joins the FIFO (once)
     * and gets a turn when bytes come back (counted in its {@code budget_waits}). With nothing in
     * flight there is nothing to wait for: it gets a turn at once.
     */
    public void await(BudgetWaiter waiter) {
        BudgetWaiter.Place place = waiter.budgetPlace();
        boolean wasQueued = place.queued();
        place.enqueue();
        if (!wasQueued) {
            waiter.counters().inc(Counter.BUDGET_WAITS);
            waiters.add(waiter);
        }
        if (inFlightBytes == 0) {
            grantTurns();
        }
    }
}
