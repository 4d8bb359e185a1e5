package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.stats.Counters;
import io.rxe4j.verbs.Counter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link PeerBudget} with fake {@link BudgetWaiter}s: fitting, the oversized packet, holders and fair
 * share, the FIFO with its quantum turns, the turn lasting one run, the congestion window's limit.
 */
class PeerBudgetTest {
    private static final int Q = PeerBudget.QUANTUM_BYTES;

    /** Records its turns, in the order the budget gave them. */
    static class Waiter implements BudgetWaiter {
        final String name;
        final List<String> log;
        final Counters counters = new Counters();
        final Place place = new Place();
        int turns;

        Waiter(String name, List<String> log) {
            this.name = name;
            this.log = log;
        }

        @Override
        public Place budgetPlace() {
            return place;
        }

        @Override
        public void onBudgetTurn() {
            turns++;
            log.add(name);
        }

        @Override
        public Counters counters() {
            return counters;
        }
    }

    private final List<String> turns = new ArrayList<>();
    private final Waiter a = new Waiter("a", turns);
    private final Waiter b = new Waiter("b", turns);
    private final Waiter c = new Waiter("c", turns);

    @Test
    void aPacketFitsUpToTheLimitAndAnOversizedOneOnlyWhenNothingIsInFlight() {
        PeerBudget budget = new PeerBudget(10_000, false);
        assertThat(budget.effectiveLimitBytes()).isEqualTo(10_000);
        assertThat(budget.fits(50_000)).as("nothing in flight: a tiny budget never deadlocks").isTrue();
        budget.take(6_000, 0);
        assertThat(budget.inFlightBytes()).isEqualTo(6_000);
        assertThat(budget.fits(4_000)).isTrue();
        assertThat(budget.fits(4_001)).isFalse();
        budget.release(6_000, true, 0);
        assertThat(budget.inFlightBytes()).isZero();
        budget.take(0, 0);
        assertThat(budget.holders()).as("taking nothing makes no holder").isZero();
    }

    @Test
    void holdersAreCountedOncePerQpAndTheFairShareDividesTheLimit() {
        PeerBudget budget = new PeerBudget(120_000, false);
        budget.take(10_000, 0);
        budget.take(10_000, 10_000); // the same QP again
        assertThat(budget.holders()).isEqualTo(1);
        budget.take(5_000, 0); // a second QP
        assertThat(budget.holders()).isEqualTo(2);
        // a third QP holding nothing: share = 120 000 / 3
        assertThat(budget.withinFairShare(0, 40_000)).isTrue();
        assertThat(budget.withinFairShare(0, 40_001)).isFalse();
        // the first QP (holds 20 000): share 60 000
        assertThat(budget.withinFairShare(20_000, 40_000)).isTrue();
        assertThat(budget.withinFairShare(20_000, 40_001)).isFalse();
        budget.release(20_000, true, 0);
        assertThat(budget.holders()).isEqualTo(1);
        budget.release(5_000, false, 0);
        assertThat(budget.holders()).isZero();
        budget.release(1_000, false, 0);
        assertThat(budget.holders()).as("never below zero").isZero();
        assertThat(budget.inFlightBytes()).as("a bookkeeping slip is clamped at zero").isZero();
    }

    @Test
    void theFairShareNeverExceedsTheStaticLimit() {
        PeerBudget budget = new PeerBudget(100_000, false);
        budget.take(90_000, 0);
        // a new QP: its share is 50 000, but only 10 000 of the static limit are left
        assertThat(budget.withinFairShare(0, 20_000)).isFalse();
        assertThat(budget.withinFairShare(0, 10_000)).isTrue();
    }

    @Test
    void waitersGetTurnsInFifoOrderAsBytesComeBackOneQuantumEach() {
        PeerBudget budget = new PeerBudget(4L * Q, false);
        budget.take(4L * Q, 0);
        budget.await(a);
        budget.await(b);
        budget.await(c);
        assertThat(budget.contended()).isTrue();
        assertThat(turns).isEmpty();
        assertThat(a.place.queued()).isTrue();
        budget.release(Q, true, 3L * Q); // one quantum free: one turn
        assertThat(turns).containsExactly("a");
        assertThat(a.place.queued()).isFalse();
        assertThat(a.place.holdsTurn()).isTrue();
        budget.release(2L * Q, true, Q); // three quanta free now: b and c
        assertThat(turns).containsExactly("a", "b", "c");
        assertThat(budget.contended()).isFalse();
    }

    @Test
    void aReleaseGivesAtLeastOneTurnEvenWhenLessThanAQuantumIsFree() {
        PeerBudget budget = new PeerBudget(10_000, false);
        budget.take(10_000, 0);
        budget.await(a);
        budget.await(b);
        budget.release(100, true, 9_900);
        assertThat(turns).containsExactly("a");
        budget.release(100, true, 9_800);
        assertThat(turns).containsExactly("a", "b");
    }

    @Test
    void aReleaseGivesOneTurnEvenWhenTheBudgetIsStillOverspent() {
        PeerBudget budget = new PeerBudget(10_000, true);
        budget.take(8_000, 0);
        budget.take(9_000, 8_000); // sent within the fair share, beyond the limit
        budget.await(a);
        budget.await(b);
        budget.release(1_000, true, 16_000);
        assertThat(budget.inFlightBytes()).isGreaterThan(budget.effectiveLimitBytes());
        assertThat(turns).as("a release always lets the head go, so the FIFO keeps moving").containsExactly("a");
    }

    @Test
    void awaitWithNothingInFlightGivesATurnAtOnce() {
        PeerBudget budget = new PeerBudget(10_000, false);
        budget.await(a);
        assertThat(turns).containsExactly("a");
        assertThat(a.place.holdsTurn()).isTrue();
        assertThat(budget.contended()).isFalse();
        assertThat(a.counters.get(Counter.BUDGET_WAITS)).isEqualTo(1);
    }

    @Test
    void aQueuedWaiterIsQueuedAndCountedOnce() {
        PeerBudget budget = new PeerBudget(10_000, false);
        budget.take(10_000, 0);
        budget.await(a);
        budget.await(a);
        budget.await(b);
        assertThat(a.counters.get(Counter.BUDGET_WAITS)).isEqualTo(1);
        assertThat(b.counters.get(Counter.BUDGET_WAITS)).isEqualTo(1);
        budget.release(10_000, true, 0); // 10 000 free: less than one quantum, one turn
        assertThat(turns).containsExactly("a");
        budget.take(10_000, 0);
        budget.release(10_000, true, 0);
        assertThat(turns).as("a was in the FIFO once, not twice").containsExactly("a", "b");
    }

    @Test
    void whileOthersWaitOnlyATurnHolderMaySendAndATurnLastsOneRun() {
        PeerBudget budget = new PeerBudget(2L * Q, false);
        budget.take(2L * Q, 0);
        assertThat(budget.mustQueue(a)).as("nobody waits").isFalse();
        budget.await(a);
        budget.await(b);
        assertThat(budget.mustQueue(c)).as("c holds no turn while others wait").isTrue();
        budget.release(Q, true, Q);
        assertThat(turns).containsExactly("a");
        assertThat(budget.mustQueue(a)).as("a holds a turn").isFalse();
        a.place.endTurn(); // the run is over
        assertThat(a.place.holdsTurn()).isFalse();
        assertThat(budget.mustQueue(a)).isTrue();
        budget.await(a); // used its quantum, still has work: to the tail, behind b
        assertThat(a.place.queued()).isTrue();
        assertThat(a.counters.get(Counter.BUDGET_WAITS)).isEqualTo(2);
        budget.release(Q, true, 0);
        assertThat(turns).containsExactly("a", "b", "a");
    }

    @Test
    void withOthersWaitingButNothingInFlightNobodyMustQueue() {
        PeerBudget budget = new PeerBudget(1000, false);
        budget.take(1000, 0);
        budget.await(a);
        budget.await(b);
        budget.release(1000, true, 0); // 1000 free, less than a quantum: a's turn only
        assertThat(turns).containsExactly("a");
        assertThat(budget.contended()).as("b still waits").isTrue();
        assertThat(budget.mustQueue(c)).as("no release would ever give c a turn").isFalse();
    }

    @Test
    void theCongestionWindowLowersTheLimitInForceAndHalvesOncePerEpisode() {
        PeerBudget budget = new PeerBudget(Long.MAX_VALUE, true);
        assertThat(budget.limitBytes()).isEqualTo(Long.MAX_VALUE);
        assertThat(budget.effectiveLimitBytes()).isEqualTo(CongestionWindow.INITIAL_BYTES);
        budget.take(CongestionWindow.INITIAL_BYTES, 0);
        assertThat(budget.fits(1)).isFalse();
        assertThat(budget.onLoss()).as("no RTT sample: every loss counts").isEqualTo(PeerBudget.LossVerdict.REDUCED);
        assertThat(budget.onLoss()).as("same episode").isEqualTo(PeerBudget.LossVerdict.SAME_EPISODE);
        assertThat(budget.effectiveLimitBytes()).isEqualTo((long) (CongestionWindow.INITIAL_BYTES * CongestionWindow.BETA));
        PeerBudget off = new PeerBudget(300_000, false);
        assertThat(off.onLoss()).isEqualTo(PeerBudget.LossVerdict.SAME_EPISODE);
        assertThat(off.onCongestion()).isFalse();
        assertThat(off.effectiveLimitBytes()).isEqualTo(300_000);
    }

    /**
     * Loss discrimination: a loss while the recent RTT samples sit at the path's minimum is not
     * congestion (the window stays); once every sample of the last rounds carries a queueing delay
     * above max(min RTT / 2, 250 µs), a loss reduces the window; a CNP or a timeout always does.
     */
    @Test
    void aLossWithoutQueueingDelayIsNotCongestion() {
        PeerBudget budget = new PeerBudget(Long.MAX_VALUE, true);
        budget.take(CongestionWindow.INITIAL_BYTES, 0);
        RttEstimator rtt = budget.rtt();
        long t = 0;
        for (int i = 0; i < 10; i++, t += 100_000) {
            rtt.sample(i % 2 == 0 ? 2_000_000 : 9_000_000, t); // 2 ms path; some samples waited behind a hole
        }
        assertThat(budget.onLoss()).as("recent minimum at the path minimum").isEqualTo(PeerBudget.LossVerdict.NOT_CONGESTION);
        assertThat(budget.effectiveLimitBytes()).isEqualTo(CongestionWindow.INITIAL_BYTES);
        // a standing queue: 1.2 ms on every sample for two rounds (rounds of max(SRTT, 1 ms))
        for (int i = 0; i < 60; i++, t += 200_000) {
            rtt.sample(3_200_000, t);
        }
        assertThat(rtt.queueingDelayNanos()).isEqualTo(1_200_000);
        assertThat(budget.onLoss()).as("1.2 ms of queue > 1 ms (half the minimum)").isEqualTo(PeerBudget.LossVerdict.REDUCED);
        PeerBudget other = new PeerBudget(Long.MAX_VALUE, true);
        other.take(CongestionWindow.INITIAL_BYTES, 0);
        other.rtt().sample(2_000_000, 0);
        assertThat(other.onLoss()).isEqualTo(PeerBudget.LossVerdict.NOT_CONGESTION);
        assertThat(other.onCongestion()).as("a CNP or a timeout always counts").isTrue();
    }

    @Test
    void acknowledgedBytesOpenTheWindowAndGivenUpBytesDoNot() {
        PeerBudget budget = new PeerBudget(Long.MAX_VALUE, true);
        budget.take(64 * 1024, 0);
        budget.release(64 * 1024, false, 0);
        assertThat(budget.effectiveLimitBytes()).isEqualTo(CongestionWindow.INITIAL_BYTES);
        budget.take(64 * 1024, 0);
        budget.release(64 * 1024, true, 0);
        assertThat(budget.effectiveLimitBytes()).isEqualTo(CongestionWindow.INITIAL_BYTES + 64 * 1024);
    }

    /**
     * Towards a peer that holds out-of-order requests ({@link PeerBudget#peerHolds}) the static limit
     * rises to the one given for such a peer and the window grows by the long-path rule; before, the
     * limit stays and the growth is one segment per window whatever the round trip.
     */
    @Test
    void aHoldingPeerGetsTheHigherLimitAndTheLongPathGrowth() {
        PeerBudget b = new PeerBudget(1 << 20, 4 << 20, true);
        assertThat(b.limitBytes()).isEqualTo(1 << 20);
        assertThat(b.holds()).isFalse();
        b.rtt().sample(10_000_000); // a 10 ms path: rho^2 = 100
        b.take(CongestionWindow.INITIAL_BYTES, 0);
        b.onCongestion(); // threshold = window: additive increase from here
        b.release(CongestionWindow.INITIAL_BYTES, true, 0); // the episode ends
        long w0 = b.window().windowBytes();
        b.take(w0, 0);
        b.release(w0, true, 0);
        long plain = b.window().windowBytes() - w0;
        assertThat(plain).as("one segment per window").isBetween(CongestionWindow.SEGMENT_BYTES - 2,
                CongestionWindow.SEGMENT_BYTES + 2);
        b.peerHolds();
        assertThat(b.holds()).isTrue();
        assertThat(b.limitBytes()).isEqualTo(4 << 20);
        long w1 = b.window().windowBytes();
        b.take(w1, 0);
        b.release(w1, true, 0);
        assertThat(b.window().windowBytes() - w1).as("100 segments per window at 10 ms")
                .isBetween(99 * CongestionWindow.SEGMENT_BYTES, 101 * CongestionWindow.SEGMENT_BYTES);
        PeerBudget fixed = new PeerBudget(300_000, true);
        fixed.peerHolds();
        assertThat(fixed.limitBytes()).as("a configured budget stays").isEqualTo(300_000);
    }

    /**
     * An IB timeout collapses the window to one segment only when no QP of the path made progress for
     * the timeout's length (a stalled path); while others progress it is one QP's loss (x 0.7, once
     * per episode), so that many QPs' timers at a bottleneck cannot pin the window at one segment.
     */
    @Test
    void anIbTimeoutCollapsesTheWindowOnlyOnAStalledPath() {
        long period = 67_108_864L; // IB timeout 14
        PeerBudget budget = new PeerBudget(1L << 30, true);
        long start = budget.effectiveLimitBytes();
        assertThat(start).isEqualTo(CongestionWindow.INITIAL_BYTES);
        budget.take(100_000, 0);
        budget.onProgress(1_000_000_000L);
        assertThat(budget.onTimeout(1_000_000_000L + period - 1, period)).as("another QP progressed within the period").isTrue();
        assertThat(budget.effectiveLimitBytes()).isEqualTo((long) (start * CongestionWindow.BETA));
        assertThat(budget.onTimeout(1_000_000_000L + period - 1, period)).as("the same episode").isFalse();
        assertThat(budget.onTimeout(1_000_000_000L + period, period)).as("a whole period of silence on the path").isTrue();
        assertThat(budget.effectiveLimitBytes()).isEqualTo(CongestionWindow.LOSS_WINDOW_BYTES);
        PeerBudget fresh = new PeerBudget(1L << 30, true);
        assertThat(fresh.onTimeout(5, period)).as("no progress ever: stalled").isTrue();
        assertThat(fresh.effectiveLimitBytes()).isEqualTo(CongestionWindow.LOSS_WINDOW_BYTES);
    }
}
