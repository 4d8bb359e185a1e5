package io.rxe4j.verbs;

import java.util.List;

/**
 * A shared receive queue ({@code ibv_srq}; {@code verbs-surface-facts.md} §4): receive WRs that
 * every QP created with it ({@link QpInitAttr#withSrq}) takes its receive WQEs from, in posting
 * order, RC, UC and UD alike. A QP takes a WQE when a message that needs one begins; the receive
 * completion goes to that QP's receive CQ and names that QP. Created by {@link
 * ProtectionDomain#createSrq}. Thread-safe: posts may come from any thread.
 *
 * <p>The limit: with {@code srq_limit} armed (at creation or by {@link #modify}), the first time a
 * WQE is taken and fewer than the limit remain, the device raises {@link
 * AsyncEventType#SRQ_LIMIT_REACHED} and disarms the limit (query then reports 0).
 */
public final class SharedReceiveQueue implements AutoCloseable {
    private final ProtectionDomain pd;
    final io.rxe4j.verbs.provider.SrqOps core;
    private volatile boolean closed;

    SharedReceiveQueue(ProtectionDomain pd, io.rxe4j.verbs.provider.SrqOps core) {
        this.pd = pd;
        this.core = core;
        core.onLimitReached(() -> pd.device.raiseEvent(new AsyncEvent(AsyncEventType.SRQ_LIMIT_REACHED, null, null,
                "the SRQ's limit was reached: fewer WRs remain than the limit armed", this)));
    }

    /**
     * {@code ibv_post_srq_recv} of one WR; it is copied and may be reused at once.
     *
     * @throws QueueFullException if the SRQ is full (ENOMEM)
     * @throws IllegalArgumentException for too many SGEs, an SGE outside a registered MR of this PD or
     *     without LOCAL_WRITE
     */
    public void postRecv(RecvWr wr) {
        if (!tryPostRecv(wr)) {
            throw new QueueFullException("shared receive queue full (" + query().maxWr() + " WRs)");
        }
    }

    /**
     * As {@link #postRecv(RecvWr)}, reporting a full SRQ by returning false.
     *
     * @return whether the WR was posted
     */
    public boolean tryPostRecv(RecvWr wr) {
        checkOpen();
        if (wr == null) {
            throw new IllegalArgumentException("receive WR is null");
        }
        return core.tryPost(wr);
    }

    /**
     * {@code ibv_post_srq_recv} of a list, stopping at the first WR that cannot be posted.
     *
     * @throws BadWrException naming the first WR not posted (its index and wr_id) and why; those before
     *     it were posted
     */
    public void postRecv(List<RecvWr> wrs) {
        BadWrException.postEach(wrs, this::postRecv);
    }

    /**
     * {@code ibv_modify_srq}: resize ({@link SrqAttr#MAX_WR}; the WRs queued stay) and/or arm the limit
     * ({@link SrqAttr#LIMIT}; 0 disarms).
     *
     * @param mask {@link SrqAttr#MAX_WR} and/or {@link SrqAttr#LIMIT}
     * @throws IllegalArgumentException for an unknown mask bit, a max_wr out of 1..2^20, below the armed
     *     limit or below the WRs queued now, or a limit above max_wr (each named)
     */
    public void modify(SrqAttr attr, int mask) {
        checkOpen();
        if (attr == null) {
            throw new IllegalArgumentException("SRQ attributes are null");
        }
        if ((mask & ~(SrqAttr.MAX_WR | SrqAttr.LIMIT)) != 0) {
            throw new IllegalArgumentException("unknown SRQ attribute mask bits 0x"
                    + Integer.toHexString(mask & ~(SrqAttr.MAX_WR | SrqAttr.LIMIT)));
        }
        core.modify(attr.maxWr(), attr.srqLimit(), mask);
    }

    /** @return the attributes now ({@code ibv_query_srq}): max_wr, max_sge, the armed limit (0: none) */
    public SrqAttr query() {
        checkOpen();
        int[] q = core.query();
        return new SrqAttr(q[0], q[1], q[2]);
    }

    /** @return the PD */
    public ProtectionDomain pd() {
        return pd;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is destroyed");
        }
        pd.checkOpen();
    }

    /** @return whether {@link #close} was called */
    public boolean isClosed() {
        return closed;
    }

    /**
     * {@code ibv_destroy_srq}.
     *
     * @throws IllegalStateException while a QP created with it is open (EBUSY)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        for (QueuePair qp : pd.snapshotQps()) {
            if (qp.srq() == this) {
                throw new IllegalStateException(this + " is used by " + qp + " (EBUSY): close the QP first");
            }
        }
        closed = true;
        pd.srqs.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
