package io.rxe4j.benchmarks;

import io.rxe4j.core.wire.Psn;
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
 * 24-bit PSN window arithmetic ({@link Psn}): the checks the requester (128-PSN window), the
 * completer and the responder (duplicate / out-of-sequence classification) make per packet. Each
 * invocation runs the operation over 1024 PSNs spread across the 2^24 wrap.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
public class PsnBench {
    private static final int N = 1024;
    private final int[] a = new int[N];
    private final int[] b = new int[N];

    @Setup
    public void setUp() {
        java.util.SplittableRandom r = new java.util.SplittableRandom(42);
        for (int i = 0; i < N; i++) {
            a[i] = r.nextInt(Psn.MODULUS);
            b[i] = (a[i] + r.nextInt(-256, 256)) & Psn.MASK; // near each other, across the wrap too
        }
    }

    /** {@link Psn#diff}: the requester's window test {@code diff(psn, compPsn) >= 128}. */
    @Benchmark
    @OperationsPerInvocation(N)
    public int diffWindow() {
        int inWindow = 0;
        for (int i = 0; i < N; i++) {
            if (Psn.diff(a[i], b[i]) < 128) {
                inWindow++;
            }
        }
        return inWindow;
    }

    /** {@link Psn#compare}, {@link Psn#before}, {@link Psn#after}: the responder's classification. */
    @Benchmark
    @OperationsPerInvocation(N)
    public int classify() {
        int s = 0;
        for (int i = 0; i < N; i++) {
            s += Psn.compare(a[i], b[i]) + (Psn.before(a[i], b[i]) ? 2 : 0) + (Psn.after(a[i], b[i]) ? 4 : 0);
        }
        return s;
    }

    /** {@link Psn#add} and {@link Psn#next}: PSN assignment. */
    @Benchmark
    @OperationsPerInvocation(N)
    public int addNext() {
        int s = 0;
        for (int i = 0; i < N; i++) {
            s ^= Psn.next(Psn.add(a[i], b[i] & 0xFF));
        }
        return s;
    }
}
