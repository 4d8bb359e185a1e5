package io.rxe4j.core.policy;

import io.rxe4j.verbs.spi.Scheduler;

/**
 * The RNR (receiver not ready) wait of one QP's requester, and the one home of the RNR timer table
 * ({@code rxe-facts.md} §2.3, "RNR timer codes": {@code enum ib_rnr_timeout}, {@code rnrnak_usec[]}
 * in {@code rxe_comp.c}; IBTA Vol 1 §9.7.5.2.8, RNR NAK). The timer rules
 * are {@code rxe-facts.md} §5.3, "rnr_retry":
 *
 * <ul>
 *   <li>An RNR NAK carries the responder's {@code min_rnr_timer} code (0..31); the requester waits
 *       {@link #timerNanos(int) that long}, then retries from comp.psn ({@code onExpiry}).
 *   <li>Each RNR NAK charges {@code rnr_retry}, unless it is 7 (infinite) or the NAK is one that does
 *       not count (a TID WRITE's, {@code IGN_RNR_CNT}, {@code tid-opfn-facts.md} §6.4); a NAK that
 *       finds the count at 0 is {@link Verdict#EXHAUSTED}: the caller fails the WQE with
 *       RNR_RETRY_EXC_ERR and no timer starts.
 *   <li>While the wait runs, {@link #waiting()} is true: the requester sends nothing and its
 *       retransmit timer does not retry (the RNR timer does).
 *   <li>A valid response resets the count ({@link #resetCount}); a new NAK during a wait restarts it.
 * </ul>
 *
 * <p>Units: timer codes 0..31 (a larger value is masked to 5 bits, as the AETH field), microseconds in
 * the table, nanoseconds of the injected {@link Scheduler}. Loop only; no allocation per NAK.
 */
public final class RnrBackoff {
    /** {@code rnr_retry} value that is never charged: retry for ever. */
    public static final int INFINITE = 7;

    /**
     * RNR timer codes in microseconds; code 0 = 655.36 ms. Code 25 is 61 440 µs as IBTA says (rdma_rxe's
     * table has 61 410 µs, {@code rxe-facts.md} §10 item 4).
     */
    private static final long[] RNR_USEC = {655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
        1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
        327680, 491520};

    /** Number of timer codes: 32 (5 bits). */
    public static final int CODES = RNR_USEC.length;

    /** What an RNR NAK leads to. */
    public enum Verdict {
        /** The wait started (or restarted): {@code onExpiry} runs when it ends. */
        WAIT,
        /** {@code rnr_retry} was exhausted: nothing was scheduled; the caller fails the head WQE. */
        EXHAUSTED
    }

    private final Scheduler scheduler;
    private final Runnable onExpiry;
    private final Runnable task = this::onTimer;
    private Scheduler.Cancellable pending;
    private boolean waiting;
    private int left;

    /**
     * @param scheduler the QP's loop and clock
     * @param onExpiry run on the loop when a wait ends (not when it was {@link #stop stopped})
     */
    public RnrBackoff(Scheduler scheduler, Runnable onExpiry) {
        this.scheduler = scheduler;
        this.onExpiry = onExpiry;
    }

    /**
     * @param code an RNR timer code; only its low 5 bits count, as in the AETH
     * @return the wait in microseconds
     */
    public static long timerMicros(int code) {
        return RNR_USEC[code & 0x1F];
    }

    /**
     * @param code an RNR timer code; only its low 5 bits count, as in the AETH
     * @return the wait in nanoseconds
     */
    public static long timerNanos(int code) {
        return RNR_USEC[code & 0x1F] * 1000L;
    }

    /**
     * The smallest timer code 1..31 whose wait covers {@code micros} (for a responder that chooses the
     * code it sends, e.g. {@code hfi1_compute_tid_rnr_timeout}).
     *
     * @return that code, or 0 (the longest wait, 655.36 ms) when none of 1..31 covers it
     */
    public static int codeCovering(long micros) {
        for (int n = 1; n < CODES; n++) {
            if (RNR_USEC[n] >= micros) {
                return n;
            }
        }
        return 0;
    }

    /** A valid response arrived, or the QP was (re)configured: the count starts over at {@code rnrRetry} (0..7). */
    public void resetCount(int rnrRetry) {
        left = rnrRetry;
    }

    /** @return the RNR NAKs still allowed before {@link Verdict#EXHAUSTED} (meaningless while {@code rnr_retry} is 7) */
    public int left() {
        return left;
    }

    /**
     * An RNR NAK arrived.
     *
     * @param timerCode the NAK's timer code (AETH syndrome bits 0..4)
     * @param rnrRetry the QP's {@code rnr_retry} attribute (0..7; 7 = infinite)
     * @param ignoreCount the NAK does not charge the count (a TID WRITE's)
     * @return whether the wait started, or the count was exhausted (then nothing is scheduled)
     */
    public Verdict onRnrNak(int timerCode, int rnrRetry, boolean ignoreCount) {
        if (rnrRetry != INFINITE && !ignoreCount) {
            if (left <= 0) {
                return Verdict.EXHAUSTED;
            }
            left--;
        }
        waiting = true;
        if (pending != null) {
            pending.cancel();
        }
        pending = scheduler.schedule(task, timerNanos(timerCode));
        return Verdict.WAIT;
    }

    /** @return whether a wait is running: the requester sends nothing and leaves retries to the RNR timer */
    public boolean waiting() {
        return waiting;
    }

    /** Ends a wait without running {@code onExpiry} (the QP leaves RTS, is reset or destroyed). */
    public void stop() {
        if (pending != null) {
            pending.cancel();
            pending = null;
        }
        waiting = false;
    }

    private void onTimer() {
        pending = null;
        waiting = false;
        onExpiry.run();
    }

    @Override
    public String toString() {
        return waiting ? "rnrWaiting" : "";
    }
}
