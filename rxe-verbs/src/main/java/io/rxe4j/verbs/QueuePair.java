package io.rxe4j.verbs;


/**
 * A reliable-connected queue pair ({@code ibv_qp}). Move it RESET → INIT → RTR → RTS with
 * {@link #modify}; then {@link #postSend} and {@link #postRecv}. Thread-safe; the protocol runs
 * on the device's loop ({@code docs/architecture.md}).
 */
public final class QueuePair implements AutoCloseable {
    private final ProtectionDomain pd;
    private final QpInitAttr init;
    final io.rxe4j.core.qp.RxeQp core;
    private volatile boolean closed;

    QueuePair(ProtectionDomain pd, QpInitAttr init, io.rxe4j.core.qp.RxeQp core) {
        this.pd = pd;
        this.init = init;
        this.core = core;
    }

    /** @return the 24-bit QP number */
    public int qpNum() {
        return core.qpn();
    }

    /** @return the current state */
    public QpState state() {
        return core.state();
    }

    /**
     * {@code ibv_modify_qp} with the attributes set in {@code attr} (its mask).
     *
     * @throws IllegalArgumentException for an illegal transition or a missing, disallowed or
     *     out-of-range attribute (named in the message)
     */
    public void modify(QpAttr attr) {
        checkOpen();
        core.modify(attr);
    }

    /** @return the current attributes ({@code ibv_query_qp}) */
    public QpAttr query() {
        checkOpen();
        return core.query(new QpAttr());
    }

    /**
     * {@code ibv_post_send}. The WR is copied; it may be reused at once.
     *
     * @throws IllegalStateException if the QP is not in RTS (or SQD/ERR), or the SQ is full
     * @throws IllegalArgumentException for an invalid WR (named, like {@code bad_wr})
     */
    public void postSend(SendWr wr) {
        checkOpen();
        core.postSend(wr);
    }

    /**
     * {@code ibv_post_recv}. The WR is copied; it may be reused at once.
     *
     * @throws IllegalStateException if the QP is in RESET or the RQ is full
     * @throws IllegalArgumentException for an invalid WR
     */
    public void postRecv(RecvWr wr) {
        checkOpen();
        core.postRecv(wr);
    }

    /**
     * @return why the QP last entered ERR (the failed WQE and its status, the NAK it sent, or a CQ
     *     overflow), or null if it never did; for diagnostics, the role of an async event
     */
    public String errorReason() {
        return core.errorReason();
    }

    /**
     * @return this QP's counters by rxe-style name (the per-QP part of {@link RdmaDevice#counters()};
     *     sent_pkts and rcvd_pkts count this QP's packets)
     */
    public java.util.Map<String, Long> counters() {
        return core.counters().snapshot();
    }

    /**
     * The TID RDMA parameters the peer sent through OPFN ({@code tid-opfn-facts.md} §1–§2). TID
     * RDMA is used on this QP only while this is non-null: both devices enable it ({@link
     * io.rxe4j.verbs.DeviceConfig#withTidRdma()}), the path MTU is 4096, and the QP has
     * exchanged OPFN words with its peer, which happens on the first packets after RTS.
     *
     * @return the peer's parameters (KDETH QP, segment size in bytes, J_KEY, max_read, max_write,
     *     timeout exponent), or null while TID RDMA is off for this QP
     */
    public io.rxe4j.verbs.TidRdmaParams tidRdma() {
        return core.tidRdmaRemote();
    }

    /**
     * @return the OPFN state of this QP ({@code hfi1_opfn_data}: extended, requested, completed,
     *     curr), for diagnostics
     */
    public String opfnState() {
        return core.opfnState();
    }

    /** @return a one-line snapshot of the engine state (PSNs, queue indices, head WQE), for diagnostics */
    public String debugState() {
        return core.debugState();
    }

    /** @return the PD */
    public ProtectionDomain pd() {
        return pd;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(core.qpn()) + " is destroyed");
        }
    }

    /** Destroys the QP ({@code ibv_destroy_qp}); outstanding WRs are dropped. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        pd.device.core.destroyQp(core);
        pd.qps.remove(this);
        init.sendCq().users.decrementAndGet();
        init.recvCq().users.decrementAndGet();
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
