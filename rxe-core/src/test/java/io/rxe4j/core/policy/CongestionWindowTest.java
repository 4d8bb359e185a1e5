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

    @Test
    void disabledItIsTheMaximumAndIgnoresLoss() {
        CongestionWindow w = new CongestionWindow(false);
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
