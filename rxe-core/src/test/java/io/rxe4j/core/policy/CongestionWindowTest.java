package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link CongestionWindow}: slow start, one halving per loss episode, additive increase, the floor, off. */
class CongestionWindowTest {
    @Test
    void slowStartThenOneDecreasePerEpisodeThenAdditiveIncrease() {
        CongestionWindow w = new CongestionWindow(true);
        assertThat(w.windowBytes()).isEqualTo(CongestionWindow.INITIAL_BYTES);
        w.onAcknowledged(64 * 1024);
        assertThat(w.windowBytes()).as("slow start: + bytes acknowledged").isEqualTo(CongestionWindow.INITIAL_BYTES + 64 * 1024);
        long before = w.windowBytes();
        assertThat(w.onLoss(100_000)).isTrue();
        assertThat(w.windowBytes()).isEqualTo((long) (before * CongestionWindow.BETA));
        assertThat(w.onLoss(100_000)).as("same episode: no second halving").isFalse();
        assertThat(w.windowBytes()).isEqualTo((long) (before * CongestionWindow.BETA));
        w.onAcknowledged(100_000); // the episode's bytes are acknowledged: it ends
        long afterEpisode = w.windowBytes();
        assertThat(afterEpisode).as("above ssthresh: about one segment per window").isBetween((long) (before * CongestionWindow.BETA), (long) (before * CongestionWindow.BETA) + CongestionWindow.SEGMENT_BYTES);
        assertThat(w.onLoss(10)).as("a new episode halves again").isTrue();
        assertThat(w.windowBytes()).isCloseTo((long) (afterEpisode * CongestionWindow.BETA), org.assertj.core.data.Offset.offset(2L));
    }

    @Test
    void theWindowNeverFallsBelowItsFloor() {
        CongestionWindow w = new CongestionWindow(true);
        for (int i = 0; i < 40; i++) {
            w.onLoss(0);
            w.onAcknowledged(CongestionWindow.SEGMENT_BYTES); // ends each episode
        }
        assertThat(w.windowBytes()).isGreaterThanOrEqualTo(CongestionWindow.MIN_BYTES)
                .isLessThan(CongestionWindow.MIN_BYTES + 2 * CongestionWindow.SEGMENT_BYTES);
    }

    /**
     * RFC 5681 §3.1: a timeout collapses the window to one segment whatever the episode, the
     * threshold is BETA x the window before the first timeout and is held for further timeouts
     * without progress, and slow start then doubles per window acknowledged back up to it.
     */
    @Test
    void aTimeoutCollapsesTheWindowToOneSegmentAndSlowStartsBackToTheHeldThreshold() {
        CongestionWindow w = new CongestionWindow(true);
        w.onAcknowledged(CongestionWindow.INITIAL_BYTES); // slow start: 512 KiB
        long before = w.windowBytes();
        assertThat(w.onLoss(before)).as("a NAK first: x BETA").isTrue();
        long afterLoss = w.windowBytes();
        assertThat(w.onTimeout(afterLoss)).as("a timeout in the same episode still collapses").isTrue();
        assertThat(w.windowBytes()).isEqualTo(CongestionWindow.LOSS_WINDOW_BYTES);
        assertThat(w.onTimeout(afterLoss)).as("already at the loss window").isFalse();
        assertThat(w.onLoss(afterLoss)).as("the resends' NAKs belong to the timeout's episode").isFalse();
        assertThat(w.windowBytes()).isEqualTo(CongestionWindow.LOSS_WINDOW_BYTES);
        long threshold = (long) (afterLoss * CongestionWindow.BETA);
        // slow start: the window doubles per window acknowledged until the threshold, held by the second timeout
        int rounds = 0;
        while (w.windowBytes() < threshold - 1) {
            long win = w.windowBytes();
            w.onAcknowledged(win);
            rounds++;
            assertThat(w.windowBytes()).isCloseTo(Math.min(2 * win, Math.max(threshold, win)), org.assertj.core.data.Offset.offset(1L));
        }
        assertThat(w.windowBytes()).isCloseTo(threshold, org.assertj.core.data.Offset.offset(1L));
        assertThat(rounds).as("doubling per round trip")
                .isEqualTo((int) Math.ceil(Math.log((double) threshold / CongestionWindow.LOSS_WINDOW_BYTES) / Math.log(2)));
        w.onAcknowledged(w.windowBytes());
        assertThat(w.windowBytes()).as("above the threshold: additive increase")
                .isLessThanOrEqualTo(threshold + CongestionWindow.SEGMENT_BYTES + 1);
        // after progress a new timeout takes its threshold from the window it meets
        long now = w.windowBytes();
        w.onTimeout(0);
        assertThat(w.windowBytes()).isEqualTo(CongestionWindow.LOSS_WINDOW_BYTES);
        w.onAcknowledged(CongestionWindow.LOSS_WINDOW_BYTES);
        w.onTimeout(0);
        w.onAcknowledged(1L << 30);
        assertThat(w.windowBytes()).as("slow start stops at the threshold of the second stall")
                .isEqualTo((long) Math.max(2 * CongestionWindow.LOSS_WINDOW_BYTES * CongestionWindow.BETA, CongestionWindow.MIN_BYTES));
        assertThat(now).isGreaterThan(CongestionWindow.MIN_BYTES);
    }

    @Test
    void disabledItIsTheMaximumAndIgnoresLoss() {
        CongestionWindow w = new CongestionWindow(false);
        assertThat(w.onTimeout(1 << 20)).isFalse();
        assertThat(w.onLoss(1 << 20)).isFalse();
        w.onAcknowledged(1 << 20);
        assertThat(w.windowBytes()).isEqualTo(CongestionWindow.MAX_BYTES);
    }


    /**
     * Above the threshold the growth per window acknowledged is ρ² segments, ρ = min RTT / 1 ms (TCP
     * Hybla): one segment at 1 ms or less, 100 at 10 ms, at most 256.
     */
    @Test
    void growthAboveTheThresholdScalesWithTheSquareOfTheMinimumRoundTrip() {
        for (long[] c : new long[][] {{0, 1}, {500_000, 1}, {1_000_000, 1}, {10_000_000, 100}, {40_000_000, 256}}) {
            CongestionWindow w = new CongestionWindow(true);
            w.onLoss(CongestionWindow.INITIAL_BYTES); // threshold = window: additive increase from here
            w.onAcknowledged(CongestionWindow.INITIAL_BYTES); // the episode ends
            long before = w.windowBytes();
            w.onAcknowledged(before, c[0]); // one window acknowledged
            assertThat((double) (w.windowBytes() - before)).as("SRTT %d ns", c[0])
                    .isCloseTo(c[1] * CongestionWindow.SEGMENT_BYTES, org.assertj.core.data.Offset.offset(
                            0.05 * c[1] * CongestionWindow.SEGMENT_BYTES + 2));
        }
    }

    /**
     * NewReno's fast recovery (RFC 6582 §3.2): after a decrease the window holds until the episode's
     * bytes are acknowledged; only the bytes beyond them grow it. It used to grow all along, and at a
     * full queue refilled it as fast as the decrease drained it (netlab 1 Gbit/s bottleneck, 1 QP:
     * 18.5 % of the packets resent).
     */
    @Test
    void theWindowHoldsDuringALossEpisode() {
        CongestionWindow w = new CongestionWindow(true);
        w.onAcknowledged(CongestionWindow.INITIAL_BYTES); // 512 KiB
        assertThat(w.onLoss(400_000)).isTrue();
        long reduced = w.windowBytes();
        for (int i = 0; i < 39; i++) {
            w.onAcknowledged(10_000, 20_000_000, 0, true); // 390 000 of the episode's 400 000 bytes
        }
        assertThat(w.windowBytes()).as("no growth inside the episode, not even on a long path").isEqualTo(reduced);
        w.onAcknowledged(10_000 + reduced, 0, 0, true); // the episode ends; what lies beyond it counts
        assertThat(w.windowBytes()).as("beyond the episode: additive increase on one window")
                .isCloseTo(reduced + CongestionWindow.SEGMENT_BYTES, org.assertj.core.data.Offset.offset(2L));
    }

    /** After a timeout slow start grows at once (the timeout's episode holds nothing back). */
    @Test
    void slowStartAfterATimeoutIsNotHeldByItsEpisode() {
        CongestionWindow w = new CongestionWindow(true);
        w.onTimeout(1 << 20);
        w.onAcknowledged(CongestionWindow.LOSS_WINDOW_BYTES);
        assertThat(w.windowBytes()).isEqualTo(2 * CongestionWindow.LOSS_WINDOW_BYTES);
    }

    /**
     * HyStart++'s delay rule (RFC 9406 §4.2): slow start ends when the round trips rise over the
     * minimum by minimum / 8, clamped to 4..16 ms, instead of doubling on until a queue overflows.
     */
    @Test
    void slowStartEndsWhenTheRoundTripRises() {
        long[][] cases = {
            // min RTT, queueing delay, whether slow start goes on
            {1_000_000, 3_900_000, 1}, {1_000_000, 4_000_000, 0}, // the 4 ms floor
            {80_000_000, 9_000_000, 1}, {80_000_000, 10_000_000, 0}, // min / 8
            {400_000_000, 15_000_000, 1}, {400_000_000, 16_000_000, 0}, // the 16 ms ceiling
            {0, 100_000_000, 1}, // no RTT known: plain slow start
        };
        for (long[] c : cases) {
            CongestionWindow w = new CongestionWindow(true);
            w.onAcknowledged(64 * 1024, c[0], c[1], true);
            long grown = CongestionWindow.INITIAL_BYTES + 64 * 1024;
            assertThat(w.windowBytes()).as("min %d ns, queue %d ns", c[0], c[1])
                    .isEqualTo(c[2] == 1 ? grown : CongestionWindow.INITIAL_BYTES);
            if (c[2] == 0) {
                w.onAcknowledged(w.windowBytes(), c[0], 0, false);
                assertThat(w.windowBytes()).as("then additive increase")
                        .isCloseTo(CongestionWindow.INITIAL_BYTES + CongestionWindow.SEGMENT_BYTES, org.assertj.core.data.Offset.offset(2L));
            }
        }
    }

    /**
     * Hybla's long-path growth only while the path shows no queue: a queueing delay above half the
     * minimum RTT (and 250 µs) brings back Reno's one segment per window, so a minimum taken while the
     * path was already queued cannot make the growth ρ² times too fast at a bottleneck.
     */
    @Test
    void theLongPathGrowthStopsWhileAQueueShows() {
        for (long[] c : new long[][] {{10_000_000, 0, 100}, {10_000_000, 5_000_000, 100}, {10_000_000, 5_000_001, 1},
                {600_000, 250_000, 1}, {2_000_000, 300_000, 4}, {2_000_000, 1_000_001, 1}}) {
            CongestionWindow w = new CongestionWindow(true);
            w.onLoss(CongestionWindow.INITIAL_BYTES);
            w.onAcknowledged(CongestionWindow.INITIAL_BYTES); // the episode ends
            long before = w.windowBytes();
            w.onAcknowledged(before, c[0], c[1], true);
            assertThat((double) (w.windowBytes() - before)).as("min %d ns, queue %d ns", c[0], c[1])
                    .isCloseTo(c[2] * CongestionWindow.SEGMENT_BYTES, org.assertj.core.data.Offset.offset(
                            0.05 * c[2] * CongestionWindow.SEGMENT_BYTES + 2));
        }
    }
}
