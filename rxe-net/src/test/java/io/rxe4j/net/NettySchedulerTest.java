package io.rxe4j.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.channel.DefaultEventLoop;
import io.rxe4j.verbs.spi.Scheduler.Cancellable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class NettySchedulerTest {

    private final DefaultEventLoop loop = new DefaultEventLoop();
    private final NettyScheduler s = new NettyScheduler(loop);

    @AfterEach
    void shutdown() {
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void executeRunsInOrderOnTheLoop() throws Exception {
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Boolean> inLoop = new CompletableFuture<>();
        for (int i = 0; i < 100; i++) {
            int n = i;
            s.execute(() -> order.add(n));
        }
        s.execute(() -> inLoop.complete(s.inLoop()));

        assertThat(inLoop.get(30, TimeUnit.SECONDS)).isTrue();
        assertThat(s.inLoop()).isFalse();
        assertThat(order).hasSize(100).isSorted();
        assertThat(s.eventLoop()).isSameAs(loop);
    }

    @Test
    void scheduledTaskRunsAfterItsDelay() throws Exception {
        long start = s.nanoTime();
        CompletableFuture<Long> ranAt = new CompletableFuture<>();
        s.schedule(() -> ranAt.complete(s.nanoTime()), TimeUnit.MILLISECONDS.toNanos(20));
        assertThat(ranAt.get(30, TimeUnit.SECONDS) - start)
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(20));
    }

    @Test
    void cancelledTimerDoesNotRun() throws Exception {
        CountDownLatch ran = new CountDownLatch(1);
        Cancellable c = s.schedule(ran::countDown, TimeUnit.MILLISECONDS.toNanos(50));
        c.cancel();
        // a later timer running proves the loop got past the cancelled deadline
        CompletableFuture<Void> later = new CompletableFuture<>();
        s.schedule(() -> later.complete(null), TimeUnit.MILLISECONDS.toNanos(100));
        later.get(30, TimeUnit.SECONDS);
        assertThat(ran.getCount()).isEqualTo(1);
        c.cancel(); // idempotent
    }

    @Test
    void rejectsAfterShutdownAndBadArguments() {
        assertThatThrownBy(() -> s.schedule(() -> {}, -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.execute(null)).isInstanceOf(NullPointerException.class);
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        assertThatThrownBy(() -> s.execute(() -> {})).isInstanceOf(RejectedExecutionException.class);
    }
}
