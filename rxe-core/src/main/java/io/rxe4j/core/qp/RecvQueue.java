package io.rxe4j.core.qp;

import io.rxe4j.verbs.RecvWr;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The receive queue of a QP ({@code rxe_queue.c} for the RQ; a shared receive queue would sit
 * beside it): a ring of preallocated {@link RecvWqe} slots, the producer index that posting
 * threads advance and the consumer index that the responder advances.
 *
 * <p>Threading: {@link #tryPost} may be called from any thread: it copies the WR into its slot
 * under the producer lock and publishes it with a release store of the producer index.
 * Everything else runs on the QP's loop.
 *
 * <p>Layout: as {@link SendQueue}, the producer and consumer indices sit on separate 64-byte
 * cache lines, padded by the seven longs after each ({@code QueueIndexLayoutTest}).
 */
final class RecvQueue {
    private static final VarHandle PROD;
    private static final VarHandle CONS;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PROD = l.findVarHandle(RecvQueue.class, "prod", long.class);
            CONS = l.findVarHandle(RecvQueue.class, "cons", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RecvWqe[] ring;
    private final Object lock = new Object();

    @SuppressWarnings("unused")
    private long prod; // next slot users fill; published with release
    @SuppressWarnings("unused")
    private long padP1, padP2, padP3, padP4, padP5, padP6, padP7;
    @SuppressWarnings("unused")
    private long cons; // oldest unconsumed receive WQE (responder); published with release
    @SuppressWarnings("unused")
    private long padC1, padC2, padC3, padC4, padC5, padC6, padC7;

    /**
     * @param maxRecvWr slots (max_recv_wr)
     * @param maxRecvSge SGEs per slot (max_recv_sge)
     */
    RecvQueue(int maxRecvWr, int maxRecvSge) {
        this.ring = new RecvWqe[maxRecvWr];
        for (int i = 0; i < ring.length; i++) {
            ring[i] = new RecvWqe(maxRecvSge);
        }
    }

    /** @return the number of slots (max_recv_wr) */
    int capacity() {
        return ring.length;
    }

    /**
     * Queues a copy of {@code wr}, already validated ({@link WrValidator#validateRecv}). Any thread.
     *
     * @param total the WR's total length in bytes
     * @return false if the queue is full; nothing was queued
     */
    boolean tryPost(RecvWr wr, long total) {
        synchronized (lock) {
            long p = (long) PROD.getOpaque(this);
            long c = (long) CONS.getAcquire(this);
            if (p - c >= ring.length) {
                return false;
            }
            ring[(int) (p % ring.length)].fill(wr, total);
            PROD.setRelease(this, p + 1);
        }
        return true;
    }

    /** @return the next receive WQE without consuming it, or null if the queue is empty. Loop. */
    RecvWqe peek() {
        long c = (long) CONS.getOpaque(this);
        if (c == (long) PROD.getAcquire(this)) {
            return null;
        }
        return ring[(int) (c % ring.length)];
    }

    /** Consumes the receive WQE returned by {@link #peek()} (release: its slot may be reused). Loop. */
    void consume() {
        CONS.setRelease(this, (long) CONS.getOpaque(this) + 1);
    }

    /** Drops every queued WQE without completions (modify to RESET). Loop. */
    void reset() {
        CONS.setRelease(this, (long) PROD.getAcquire(this));
    }
}
