package io.rxe4j.core.device;

import io.rxe4j.core.wire.DropReason;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Device or QP counters, named like {@code rdma_rxe}'s hardware counters where one exists
 * ({@code sent_pkts}, {@code rcvd_pkts}, {@code duplicate_request}, …), plus drops by
 * {@link DropReason}. Written only by the device loop; reads from other threads may be slightly
 * stale (plain 64-bit fields, no tearing on a 64-bit JVM).
 */
public final class DeviceCounters {
    /** Packets handed to the transport. */
    public long sentPkts;
    /** Packets received from the transport. */
    public long rcvdPkts;
    /**
     * Packets the transport or the kernel refused to send ({@code rdma_rxe}'s {@code send_err}), e.g. a
     * datagram larger than the interface MTU (EMSGSIZE); each fails its QP (LOC_QP_OP_ERR). Also
     * counted in {@link #sentPkts}, which counts packets handed to the transport.
     */
    public long sendErr;
    /** Duplicate requests seen by responders. */
    public long duplicateRequest;
    /** Out-of-sequence requests seen by responders. */
    public long outOfSeqRequest;
    /** RNR NAKs received by requesters. */
    public long rcvdRnrErr;
    /** RNR NAKs sent by responders. */
    public long sendRnrErr;
    /** PSN-sequence NAKs received by requesters. */
    public long rcvdSeqErr;
    /** WQEs failed with RETRY_EXC_ERR. */
    public long retryExceededErr;
    /** WQEs failed with RNR_RETRY_EXC_ERR. */
    public long retryRnrExceededErr;
    /** Retries started by the completer (sequence NAK or lost response). */
    public long completerRetryErr;
    /** Local ACK timeouts that started a retry. */
    public long retransmitTimeouts;
    /** Requester rewinds (every retry). */
    public long rewinds;
    /** Responses beyond a rewound requester's PSN that moved it forward (cumulative ACKs). */
    public long fastForwards;
    /** Duplicate or stale responses dropped by completers. */
    public long duplicateResponse;
    /** Responses ahead of the expected PSN dropped by completers. */
    public long outOfSeqResponse;
    /** Completions lost to a full CQ. */
    public long cqOverflow;
    /** Request packets sent again with a PSN sent before (after a rewind): 0 on a loss-free path. */
    public long resentPkts;
    /** Times a requester stopped because 64 of its packets were unacknowledged ({@code extensions.md} §6). */
    public long outputStalls;
    /** Times the engine stopped producing because the transport was not writable. */
    public long txNotWritable;
    /** Congestion-window reductions (a loss or congestion signal, once per loss episode). */
    public long windowReductions;
    /** Times a requester waited because the device's byte budget towards its peer was spent. */
    public long budgetWaits;
    /** Congestion notification packets (CNP) sent by responders. */
    public long cnpSent;
    /** Congestion notification packets (CNP) received by requesters. */
    public long cnpRcvd;
    /** OPFN requests (hidden COMPARE_SWAPs) posted by this side ({@code tid-opfn-facts.md} §1). */
    public long opfnRequests;
    /** OPFN requests answered by this side's responder. */
    public long opfnResponses;
    /** OPFN requests that ran out of retries and were closed out silently (TID RDMA off, QP up). */
    public long opfnTimeouts;
    /** Times a QP joined a TID entry or flow wait queue ({@code n_tidwait}, hfi1 "TidWait"). */
    public long tidWait;
    /** RDMA READs carried as TID RDMA READ ({@code tid_r_reqs}). */
    public long tidReadRequests;
    /** TID READ_REQ packets sent (one per segment, resends included). */
    public long tidReadSegments;
    /** TID READ segments completed at the data destination. */
    public long tidReadSegmentsDone;
    /** TID restarts: a TID READ restarted by a flow sequence error ({@code n_rdma_seq}). */
    public long tidRestarts;
    /** Data packets whose flow sequence did not match (hardware RHF_RTE_EXPECTED_FLOW_SEQ_ERR). */
    public long tidFlowSeqErrors;
    /** Data packets whose flow generation did not match (RHF_RTE_EXPECTED_FLOW_GEN_ERR), dropped. */
    public long tidFlowGenErrors;
    /** TID WRITE requests posted as TID RDMA (WRITE_REQ sent for the first time). */
    public long tidWriteRequestsSent;
    /** TID WRITE requests accepted by responders. */
    public long tidWriteRequests;
    /** WRITE_RESP packets sent (one per segment, resends included). */
    public long tidWriteResps;
    /** TID WRITE data packets sent. */
    public long tidWriteDataPkts;
    /** TID WRITE data packets placed at the data destination. */
    public long tidWriteDataPktsRcvd;
    /** TID WRITE segments received completely. */
    public long tidWriteSegmentsRcvd;
    /** TID WRITE segments acknowledged by TID ACK at the requester. */
    public long tidWriteSegmentsAcked;
    /** TID ACK packets sent (NAKs and RESYNC answers included). */
    public long tidAcksSent;
    /** TID NAKs sent (flow sequence or generation error at the data destination). */
    public long tidNaksSent;
    /** TID NAKs acted on by requesters (data resumed at the expected PSN). */
    public long tidNaksRcvd;
    /** RESYNC packets sent after a TID retry timeout. */
    public long tidResyncsSent;
    /** RESYNC packets received. */
    public long tidResyncsRcvd;
    /** TID retry timer expiries (data sent, no TID ACK). */
    public long tidRetryTimeouts;
    /** TID resource (reap) timer expiries at responders: the QP went to ERR. */
    public long tidReapTimeouts;
    /** RNR NAKs sent for TID WRITE requests that found no flow or TID entries. */
    public long tidWriteRnr;
    /** TID WRITE requests refused because every TID WRITE entry was active (NAK 0x61). */
    public long tidWriteRingFull;
    /** Times a request waited behind a TID WRITE (the interlocks of tid-opfn-facts.md §7). */
    public long tidInterlockWaits;
    /** Packets received on one lane (event loop) of a device and handed to the lane of their QP ({@link RxeLane}). */
    public long steeredPkts;
    private final long[] drops = new long[DropReason.values().length];

    /** Creates zeroed counters. */
    public DeviceCounters() {}

    /** Counts one dropped packet. */
    public void drop(DropReason reason) {
        drops[reason.ordinal()]++;
    }

    /** @return how many packets were dropped for {@code reason} */
    public long drops(DropReason reason) {
        return drops[reason.ordinal()];
    }

    /**
     * Adds every counter of {@code o} to this one.
     *
     * @param withPackets whether to add sent_pkts and rcvd_pkts too (false when {@code o} is a
     *     QP's counters being folded into a device total that already counts its packets)
     */
    public void add(DeviceCounters o, boolean withPackets) {
        if (withPackets) {
            sentPkts += o.sentPkts;
            rcvdPkts += o.rcvdPkts;
        }
        sendErr += o.sendErr;
        duplicateRequest += o.duplicateRequest;
        outOfSeqRequest += o.outOfSeqRequest;
        rcvdRnrErr += o.rcvdRnrErr;
        sendRnrErr += o.sendRnrErr;
        rcvdSeqErr += o.rcvdSeqErr;
        retryExceededErr += o.retryExceededErr;
        retryRnrExceededErr += o.retryRnrExceededErr;
        completerRetryErr += o.completerRetryErr;
        retransmitTimeouts += o.retransmitTimeouts;
        rewinds += o.rewinds;
        fastForwards += o.fastForwards;
        duplicateResponse += o.duplicateResponse;
        outOfSeqResponse += o.outOfSeqResponse;
        cqOverflow += o.cqOverflow;
        resentPkts += o.resentPkts;
        outputStalls += o.outputStalls;
        txNotWritable += o.txNotWritable;
        windowReductions += o.windowReductions;
        budgetWaits += o.budgetWaits;
        cnpSent += o.cnpSent;
        cnpRcvd += o.cnpRcvd;
        opfnRequests += o.opfnRequests;
        opfnResponses += o.opfnResponses;
        opfnTimeouts += o.opfnTimeouts;
        tidWait += o.tidWait;
        tidReadRequests += o.tidReadRequests;
        tidReadSegments += o.tidReadSegments;
        tidReadSegmentsDone += o.tidReadSegmentsDone;
        tidRestarts += o.tidRestarts;
        tidFlowSeqErrors += o.tidFlowSeqErrors;
        tidFlowGenErrors += o.tidFlowGenErrors;
        tidWriteRequestsSent += o.tidWriteRequestsSent;
        tidWriteRequests += o.tidWriteRequests;
        tidWriteResps += o.tidWriteResps;
        tidWriteDataPkts += o.tidWriteDataPkts;
        tidWriteDataPktsRcvd += o.tidWriteDataPktsRcvd;
        tidWriteSegmentsRcvd += o.tidWriteSegmentsRcvd;
        tidWriteSegmentsAcked += o.tidWriteSegmentsAcked;
        tidAcksSent += o.tidAcksSent;
        tidNaksSent += o.tidNaksSent;
        tidNaksRcvd += o.tidNaksRcvd;
        tidResyncsSent += o.tidResyncsSent;
        tidResyncsRcvd += o.tidResyncsRcvd;
        tidRetryTimeouts += o.tidRetryTimeouts;
        tidReapTimeouts += o.tidReapTimeouts;
        tidWriteRnr += o.tidWriteRnr;
        tidWriteRingFull += o.tidWriteRingFull;
        tidInterlockWaits += o.tidInterlockWaits;
        steeredPkts += o.steeredPkts;
        for (int i = 0; i < drops.length; i++) {
            drops[i] += o.drops[i];
        }
    }

    /** @return every counter by its rxe-style name (drops as {@code drop_<reason>}), in a stable order */
    public Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("sent_pkts", sentPkts);
        m.put("rcvd_pkts", rcvdPkts);
        m.put("send_err", sendErr);
        m.put("duplicate_request", duplicateRequest);
        m.put("out_of_seq_request", outOfSeqRequest);
        m.put("rcvd_rnr_err", rcvdRnrErr);
        m.put("send_rnr_err", sendRnrErr);
        m.put("rcvd_seq_err", rcvdSeqErr);
        m.put("retry_exceeded_err", retryExceededErr);
        m.put("retry_rnr_exceeded_err", retryRnrExceededErr);
        m.put("completer_retry_err", completerRetryErr);
        m.put("retransmit_timeouts", retransmitTimeouts);
        m.put("rewinds", rewinds);
        m.put("ack_fast_forwards", fastForwards);
        m.put("duplicate_response", duplicateResponse);
        m.put("out_of_seq_response", outOfSeqResponse);
        m.put("cq_overflow", cqOverflow);
        m.put("resent_pkts", resentPkts);
        m.put("output_stalls", outputStalls);
        m.put("tx_not_writable", txNotWritable);
        m.put("cc_window_reductions", windowReductions);
        m.put("budget_waits", budgetWaits);
        m.put("cnp_sent", cnpSent);
        m.put("cnp_rcvd", cnpRcvd);
        m.put("opfn_requests", opfnRequests);
        m.put("opfn_responses", opfnResponses);
        m.put("opfn_timeouts", opfnTimeouts);
        m.put("tid_wait", tidWait);
        m.put("tid_read_requests", tidReadRequests);
        m.put("tid_read_segments", tidReadSegments);
        m.put("tid_read_segments_done", tidReadSegmentsDone);
        m.put("tid_restarts", tidRestarts);
        m.put("tid_flow_seq_errors", tidFlowSeqErrors);
        m.put("tid_flow_gen_errors", tidFlowGenErrors);
        m.put("tid_write_requests_sent", tidWriteRequestsSent);
        m.put("tid_write_requests", tidWriteRequests);
        m.put("tid_write_resps", tidWriteResps);
        m.put("tid_write_data_pkts", tidWriteDataPkts);
        m.put("tid_write_data_pkts_rcvd", tidWriteDataPktsRcvd);
        m.put("tid_write_segments_rcvd", tidWriteSegmentsRcvd);
        m.put("tid_write_segments_acked", tidWriteSegmentsAcked);
        m.put("tid_acks_sent", tidAcksSent);
        m.put("tid_naks_sent", tidNaksSent);
        m.put("tid_naks_rcvd", tidNaksRcvd);
        m.put("tid_resyncs_sent", tidResyncsSent);
        m.put("tid_resyncs_rcvd", tidResyncsRcvd);
        m.put("tid_retry_timeouts", tidRetryTimeouts);
        m.put("tid_reap_timeouts", tidReapTimeouts);
        m.put("tid_write_rnr", tidWriteRnr);
        m.put("tid_write_ring_full", tidWriteRingFull);
        m.put("tid_interlock_waits", tidInterlockWaits);
        m.put("steered_pkts", steeredPkts);
        for (DropReason r : DropReason.values()) {
            m.put("drop_" + r.name().toLowerCase(java.util.Locale.ROOT), drops[r.ordinal()]);
        }
        return m;
    }
}
