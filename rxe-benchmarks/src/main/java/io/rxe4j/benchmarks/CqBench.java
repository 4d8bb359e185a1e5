package io.rxe4j.benchmarks;

import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Completion queue: one {@link RxeCq#push} (producer, the device loop) and one
 * {@link RxeCq#poll} (consumer) per completion, on one thread; and a batch of 16.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
public class CqBench {
    private RxeCq cq;
    private final WorkCompletion[] out = new WorkCompletion[16];
    private long wrId;

    @Setup
    public void setUp() {
        cq = new RxeCq(1, 1024);
        for (int i = 0; i < out.length; i++) {
            out[i] = new WorkCompletion();
        }
    }

    /** push 1 + poll 1. */
    @Benchmark
    public long pushPoll() {
        cq.push(++wrId, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 4096, 0x11, 0, 0, 0);
        if (cq.poll(out, 1) != 1) {
            throw new IllegalStateException();
        }
        return out[0].wrId;
    }

    /** push 16 + poll 16 at once (per completion). */
    @Benchmark
    @OperationsPerInvocation(16)
    public long pushPollBatch16() {
        for (int i = 0; i < 16; i++) {
            cq.push(++wrId, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 4096, 0x11, 0, 0, 0);
        }
        if (cq.poll(out, 16) != 16) {
            throw new IllegalStateException();
        }
        return out[15].wrId;
    }
}
