package io.rxe4j.core.cq;

import io.rxe4j.verbs.provider.CqOps;

import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion queue ({@code ibv_cq}): a bounded ring of preallocated completion slots.
 *
 * <p>Threading: one producer, the event loop (device lane) the CQ is bound to ({@link #push});
 * any number of consumers ({@link #poll}, serialized by a lock on the consumer side only). The
 * producer publishes a slot with a release store of the tail; consumers read the tail with acquire
 * semantics, so a polled completion is fully written. A CQ that receives completions from QPs on
 * two lanes (a QP whose receive CQ is on another lane than its send CQ) is switched to shared mode
 * once ({@link #shareWithAnotherLane}): from then on every push takes a producer lock. When the ring is full, {@link #push}
 * returns {@code false} and the QP that produced the completion moves to ERR
 * ({@code rxe-facts.md} §5.6, "Receive CQ overflow").
 *
 * <p>Waiting ({@link #await}): any number of threads may wait at once. A waiter registers itself,
 * then re-checks the ring; the producer publishes the tail with a volatile store (a full fence)
 * before it reads the waiter count. So either the waiter sees the new tail, or the producer sees
 * the waiter and unparks it: no wake-up is lost, and no polling interval hides one.
 */
public final class RxeCq implements CqOps {
    private static final VarHandle TAIL;
    private static final VarHandle HEAD;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(RxeCq.class, "tail", long.class);
            HEAD = l.findVarHandle(RxeCq.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int handle;
    private final WorkCompletion[] slots;
    // tail (written by the producing loop) and head (written by pollers) on separate 64-byte cache
    // lines: HotSpot lays out fields of one size in declaration order, so the seven longs between them
    // are the padding (QueueIndexLayoutTest checks the offsets)
    @SuppressWarnings("unused")
    private long tail;
    @SuppressWarnings("unused")
    private long pad1, pad2, pad3, pad4, pad5, pad6, pad7;
    @SuppressWarnings("unused")
    private long head;
    @SuppressWarnings("unused")
    private long padH1, padH2, padH3, padH4, padH5, padH6, padH7;
    /** Threads blocked in {@link #await}; registered before they re-check the ring. */
    private final java.util.concurrent.ConcurrentLinkedQueue<Thread> waiters =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final java.util.concurrent.atomic.AtomicInteger waiterCount = new java.util.concurrent.atomic.AtomicInteger();
    private volatile boolean overflowed;

    /** {@link #reqNotify} modes held in {@link #armed}; the larger value wins when both are asked for. */
    private static final int DISARMED = 0;
    private static final int ARMED_SOLICITED = 1;
    private static final int ARMED_NEXT = 2;
    /**
     * The notification request ({@code ibv_req_notify_cq}): written by any thread, read and
     * cleared by the producer with a CAS when it fires, so each arming gives at most one event.
     */
    private final java.util.concurrent.atomic.AtomicInteger armed = new java.util.concurrent.atomic.AtomicInteger();
    private volatile Events events;
    /** The device lane (completion vector) whose QPs use this CQ as their send CQ. */
    private int lane;
    /** Pushes come from more than one loop: each takes {@link #producerLock}. */
    private volatile boolean shared;
    private final Object producerLock = new Object();


    /**
     * @param handle device-unique CQ number
     * @param cqe capacity in completions, {@code >= 1}
     */
    public RxeCq(int handle, int cqe) {
        if (cqe < 1) {
            throw new IllegalArgumentException("CQ size must be >= 1, got " + cqe);
        }
        this.handle = handle;
        this.slots = new WorkCompletion[cqe];
        for (int i = 0; i < cqe; i++) {
            slots[i] = new WorkCompletion();
        }
    }

    /** Sets the CQ's lane (completion vector); called once by the device before the CQ is used. */
    public void bindLane(int lane) {
        this.lane = lane;
    }

    /** @return the device lane (completion vector) the CQ is bound to */
    public int lane() {
        return lane;
    }

    /**
     * Switches the CQ to shared mode: pushes from then on take a producer lock, so that QPs on
     * two lanes may complete into it. The caller must then let the CQ's own lane end its current
     * task before a QP of another lane can push (so that no unlocked push is still in progress).
     */
    public void shareWithAnotherLane() {
        shared = true;
    }

    /** @return whether pushes come from more than one lane (and take a producer lock) */
    public boolean sharedAcrossLanes() {
        return shared;
    }

    /** @return the device-unique CQ number */
    public int handle() {
        return handle;
    }

    /** @return the capacity in completions */
    public int capacity() {
        return slots.length;
    }

    /** @return whether a push has ever failed for lack of room */
    public boolean overflowed() {
        return overflowed;
    }

    /**
     * Appends a completion. Producer side: call only on the device loop.
     *
     * @return {@code false} if the CQ is full (the completion is lost and the caller must move
     *     its QP to ERR)
     */
    public boolean push(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int qpNum, int wcFlags,
            int immData, int vendorErr) {
        return push(wrId, status, opcode, byteLen, qpNum, wcFlags, immData, vendorErr, false);
    }

    /**
     * As {@link #push(long, WcStatus, WcOpcode, int, int, int, int, int)}, for a completion that
     * may be solicited: a receive completion of a message whose last packet had the BTH SE bit.
     *
     * @param solicited whether the completion satisfies a solicited-only arming
     */
    public boolean push(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int qpNum, int wcFlags,
            int immData, int vendorErr, boolean solicited) {
        return push(wrId, status, opcode, byteLen, qpNum, wcFlags, immData, vendorErr, solicited, 0);
    }

    /**
     * As {@link #push(long, WcStatus, WcOpcode, int, int, int, int, int, boolean)}, with the sender's
     * QPN of a UD receive completion ({@code wc.src_qp}; 0 otherwise).
     */
    public boolean push(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int qpNum, int wcFlags,
            int immData, int vendorErr, boolean solicited, int srcQp) {
        if (shared) {
            synchronized (producerLock) {
                return push0(wrId, status, opcode, byteLen, qpNum, wcFlags, immData, vendorErr, solicited, srcQp);
            }
        }
        return push0(wrId, status, opcode, byteLen, qpNum, wcFlags, immData, vendorErr, solicited, srcQp);
    }

    private boolean push0(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int qpNum, int wcFlags,
            int immData, int vendorErr, boolean solicited, int srcQp) {
        long t = (long) TAIL.getOpaque(this);
        long h = (long) HEAD.getAcquire(this);
        if (t - h >= slots.length) {
            if (!overflowed) {
                overflowed = true;
                Events e = events;
                if (e != null) {
                    e.overflow();
                }
            }
            return false;
        }
        WorkCompletion wc = slots[(int) (t % slots.length)];
        wc.wrId = wrId;
        wc.status = status;
        wc.opcode = opcode;
        wc.byteLen = byteLen;
        wc.qpNum = qpNum;
        wc.wcFlags = wcFlags;
        boolean inv = (wcFlags & io.rxe4j.verbs.WorkCompletion.WC_WITH_INV) != 0; // imm slot: the invalidated rkey
        wc.immData = inv ? 0 : immData;
        wc.invalidatedRkey = inv ? immData : 0;
        wc.vendorErr = vendorErr;
        wc.srcQp = srcQp;
        // volatile (not just release): the store must be ordered before the read of waiterCount,
        // the other half of await's "register, then re-check" (a Dekker pair)
        TAIL.setVolatile(this, t + 1);
        if (waiterCount.get() != 0) {
            for (Thread w : waiters) {
                LockSupport.unpark(w);
            }
        }
        int a = armed.get();
        if (a != DISARMED && (a == ARMED_NEXT || solicited || status != WcStatus.SUCCESS)
                && armed.compareAndSet(a, DISARMED)) {
            Events e = events;
            if (e != null) {
                e.completionEvent();
            }
        }
        return true;
    }

    /**
     * Arms the CQ for one completion event ({@code ibv_req_notify_cq}): the next completion pushed
     * after this call, or with {@code solicitedOnly} the next solicited receive completion or
     * unsuccessful completion (IBTA 11.4.2.2; rdma_rxe does not count unsuccessful ones), fires
     * {@link Events#completionEvent} once. Arming for the next completion supersedes a
     * solicited-only arming. Completions already in the ring do not fire the event; the return
     * value says whether there are any ({@code IB_CQ_REPORT_MISSED_EVENTS}), so the caller can
     * poll them instead of waiting.
     *
     * @return whether completions were already waiting when the CQ was armed
     */
    public boolean reqNotify(boolean solicitedOnly) {
        int mode = solicitedOnly ? ARMED_SOLICITED : ARMED_NEXT;
        armed.accumulateAndGet(mode, Math::max); // a full fence before the check below
        return size() != 0;
    }

    /** @return whether the CQ is armed (a snapshot) */
    public boolean isArmed() {
        return armed.get() != DISARMED;
    }

    /** Sets where this CQ reports events (null: nowhere). */
    public void events(Events events) {
        this.events = events;
    }

    /**
     * Polls up to {@code max} completions into {@code out[0..]} ({@code ibv_poll_cq}).
     *
     * @return the number of completions written, 0 if none
     * @throws IllegalArgumentException if {@code max} exceeds {@code out.length} or an entry is null
     */
    public int poll(WorkCompletion[] out, int max) {
        if (max > out.length || max < 0) {
            throw new IllegalArgumentException("max " + max + " outside 0.." + out.length);
        }
        synchronized (this) {
            long h = (long) HEAD.getOpaque(this);
            long t = (long) TAIL.getAcquire(this);
            int n = (int) Math.min(max, t - h);
            for (int i = 0; i < n; i++) {
                WorkCompletion dst = out[i];
                if (dst == null) {
                    throw new IllegalArgumentException("out[" + i + "] is null");
                }
                dst.copyFrom(slots[(int) ((h + i) % slots.length)]);
            }
            HEAD.setRelease(this, h + n);
            return n;
        }
    }

    /** @return the number of completions waiting to be polled */
    public int size() {
        return (int) ((long) TAIL.getVolatile(this) - (long) HEAD.getAcquire(this));
    }

    /** @return the number of threads blocked in {@link #await} now (for diagnostics and tests) */
    public int waiters() {
        return waiterCount.get();
    }

    /**
     * Blocks the calling thread until the CQ holds a completion, the timeout passes or the thread
     * is interrupted (the role of a completion channel in verbs). Any number of threads may wait at
     * once; every one of them is woken by the next completion (they then race to poll it, so a
     * caller must poll and may find the CQ empty again).
     *
     * @param timeoutNanos maximum wait in nanoseconds
     * @return whether a completion was available when the call returned
     */
    public boolean await(long timeoutNanos) {
        if (size() != 0) {
            return true;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        Thread me = Thread.currentThread();
        waiters.add(me);
        waiterCount.incrementAndGet(); // a full fence before the re-check below
        try {
            while (size() == 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || me.isInterrupted()) {
                    return false;
                }
                LockSupport.parkNanos(this, left);
            }
            return true;
        } finally {
            waiterCount.decrementAndGet();
            waiters.remove(me);
        }
    }

    @Override
    public String toString() {
        return "CQ#" + handle + "{capacity=" + slots.length + ", queued=" + size() + '}';
    }
}
