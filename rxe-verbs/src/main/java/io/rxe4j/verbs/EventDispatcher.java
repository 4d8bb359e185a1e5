package io.rxe4j.verbs;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device's event thread: runs asynchronous-event listeners and CQ completion handlers off the
 * device's event loop, so user code never runs on (or blocks) the protocol. One daemon thread,
 * started on first use and stopped after a second idle; tasks run in submission order.
 *
 * <p>Bounds: at most {@value #MAX_TASKS} tasks wait (each CQ has at most one drain task queued, and
 * events come from local QPs and CQs, not from packets, so this is not reached in practice; a task
 * refused beyond it is counted in {@link #dropped()} and logged). The queue for {@link
 * #take} holds the last {@value #MAX_QUEUED_EVENTS} events; older ones are dropped and counted.
 */
final class EventDispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(EventDispatcher.class);
    static final int MAX_TASKS = 65_536;
    static final int MAX_QUEUED_EVENTS = 1024;

    private final ThreadPoolExecutor executor;
    private final CopyOnWriteArrayList<Consumer<AsyncEvent>> listeners = new CopyOnWriteArrayList<>();
    private final BlockingQueue<AsyncEvent> queued = new ArrayBlockingQueue<>(MAX_QUEUED_EVENTS);
    private final AtomicLong dropped = new AtomicLong();

    EventDispatcher(String name) {
        executor = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(MAX_TASKS), r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        }, (r, ex) -> {
            dropped.incrementAndGet();
            LOG.warn("{}: event task dropped (queue of {} full or device closed)", name, MAX_TASKS);
        });
        executor.allowCoreThreadTimeOut(true);
    }

    /** Runs {@code task} on the event thread; any thread. */
    void execute(Runnable task) {
        executor.execute(() -> {
            try {
                task.run();
            } catch (RuntimeException | Error e) {
                LOG.warn("an rxe4j event handler threw; the event thread goes on", e);
            }
        });
    }

    /** Queues {@code e} for {@link #take} and hands it to every listener on the event thread; any thread. */
    void raise(AsyncEvent e) {
        while (!queued.offer(e)) {
            if (queued.poll() != null) {
                dropped.incrementAndGet();
            }
        }
        if (!listeners.isEmpty()) {
            execute(() -> {
                for (Consumer<AsyncEvent> l : listeners) {
                    l.accept(e);
                }
            });
        }
    }

    AsyncEvent take(long timeout, TimeUnit unit) throws InterruptedException {
        return queued.poll(timeout, unit);
    }

    void addListener(Consumer<AsyncEvent> l) {
        listeners.add(l);
    }

    boolean removeListener(Consumer<AsyncEvent> l) {
        return listeners.remove(l);
    }

    long dropped() {
        return dropped.get();
    }

    void shutdown() {
        executor.shutdown();
    }
}
