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
}
