package io.rxe4j.examples.perf;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.function.LongSupplier;

/**
 * rxe-perf's warm-up before each measured size: one phase of {@code -w}, then, while the JVM's JIT
 * compilers are still busy, further phases of {@link #STEP_NANOS}, until a phase compiled for at most
 * {@link #QUIET_MILLIS} or the warm-up has run {@link #MAX_EXTRA_NANOS} beyond {@code -w}.
 *
 * <p>Why: on a 2-core machine the C2 compiler thread works on rxe4j's engine for the first 5-6 s of
 * a JVM, a fifth of the machine; a fixed 1 s warm-up left that inside rxe4j's measured phase and
 * outside the raw-UDP phase that {@code --compare} runs after it (issue 25: write_bw 64 B over epoll
 * 0.65x raw with a fixed 1 s warm-up, 0.83-0.85x with 4 s).
 */
final class WarmUp {
    /** One extension step, in nanoseconds. */
    static final long STEP_NANOS = 500_000_000L;
    /** Compilation in a step (milliseconds, all compiler threads) at or below which the JIT counts as settled. */
    static final long QUIET_MILLIS = 25;
    /** The most a warm-up runs beyond {@code -w}, in nanoseconds. */
    static final long MAX_EXTRA_NANOS = 10_000_000_000L;

    /** A timed phase of the test being warmed up. */
    @FunctionalInterface
    interface Phase {
        /** Runs the test for {@code nanos} nanoseconds. */
        void run(long nanos) throws Exception;
    }

    private final LongSupplier compiledMillis;
    private final LongSupplier nanoTime;

    /**
     * @param compiledMillis the JIT's total compilation time so far, in milliseconds; null: a fixed
     *     warm-up of exactly {@code -w}
     * @param nanoTime the clock, in nanoseconds
     */
    WarmUp(LongSupplier compiledMillis, LongSupplier nanoTime) {
        this.compiledMillis = compiledMillis;
        this.nanoTime = nanoTime;
    }

    /**
     * The warm-up of this JVM: extended while its {@link CompilationMXBean} reports compilation, or
     * fixed when {@code settle} is false or the JVM does not report compilation time.
     */
    static WarmUp ofThisJvm(boolean settle) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean watch = settle && jit != null && jit.isCompilationTimeMonitoringSupported();
        return new WarmUp(watch ? jit::getTotalCompilationTime : null, System::nanoTime);
    }

    /**
     * Runs the warm-up.
     *
     * @param minNanos {@code -w}, in nanoseconds; 0 or less: no warm-up at all
     * @return how long the warm-up ran by {@link #nanoTime}, in nanoseconds
     */
    long run(long minNanos, Phase phase) throws Exception {
        if (minNanos <= 0) {
            return 0;
        }
        long start = nanoTime.getAsLong();
        long before = compiledMillis == null ? 0 : compiledMillis.getAsLong();
        phase.run(minNanos);
        if (compiledMillis != null) {
            // the first phase's compilation at the rate of a step: quiet enough already?
            long compiled = (compiledMillis.getAsLong() - before) * STEP_NANOS / minNanos;
            long cap = start + minNanos + MAX_EXTRA_NANOS;
            while (compiled > QUIET_MILLIS && nanoTime.getAsLong() - cap < 0) {
                before = compiledMillis.getAsLong();
                phase.run(STEP_NANOS);
                compiled = compiledMillis.getAsLong() - before;
            }
        }
        return nanoTime.getAsLong() - start;
    }
}
