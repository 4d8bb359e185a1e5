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
}
