package io.rxe4j.benchmarks;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH executor ({@code -Djmh.executor=CUSTOM -Djmh.executor.class=...}) whose benchmark threads
 * are Netty {@code FastThreadLocalThread}s, as the transports' event loops are. Netty 4.2's
 * pooled allocators keep per-thread buffer caches (and recycle buffer objects) only for such
 * threads by default; on a plain JMH worker every packet buffer would go through the shared arena
 * and allocate, which the device's own loop never does.
 */
public final class EventLoopThreadExecutor extends ThreadPoolExecutor {
    /** The JVM options that select this executor in a forked benchmark VM. */
    public static final String OPT_EXECUTOR = "-Djmh.executor=CUSTOM";
    /** @see #OPT_EXECUTOR */
    public static final String OPT_CLASS = "-Djmh.executor.class=io.rxe4j.benchmarks.EventLoopThreadExecutor";

    /**
     * @param maxThreads the JMH worker count
     * @param prefix thread name prefix
     */
    public EventLoopThreadExecutor(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 1, TimeUnit.MINUTES, new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix, true));
    }
}
