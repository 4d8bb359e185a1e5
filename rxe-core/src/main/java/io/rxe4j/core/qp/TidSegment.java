package io.rxe4j.core.qp;

import io.rxe4j.verbs.TidRdmaParams;

/**
 * The software flow of one TID RDMA segment at the data destination ({@code struct
 * tid_rdma_flow}; {@code tid-opfn-facts.md} §4): which verbs PSNs and which flow sequence numbers
 * the segment uses, where its bytes go, and the TID entries programmed for them. Preallocated in a
 * ring of {@link #RING} per send WQE and reused. Loop only.
 */
public final class TidSegment {
    /** Software flows per request ({@code MAX_FLOWS} = roundup_pow2(max(6, 4) + 1)). */
    public static final int RING = 8;

    /** Segment number within the message. */
    public int index;
    /** Verbs PSN of the segment's first packet ({@code ib_spsn}). */
    public int ibSpsn;
    /** Packets (and verbs PSNs) of the segment. */
    public int npkts;
    /** Flow generation (13 bits). */
    public int generation;
    /** First flow sequence number ({@code spsn}, 11 bits). */
    public int spsn;
    /** Offset of the segment in the message, in bytes. */
    public long offset;
    /** Segment length in bytes. */
    public int length;
    /** TID entry handles programmed for the segment. */
    public final int[] handles = new int[io.rxe4j.core.wire.TidEntry.MAX_ENTRIES];
    /** The TID list sent to the data source: one u32 per handle ({@code TidEntry.encode}). */
    public final int[] tidList = new int[io.rxe4j.core.wire.TidEntry.MAX_ENTRIES];
    /** Entries in use. */
    public int count;
    // ---- TID WRITE, data source (requester) side ----
    /** Verbs PSN of the segment's WRITE_RESP ({@code resp_ib_psn}). */
    public int respIbPsn;
    /** DestQP of the data packets: the responder's tid_flow_qp ({@code tid_qpn}). */
    public int tidQpn;
    /** Next packet to send (0-based), its TID entry and the byte offsets in the entry and the segment. */
    public int pkt;
    public int tidIdx;
    public int tidOffset;
    public int byteOffset;
    /**
     * TID WRITE: packets of the segment received in order so far (at the data destination), or known
     * to be received from a RESYNC's ACK (at the data source); both sides renumber a segment on a
     * RESYNC so that its packet {@code received} gets sequence 0 of the new generation.
     */
    public int received;

    /** Points the data cursor at packet {@code j} of the segment, walking the TID list. */
    public void seek(int j, int pmtu) {
        pkt = 0;
        tidIdx = 0;
        tidOffset = 0;
        byteOffset = 0;
        while (pkt < j && byteOffset < length) {
            advance(packetBytes(pmtu));
        }
    }

    /** @return the payload of the packet at the cursor: at most the path MTU, never across a TID entry */
    public int packetBytes(int pmtu) {
        int entryLeft = io.rxe4j.core.wire.TidEntry.lengthBytes(tidList[tidIdx]) - tidOffset;
        return Math.min(Math.min(pmtu, entryLeft), length - byteOffset);
    }

    /** Moves the cursor past a packet of {@code n} bytes. */
    public void advance(int n) {
        pkt++;
        byteOffset += n;
        tidOffset += n;
        if (tidIdx < count && tidOffset == io.rxe4j.core.wire.TidEntry.lengthBytes(tidList[tidIdx])) {
            tidIdx++;
            tidOffset = 0;
        }
    }

    /** @return the segment's last flow sequence number */
    public int lpsn() {
        return spsn + npkts - 1;
    }

    /** Turns WQE {@code w} (just filled at post time) into a TID READ with the peer's segment size. */
    public static void toTidRead(SendWqe w, TidRdmaParams remote, int pmtu) {
        w.tid = true;
        w.segLen = (int) Math.min(remote.maxLen(), w.length);
        w.totalSegs = (int) ((w.length + w.segLen - 1) / w.segLen);
        w.pktsPerSeg = (w.segLen + pmtu - 1) / pmtu;
        w.curSeg = 0;
        w.compSeg = 0;
        w.setupHead = 0;
        w.segCredits = 0;
        if (w.segs == null) {
            w.segs = new TidSegment[TidSegment.RING];
            for (int i = 0; i < w.segs.length; i++) {
                w.segs[i] = new TidSegment();
            }
        }
    }

    /** Turns WQE {@code w} into a TID WRITE: one verbs PSN per segment of the peer's max_len. */
    public static void toTidWrite(SendWqe w, TidRdmaParams remote, int pmtu) {
        toTidRead(w, remote, pmtu);
        w.respSeg = 0;
        w.dataSeg = 0;
        w.ackSeg = 0;
        w.tidStarted = false;
    }
}
