package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link GapTimer}: one deadline, kept when opened again, none after close, once per opening. */
class GapTimerTest {
    private final FakeScheduler sched = new FakeScheduler(1_000_000);
    private int expiries;
    private final GapTimer timer = new GapTimer(sched, () -> expiries++);

    @Test
    void anOpenGapExpiresOnceAtItsFirstDeadline() {
        timer.open(sched.nanoTime(), 500);
        sched.advance(100);
        timer.open(sched.nanoTime(), 500); // already open: the deadline stays
        assertThat(timer.deadline()).isEqualTo(1_000_500);
        sched.advance(399);
        assertThat(expiries).isZero();
        sched.advance(1);
        assertThat(expiries).isEqualTo(1);
        assertThat(timer.isOpen()).isFalse();
        sched.advance(10_000);
        assertThat(expiries).isEqualTo(1);
    }

    @Test
    void aDeadlineInThePastFiresAtOnceAndCloseCancels() {
        timer.open(sched.nanoTime() - 1000, 500);
        sched.runTasks();
        sched.advance(0);
        assertThat(expiries).isEqualTo(1);
        timer.open(sched.nanoTime(), 500);
        timer.close();
        sched.advance(1000);
        assertThat(expiries).isEqualTo(1);
        assertThat(sched.pendingTimers()).isZero();
    }
}
