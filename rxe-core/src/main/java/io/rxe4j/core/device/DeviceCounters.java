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
        for (int i = 0; i < drops.length; i++) {
            drops[i] += o.drops[i];
        }
    }

    /** @return every counter by its rxe-style name (drops as {@code drop_<reason>}), in a stable order */
    public Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("sent_pkts", sentPkts);
        m.put("rcvd_pkts", rcvdPkts);
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
        for (DropReason r : DropReason.values()) {
            m.put("drop_" + r.name().toLowerCase(java.util.Locale.ROOT), drops[r.ordinal()]);
        }
        return m;
    }
}
