package io.rxe4j.core.cq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CompletionQueueTest {

    private static WorkCompletion[] slots(int n) {
        WorkCompletion[] out = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            out[i] = new WorkCompletion();
        }
        return out;
    }

    private static boolean push(RxeCq cq, long wrId) {
        return cq.push(wrId, WcStatus.SUCCESS, WcOpcode.SEND, (int) wrId, 0x11, 0, 0, 0);
    }

    @Test
    void pushPollInOrderWithAllFields() {
        RxeCq cq = new RxeCq(3, 8);
        assertThat(cq.handle()).isEqualTo(3);
        assertThat(cq.capacity()).isEqualTo(8);
        assertThat(cq.push(10, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 100, 17, WorkCompletion.WC_WITH_IMM, 0xCAFE, 0))
                .isTrue();
        assertThat(cq.push(11, WcStatus.RETRY_EXC_ERR, WcOpcode.SEND, 0, 17, 0, 0, 5)).isTrue();
        assertThat(cq.size()).isEqualTo(2);
        WorkCompletion[] out = slots(4);
        assertThat(cq.poll(out, 4)).isEqualTo(2);
        assertThat(out[0].wrId).isEqualTo(10);
        assertThat(out[0].status).isEqualTo(WcStatus.SUCCESS);
        assertThat(out[0].opcode).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(out[0].byteLen).isEqualTo(100);
        assertThat(out[0].qpNum).isEqualTo(17);
        assertThat(out[0].wcFlags).isEqualTo(WorkCompletion.WC_WITH_IMM);
        assertThat(out[0].immData).isEqualTo(0xCAFE);
        assertThat(out[1].wrId).isEqualTo(11);
        assertThat(out[1].status).isEqualTo(WcStatus.RETRY_EXC_ERR);
        assertThat(out[1].vendorErr).isEqualTo(5);
        assertThat(cq.size()).isZero();
        assertThat(cq.poll(out, 4)).isZero();
        assertThat(cq.overflowed()).isFalse();
    }

    @Test
    void capacityExactlyNThenPushFailsAndOverflowIsSticky() {
        int n = 5;
        RxeCq cq = new RxeCq(1, n);
        for (int i = 0; i < n; i++) {
            assertThat(push(cq, i)).as("push %d", i).isTrue();
        }
        assertThat(cq.overflowed()).isFalse();
        assertThat(cq.size()).isEqualTo(n);
        assertThat(push(cq, 99)).isFalse();
        assertThat(cq.overflowed()).isTrue();
        assertThat(cq.size()).isEqualTo(n);
        WorkCompletion[] out = slots(1);
        assertThat(cq.poll(out, 1)).isEqualTo(1);
        assertThat(out[0].wrId).isZero();
        assertThat(push(cq, 5)).as("room again").isTrue();
        assertThat(cq.overflowed()).as("overflow stays reported").isTrue();
        WorkCompletion[] all = slots(10);
        assertThat(cq.poll(all, 10)).isEqualTo(n);
        for (int i = 0; i < n; i++) {
            assertThat(all[i].wrId).isEqualTo(i + 1); // 99 was lost
        }
    }

    @Test
    void ringWrapsManyTimes() {
        RxeCq cq = new RxeCq(1, 3);
        WorkCompletion[] out = slots(2);
        long expect = 0;
        long next = 0;
        for (int round = 0; round < 1000; round++) {
            while (push(cq, next)) {
                next++;
            }
            int got = cq.poll(out, 1 + round % 2);
            for (int i = 0; i < got; i++) {
                assertThat(out[i].wrId).isEqualTo(expect++);
            }
        }
    }

    @Test
    void pollWithMaxBelowAvailable() {
        RxeCq cq = new RxeCq(1, 16);
        for (int i = 0; i < 10; i++) {
            push(cq, i);
        }
        WorkCompletion[] out = slots(8);
        assertThat(cq.poll(out, 3)).isEqualTo(3);
        assertThat(out[0].wrId).isEqualTo(0);
        assertThat(out[2].wrId).isEqualTo(2);
        assertThat(cq.size()).isEqualTo(7);
        assertThat(cq.poll(out, 0)).isZero();
        assertThat(cq.size()).isEqualTo(7);
        assertThat(cq.poll(out, 8)).isEqualTo(7);
        assertThat(out[0].wrId).isEqualTo(3);
        assertThat(out[6].wrId).isEqualTo(9);
    }

    @Test
    void pollArgumentErrors() {
        RxeCq cq = new RxeCq(1, 4);
        push(cq, 1);
        push(cq, 2);
        assertThatThrownBy(() -> cq.poll(slots(2), 3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3");
        assertThatThrownBy(() -> cq.poll(slots(2), -1)).isInstanceOf(IllegalArgumentException.class);
        WorkCompletion[] withNull = {new WorkCompletion(), null};
        assertThatThrownBy(() -> cq.poll(withNull, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out[1]");
        assertThat(cq.size()).as("a failed poll consumes nothing").isEqualTo(2);
        WorkCompletion[] out = slots(2);
        assertThat(cq.poll(out, 2)).isEqualTo(2);
        assertThat(out[0].wrId).isEqualTo(1);
        assertThatThrownBy(() -> new RxeCq(1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void awaitReturnsWhenCompletionPresent() {
        RxeCq cq = new RxeCq(1, 4);
        assertThat(cq.await(0)).isFalse();
        push(cq, 1);
        assertThat(cq.await(0)).isTrue();
    }

    @Test
    @Timeout(60)
    void oneProducerOneConsumerSeesEveryWrIdOnceInOrder() throws InterruptedException {
        final int total = 100_000;
        RxeCq cq = new RxeCq(1, 256);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            for (long i = 0; i < total; i++) {
                while (!cq.push(i, WcStatus.SUCCESS, WcOpcode.RECV, (int) i, (int) (i & 0xFFFFFF), 0, (int) (i * 31), 0)) {
                    Thread.onSpinWait();
                }
            }
        }, "cq-producer");
        long[] next = {0};
        Thread consumer = new Thread(() -> {
            try {
                WorkCompletion[] out = slots(37);
                while (next[0] < total) {
                    int n = cq.poll(out, out.length);
                    for (int i = 0; i < n; i++) {
                        long id = out[i].wrId;
                        if (id != next[0] || out[i].byteLen != (int) id || out[i].immData != (int) (id * 31)
                                || out[i].opcode != WcOpcode.RECV) {
                            throw new AssertionError("expected wrId " + next[0] + " got " + out[i]);
                        }
                        next[0]++;
                    }
                    if (n == 0) {
                        Thread.onSpinWait();
                    }
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "cq-consumer");
        producer.start();
        consumer.start();
        producer.join();
        consumer.join();
        assertThat(failure.get()).isNull();
        assertThat(next[0]).isEqualTo(total);
        assertThat(cq.size()).isZero();
    }

    /** Waits (bounded, 10 s) until {@code n} threads are blocked in {@code cq.await}. */
    private static void awaitWaiters(RxeCq cq, int n) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.waiters() < n) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("only " + cq.waiters() + " of " + n + " waiters registered");
            }
            Thread.onSpinWait();
        }
    }

    /** Two threads wait at once; one completion wakes both (no single "waiter" slot overwritten by the second). */
    @Test
    @Timeout(60)
    void twoWaitersAreBothWokenByOneCompletion() throws InterruptedException {
        RxeCq cq = new RxeCq(1, 4);
        boolean[] got = new boolean[2];
        Thread[] t = new Thread[2];
        for (int i = 0; i < 2; i++) {
            int k = i;
            t[i] = new Thread(() -> got[k] = cq.await(120_000_000_000L), "cq-waiter-" + i);
            t[i].start();
        }
        awaitWaiters(cq, 2);
        push(cq, 7);
        for (Thread th : t) {
            th.join(30_000);
            assertThat(th.isAlive()).as("%s still parked after the completion", th.getName()).isFalse();
        }
        assertThat(got).containsExactly(true, true);
        assertThat(cq.waiters()).isZero();
    }

    /** An interrupted waiter returns at once (it used to spin on parkNanos until its timeout). */
    @Test
    @Timeout(60)
    void anInterruptedWaiterReturns() throws InterruptedException {
        RxeCq cq = new RxeCq(1, 4);
        boolean[] got = {true};
        Thread t = new Thread(() -> got[0] = cq.await(120_000_000_000L), "cq-waiter");
        t.start();
        awaitWaiters(cq, 1);
        t.interrupt();
        t.join(30_000);
        assertThat(t.isAlive()).isFalse();
        assertThat(got[0]).isFalse();
    }

    /**
     * 20,000 hand-offs between two threads through two CQs, each side blocking in {@code await}
     * with a 2-minute timeout and no polling interval: a single lost wake-up parks a side for two
     * minutes and the test times out.
     */
    @Test
    @Timeout(100)
    void noWakeUpIsLostInManyHandOffs() throws InterruptedException {
        final int rounds = 20_000;
        RxeCq ping = new RxeCq(1, 4);
        RxeCq pong = new RxeCq(2, 4);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                WorkCompletion[] out = slots(1);
                for (int i = 0; i < rounds; i++) {
                    while (ping.poll(out, 1) == 0) {
                        ping.await(120_000_000_000L);
                    }
                    if (out[0].wrId != i) {
                        throw new AssertionError("ping " + out[0].wrId + " != " + i);
                    }
                    push(pong, i);
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "cq-pong");
        other.start();
        WorkCompletion[] out = slots(1);
        for (int i = 0; i < rounds && failure.get() == null; i++) {
            push(ping, i);
            while (pong.poll(out, 1) == 0) {
                pong.await(120_000_000_000L);
            }
            assertThat(out[0].wrId).isEqualTo(i);
        }
        other.join(30_000);
        assertThat(failure.get()).isNull();
        assertThat(other.isAlive()).isFalse();
    }
}
