package io.rxe4j.verbs;

/**
 * The counters of a device ({@link RdmaDevice#counter(Counter)}, {@link RdmaDevice#counterValues()},
 * and the device's JMX MBean), named like {@code rdma_rxe}'s hardware counters where one exists
 * ({@code /sys/class/infiniband/rxe0/ports/1/hw_counters}): {@link #rxeName()} is that name. Device
 * totals include the counters of every QP, live or destroyed. Values are packet, event or
 * operation counts, never bytes.
 */
public enum Counter {
    /** Packets handed to the transport. */
    SENT_PKTS,
    /** Packets received from the transport. */
    RCVD_PKTS,
    /**
     * Packets the transport or the kernel refused to send ({@code rdma_rxe}'s {@code send_err}): a
     * datagram larger than the interface MTU (EMSGSIZE, with don't-fragment set: a path MTU above the
     * port's active MTU), or any other socket write error. Each is logged at WARN (rate-limited) with
     * its size and the link MTU, and fails its QP: the send WQE completes with LOC_QP_OP_ERR naming the
     * cause (a refused response makes the responder NAK "remote operational error"); never a peer
     * timeout. These packets are counted in {@link #SENT_PKTS} too (handed to the transport).
     */
    SEND_ERR,
    /** Duplicate requests seen by responders. */
    DUPLICATE_REQUEST,
    /** Out-of-sequence requests seen by responders. */
    OUT_OF_SEQ_REQUEST,
    /** RNR NAKs received by requesters. */
    RCVD_RNR_ERR,
    /** RNR NAKs sent by responders. */
    SEND_RNR_ERR,
    /** PSN-sequence NAKs received by requesters. */
    RCVD_SEQ_ERR,
    /** WQEs failed with RETRY_EXC_ERR. */
    RETRY_EXCEEDED_ERR,
    /** WQEs failed with RNR_RETRY_EXC_ERR. */
    RETRY_RNR_EXCEEDED_ERR,
    /** Retries started by the completer (sequence NAK or lost response). */
    COMPLETER_RETRY_ERR,
    /** Local ACK timeouts that started a retry. */
    RETRANSMIT_TIMEOUTS,
    /** Requester rewinds (every retry). */
    REWINDS,
    /**
     * Responses that acknowledged PSNs sent before a rewind and not resent yet, so the requester
     * moved forward to them instead of resending (kernel {@code rdma_rxe} answers a duplicate with
     * an ACK of its latest PSN; {@code rxe-facts.md} §5.5).
     */
    ACK_FAST_FORWARDS,
    /** Duplicate or stale responses dropped by completers. */
    DUPLICATE_RESPONSE,
    /** Responses ahead of the expected PSN dropped by completers. */
    OUT_OF_SEQ_RESPONSE,
    /** Completions lost to a full CQ. */
    CQ_OVERFLOW,
    /** Request packets sent again with a PSN sent before (after a rewind): 0 on a loss-free path. */
    RESENT_PKTS,
    /** Times a requester stopped because 64 of its packets were unacknowledged ({@code extensions.md} §6). */
    OUTPUT_STALLS,
    /** Times the engine stopped producing because the transport was not writable. */
    TX_NOT_WRITABLE,
    /** Congestion-window reductions (a loss or congestion signal, once per loss episode). */
    CC_WINDOW_REDUCTIONS,
    /**
     * Loss signals (NAKs, READ gaps, lost responses) not taken as congestion because the path showed
     * no queueing delay ({@code PeerBudget.onLoss}): a lossy link, not a full queue.
     */
    CC_RANDOM_LOSSES,
    /** Times a requester waited because the device's byte budget towards its peer was spent. */
    BUDGET_WAITS,
    /** Congestion notification packets (CNP) sent by responders. */
    CNP_SENT,
    /** Congestion notification packets (CNP) received by requesters. */
    CNP_RCVD,
    /**
     * Tail-loss probes (adaptive recovery, {@code docs/reliability.md}): a requester resent its last
     * unacknowledged packet with AckReq after about two round trips without progress.
     */
    TAIL_LOSS_PROBES,
    /**
     * RTT-derived retransmit timeouts (adaptive recovery): go-back-N from the oldest unacknowledged
     * PSN before the IB local ACK timeout, without charging retry_cnt.
     */
    RTT_TIMEOUTS,
    /**
     * Retransmit or probe deadlines that passed while received datagrams were still waiting to be
     * read (the transport's last read batch was full, {@link io.rxe4j.verbs.spi.Transport#receiveBacklogged()}):
     * the timer waited for the next batch before acting, at most one timeout period, so that an
     * acknowledgement queued behind a backlog on a loaded host is not answered by a retransmission.
     */
    TIMER_DEFERRALS,
    /**
     * Selective repairs (adaptive recovery): one request packet resent for a PSN-sequence NAK, or one
     * missing part of a READ re-requested, instead of a go-back-N, towards a peer seen to hold
     * out-of-order packets.
     */
    SELECTIVE_REPAIRS,
    /** Out-of-order request packets a responder held until their gap filled (adaptive recovery). */
    REORDER_HELD,
    /**
     * PSN-sequence NAKs a responder sent after a gap outlived the reordering window (adaptive
     * recovery; without it every gap is NAKed at once).
     */
    REORDER_NAKS,
    /**
     * Sequence NAKs a responder found to be spurious (the missing packet then arrived twice, the late
     * original and the resend): each widens the path's reordering window.
     */
    SPURIOUS_NAKS,
    /** Out-of-order READ response packets a completer placed by their offset (adaptive recovery). */
    READ_RESPONSES_PLACED,
    /**
     * Selective NAKs (rxe4j opcode 0xF2, {@code docs/wire.md}) a responder sent to a peer that agreed
     * {@code EXT_SELECTIVE_NAK}: the missing PSN ranges after its PSN-sequence NAK.
     */
    SELECTIVE_NAKS,
    /** OPFN requests (hidden COMPARE_SWAPs) posted by this side ({@code tid-opfn-facts.md} §1). */
    OPFN_REQUESTS,
    /** OPFN requests answered by this side's responder. */
    OPFN_RESPONSES,
    /** OPFN requests that ran out of retries and were closed out silently (TID RDMA off, QP up). */
    OPFN_TIMEOUTS,
    /** Times a QP joined a TID entry or flow wait queue ({@code n_tidwait}, hfi1 "TidWait"). */
    TID_WAIT,
    /** RDMA READs carried as TID RDMA READ ({@code tid_r_reqs}). */
    TID_READ_REQUESTS,
    /** TID READ_REQ packets sent (one per segment, resends included). */
    TID_READ_SEGMENTS,
    /** TID READ segments completed at the data destination. */
    TID_READ_SEGMENTS_DONE,
    /** TID restarts: a TID READ restarted by a flow sequence error ({@code n_rdma_seq}). */
    TID_RESTARTS,
    /** Data packets whose flow sequence did not match (hardware RHF_RTE_EXPECTED_FLOW_SEQ_ERR). */
    TID_FLOW_SEQ_ERRORS,
    /** Data packets whose flow generation did not match (RHF_RTE_EXPECTED_FLOW_GEN_ERR), dropped. */
    TID_FLOW_GEN_ERRORS,
    /** TID WRITE requests posted as TID RDMA (WRITE_REQ sent for the first time). */
    TID_WRITE_REQUESTS_SENT,
    /** TID WRITE requests accepted by responders. */
    TID_WRITE_REQUESTS,
    /** WRITE_RESP packets sent (one per segment, resends included). */
    TID_WRITE_RESPS,
    /** TID WRITE data packets sent. */
    TID_WRITE_DATA_PKTS,
    /** TID WRITE data packets placed at the data destination. */
    TID_WRITE_DATA_PKTS_RCVD,
    /** TID WRITE segments received completely. */
    TID_WRITE_SEGMENTS_RCVD,
    /** TID WRITE segments acknowledged by TID ACK at the requester. */
    TID_WRITE_SEGMENTS_ACKED,
    /** TID ACK packets sent (NAKs and RESYNC answers included). */
    TID_ACKS_SENT,
    /** TID NAKs sent (flow sequence or generation error at the data destination). */
    TID_NAKS_SENT,
    /** TID NAKs acted on by requesters (data resumed at the expected PSN). */
    TID_NAKS_RCVD,
    /** RESYNC packets sent after a TID retry timeout. */
    TID_RESYNCS_SENT,
    /** RESYNC packets received. */
    TID_RESYNCS_RCVD,
    /** TID retry timer expiries (data sent, no TID ACK). */
    TID_RETRY_TIMEOUTS,
    /** TID resource (reap) timer expiries at responders: the QP went to ERR. */
    TID_REAP_TIMEOUTS,
    /** RNR NAKs sent for TID WRITE requests that found no flow or TID entries. */
    TID_WRITE_RNR,
    /** TID WRITE requests refused because every TID WRITE entry was active (NAK 0x61). */
    TID_WRITE_RING_FULL,
    /** Times a request waited behind a TID WRITE (the interlocks of tid-opfn-facts.md §7). */
    TID_INTERLOCK_WAITS,
    /**
     * Packets received on one event loop of a multi-loop device and handed to the loop of their QP
     * (0 on a single-loop device, and on a UDP device whose sockets steer by QPN).
     */
    STEERED_PKTS,
    /**
     * Packets dropped: shorter than BTH + ICRC, or than the opcode's headers + pad + ICRC; also an
     * opcode without payload followed by extra bytes, and a TID list of 0 or more than 64 entries.
     */
    DROP_TOO_SHORT,
    /** Packets dropped: BTH TVer is not 0. */
    DROP_BAD_TVER,
    /** Packets dropped: opcode not in the opcode table. */
    DROP_UNKNOWN_OPCODE,
    /** Packets dropped: padCnt on a packet without payload, or larger than the bytes after the headers; payload + pad not a multiple of 4; PadCnt on a TID list (whose length must be a multiple of 4). */
    DROP_BAD_PAD,
    /** Packets dropped: iCRC mismatch. */
    DROP_BAD_ICRC,
    /** Packets dropped: p_Key is neither 0xFFFF nor 0x7FFF. */
    DROP_BAD_PKEY,
    /** Packets dropped: destQP is 0, or no such QP exists. */
    DROP_NO_QP,
    /** Packets dropped: opcode transport does not match the QP type. */
    DROP_WRONG_TRANSPORT,
    /** Packets dropped: request while the QP is not at least RTR, or response while not at least RTS. */
    DROP_QP_STATE,
    /** Packets dropped: sender address is not the QP's peer. */
    DROP_WRONG_PEER,
    /** Packets dropped: anything else the engine refused without a NAK (stale or unexpected responses, unmatched duplicates). */
    DROP_OTHER,
    /** Packets dropped: an unexpected exception in the engine while handling the packet (a bug): the QP concerned enters ERR with an "internal error" reason and a rate-limited WARN is logged. */
    DROP_INTERNAL_ERROR,
    /** Packets dropped: a request that arrived while the responder's queue of requests waiting behind a READ reply was full (the requester resends it); {@code extensions.md} §6, bounded output. */
    DROP_RESPONDER_BUSY,
    /**
     * Packets dropped: a TID RDMA packet whose KDETH J_KEY is not the one this side advertised
     * through OPFN ({@code tid-opfn-facts.md} §3.3).
     */
    DROP_BAD_JKEY,
    /**
     * Packets dropped: received on one event loop of a multi-loop device for a QP of another while
     * the ring between the two loops was full (the peer resends them).
     */
    DROP_STEER_QUEUE_FULL,
    /**
     * Duplicate READ/atomic/ATOMIC WRITE/FLUSH requests dropped because later requests had reused
     * their responder resource (late network duplicates; {@code DropReason.STALE_DUPLICATE}).
     */
    DROP_STALE_DUPLICATE,
    /**
     * UD datagrams dropped because their DETH Q_Key is not the receiving QP's (0x80010000 for QP1):
     * {@code rdma_rxe}'s {@code qkey_viol_cntr} ({@code verbs-surface-facts.md} §2.4 rule 3).
     */
    DROP_BAD_QKEY,
    /**
     * UD datagrams and UC messages dropped because the receiving QP had no receive WQE posted (class D:
     * no NAK, no completion; {@code verbs-surface-facts.md} §2.8 rule 9, §3.4 rule 6).
     */
    DROP_NO_RECV_WQE,
    /**
     * UD datagrams dropped because the 40-byte GRH and the payload do not fit the receive WQE (class
     * D: the WQE stays posted; {@code verbs-surface-facts.md} §2.6 rule 2), and UC packets with a length
     * error (§3.4 rule 4), whose message is then dropped.
     */
    DROP_RECV_LENGTH,
    /**
     * MADs the GSI QP (QP1) received while nothing in the library listened for them (before the
     * connection manager opened it, say): dropped, the receive buffer posted again.
     */
    DROP_GSI_NO_LISTENER,
    /** MADs the GSI QP (QP1) received and handed to the library's listener (the connection manager). */
    GSI_RCVD_MADS,
    /** MADs the GSI QP (QP1) sent. */
    GSI_SENT_MADS,
    /**
     * MADs the connection manager dropped as malformed: not a CM MAD (management class 0x07, class
     * version 2, method Send; {@code cm-facts.md} §2), shorter than 256 bytes, an unknown attribute,
     * or fields that do not parse (Linux's {@code ib_mad} and {@code cm.c} drop these silently).
     */
    CM_DROP_MALFORMED,
    /**
     * CM MADs that name no connection of this device or do not fit its state: a late or replayed
     * REP, RTU, REJ, MRA, DREP, DREQ or SIDR_REP (Linux's {@code cm_acquire_id} failing, or a handler's
     * state check). Dropped; a DREQ for an unknown connection is still answered with a DREP, as
     * {@code cm_issue_drep} does.
     */
    CM_DROP_STALE,
    /**
     * Datagrams dropped for the device's own sockets before rxe4j saw them (exact, per socket: the
     * {@code drops} of {@code /proc/net/udp}). Linux counts there both a full receive buffer and a bad
     * UDP checksum (a datagram corrupted on the way), so this is not only overflows: see {@link
     * #UDP_RCVBUF_ERRORS} and {@link #UDP_IN_CSUM_ERRORS} for the split. 0 on the in-JVM fabric.
     */
    RCV_QUEUE_DROPS,
    /**
     * UDP datagrams the kernel dropped because a receive buffer was full, since the device's transport
     * was opened ({@code RcvbufErrors} of {@code /proc/net/snmp} plus {@code Udp6RcvbufErrors}, as a
     * delta). Linux keeps it per network namespace only, so every UDP socket of the namespace (of this
     * process or another) counts: an upper bound of this device's overflows, exact when the device's
     * sockets are the only busy UDP receivers (e.g. a container or netns of its own).
     */
    UDP_RCVBUF_ERRORS,
    /**
     * UDP datagrams the kernel dropped because their UDP checksum was wrong, since the device's
     * transport was opened ({@code InCsumErrors} plus {@code Udp6InCsumErrors}, a per-namespace delta
     * as {@link #UDP_RCVBUF_ERRORS}): corruption on the wire, never a full buffer. A datagram
     * corrupted with a valid UDP checksum reaches rxe4j and counts in {@link #DROP_BAD_ICRC} instead.
     */
    UDP_IN_CSUM_ERRORS;

    private final String rxeName = name().toLowerCase(java.util.Locale.ROOT);

    /** @return the rxe-style name, e.g. {@code "sent_pkts"} (the key in {@link RdmaDevice#counters()}) */
    public String rxeName() {
        return rxeName;
    }

    /**
     * @return the counter with this rxe-style name
     * @throws IllegalArgumentException for an unknown name (the message lists the known ones)
     */
    public static Counter ofRxeName(String name) {
        for (Counter c : values()) {
            if (c.rxeName.equals(name)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown counter '" + name + "'; known: " + java.util.Arrays.stream(values()).map(Counter::rxeName).toList());
    }
}
