package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link ReorderWindow}: the default, min RTT / 4, doubling on spurious verdicts, decay, the caps. */
class ReorderWindowTest {
    @Test
    void withoutASampleTheDefaultDoublesOnSpuriousVerdictsUpToTheCap() {
        ReorderWindow w = new ReorderWindow(new RttEstimator());
        assertThat(w.windowNanos()).isEqualTo(ReorderWindow.DEFAULT_NANOS);
        w.onSpurious();
        assertThat(w.windowNanos()).isEqualTo(2 * ReorderWindow.DEFAULT_NANOS);
        for (int i = 0; i < 20; i++) {
            w.onSpurious();
        }
        assertThat(w.multiplier()).isEqualTo(ReorderWindow.MAX_MULTIPLIER);
        assertThat(w.windowNanos()).isEqualTo(ReorderWindow.MAX_NANOS);
    }

    @Test
    void withASampleItIsAQuarterOfTheMinimumRttAndNeverMoreThanSrtt() {
        RttEstimator r = new RttEstimator();
        r.sample(16_000_000);
        r.sample(24_000_000);
        ReorderWindow w = new ReorderWindow(r);
        assertThat(w.windowNanos()).isEqualTo(4_000_000);
        for (int i = 0; i < 10; i++) {
            w.onSpurious();
        }
        assertThat(w.windowNanos()).isEqualTo(r.srttNanos());
    }

    @Test
    void sixteenCleanVerdictsHalveTheMultiplier() {
        ReorderWindow w = new ReorderWindow(new RttEstimator());
        w.onSpurious();
        w.onSpurious();
        assertThat(w.multiplier()).isEqualTo(4);
        for (int i = 0; i < ReorderWindow.CLEAN_VERDICTS - 1; i++) {
            w.onVerdict();
        }
        assertThat(w.multiplier()).isEqualTo(4);
        w.onVerdict();
        assertThat(w.multiplier()).isEqualTo(2);
        assertThat(w.spuriousVerdicts()).isEqualTo(2);
    }

    /**
     * Observed reordering: the window covers 5/4 of the longest delay seen, with or without an RTT
     * sample, never beyond the cap, and halves with the multiplier after 16 verdicts.
     */
    @Test
    void theWindowCoversTheReorderingItObserves() {
        RttEstimator rtt = new RttEstimator();
        ReorderWindow w = new ReorderWindow(rtt);
        assertThat(w.windowNanos()).isEqualTo(ReorderWindow.DEFAULT_NANOS);
        w.onReorder(1_000_000);
        assertThat(w.windowNanos()).as("no sample: 5/4 of 1 ms").isEqualTo(1_250_000);
        w.onReorder(400_000);
        assertThat(w.windowNanos()).as("the longest counts").isEqualTo(1_250_000);
        w.onReorder(100_000_000);
        assertThat(w.windowNanos()).as("capped").isEqualTo(ReorderWindow.MAX_NANOS);
        RttEstimator r2 = new RttEstimator();
        r2.sample(2_000_000);
        ReorderWindow v = new ReorderWindow(r2);
        assertThat(v.windowNanos()).as("a quarter of the minimum RTT").isEqualTo(500_000);
        v.onReorder(1_000_000);
        assertThat(v.windowNanos()).isEqualTo(1_250_000);
        v.onReorder(10_000_000);
        assertThat(v.windowNanos()).as("at most SRTT").isEqualTo(2_000_000);
        ReorderWindow u = new ReorderWindow(r2);
        u.onReorder(1_000_000);
        for (int i = 0; i < ReorderWindow.CLEAN_VERDICTS; i++) {
            u.onVerdict();
        }
        assertThat(u.windowNanos()).as("halved after 16 verdicts: 625 us").isEqualTo(625_000);
    }
}
