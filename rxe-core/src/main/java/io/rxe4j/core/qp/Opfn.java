package io.rxe4j.core.qp;

import io.rxe4j.core.wire.TidEntry;
import io.rxe4j.verbs.Counter;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.TidRdmaConfig;
import io.rxe4j.verbs.TidRdmaParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A QP's OPFN state ({@code struct hfi1_opfn_data}; {@code tid-opfn-facts.md} §1): whether the
 * peer has shown the extended bit, the capabilities requested and completed (negotiated or closed
 * out), the capability in flight, and the one capability there is, TID RDMA, with this side's and
 * the peer's parameters ({@link TidRdmaParams}; the peer's is null while TID RDMA is off).
 *
 * <p>One method per event of hfi1's {@code opfn.c}: {@link #onModify} ({@code opfn_qp_init}),
 * {@link #onExtendedBit} ({@code opfn_trigger_conn_request}), {@link #connRequest} ({@code
 * opfn_conn_request}), {@link #onRequest} ({@code opfn_conn_response}), {@link #onReply} ({@code
 * opfn_conn_reply}), {@link #onRetriesExhausted} (the silent close-out in {@code hfi1_restart_rc})
 * and {@link #reset} ({@code opfn_conn_error}). No I/O: a request is posted through {@link
 * RxeQp#postOpfn}. Loop only; the getters may be read from other threads (volatile).
 */
public final class Opfn {
    /** {@code STL_VERBS_EXTD_NONE}. */
    static final int NONE = 0;
    /** {@code STL_VERBS_EXTD_MAX}: capcodes are 1..MAX-1. */
    static final int MAX = 2;
    /** The mask bit of TID RDMA: BIT(capcode − 1). */
    static final int TID_MASK = 1 << (TidRdmaParams.CAPCODE - 1);
    /** The receive context of every device (one per device, {@code tid-opfn-facts.md} §9.7). */
    public static final int CONTEXT = 0;
    private static final Logger LOG = LoggerFactory.getLogger(Opfn.class);

    private final RxeQp qp;
    private final boolean enabled;
    private final TidRdmaConfig tid;

    /** The peer has shown BTH DW1 bit 24. */
    private volatile boolean extended;
    /** Capabilities wanted (bit per capcode − 1). */
    private volatile int requested;
    /** Capabilities negotiated or closed out. */
    private volatile int completed;
    /** The capcode in flight, {@link #NONE} if none. */
    private volatile int curr;
    /** This side's TID RDMA parameters, or null (path MTU or the port's active MTU not 4096, or TID RDMA off). */
    private volatile TidRdmaParams local;
    /** The peer's TID RDMA parameters, or null: TID RDMA is off for this QP. */
    private volatile TidRdmaParams remote;

    Opfn(RxeQp qp) {
        this.qp = qp;
        this.enabled = qp.host().config().opfn();
        this.tid = qp.host().config().tid();
    }

    /** @return whether the device sends and acts on OPFN (BTH DW1 bit 24) */
    public boolean enabled() {
        return enabled;
    }

    boolean extended() {
        return extended;
    }

    int requested() {
        return requested;
    }

    int completed() {
        return completed;
    }

    int curr() {
        return curr;
    }

    /** @return the TID RDMA parameters this side offers (its OPFN word, {@code tid-opfn-facts.md} §2), or null */
    public TidRdmaParams local() {
        return local;
    }

    /** @return the TID RDMA parameters the peer sent, or null while none arrived (TID RDMA off) */
    public TidRdmaParams remote() {
        return remote;
    }

    /**
     * {@code opfn_qp_init}, after every modify_qp: builds the local TID parameters when the path
     * MTU is 4096 and the port's active MTU is 4096 too (else zeroes them: TID RDMA stays off on a
     * link that cannot carry 4096-byte packets), requests TID RDMA when the modify moves the QP to RTS, and
     * renegotiates (clears the completed bit, schedules a request) when it sets RTS again.
     *
     * @param toRts the modify carried the state attribute RTS
     */
    void onModify(boolean toRts) {
        if (!enabled || !tid.enabled()) {
            return;
        }
        int mask = 0;
        // TID RDMA needs 4096-byte packets: not on a path MTU 4096 over a link that cannot carry them
        // (e.g. 4096 asked for on a 1500-byte Ethernet, whose active MTU is 1024)
        if (qp.attr.pathMtu == Mtu.MTU_4096 && qp.host().activeMtu() == Mtu.MTU_4096) {
            local = new TidRdmaParams(TidRdmaParams.KDETH_QP_PREFIX << 16 | CONTEXT, TidRdmaParams.SEGMENT_SIZE,
                    TidRdmaParams.DEFAULT_JKEY, tid.maxRead(), tid.maxWrite(), qp.attr.timeout, false);
            if (toRts) {
                requested |= TID_MASK;
                mask = TID_MASK;
            }
        } else {
            local = null;
        }
        if (mask != 0 && (completed & mask) != 0) {
            completed &= ~mask;
            trace("renegotiate on RTS");
            qp.scheduler.execute(qp.guard("OPFN request", this::connRequest));
        }
    }

    /**
     * {@code opfn_trigger_conn_request}: an RC packet from the peer carried bit 24. The first such
     * packet marks the peer extended and, in RTS, starts a request.
     */
    void onExtendedBit() {
        if (!enabled || extended) {
            return;
        }
        extended = true;
        trace("peer extended");
        if (qp.state == QpState.RTS) {
            connRequest();
        }
    }

    /**
     * {@code opfn_conn_request}: posts the hidden COMPARE_SWAP for the lowest capability requested
     * and not completed, unless the peer is not extended, nothing is left, or one is in flight.
     */
    void connRequest() {
        if (!extended || requested == 0 || requested == completed || curr != NONE) {
            return;
        }
        int pending = requested & ~completed;
        int capcode = Integer.numberOfTrailingZeros(pending) + 1;
        if (capcode >= MAX) {
            completed |= 1 << (capcode - 1);
            return;
        }
        long word = requestWord();
        curr = capcode;
        if (!qp.postOpfn(word)) {
            curr = NONE; // QP not in RTS any more: renegotiated when it re-enters RTS
            return;
        }
        qp.counters.inc(Counter.OPFN_REQUESTS);
        trace("conn_request word 0x" + Long.toHexString(word));
    }

    /** {@code tid_rdma_conn_req}: the local parameters' word (all-zero parameters when there are none). */
    private long requestWord() {
        TidRdmaParams l = local;
        return l != null ? l.encode() : ZERO.encode();
    }

    private static final TidRdmaParams ZERO = new TidRdmaParams(0, 0, 0, 0, 0, 0, false);

    /**
     * {@code opfn_conn_response}, at the responder: the peer's request word arrived.
     *
     * @param word the COMPARE_SWAP's compare field
     * @param stale what the ack entry held before (sent back unchanged for an unknown capcode)
     * @return the ATOMIC ACKNOWLEDGE data: this side's word, 0 if the peer's parameters could not
     *     be taken, or {@code stale}
     */
    public long onRequest(long word, long stale) {
        qp.counters.inc(Counter.OPFN_RESPONSES);
        int capcode = (int) (word & 0xF);
        if (capcode == NONE || capcode >= MAX) {
            return stale;
        }
        int bit = 1 << (capcode - 1);
        if ((completed & bit) != 0) {
            completed &= ~bit; // the peer was reset: forget its parameters, negotiate again
            remote = null;
        }
        if (!takeRemote(word)) {
            return 0;
        }
        completed |= bit;
        trace("conn_response word 0x" + Long.toHexString(word));
        return requestWord();
    }

    /**
     * {@code opfn_conn_reply}, at the requester: the ATOMIC ACKNOWLEDGE of this side's request.
     * Ignored unless its capcode is the one in flight; {@link #curr} is cleared in every case.
     */
    public void onReply(long word) {
        int capcode = (int) (word & 0xF);
        if (capcode == NONE || capcode >= MAX) {
            return;
        }
        if (curr != NONE && capcode == curr) {
            if (takeRemote(word)) {
                completed |= 1 << (capcode - 1);
            }
            trace("conn_reply word 0x" + Long.toHexString(word));
        }
        curr = NONE;
    }

    /**
     * The OPFN request ran out of retries: the capability counts as completed with TID RDMA off
     * (a reply of the bare capcode); the caller completes the WQE without a CQE and the QP stays up.
     */
    public void onRetriesExhausted() {
        qp.counters.inc(Counter.OPFN_TIMEOUTS);
        int c = curr;
        onReply(c == NONE ? TidRdmaParams.CAPCODE : c);
    }

    /** {@code tid_rdma_conn_reply}: decodes the peer's word (null = TID RDMA off). Never fails here. */
    private boolean takeRemote(long word) {
        remote = tid.enabled() ? TidRdmaParams.decode(word) : null;
        return true;
    }

    /** {@code opfn_conn_error} (QP reset): forget everything negotiated. */
    void reset() {
        remote = null;
        completed = 0;
        extended = false;
        requested = 0;
        curr = NONE;
    }

    private void trace(String what) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("QP 0x{} OPFN {}: extended={} requested={} completed={} curr={} local={} remote={}",
                    Integer.toHexString(qp.qpn), what, extended, requested, completed, curr, local, remote);
        }
    }

    // ------------------------------------------------------------------ post time: what qualifies for TID RDMA

    /**
     * Whether an RDMA READ qualifies for TID RDMA ({@code setup_tid_rdma_wqe}, §5.1): TID RDMA
     * negotiated, path MTU 4096, length ≥ 256 KiB, every local SGE 4 KiB aligned and a multiple of
     * 4 KiB long. Any thread (reads the negotiated parameters once).
     *
     * @return the peer's parameters if it qualifies, else null
     */
    public TidRdmaParams tidReadQualifies(long length, long[] sgeAddr, int[] sgeLength, int numSge) {
        TidRdmaParams remote = remote();
        if (remote == null || qp.attr.pathMtu() != Mtu.MTU_4096 || length < TidRdmaParams.SEGMENT_SIZE
                || numSge == 0) {
            return null;
        }
        for (int i = 0; i < numSge; i++) {
            if ((sgeAddr[i] & (TidEntry.PAGE_SIZE - 1)) != 0 || (sgeLength[i] & (TidEntry.PAGE_SIZE - 1)) != 0) {
                return null;
            }
        }
        return remote;
    }

    /**
     * Whether an RDMA WRITE qualifies for TID RDMA ({@code setup_tid_rdma_wqe}, §6.1): TID RDMA
     * negotiated, path MTU 4096, length ≥ 256 KiB and a multiple of 4 KiB, remote address 4 KiB
     * aligned (local SGEs are not checked: this side is the data source).
     *
     * @return the peer's parameters if it qualifies, else null
     */
    public TidRdmaParams tidWriteQualifies(long length, long remoteAddr) {
        TidRdmaParams remote = remote();
        if (remote == null || qp.attr.pathMtu() != Mtu.MTU_4096 || length < TidRdmaParams.SEGMENT_SIZE
                || (length & (TidEntry.PAGE_SIZE - 1)) != 0 || (remoteAddr & (TidEntry.PAGE_SIZE - 1)) != 0) {
            return null;
        }
        return remote;
    }
}
