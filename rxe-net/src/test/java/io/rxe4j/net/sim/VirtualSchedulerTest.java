package io.rxe4j.net.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.verbs.spi.Scheduler.Cancellable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class VirtualSchedulerTest {

    private final VirtualScheduler s = new VirtualScheduler();
    private final List<String> log = new ArrayList<>();

    @Test
    void executeRunsTasksFifoOnlyInsideRun() {
        s.execute(() -> log.add("a"));
        s.execute(() -> log.add("b"));
        s.execute(() -> log.add("c"));
        assertThat(log).isEmpty();
        assertThat(s.pendingTasks()).isEqualTo(3);

        assertThat(s.runUntilIdle()).isEqualTo(3);

        assertThat(log).containsExactly("a", "b", "c");
        assertThat(s.nanoTime()).isZero();
        assertThat(s.pendingTasks()).isZero();
        assertThat(s.tasksRun()).isEqualTo(3);
    }

    @Test
    void timersRunInDeadlineOrderAndTheClockJumpsToEach() {
        List<Long> times = new ArrayList<>();
        s.schedule(() -> { log.add("300"); times.add(s.nanoTime()); }, 300);
        s.schedule(() -> { log.add("100"); times.add(s.nanoTime()); }, 100);
        s.schedule(() -> { log.add("200"); times.add(s.nanoTime()); }, 200);

        s.runUntilIdle();

        assertThat(log).containsExactly("100", "200", "300");
        assertThat(times).containsExactly(100L, 200L, 300L);
        assertThat(s.nanoTime()).isEqualTo(300);
    }

    @Test
    void immediateTasksRunBeforeTheClockJumps() {
        s.schedule(() -> log.add("timer"), 50);
        s.execute(() -> {
            log.add("first");
            s.execute(() -> log.add("queued-by-first"));
        });

        s.runUntilIdle();

        assertThat(log).containsExactly("first", "queued-by-first", "timer");
    }

    @Test
    void equalDeadlinesRunInInsertionOrder() {
        for (int i = 0; i < 10; i++) {
            int n = i;
            s.schedule(() -> log.add("t" + n), 1_000);
        }
        s.runUntilIdle();
        assertThat(log).containsExactly("t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9");
    }

    @Test
    void dueTimersRunBeforeATaskExecutedAtTheSameTime() {
        s.schedule(() -> log.add("timer0"), 0);
        s.execute(() -> log.add("task"));
        s.runUntilIdle();
        assertThat(log).containsExactly("timer0", "task");
    }

    @Test
    void timersScheduledFromATaskAreRelativeToTheVirtualNow() {
        s.schedule(() -> s.schedule(() -> log.add("at " + s.nanoTime()), 40), 60);
        s.runUntilIdle();
        assertThat(log).containsExactly("at 100");
    }

    @Test
    void cancelledTimerNeitherRunsNorMovesTheClock() {
        Cancellable c = s.schedule(() -> log.add("cancelled"), 500);
        s.schedule(() -> log.add("kept"), 100);
        c.cancel();
        c.cancel(); // idempotent

        s.runUntilIdle();

        assertThat(log).containsExactly("kept");
        assertThat(s.nanoTime()).isEqualTo(100);
    }

    @Test
    void cancelAfterRunIsANoOp() {
        Cancellable c = s.schedule(() -> log.add("ran"), 10);
        s.runUntilIdle();
        c.cancel();
        assertThat(log).containsExactly("ran");
    }

    @Test
    void aTimerCanCancelALaterOne() {
        Cancellable[] later = new Cancellable[1];
        s.schedule(() -> later[0].cancel(), 10);
        later[0] = s.schedule(() -> log.add("later"), 20);
        s.runUntilIdle();
        assertThat(log).isEmpty();
        assertThat(s.nanoTime()).isEqualTo(10);
    }

    @Test
    void runForRunsOnlyDueTasksAndAdvancesTheClock() {
        s.schedule(() -> log.add("50"), 50);
        s.schedule(() -> log.add("100"), 100);
        s.schedule(() -> log.add("101"), 101);

        assertThat(s.runFor(100)).isEqualTo(2);
        assertThat(log).containsExactly("50", "100");
        assertThat(s.nanoTime()).isEqualTo(100);

        assertThat(s.runFor(0)).isZero();
        assertThat(s.runFor(1_000)).isEqualTo(1);
        assertThat(log).containsExactly("50", "100", "101");
        assertThat(s.nanoTime()).isEqualTo(1_100);
    }

    @Test
    void runUntilStopsWhenTheConditionHolds() {
        AtomicInteger counter = new AtomicInteger();
        for (int i = 1; i <= 10; i++) {
            s.schedule(counter::incrementAndGet, i * 10L);
        }

        boolean met = s.runUntil(() -> counter.get() == 3, 1_000);

        assertThat(met).isTrue();
        assertThat(counter).hasValue(3);
        assertThat(s.nanoTime()).isEqualTo(30);
        assertThat(s.pendingTasks()).isEqualTo(7);
    }

    @Test
    void runUntilReturnsFalseAfterMaxVirtualTime() {
        AtomicInteger counter = new AtomicInteger();
        s.schedule(counter::incrementAndGet, 10);
        s.schedule(counter::incrementAndGet, 5_000);

        boolean met = s.runUntil(() -> counter.get() == 2, 1_000);

        assertThat(met).isFalse();
        assertThat(counter).hasValue(1);
        assertThat(s.nanoTime()).isEqualTo(1_000);
        assertThat(s.pendingTasks()).isEqualTo(1);
    }

    @Test
    void runUntilChecksTheConditionBeforeRunningAnything() {
        s.execute(() -> log.add("not run"));
        assertThat(s.runUntil(() -> true, 10)).isTrue();
        assertThat(log).isEmpty();
        assertThat(s.nanoTime()).isZero();
    }

    @Test
    void runNextRunsOneTask() {
        s.schedule(() -> log.add("b"), 7);
        s.execute(() -> log.add("a"));
        assertThat(s.runNext()).isTrue();
        assertThat(log).containsExactly("a");
        assertThat(s.runNext()).isTrue();
        assertThat(s.nanoTime()).isEqualTo(7);
        assertThat(s.runNext()).isFalse();
    }

    @Test
    void nextDeadlineReportsTheEarliestTask() {
        assertThat(s.nextDeadline()).isEmpty();
        s.schedule(() -> {}, 70);
        s.schedule(() -> {}, 30);
        assertThat(s.nextDeadline()).hasValue(30);
    }

    @Test
    void startTimeIsConfigurable() {
        VirtualScheduler v = new VirtualScheduler(1_000_000, 100);
        v.schedule(() -> log.add("t=" + v.nanoTime()), 5);
        v.runUntilIdle();
        assertThat(log).containsExactly("t=1000005");
    }

    @Test
    void endlessReschedulingHitsTheTaskLimit() {
        VirtualScheduler v = new VirtualScheduler(0, 1_000);
        Runnable[] tick = new Runnable[1];
        tick[0] = () -> v.schedule(tick[0], 10);
        v.execute(tick[0]);

        assertThatThrownBy(v::runUntilIdle)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("1000 tasks");
        // the scheduler is usable afterwards
        assertThat(v.runFor(25)).isEqualTo(2);
    }

    @Test
    void inLoopOnTheRunningThreadAndOnTheIdleOwnerThreadOnly() throws Exception {
        AtomicBoolean inLoopInTask = new AtomicBoolean();
        AtomicBoolean otherThreadWhileRunning = new AtomicBoolean(true);
        s.execute(() -> {
            inLoopInTask.set(s.inLoop());
            otherThreadWhileRunning.set(
                    CompletableFuture.supplyAsync(s::inLoop).join());
        });

        assertThat(s.inLoop()).isTrue(); // idle, creating thread
        assertThat(CompletableFuture.supplyAsync(s::inLoop).get(10, TimeUnit.SECONDS)).isFalse();
        s.runUntilIdle();

        assertThat(inLoopInTask).isTrue();
        assertThat(otherThreadWhileRunning).isFalse();
    }

    @Test
    void tasksQueuedFromOtherThreadsRunOnTheCallingThread() throws Exception {
        Thread caller = Thread.currentThread();
        List<Thread> ranOn = new ArrayList<>();
        CompletableFuture.runAsync(() -> {
            for (int i = 0; i < 100; i++) {
                s.execute(() -> ranOn.add(Thread.currentThread()));
            }
        }).get(10, TimeUnit.SECONDS);

        s.runUntilIdle();

        assertThat(ranOn).hasSize(100).allMatch(t -> t == caller);
    }

    @Test
    void runningReentrantlyIsRejected() {
        AtomicBoolean rejected = new AtomicBoolean();
        s.execute(() -> {
            try {
                s.runUntilIdle();
            } catch (IllegalStateException e) {
                rejected.set(true);
            }
        });
        s.runUntilIdle();
        assertThat(rejected).isTrue();
    }

    @Test
    void aThrowingTaskPropagatesAndLeavesTheRestQueued() {
        s.execute(() -> {
            throw new IllegalArgumentException("boom");
        });
        s.execute(() -> log.add("after"));

        assertThatThrownBy(s::runUntilIdle).isInstanceOf(IllegalArgumentException.class).hasMessage("boom");
        assertThat(s.inLoop()).isTrue();
        assertThat(s.pendingTasks()).isEqualTo(1);
        s.runUntilIdle();
        assertThat(log).containsExactly("after");
    }

    @Test
    void shutdownDropsTasksAndRejectsNewOnes() {
        s.execute(() -> log.add("dropped"));
        assertThat(s.shutdown()).isEqualTo(1);
        assertThat(s.isShutdown()).isTrue();
        assertThatThrownBy(() -> s.execute(() -> {})).isInstanceOf(RejectedExecutionException.class);
        assertThatThrownBy(() -> s.schedule(() -> {}, 1)).isInstanceOf(RejectedExecutionException.class);
        assertThat(s.runUntilIdle()).isZero();
        assertThat(log).isEmpty();
    }

    @Test
    void invalidArgumentsAreRejected() {
        assertThatThrownBy(() -> s.schedule(() -> {}, -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.runFor(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.runUntil(() -> true, -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.execute(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new VirtualScheduler(0, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void hugeDelaysSaturateInsteadOfOverflowing() {
        VirtualScheduler v = new VirtualScheduler(10, 100);
        v.schedule(() -> log.add("never"), Long.MAX_VALUE);
        assertThat(v.nextDeadline()).hasValue(Long.MAX_VALUE);
        v.runFor(1_000);
        assertThat(log).isEmpty();
    }

    @Test
    void shutdownTellsEachDroppedDroppableTaskOnceAndRunsNone() {
        VirtualScheduler vs = new VirtualScheduler();
        List<String> log = new ArrayList<>();
        class Owner implements VirtualScheduler.Droppable {
            final String name;

            Owner(String name) {
                this.name = name;
            }

            @Override
            public void run() {
                log.add("ran " + name);
            }

            @Override
            public void onDropped() {
                log.add("dropped " + name);
            }
        }
        vs.execute(new Owner("now"));
        vs.schedule(new Owner("later"), 5_000);
        vs.execute(() -> log.add("plain"));
        Cancellable c = vs.schedule(new Owner("cancelled"), 1_000);
        c.cancel();
        assertThat(vs.shutdown()).isEqualTo(3);
        assertThat(log).containsExactly("dropped now", "dropped later");
        assertThat(vs.shutdown()).as("idempotent").isZero();
        assertThat(log).hasSize(2);
    }
}
