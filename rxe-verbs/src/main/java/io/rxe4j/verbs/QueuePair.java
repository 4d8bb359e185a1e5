package io.rxe4j.verbs;


/**
 * A queue pair ({@code ibv_qp}): reliable connected (RC) or unreliable datagram (UD, {@code
 * docs/verbs.md} "UD queue pairs"). Move it RESET → INIT → RTR → RTS with {@link #modify}; then
 * {@link #postSend} and {@link #postRecv}. Thread-safe; the protocol runs on the device's loop
 * ({@code docs/architecture.md}).
 */
public final class QueuePair implements AutoCloseable {
    private final ProtectionDomain pd;
    private final QpInitAttr init;
    final io.rxe4j.verbs.provider.QpOps core;
    private volatile boolean closed;

    QueuePair(ProtectionDomain pd, QpInitAttr init, io.rxe4j.verbs.provider.QpOps core) {
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
     * @throws QueueFullException if the send queue is full (ENOMEM; see {@link #tryPostSend})
     * @throws IllegalStateException if the QP is not in RTS (or SQD/ERR)
     * @throws IllegalArgumentException for an invalid WR (named, like {@code bad_wr})
     */
    public void postSend(SendWr wr) {
        if (!tryPostSend(wr)) {
            throw new QueueFullException("send queue full (" + init.caps().maxSendWr() + " WRs outstanding) on QP 0x"
                    + Integer.toHexString(core.qpn()));
        }
    }

    /**
     * {@code ibv_post_send} that reports a full send queue by returning false: no exception, no
     * allocation, so a producer can spin or back off on it cheaply.
     *
     * @return true if posted, false if the send queue is full (the WR was not posted)
     * @throws IllegalStateException if the QP is not in RTS (or SQD/ERR)
     * @throws IllegalArgumentException for an invalid WR
     */
    public boolean tryPostSend(SendWr wr) {
        checkOpen();
        if (wr == null) {
            throw new IllegalArgumentException("send WR is null");
        }
        checkAh(wr);
        checkMw(wr, false);
        if (!core.tryPostSend(wr)) {
            return false;
        }
        bindPosted(wr);
        return true;
    }

    /**
     * Binds a type 1 memory window ({@code ibv_bind_mw}; {@code verbs-surface-facts.md} §5.2–§5.4):
     * posts a BIND_MW work request for {@code mw} with the next rkey ({@code ibv_inc_rkey}: the key
     * part plus one) and returns that rkey, which {@link MemoryWindow#rkey()} reports from now on.
     * The bind runs in order with the QP's other WRs and completes on the send CQ with {@link
     * WcOpcode#BIND_MW} (when signaled), or with {@link WcStatus#MW_BIND_ERR} and the QP in ERR when
     * a check of the sheet fails (the MR lacks MW_BIND, the range is outside it, the window was
     * deallocated...); then the window keeps its old key. A bind with {@link MwBindInfo#unbind()}
     * revokes the window.
     *
     * @return the window's new rkey, for the peer
     * @throws IllegalArgumentException if {@code mw} is not a type 1 window of this QP's device, the
     *     access asks for {@link Access#ZERO_BASED}, or the MR is of another PD than the window (EINVAL
     *     and EPERM of libibverbs)
     * @throws IllegalStateException if the QP is not in RTS (or SQD/ERR), or is not RC or UC
     * @throws QueueFullException if the send queue is full
     */
    public int bindMw(MemoryWindow mw, MwBind bind) {
        checkOpen();
        if (mw == null || bind == null) {
            throw new IllegalArgumentException("bindMw needs a window and a bind, got " + mw + " and " + bind);
        }
        if (mw.type() != MwType.TYPE_1) {
            throw new IllegalArgumentException(mw + " is not a type 1 window: bind type 2B windows with a BIND_MW "
                    + "work request (SendWr.bindMw) (EINVAL)");
        }
        MwBindInfo info = bind.bindInfo();
        if ((info.mwAccessFlags() & Access.ZERO_BASED) != 0) {
            throw new IllegalArgumentException("zero-based windows are not supported (IBV_ACCESS_ZERO_BASED) (EINVAL)");
        }
        if (info.mr() != null && info.mr().pd() != mw.pd()) {
            throw new IllegalArgumentException(info.mr() + " is of " + info.mr().pd() + ", the window " + mw + " of "
                    + mw.pd() + " (EPERM)");
        }
        if (init.qpType() != QpType.RC && init.qpType() != QpType.UC) {
            throw new IllegalStateException("windows are bound through RC and UC QPs only, QP 0x"
                    + Integer.toHexString(core.qpn()) + " is " + init.qpType() + " (EINVAL)");
        }
        int next = MemoryWindow.incRkey(mw.rkey());
        SendWr wr = new SendWr().bindMw(bind.wrId(), mw, next, info);
        wr.sendFlags = bind.sendFlags();
        checkMw(wr, true);
        if (!core.tryPostSend(wr)) {
            throw new QueueFullException("send queue full (" + init.caps().maxSendWr() + " WRs outstanding) on QP 0x"
                    + Integer.toHexString(core.qpn()));
        }
        bindPosted(wr);
        return next;
    }

    /**
     * A BIND_MW WR names an open window of this device and its bind info an open MR; a type 1
     * window is bound by {@link #bindMw} only (IBTA: the Bind Memory Window verb), a type 2B window
     * by a WR only.
     */
    private void checkMw(SendWr wr, boolean type1Verb) {
        if (wr.opcode != WrOpcode.BIND_MW) {
            return;
        }
        MemoryWindow mw = wr.mw;
        if (mw == null || wr.bindInfo == null) {
            throw new IllegalArgumentException("a BIND_MW WR needs a window and bind info (SendWr.bindMw), wr_id "
                    + wr.wrId);
        }
        mw.checkOpen();
        if (mw.pd().device != pd.device) {
            throw new IllegalArgumentException(mw + " belongs to " + mw.pd().device + ", not to " + pd.device);
        }
        if (!type1Verb && mw.type() != MwType.TYPE_2B) {
            throw new IllegalArgumentException(mw + " is a type 1 window: bind it with QueuePair.bindMw, wr_id " + wr.wrId
                    + " (EINVAL)");
        }
        MemoryRegion mr = wr.bindInfo.mr();
        if (mr != null && mr.pd().device != pd.device) {
            throw new IllegalArgumentException(mr + " belongs to " + mr.pd().device + ", not to " + pd.device);
        }
    }

    /** A posted BIND_MW: the window's rkey is the new one from now on, as {@code ibv_mw.rkey}. */
    private static void bindPosted(SendWr wr) {
        if (wr.opcode == WrOpcode.BIND_MW) {
            wr.mw.posted((wr.mw.rkey() & ~0xFF) | (wr.rkey & 0xFF));
        }
    }

    /** @return the QP type */
    public QpType type() {
        return init.qpType();
    }

    /**
     * A UD WR's address handle must be open and of this QP's PD ({@code rdma_rxe} completes one of
     * another PD with LOC_QP_OP_ERR, {@code verbs-surface-facts.md} §2.5 rule 8; here it is refused
     * before anything is queued).
     */
    private void checkAh(SendWr wr) {
        if (init.qpType() != QpType.UD) {
            return;
        }
        AddressHandle ah = wr.ah;
        if (ah == null) {
            throw new IllegalArgumentException("a UD send WR needs an address handle (SendWr.ud), wr_id " + wr.wrId);
        }
        if (ah.isClosed()) {
            throw new IllegalArgumentException(ah + " is destroyed, wr_id " + wr.wrId);
        }
        if (ah.pd() != pd) {
            throw new IllegalArgumentException(ah + " belongs to " + ah.pd() + ", not to this QP's " + pd
                    + ", wr_id " + wr.wrId);
        }
    }

    /**
     * {@code ibv_post_send} of a list: posts {@code wrs} in order and stops at the first that
     * cannot be posted, reporting it as {@code bad_wr}. The valid WRs before it go into the send
     * queue under one lock, with one wake-up of the device loop for the whole list.
     *
     * @throws BadWrException naming the first WR not posted (its index and wr_id) and why (an
     *     invalid WR, the QP's state, or {@link QueueFullException}); those before it were posted
     */
    public void postSend(java.util.List<SendWr> wrs) {
        checkOpen();
        int n = wrs.size();
        int end = 0;
        RuntimeException bad = null;
        for (; end < n; end++) { // validate up to the first bad WR
            SendWr wr = wrs.get(end);
            if (wr == null) {
                bad = new IllegalArgumentException("work request [" + end + "] is null");
                break;
            }
            try {
                checkAh(wr);
                checkMw(wr, false);
                core.validatePost(wr);
            } catch (IllegalArgumentException | IllegalStateException e) {
                bad = e;
                break;
            }
        }
        int posted = end == 0 ? 0 : core.postValidated(wrs, 0, end);
        for (int i = 0; i < posted; i++) {
            bindPosted(wrs.get(i));
        }
        if (posted < end) {
            throw new BadWrException(posted, wrs.get(posted).wrId, new QueueFullException("send queue full ("
                    + init.caps().maxSendWr() + " WRs outstanding) on QP 0x" + Integer.toHexString(core.qpn())));
        }
        if (bad != null) {
            SendWr wr = wrs.get(end);
            throw new BadWrException(end, wr == null ? 0 : wr.wrId, bad);
        }
    }

    /**
     * Posts {@code wr} and returns a future completed by its completion (a one-off convenience; the
     * WR is posted signaled). The QP's send CQ is switched to dispatch mode (see {@link
     * CompletionQueue#onCompletion}) on first use, so it can no longer be polled. The future
     * completes normally with a copy of the completion on success, and exceptionally with a
     * {@link WorkCompletionException} for any other status (a {@link WcStatus#WR_FLUSH_ERR} too),
     * or with an {@link IllegalStateException} if the QP is destroyed first.
     *
     * @throws IllegalArgumentException for an invalid WR, or a wr_id that already has a pending
     *     future on this QP
     * @throws IllegalStateException if the QP is in RESET, INIT or RTR, or the send CQ reports to a
     *     completion channel (in ERR the WR is accepted and its future fails with WR_FLUSH_ERR, as
     *     {@link #postSend} completes it)
     * @throws QueueFullException if the send queue is full
     */
    public java.util.concurrent.CompletableFuture<WorkCompletion> postSendAsync(SendWr wr) {
        checkOpen();
        init.sendCq().enableDispatch();
        return submit(wr);
    }

    /** @return the CQ this QP's send completions go to ({@code ibv_qp_init_attr.send_cq}) */
    public CompletionQueue sendCq() {
        return init.sendCq();
    }

    /**
     * Posts {@code wr} signaled and returns a future of its completion, without switching the send
     * CQ to dispatch mode: the future completes when the CQ is polled ({@link CompletionQueue#poll},
     * which no longer returns that completion, or {@link CompletionQueue#pollFutures}) by the
     * application's own loop, a test driving virtual time, or {@link #execute}; on a dispatched CQ
     * its dispatcher completes it. Completes normally with a copy of the completion on success, and
     * exceptionally with a {@link WorkCompletionException} (its message ends with the QP's {@link
     * #errorReason()}) for any other status, or with an {@link IllegalStateException} if the QP is
     * destroyed first.
     *
     * @throws IllegalArgumentException for an invalid WR, or a wr_id that already has a pending
     *     future on this QP
     * @throws IllegalStateException if the QP is in RESET, INIT or RTR
     * @throws QueueFullException if the send queue is full
     */
    public java.util.concurrent.CompletableFuture<WorkCompletion> submit(SendWr wr) {
        checkOpen();
        CompletionQueue cq = init.sendCq();
        java.util.concurrent.CompletableFuture<WorkCompletion> f = cq.registerFuture(core.qpn(), wr.wrId);
        int flags = wr.sendFlags;
        wr.sendFlags = flags | SendFlags.SIGNALED;
        try {
            postSend(wr);
        } catch (RuntimeException e) {
            cq.unregisterFuture(core.qpn(), wr.wrId);
            throw e;
        } finally {
            wr.sendFlags = flags;
        }
        return f;
    }

    /**
     * Posts {@code wrs} in order (each signaled, each through {@link #submit}) and waits on the
     * real clock until all have completed, polling the send CQ for them ({@link
     * CompletionQueue#pollFutures}: other completions it polls meanwhile stay for the next {@link
     * CompletionQueue#poll}). Call it from the thread that polls the send CQ (or with a dispatched
     * CQ from any thread but its handler's). On virtual time use {@link #submit} and drive the clock
     * (the test kit's {@code RxeFabric.execute} does).
     *
     * @param timeout longest wait, on the real clock
     * @return the last WR's completion (a copy)
     * @throws WorkCompletionException for the first WR, in posting order, that completed with
     *     another status than SUCCESS (its message names the status and the QP's {@link
     *     #errorReason()}); the WRs after it complete with WR_FLUSH_ERR
     * @throws java.util.concurrent.TimeoutException if not all completed within {@code timeout}
     *     (they stay posted)
     * @throws IllegalArgumentException for an invalid WR or an empty list, before anything is posted
     *     if it is the first; a later one's WRs before it stay posted and are waited for
     * @throws InterruptedException if interrupted while waiting
     */
    public WorkCompletion execute(java.time.Duration timeout, SendWr... wrs)
            throws java.util.concurrent.TimeoutException, InterruptedException {
        if (wrs == null || wrs.length == 0) {
            throw new IllegalArgumentException("execute needs at least one work request");
        }
        if (timeout == null || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be >= 0, got " + timeout);
        }
        CompletionQueue cq = init.sendCq();
        java.util.List<java.util.concurrent.CompletableFuture<WorkCompletion>> fs = new java.util.ArrayList<>();
        RuntimeException postFailure = null;
        for (SendWr wr : wrs) {
            try {
                fs.add(submit(wr));
            } catch (RuntimeException e) {
                if (fs.isEmpty()) {
                    throw e;
                }
                postFailure = e;
                break;
            }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        java.util.concurrent.CompletableFuture<?> last = fs.get(fs.size() - 1);
        while (!fs.stream().allMatch(java.util.concurrent.CompletableFuture::isDone)) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new java.util.concurrent.TimeoutException(fs.stream().filter(f -> !f.isDone()).count() + " of "
                        + fs.size() + " work requests on QP 0x" + Integer.toHexString(core.qpn())
                        + " not completed within " + timeout);
            }
            if (cq.isDispatching()) {
                try {
                    last.get(left, java.util.concurrent.TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    // looked at below
                }
                continue;
            }
            if (cq.pollFutures() == 0) {
                cq.await(Math.min(left, 1_000_000L));
            }
            if (Thread.interrupted()) {
                throw new InterruptedException("execute on QP 0x" + Integer.toHexString(core.qpn()) + " interrupted");
            }
        }
        for (java.util.concurrent.CompletableFuture<WorkCompletion> f : fs) {
            try {
                f.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : e;
            }
        }
        if (postFailure != null) {
            throw postFailure;
        }
        return fs.get(fs.size() - 1).join();
    }

    /**
     * {@code ibv_post_recv}. The WR is copied; it may be reused at once.
     *
     * @throws QueueFullException if the receive queue is full (see {@link #tryPostRecv})
     * @throws IllegalStateException if the QP is in RESET
     * @throws IllegalArgumentException for an invalid WR
     */
    public void postRecv(RecvWr wr) {
        if (!tryPostRecv(wr)) {
            throw new QueueFullException("receive queue full (" + init.caps().maxRecvWr() + " WRs outstanding) on QP 0x"
                    + Integer.toHexString(core.qpn()));
        }
    }

    /**
     * {@code ibv_post_recv} that reports a full receive queue by returning false.
     *
     * @return true if posted, false if the receive queue is full
     * @throws IllegalStateException if the QP is in RESET
     * @throws IllegalArgumentException for an invalid WR
     */
    public boolean tryPostRecv(RecvWr wr) {
        checkOpen();
        if (wr == null) {
            throw new IllegalArgumentException("receive WR is null");
        }
        if (init.srq() != null) {
            throw new IllegalStateException("QP 0x" + Integer.toHexString(core.qpn()) + " takes its receive WQEs from "
                    + init.srq() + ": post them there (ibv_post_recv on such a QP is EINVAL)");
        }
        return core.tryPostRecv(wr);
    }

    /** @return the shared receive queue this QP takes its receive WQEs from, or null */
    public SharedReceiveQueue srq() {
        return init.srq();
    }

    /**
     * {@code ibv_post_recv} of a list, stopping at the first WR that cannot be posted.
     *
     * @throws BadWrException naming the first WR not posted and why; those before it were posted
     */
    public void postRecv(java.util.List<RecvWr> wrs) {
        BadWrException.postEach(wrs, this::postRecv);
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
        return core.counterSnapshot();
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

    /**
     * Destroys the QP ({@code ibv_destroy_qp}); outstanding WRs are dropped (no completions). A
     * QP of an {@link io.rxe4j.verbs.cm.RdmaConnection} is best closed through the connection, which tells the peer.
     * Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        pd.device.core.destroyQp(core);
        pd.qps.remove(this);
        pd.device.qpsByNum.remove(core.qpn(), this);
        init.sendCq().failFutures(this);
        init.sendCq().users.remove(this);
        init.recvCq().users.remove(this);
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
