package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link LossProbe} on a {@link FakeScheduler}: off without an RTT sample, the probe after the probe
 * timeout since the last send, the RTT timeout after it with doubling, OFF at the IB ceiling,
 * progress clears the backoff, idle when all is acknowledged.
 */
class LossProbeTest {
    private final FakeScheduler sched = new FakeScheduler();
    private final UnackedPackets unacked = new UnackedPackets();
    private final RttEstimator rtt = new RttEstimator();
    private int probes;
    private int timeouts;
    private final LossProbe probe = new LossProbe(sched, unacked, new LossProbe.Listener() {
        @Override
        public void onProbe() {
            probes++;
        }

        @Override
        public void onTimeout() {
            timeouts++;
        }
    });
    private static final long CEILING = 4096L << 14; // IB timeout 14: 67 ms

    private void send(int psn) {
        unacked.add(psn, sched.nanoTime(), 100, 0);
        probe.onSend();
    }

    private void path(long rttNanos) {
        for (int i = 0; i < 50; i++) {
            rtt.sample(rttNanos);
        }
        probe.rtt(rtt);
        probe.ceiling(CEILING);
    }

    @Test
    void withoutAnRttSampleNoEarlyTimerRuns() {
        probe.rtt(rtt);
        probe.ceiling(CEILING);
        send(1);
        assertThat(sched.pendingTimers()).isZero();
        sched.advance(CEILING * 4);
        assertThat(probes + timeouts).isZero();
    }

    @Test
    void theProbeGoesAfterTwoRoundTripsOfSilenceThenTheTimeoutDoublesUpToTheCeiling() {
        path(1_000_000); // 1 ms: probe timeout 2 ms, RTO ~1.05 ms (srtt + max(G, 4 var))
        send(1);
        sched.advance(1_999_999);
        assertThat(probes).isZero();
        sched.advance(1);
        assertThat(probes).isEqualTo(1);
        assertThat(probe.phase()).isEqualTo(LossProbe.Phase.RTO);
        long rto = rtt.retransmitTimeoutNanos();
        sched.advance(rto);
        assertThat(timeouts).isEqualTo(1);
        sched.advance(2 * rto);
        assertThat(timeouts).isEqualTo(2);
        sched.advance(CEILING * 8);
        // rto × 2^k < 67 ms: k up to 5 (≈ 33.6 ms), the sixth would reach the ceiling: OFF
        assertThat(timeouts).as("early timeouts before the IB timer alone runs").isEqualTo(6);
        assertThat(probe.phase()).isEqualTo(LossProbe.Phase.OFF);
        assertThat(sched.pendingTimers()).isZero();
    }

    @Test
    void sendingKeepsPushingTheProbeDeadline() {
        path(1_000_000);
        send(1);
        for (int i = 2; i < 10; i++) {
            sched.advance(1_500_000);
            send(i);
        }
        assertThat(probes).isZero();
        sched.advance(2_000_000);
        assertThat(probes).isEqualTo(1);
    }

    @Test
    void progressClearsTheBackoffAndAllAcknowledgedIsIdle() {
        path(1_000_000);
        send(1);
        send(2);
        sched.advance(2_000_000 + rtt.retransmitTimeoutNanos());
        assertThat(probe.backoff()).isEqualTo(1);
        unacked.acknowledgeBefore(2);
        probe.onProgress();
        assertThat(probe.backoff()).isZero();
        assertThat(probe.phase()).isEqualTo(LossProbe.Phase.PROBE);
        unacked.acknowledgeBefore(3);
        probe.onProgress();
        assertThat(probe.phase()).isEqualTo(LossProbe.Phase.IDLE);
        int before = probes;
        sched.advance(CEILING);
        assertThat(probes).isEqualTo(before);
    }

    @Test
    void theIbTimeoutOffTurnsTheEarlyTimersOffToo() {
        path(1_000_000);
        probe.ceiling(0);
        send(1);
        sched.advance(CEILING);
        assertThat(probes + timeouts).isZero();
    }

    /**
     * The probe and the RTT timeout wait for a receive backlog as the IB timer does, each at most
     * its own timeout; without a backlog nothing changes.
     */
    @Test
    void theEarlyTimersWaitForAReceiveBacklogAtMostTheirOwnTimeout() {
        boolean[] backlogged = {true};
        int[] deferrals = {0};
        probe.deferWhile(() -> backlogged[0], () -> deferrals[0]++);
        path(1_000_000); // probe timeout 2 ms
        send(1);
        sched.advance(2_000_000);
        assertThat(probes).as("the probe waits for the backlog").isZero();
        assertThat(deferrals[0]).isEqualTo(1);
        sched.advance(rtt.probeTimeoutNanos() - RetransmitTimer.DEFER_NANOS);
        assertThat(probes).isZero();
        sched.advance(2 * RetransmitTimer.DEFER_NANOS);
        assertThat(probes).as("bounded by the probe timeout").isEqualTo(1);
        assertThat(probe.phase()).isEqualTo(LossProbe.Phase.RTO);
        backlogged[0] = false;
        long due = probe.deadline(); // the probe's time + the RTO
        assertThat(due - sched.nanoTime()).isGreaterThan(0).isLessThanOrEqualTo(rtt.retransmitTimeoutNanos());
        sched.advance(due - sched.nanoTime() - 1);
        assertThat(timeouts).isZero();
        sched.advance(1);
        assertThat(timeouts).as("no backlog: on time").isEqualTo(1);
        assertThat(deferrals[0]).isEqualTo(1);
    }
}
