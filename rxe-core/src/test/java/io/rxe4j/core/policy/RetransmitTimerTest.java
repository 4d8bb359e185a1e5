package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link RetransmitTimer} on a {@link FakeScheduler}: the period 4.096 µs × 2^timeout, the deadline
 * from the oldest unacknowledged packet or the last progress, one timer at most, idle after all is
 * acknowledged, the per-packet period scale, stop.
 */
class RetransmitTimerTest {
    private final FakeScheduler sched = new FakeScheduler();
    private final UnackedPackets unacked = new UnackedPackets();
    private int expiries;
    private final RetransmitTimer timer = new RetransmitTimer(sched, unacked, () -> expiries++);

    private void send(int psn) {
        send(psn, 0);
    }

    private void send(int psn, int shift) {
        unacked.add(psn, sched.nanoTime(), 100, shift);
        timer.onSend();
    }

    @Test
    void thePeriodIs4096NanosTimesTwoToTheTimeoutAndZeroIsOff() {
        timer.timeout(1);
        assertThat(timer.periodNanos()).isEqualTo(8192);
        timer.timeout(14);
        assertThat(timer.periodNanos()).isEqualTo(4096L << 14).isEqualTo(67_108_864L); // ≈ 67 ms
        timer.timeout(31);
        assertThat(timer.periodNanos()).isEqualTo(4096L << 31);
        timer.timeout(0);
        assertThat(timer.periodNanos()).isZero();
        send(1);
        assertThat(sched.pendingTimers()).as("timeout 0: no timer at all").isZero();
        sched.advance(1L << 40);
        assertThat(expiries).isZero();
    }

    @Test
    void firesOncePeriodAfterTheOldestUnacknowledgedPacketNotBefore() {
        timer.timeout(10); // 4.194 ms
        long period = timer.periodNanos();
        send(1);
        sched.advance(period / 3);
        send(2);
        send(3);
        assertThat(sched.pendingTimers()).as("one timer, not one per packet").isEqualTo(1);
        assertThat(timer.deadline()).as("from the oldest packet's send time").isEqualTo(sched.nanoTime() - period / 3 + period);
        sched.advance(period - period / 3 - 1);
        assertThat(expiries).as("1 ns before the deadline").isZero();
        sched.advance(1);
        assertThat(expiries).isEqualTo(1);
        assertThat(sched.pendingTimers()).as("the expiry handler decides what comes next").isZero();
    }

    @Test
    void progressRestartsTheDeadlineLazily() {
        timer.timeout(8);
        long period = timer.periodNanos();
        long t0 = sched.nanoTime();
        send(1);
        send(2);
        sched.advance(period / 2);
        unacked.acknowledgeBefore(2); // PSN 1 acknowledged, 2 still out
        timer.onProgress(sched.nanoTime());
        assertThat(timer.deadline()).isEqualTo(t0 + period / 2 + period);
        sched.advance(period / 2);
        assertThat(expiries).as("the old deadline passed, but progress moved it").isZero();
        assertThat(sched.pendingTimers()).as("re-armed for the remainder").isEqualTo(1);
        assertThat(sched.nextTimerIn()).isEqualTo(period / 2);
        sched.advance(period / 2);
        assertThat(expiries).isEqualTo(1);
    }

    @Test
    void whenEverythingIsAcknowledgedTheTimerGoesIdleAndTheNextPacketStartsAFreshPeriod() {
        timer.timeout(6);
        long period = timer.periodNanos();
        send(1);
        unacked.acknowledgeBefore(2);
        sched.advance(period);
        assertThat(expiries).isZero();
        assertThat(sched.pendingTimers()).as("fired with nothing outstanding: stops").isZero();
        sched.advance(10 * period);
        long sentAt = sched.nanoTime();
        send(2);
        assertThat(timer.deadline()).as("a fresh period from the new packet, not the old burst").isEqualTo(sentAt + period);
        sched.advance(period - 1);
        assertThat(expiries).isZero();
        sched.advance(1);
        assertThat(expiries).isEqualTo(1);
    }

    @Test
    void aLongerPeriodPacketAcknowledgedPullsTheTimerInForTheNextOne() {
        timer.timeout(4);
        long period = timer.periodNanos();
        long t0 = sched.nanoTime();
        send(1, 3); // a TID READ_REQ: 8 periods
        assertThat(sched.nextTimerIn()).as("armed for one period first").isEqualTo(period);
        sched.advance(period);
        assertThat(expiries).as("fired early: the packet's deadline is 8 periods").isZero();
        assertThat(sched.nextTimerIn()).as("re-armed for the remainder").isEqualTo(7 * period);
        send(2); // an ordinary packet: one period from its send time
        unacked.acknowledgeBefore(2);
        timer.onProgress(sched.nanoTime()); // progress at t0 + period
        assertThat(timer.deadline()).isEqualTo(t0 + 2 * period);
        assertThat(sched.nextTimerIn()).as("moved in from 7 periods to 1").isEqualTo(period);
        sched.advance(period);
        assertThat(expiries).isEqualTo(1);
    }

    @Test
    void stopCancelsThePendingTimerAndTimeoutZeroStopsToo() {
        timer.timeout(5);
        send(1);
        assertThat(sched.pendingTimers()).isEqualTo(1);
        timer.stop();
        assertThat(sched.pendingTimers()).isZero();
        sched.advance(1L << 30);
        assertThat(expiries).isZero();
        timer.onSend();
        assertThat(sched.pendingTimers()).isEqualTo(1);
        timer.timeout(0);
        assertThat(sched.pendingTimers()).as("turning the timeout off stops the timer").isZero();
        sched.advance(1L << 30);
        assertThat(expiries).isZero();
    }

    /**
     * A deadline that passes while the transport's last read batch was full waits (re-checking
     * every DEFER_NANOS) until the backlog is read: progress found in it restarts the deadline, and
     * nothing found lets it fire; at most one period in all, then it fires anyway; one deferral is
     * counted per expiry.
     */
    @Test
    void aDeadlineWaitsForAReceiveBacklogAtMostOnePeriod() {
        boolean[] backlogged = {true};
        int[] deferrals = {0};
        timer.deferWhile(() -> backlogged[0], () -> deferrals[0]++);
        timer.timeout(10); // 4.194 ms
        long period = timer.periodNanos();
        send(1);
        send(2);
        sched.advance(period);
        assertThat(expiries).as("deferred: the acknowledgement may be in the backlog").isZero();
        assertThat(deferrals[0]).isEqualTo(1);
        sched.advance(5 * RetransmitTimer.DEFER_NANOS);
        assertThat(expiries).isZero();
        // the backlog held the acknowledgement of PSN 1: the deadline restarts from that progress
        unacked.acknowledgeBefore(2);
        timer.onProgress(sched.nanoTime());
        backlogged[0] = false;
        sched.advance(period - 1);
        assertThat(expiries).as("a full period from the progress").isZero();
        sched.advance(1);
        assertThat(expiries).as("no backlog: fires on time").isEqualTo(1);
        assertThat(deferrals[0]).isEqualTo(1);
        // a backlog that never ends delays an expiry by one period, no more
        backlogged[0] = true;
        send(3);
        sched.advance(period);
        assertThat(expiries).isEqualTo(1);
        sched.advance(period - RetransmitTimer.DEFER_NANOS);
        assertThat(expiries).as("still within one period of the first deferral").isEqualTo(1);
        sched.advance(2 * RetransmitTimer.DEFER_NANOS);
        assertThat(expiries).as("the bound: fires though the backlog persists").isEqualTo(2);
        assertThat(deferrals[0]).isEqualTo(2);
    }
}
