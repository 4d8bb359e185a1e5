package io.rxe4j.benchmarks;

import io.netty.util.concurrent.FastThreadLocalThread;
import io.rxe4j.core.memory.NativeMemory;

/**
 * Checks that a forked benchmark VM runs the way the benchmarks assume, so that a command line
 * cannot silently change what is measured. JMH's {@code -jvmArgsAppend} (and {@code -jvmArgs})
 * on the command line replace the {@code @Fork} annotation's lists of the same name instead of
 * adding to them; the benchmarks therefore put their options in {@code @Fork(jvmArgsPrepend)},
 * and extra options belong in {@code -jvmArgsAppend}. These checks catch the rest (a
 * {@code -jvmArgsPrepend} on the command line, or {@code -f 0}).
 */
final class ForkChecks {
    private ForkChecks() {}

    /**
     * Throws unless native access is enabled for the engine: without it {@code Icrc} and {@code
     * MemoryCopy} take their slower buffer-view path, which allocates.
     */
    static void requireNativeAccess() {
        if (NativeMemory.everything() == null) {
            throw new IllegalStateException("native access is off in the benchmark VM: pass "
                    + "--enable-native-access=ALL-UNNAMED (kept in @Fork(jvmArgsPrepend); do not override it)");
        }
    }

    /**
     * Throws unless the benchmark thread is a Netty {@code FastThreadLocalThread}, as the
     * transports' event loops are ({@link EventLoopThreadExecutor}): elsewhere the pooled
     * allocator keeps no per-thread cache and the numbers are not the device loop's.
     */
    static void requireEventLoopThread() {
        requireNativeAccess();
        if (!(Thread.currentThread() instanceof FastThreadLocalThread)) {
            throw new IllegalStateException("the benchmark thread " + Thread.currentThread() + " is not a Netty "
                    + "FastThreadLocalThread: the fork needs " + EventLoopThreadExecutor.OPT_EXECUTOR + " "
                    + EventLoopThreadExecutor.OPT_CLASS + " (kept in @Fork(jvmArgsPrepend); pass extra JVM options "
                    + "with -jvmArgsAppend)");
        }
    }
}
