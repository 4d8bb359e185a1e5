package io.rxe4j.core.qp;

/**
 * The software flow of one TID RDMA segment at the data destination ({@code struct
 * tid_rdma_flow}; {@code tid-opfn-facts.md} §4): which verbs PSNs and which flow sequence numbers
 * the segment uses, where its bytes go, and the TID entries programmed for them. Preallocated in a
 * ring of {@link #RING} per send WQE and reused. Loop only.
 */
final class TidSegment {
    /** Software flows per request ({@code MAX_FLOWS} = roundup_pow2(max(6, 4) + 1)). */
    static final int RING = 8;

    /** Segment number within the message. */
    int index;
    /** Verbs PSN of the segment's first packet ({@code ib_spsn}). */
    int ibSpsn;
    /** Packets (and verbs PSNs) of the segment. */
    int npkts;
    /** Flow generation (13 bits). */
    int generation;
    /** First flow sequence number ({@code spsn}, 11 bits). */
    int spsn;
    /** Offset of the segment in the message, in bytes. */
    long offset;
    /** Segment length in bytes. */
    int length;
    /** TID entry handles programmed for the segment. */
    final int[] handles = new int[io.rxe4j.core.wire.TidEntry.MAX_ENTRIES];
    /** The TID list sent to the data source: one u32 per handle ({@code TidEntry.encode}). */
    final int[] tidList = new int[io.rxe4j.core.wire.TidEntry.MAX_ENTRIES];
    /** Entries in use. */
    int count;
    // ---- TID WRITE, data source (requester) side ----
    /** Verbs PSN of the segment's WRITE_RESP ({@code resp_ib_psn}). */
    int respIbPsn;
    /** DestQP of the data packets: the responder's tid_flow_qp ({@code tid_qpn}). */
    int tidQpn;
    /** Next packet to send (0-based), its TID entry and the byte offsets in the entry and the segment. */
    int pkt;
    int tidIdx;
    int tidOffset;
    int byteOffset;
    /**
     * TID WRITE: packets of the segment received in order so far (at the data destination), or known
     * to be received from a RESYNC's ACK (at the data source); both sides renumber a segment on a
     * RESYNC so that its packet {@code received} gets sequence 0 of the new generation.
     */
    int received;

    /** Points the data cursor at packet {@code j} of the segment, walking the TID list. */
    void seek(int j, int pmtu) {
        pkt = 0;
        tidIdx = 0;
        tidOffset = 0;
        byteOffset = 0;
        while (pkt < j && byteOffset < length) {
            advance(packetBytes(pmtu));
        }
    }

    /** @return the payload of the packet at the cursor: at most the path MTU, never across a TID entry */
    int packetBytes(int pmtu) {
        int entryLeft = io.rxe4j.core.wire.TidEntry.lengthBytes(tidList[tidIdx]) - tidOffset;
        return Math.min(Math.min(pmtu, entryLeft), length - byteOffset);
    }

    /** Moves the cursor past a packet of {@code n} bytes. */
    void advance(int n) {
        pkt++;
        byteOffset += n;
        tidOffset += n;
        if (tidIdx < count && tidOffset == io.rxe4j.core.wire.TidEntry.lengthBytes(tidList[tidIdx])) {
            tidIdx++;
            tidOffset = 0;
        }
    }

    /** @return the segment's last flow sequence number */
    int lpsn() {
        return spsn + npkts - 1;
    }
}
