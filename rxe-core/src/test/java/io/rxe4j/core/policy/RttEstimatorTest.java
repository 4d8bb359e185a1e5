package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link RttEstimator}: RFC 6298's gains, the minimum, and the floors of the derived timeouts. */
class RttEstimatorTest {
    @Test
    void theFirstSampleSetsSrttAndHalfOfItAsVariation() {
        RttEstimator r = new RttEstimator();
        assertThat(r.hasSample()).isFalse();
        r.sample(400_000);
        assertThat(r.srttNanos()).isEqualTo(400_000);
        assertThat(r.rttvarNanos()).isEqualTo(200_000);
        assertThat(r.minRttNanos()).isEqualTo(400_000);
        assertThat(r.retransmitTimeoutNanos()).as("srtt + 4 var").isEqualTo(1_200_000);
        assertThat(r.probeTimeoutNanos()).as("max(2 srtt, srtt + 4 var)").isEqualTo(1_200_000);
    }

    @Test
    void laterSamplesUseGainsOfOneEighthAndOneQuarter() {
        RttEstimator r = new RttEstimator();
        r.sample(800_000);
        r.sample(400_000);
        // rttvar = (3 * 400000 + |800000 - 400000|) / 4 = 400000; srtt = (7 * 800000 + 400000) / 8 = 750000
        assertThat(r.rttvarNanos()).isEqualTo(400_000);
        assertThat(r.srttNanos()).isEqualTo(750_000);
        assertThat(r.minRttNanos()).isEqualTo(400_000);
        assertThat(r.samples()).isEqualTo(2);
    }

    @Test
    void aSteadyPathConvergesAndTheFloorsHold() {
        RttEstimator r = new RttEstimator();
        for (int i = 0; i < 200; i++) {
            r.sample(50_000); // a 50 µs loopback
        }
        assertThat(r.srttNanos()).isEqualTo(50_000);
        assertThat(r.rttvarNanos()).isLessThan(1_000);
        assertThat(r.retransmitTimeoutNanos()).isEqualTo(RttEstimator.MIN_RTO_NANOS);
        assertThat(r.probeTimeoutNanos()).isEqualTo(RttEstimator.MIN_PROBE_NANOS);
        assertThat(r.reorderWindowNanos()).isEqualTo(RttEstimator.MIN_REORDER_NANOS);
    }

    @Test
    void aLongPathGetsTimeoutsFromItsOwnRtt() {
        RttEstimator r = new RttEstimator();
        for (int i = 0; i < 200; i++) {
            r.sample(40_000_000); // 20 ms each way
        }
        assertThat(r.probeTimeoutNanos()).isEqualTo(80_000_000);
        assertThat(r.retransmitTimeoutNanos()).isBetween(40_050_000L, 41_000_000L);
        assertThat(r.reorderWindowNanos()).as("a quarter of the minimum").isEqualTo(10_000_000);
    }

    @Test
    void aZeroOrNegativeSampleCountsAsOneNanosecond() {
        RttEstimator r = new RttEstimator();
        r.sample(-5);
        assertThat(r.minRttNanos()).isEqualTo(1);
    }

    /**
     * The recent minimum covers the current and the previous round (max(SRTT, 1 ms) each): a small
     * sample keeps it down for up to two rounds, then only samples of the newer rounds count, while
     * the all-time minimum stays.
     */
    @Test
    void theRecentMinimumForgetsSamplesOlderThanTwoRounds() {
        RttEstimator r = new RttEstimator();
        r.sample(500_000, 0);
        assertThat(r.recentMinNanos()).isEqualTo(500_000);
        assertThat(r.queueingDelayNanos()).isZero();
        r.sample(900_000, 400_000); // same round (1 ms)
        r.sample(900_000, 1_100_000); // a new round: the first one is the previous round now
        assertThat(r.recentMinNanos()).isEqualTo(500_000);
        r.sample(900_000, 2_200_000); // another round: the 0.5 ms sample is two rounds old
        assertThat(r.recentMinNanos()).isEqualTo(900_000);
        assertThat(r.minRttNanos()).isEqualTo(500_000);
        assertThat(r.queueingDelayNanos()).isEqualTo(400_000);
        assertThat(new RttEstimator().queueingDelayNanos()).as("no sample").isZero();
    }
}
