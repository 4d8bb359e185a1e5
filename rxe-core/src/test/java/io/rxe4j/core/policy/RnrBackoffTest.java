package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link RnrBackoff} on a {@link FakeScheduler}: the timer table, rnr_retry counting, the wait, restart, stop. */
class RnrBackoffTest {
    private final FakeScheduler sched = new FakeScheduler();
    private int expiries;
    private final RnrBackoff rnr = new RnrBackoff(sched, () -> expiries++);

    @Test
    void theTableIsIbtasInMicrosecondsAndCodesAreMaskedToFiveBits() {
        assertThat(RnrBackoff.CODES).isEqualTo(32);
        assertThat(RnrBackoff.timerMicros(0)).as("code 0 is the longest: 655.36 ms").isEqualTo(655_360);
        assertThat(RnrBackoff.timerMicros(1)).isEqualTo(10);
        assertThat(RnrBackoff.timerMicros(14)).isEqualTo(1280);
        assertThat(RnrBackoff.timerMicros(25)).as("61.44 ms, not rdma_rxe's 61410 typo").isEqualTo(61_440);
        assertThat(RnrBackoff.timerMicros(31)).isEqualTo(491_520);
        assertThat(RnrBackoff.timerNanos(18)).isEqualTo(5_120_000L);
        assertThat(RnrBackoff.timerMicros(32 + 3)).as("only the AETH's 5 bits count").isEqualTo(RnrBackoff.timerMicros(3));
        for (int c = 2; c < 32; c++) {
            assertThat(RnrBackoff.timerMicros(c)).as("code %d", c).isGreaterThan(RnrBackoff.timerMicros(c - 1));
        }
    }

    @Test
    void codeCoveringIsTheSmallestCodeFrom1WhoseWaitIsLongEnough() {
        assertThat(RnrBackoff.codeCovering(0)).isEqualTo(1);
        assertThat(RnrBackoff.codeCovering(10)).isEqualTo(1);
        assertThat(RnrBackoff.codeCovering(11)).isEqualTo(2);
        assertThat(RnrBackoff.codeCovering(1281)).isEqualTo(15);
        assertThat(RnrBackoff.codeCovering(491_520)).isEqualTo(31);
        assertThat(RnrBackoff.codeCovering(491_521)).as("beyond code 31: code 0, 655.36 ms").isZero();
    }

    @Test
    void theWaitLastsTheNaksTimerThenRunsTheRetryOnce() {
        rnr.resetCount(3);
        assertThat(rnr.onRnrNak(12, 3, false)).isEqualTo(RnrBackoff.Verdict.WAIT);
        assertThat(rnr.waiting()).isTrue();
        assertThat(rnr.left()).isEqualTo(2);
        sched.advance(640_000 - 1);
        assertThat(expiries).isZero();
        assertThat(rnr.waiting()).isTrue();
        sched.advance(1);
        assertThat(expiries).isEqualTo(1);
        assertThat(rnr.waiting()).as("cleared before the retry runs").isFalse();
        assertThat(sched.pendingTimers()).isZero();
    }

    @Test
    void theWaitFlagIsClearWhenTheRetryRuns() {
        boolean[] seen = new boolean[1];
        RnrBackoff[] self = new RnrBackoff[1];
        self[0] = new RnrBackoff(sched, () -> seen[0] = self[0].waiting());
        self[0].resetCount(1);
        self[0].onRnrNak(1, 1, false);
        sched.advance(10_000);
        assertThat(seen[0]).as("the retry may send again at once").isFalse();
    }

    @Test
    void rnrRetryIsChargedPerNakUntilExhaustedAndAResetStartsOver() {
        rnr.resetCount(2);
        assertThat(rnr.onRnrNak(1, 2, false)).isEqualTo(RnrBackoff.Verdict.WAIT);
        sched.advance(10_000);
        assertThat(rnr.onRnrNak(1, 2, false)).isEqualTo(RnrBackoff.Verdict.WAIT);
        sched.advance(10_000);
        assertThat(rnr.left()).isZero();
        assertThat(rnr.onRnrNak(1, 2, false)).isEqualTo(RnrBackoff.Verdict.EXHAUSTED);
        assertThat(rnr.waiting()).as("exhausted: no wait").isFalse();
        assertThat(sched.pendingTimers()).isZero();
        assertThat(expiries).isEqualTo(2);
        rnr.resetCount(2); // a valid response arrived
        assertThat(rnr.onRnrNak(1, 2, false)).isEqualTo(RnrBackoff.Verdict.WAIT);
    }

    @Test
    void rnrRetryZeroFailsTheFirstNak() {
        rnr.resetCount(0);
        assertThat(rnr.onRnrNak(5, 0, false)).isEqualTo(RnrBackoff.Verdict.EXHAUSTED);
        assertThat(sched.pendingTimers()).isZero();
    }

    @Test
    void sevenIsInfiniteAndAnIgnoredNakIsNotCharged() {
        rnr.resetCount(RnrBackoff.INFINITE);
        for (int i = 0; i < 100; i++) {
            assertThat(rnr.onRnrNak(1, RnrBackoff.INFINITE, false)).isEqualTo(RnrBackoff.Verdict.WAIT);
            sched.advance(10_000);
        }
        assertThat(rnr.left()).isEqualTo(RnrBackoff.INFINITE);
        rnr.resetCount(1);
        for (int i = 0; i < 5; i++) {
            assertThat(rnr.onRnrNak(1, 1, true)).as("a TID WRITE's RNR (IGN_RNR_CNT)").isEqualTo(RnrBackoff.Verdict.WAIT);
            sched.advance(10_000);
        }
        assertThat(rnr.left()).isEqualTo(1);
        assertThat(expiries).isEqualTo(105);
    }

    @Test
    void aNakDuringTheWaitRestartsItWithTheNewTimer() {
        rnr.resetCount(5);
        rnr.onRnrNak(16, 5, false); // 2.56 ms
        sched.advance(1_000_000);
        rnr.onRnrNak(12, 5, false); // 0.64 ms from now
        assertThat(sched.pendingTimers()).as("the old timer was cancelled").isEqualTo(1);
        sched.advance(640_000);
        assertThat(expiries).isEqualTo(1);
        sched.advance(10_000_000);
        assertThat(expiries).as("one retry, not two").isEqualTo(1);
    }

    @Test
    void stopEndsTheWaitWithoutARetry() {
        rnr.resetCount(5);
        rnr.onRnrNak(0, 5, false);
        rnr.stop();
        assertThat(rnr.waiting()).isFalse();
        assertThat(sched.pendingTimers()).isZero();
        sched.advance(1_000_000_000L);
        assertThat(expiries).isZero();
    }
}
