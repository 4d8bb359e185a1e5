package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import io.rxe4j.verbs.reliability.VirtualRcPair.Pkt;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Deterministic virtual-time loss scenarios ({@code rxe-facts.md} §5). */
class LossRecoveryTest {
    private static final int OP_WRITE_MIDDLE = 0x07;
    private static final int OP_READ_REQUEST = 0x0C;
    private static final int OP_READ_RESPONSE_MIDDLE = 0x0E;
    private static final int OP_ACK = 0x11;
    private static final int OP_ATOMIC_ACK = 0x12;
    private static final int OP_FETCH_ADD = 0x14;

    private static void fill(MemorySegment seg, long off, int len, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            seg.set(ValueLayout.JAVA_BYTE, off + i, (byte) r.nextInt());
        }
    }

    /** (a) The ATOMIC ACK of a FETCH_AND_ADD is lost once: retransmit on timeout, responder replays. */
    @Test
    void lostAtomicAckIsReplayedFromTheResponderResource() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            long original = 0x0123_4567_89AB_CDEFL;
            p.b.mr.segment().set(ValueLayout.JAVA_LONG, 64, original);
            int[] atomicAcks = {0};
            p.dropper = pkt -> !pkt.fromA() && pkt.opcode() == OP_ATOMIC_ACK && atomicAcks[0]++ == 0;
            SendWr wr = new SendWr().set(1, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(p.b.mr.addr() + 64, p.b.mr.rkey());
            wr.compareAdd = 5;
            long t0 = p.vs.nanoTime();
            p.a.qp.postSend(wr);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.FETCH_ADD);
            assertThat(wc.wrId).isEqualTo(1);
            // ACK timeout 4.096 us * 2^14 = 67.1 ms must have passed before the retransmit
            assertThat(p.vs.nanoTime() - t0).isGreaterThanOrEqualTo(4096L << 14);
            assertThat(p.a.mr.segment().get(ValueLayout.JAVA_LONG, 0)).as("returned original").isEqualTo(original);
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 64)).as("added exactly once")
                    .isEqualTo(original + 5);
            assertThat(p.sent(true, OP_FETCH_ADD)).hasSize(2);
            assertThat(p.sent(true, OP_FETCH_ADD).get(1).psn()).isEqualTo(p.sent(true, OP_FETCH_ADD).get(0).psn());
            assertThat(p.sent(false, OP_ATOMIC_ACK)).hasSize(2);
            assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).isEqualTo(1);
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    /**
     * (b) The 2nd of 4 READ response packets is lost: the later two are placed by offset, and after
     * the reordering window only the lost packet is re-requested.
     */
    @Test
    void lostReadResponseReRequestsOnlyTheMissingPart() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            var reqs = readWithTheSecondResponseLost(p);
            long va = p.b.mr.addr();
            assertThat(reqs).hasSize(2);
            assertThat(reqs.get(0).rethVa()).isEqualTo(va);
            assertThat(reqs.get(0).rethLen()).isEqualTo(1024);
            assertThat(reqs.get(1).rethVa()).as("re-request VA").isEqualTo(va + 256);
            assertThat(reqs.get(1).rethLen()).as("re-request length: only the lost packet").isEqualTo(256);
            assertThat(reqs.get(1).psn()).isEqualTo((reqs.get(0).psn() + 1) & 0xFFFFFF);
            // responses 3 and 4 were placed by their offset; after the reordering window only the missing
            // packet is asked for again, no go-back-N and no local ACK timeout
            assertThat(p.a.dev.counter("read_responses_placed")).isEqualTo(2);
            assertThat(p.a.dev.counter("selective_repairs")).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
            assertThat(p.a.dev.counter("completer_retry_err")).isZero();
            assertThat(p.a.dev.counter("rewinds")).isZero();
            assertThat(p.b.dev.counter("sent_pkts")).as("B sent the READ's 4 responses and one again").isEqualTo(5);
            assertThat(p.vs.nanoTime()).as("no timeout elapsed").isLessThan(4096L << 14);
        }
    }

    @Test
    void withRxeRecoveryALostReadResponseReRequestsTheTail() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0, io.rxe4j.verbs.DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            var reqs = readWithTheSecondResponseLost(p);
            long va = p.b.mr.addr();
            assertThat(reqs).hasSize(2);
            assertThat(reqs.get(0).rethVa()).isEqualTo(va);
            assertThat(reqs.get(0).rethLen()).isEqualTo(1024);
            assertThat(reqs.get(1).rethVa()).as("re-request VA").isEqualTo(va + 256);
            assertThat(reqs.get(1).rethLen()).as("re-request length").isEqualTo(768);
            assertThat(reqs.get(1).psn()).isEqualTo((reqs.get(0).psn() + 1) & 0xFFFFFF);
            // the gap (response 3 arrived while 2 was expected) re-requests the tail at once (extensions §6),
            // without waiting for the local ACK timeout
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
            assertThat(p.a.dev.counter("completer_retry_err")).isEqualTo(1);
            assertThat(p.vs.nanoTime()).as("no timeout elapsed").isLessThan(4096L << 14);
        }
    }

    /**
     * (c) A middle WRITE packet is lost: the responder holds the two after it and NAKs the gap after
     * its reordering window; the requester sends only the NAKed packet again (the first NAK of a QP
     * also tells that this peer holds), and one coalesced ACK covers all.
     */
    @Test
    void lostMiddleWritePacketIsRecoveredBySequenceNak() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            writeWithTheSecondPacketLost(p);
            assertThat(p.a.dev.counter("rcvd_seq_err")).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).as("recovered by NAK, not timeout").isZero();
            Pkt lost = p.log.stream().filter(Pkt::dropped).findFirst().orElseThrow();
            assertThat(lost.psn()).isEqualTo(0x101);
            // only the lost packet is sent again
            var fromA = p.log.stream().filter(Pkt::fromA).map(Pkt::psn).toList();
            assertThat(fromA).containsExactly(0x100, 0x101, 0x102, 0x103, 0x101);
            assertThat(p.b.dev.counter("reorder_held")).isEqualTo(2);
            assertThat(p.a.dev.counter("selective_repairs")).isEqualTo(1);
            assertThat(p.a.dev.counter("rewinds")).isZero();
            var naks = p.sent(false, OP_ACK);
            assertThat(naks).isNotEmpty();
            assertThat(p.b.dev.counter("out_of_seq_request")).isGreaterThanOrEqualTo(1);
        }
    }

    /**
     * (c') Two packets of one WRITE lost, between peers that agreed EXT_SELECTIVE_NAK at connection
     * setup: after its reordering window the responder NAKs the first hole and names both holes in
     * one selective NAK (opcode 0xF2, byte for byte as docs/wire.md "Selective NAK" specifies); the
     * requester sends exactly those two packets again, once each, and no go-back-N follows.
     */
    @Test
    void twoLostWritePacketsAreNamedByOneSelectiveNak() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.negotiateExtensions();
            p.capturer = pkt -> pkt.opcode() == 0xF2;
            fill(p.a.mr.segment(), 0, 2048, 13);
            java.util.Set<Integer> lose = new java.util.HashSet<>(java.util.List.of(0x101, 0x104));
            p.dropper = pkt -> pkt.fromA() && lose.remove(pkt.psn()); // the first transmission of each
            p.a.qp.postSend(new SendWr().set(4, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 2048, p.a.mr.lkey())).remote(p.b.mr.addr() + 4096, p.b.mr.rkey()));
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.mr.segment().asSlice(4096, 2048).mismatch(p.a.mr.segment().asSlice(0, 2048))).isEqualTo(-1);
            var fromA = p.log.stream().filter(Pkt::fromA).map(Pkt::psn).toList();
            assertThat(fromA).containsExactly(0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x101, 0x104);
            assertThat(p.b.dev.counter("selective_naks")).isEqualTo(1);
            assertThat(p.a.dev.counter("selective_repairs")).isEqualTo(2);
            assertThat(p.a.dev.counter("rewinds")).isZero();
            assertThat(p.captured).hasSize(1);
            io.netty.buffer.ByteBuf snak = p.captured.get(0);
            int qpn = p.a.qp.qpNum();
            byte[] want = {
                (byte) 0xF2, 0x00, (byte) 0xFF, (byte) 0xFF, // opcode, SE/M/PadCnt/TVer 0, P_Key
                0x00, (byte) (qpn >> 16), (byte) (qpn >> 8), (byte) qpn, // resv8, DestQP = the requester's QP
                0x00, 0x00, 0x01, 0x01, // AckReq 0, PSN = the expected PSN 0x000101
                0x00, 0x00, 0x01, 0x01, // range: count 1 (count - 1 = 0), first PSN 0x000101
                0x00, 0x00, 0x01, 0x04, // range: count 1, first PSN 0x000104
            };
            byte[] got = new byte[snak.readableBytes()];
            snak.getBytes(snak.readerIndex(), got);
            assertThat(got).hasSize(want.length + 4); // and the 4-byte ICRC
            assertThat(java.util.Arrays.copyOf(got, want.length)).containsExactly(want);
            assertThat(new io.rxe4j.core.wire.Icrc().check(snak, snak.readerIndex(), got.length,
                    p.b.dev.address(), p.a.dev.address())).as("ICRC").isTrue();
        }
    }

    /**
     * (c'') A selective NAK from a peer that did not agree on it is dropped and counted, never acted
     * on: it is rxe4j's own opcode, and only an agreed peer may send it.
     */
    @Test
    void aSelectiveNakWithoutAgreementIsDropped() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.capturer = pkt -> pkt.opcode() == 0xF2;
            fill(p.a.mr.segment(), 0, 2048, 13);
            java.util.Set<Integer> lose = new java.util.HashSet<>(java.util.List.of(0x101, 0x104));
            p.dropper = pkt -> pkt.fromA() && lose.remove(pkt.psn());
            p.a.qp.postSend(new SendWr().set(4, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 2048, p.a.mr.lkey())).remote(p.b.mr.addr() + 4096, p.b.mr.rkey()));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.dev.counter("selective_naks")).as("not agreed: none sent").isZero();
            assertThat(p.captured).isEmpty();
            // a forged one, as a peer that never agreed might send it: dropped as the wrong transport
            long before = p.a.dev.counter("drop_wrong_transport");
            int qpn = p.a.qp.qpNum();
            io.netty.buffer.ByteBuf forged = io.netty.buffer.Unpooled.buffer(20);
            forged.writeBytes(new byte[] {(byte) 0xF2, 0, (byte) 0xFF, (byte) 0xFF, 0, (byte) (qpn >> 16),
                (byte) (qpn >> 8), (byte) qpn, 0, 0, 0x01, 0x08, 0, 0, 0x01, 0x00});
            forged.writeInt(0);
            new io.rxe4j.core.wire.Icrc().write(forged, 0, 20, p.b.dev.address(), p.a.dev.address());
            long resentBefore = p.a.dev.counter("resent_pkts");
            p.replay(forged, false);
            forged.release();
            p.vs.runFor(1_000_000);
            assertThat(p.a.dev.counter("drop_wrong_transport")).isEqualTo(before + 1);
            assertThat(p.a.dev.counter("resent_pkts")).isEqualTo(resentBefore);
        }
    }

    /** (c) rdma_rxe's recovery: a middle WRITE packet is lost: PSN-sequence NAK, go-back-N from that packet. */
    @Test
    void withRxeRecoveryALostMiddleWritePacketIsResentWithAllAfterIt() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0, io.rxe4j.verbs.DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            writeWithTheSecondPacketLost(p);
            assertThat(p.a.dev.counter("rcvd_seq_err")).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).as("recovered by NAK, not timeout").isZero();
            Pkt lost = p.log.stream().filter(Pkt::dropped).findFirst().orElseThrow();
            assertThat(lost.psn()).isEqualTo(0x101);
            // the resend starts at the lost PSN: no packet before it is sent twice
            var fromA = p.log.stream().filter(Pkt::fromA).map(Pkt::psn).toList();
            assertThat(fromA).containsExactly(0x100, 0x101, 0x102, 0x103, 0x101, 0x102, 0x103);
            var naks = p.sent(false, OP_ACK);
            assertThat(naks).isNotEmpty();
            assertThat(p.b.dev.counter("out_of_seq_request")).isGreaterThanOrEqualTo(1);
        }
    }

    /** (d) retry_cnt 0 and every packet to the responder lost: RETRY_EXC_ERR, QP in ERR, later WRs flushed. */
    @Test
    void retryCountZeroFailsWithRetryExceeded() {
        try (VirtualRcPair p = new VirtualRcPair(8192, new Params(Mtu.MTU_256, 10, 0, 0x100, 0x200))) {
            p.dropper = pkt -> pkt.fromA();
            SendWr w1 = new SendWr().set(10, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 512, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey());
            SendWr w2 = new SendWr().set(11, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 64, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey());
            p.a.qp.postSend(w1);
            p.a.qp.postSend(w2);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.wrId).isEqualTo(10);
            assertThat(wc.status).isEqualTo(WcStatus.RETRY_EXC_ERR);
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
            wc = p.next(p.a);
            assertThat(wc.wrId).isEqualTo(11);
            assertThat(wc.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            // a WR posted in ERR is flushed too
            SendWr w3 = new SendWr().set(12, WrOpcode.SEND, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey()));
            p.a.qp.postSend(w3);
            wc = p.next(p.a);
            assertThat(wc.wrId).isEqualTo(12);
            assertThat(wc.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            assertThat(p.a.dev.counter("retry_exceeded_err")).isEqualTo(1);
            assertThat(p.log.stream().filter(Pkt::fromA).allMatch(Pkt::dropped)).isTrue();
            assertThat(p.b.dev.counter("rcvd_pkts")).isZero();
            assertThat(p.quiet(p.a, 1_000_000_000L)).as("nothing more completes").isTrue();
        }
    }

    /** (e) A 4-packet SEND starting at PSN 0xFFFFFE crosses the 2^24 wrap. */
    @Test
    void sendAcrossPsnWrap() {
        try (VirtualRcPair p = new VirtualRcPair(8192, new Params(Mtu.MTU_256, 14, 7, 0xFFFFFE, 0x200))) {
            fill(p.a.mr.segment(), 0, 1024, 13);
            p.b.qp.postRecv(new RecvWr().set(77, new Sge(p.b.mr.addr() + 4096, 2048, p.b.mr.lkey())));
            for (int i = 0; i < 2; i++) {
                SendWr wr = new SendWr().set(20 + i, WrOpcode.SEND, SendFlags.SIGNALED,
                        new Sge(p.a.mr.addr(), 1024, p.a.mr.lkey()));
                if (i == 1) {
                    p.b.qp.postRecv(new RecvWr().set(78, new Sge(p.b.mr.addr() + 6144, 1024, p.b.mr.lkey())));
                }
                p.a.qp.postSend(wr);
                WorkCompletion wc = p.next(p.a);
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.wrId).isEqualTo(20 + i);
                WorkCompletion rwc = p.next(p.b);
                assertThat(rwc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(rwc.opcode).isEqualTo(WcOpcode.RECV);
                assertThat(rwc.byteLen).isEqualTo(1024);
            }
            assertThat(p.b.mr.segment().asSlice(4096, 1024).mismatch(p.a.mr.segment().asSlice(0, 1024)))
                    .isEqualTo(-1);
            assertThat(p.b.mr.segment().asSlice(6144, 1024).mismatch(p.a.mr.segment().asSlice(0, 1024)))
                    .isEqualTo(-1);
            var psns = p.log.stream().filter(Pkt::fromA).map(Pkt::psn).toList();
            assertThat(psns).containsExactly(0xFFFFFE, 0xFFFFFF, 0x000000, 0x000001, 0x000002, 0x000003, 0x000004,
                    0x000005);
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
            assertThat(p.a.dev.counter("rcvd_seq_err")).isZero();
            assertThat(p.b.dev.counter("duplicate_request")).isZero();
        }
    }

    /**
     * A 1024-byte READ at MTU 256 whose 2nd response packet is lost once; runs it to its successful
     * completion and checks every byte.
     *
     * @return the READ requests A sent
     */
    private static java.util.List<Pkt> readWithTheSecondResponseLost(VirtualRcPair p) {
        fill(p.b.mr.segment(), 0, 1024, 11);
        boolean[] dropped = {false};
        p.dropper = pkt -> {
            if (!pkt.fromA() && pkt.opcode() == OP_READ_RESPONSE_MIDDLE && !dropped[0]) {
                dropped[0] = true;
                return true;
            }
            return false;
        };
        long va = p.b.mr.addr();
        SendWr wr = new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                new Sge(p.a.mr.addr() + 4096, 1024, p.a.mr.lkey())).remote(va, p.b.mr.rkey());
        p.a.qp.postSend(wr);
        WorkCompletion wc = p.next(p.a);
        assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_READ);
        assertThat(wc.byteLen).isEqualTo(1024);
        assertThat(p.a.mr.segment().asSlice(4096, 1024).mismatch(p.b.mr.segment().asSlice(0, 1024)))
                .isEqualTo(-1);
        return p.sent(true, OP_READ_REQUEST);
    }

    /** A 1024-byte WRITE at MTU 256 whose 2nd packet is lost once; runs it to its successful completion and checks B's bytes. */
    private static void writeWithTheSecondPacketLost(VirtualRcPair p) {
        fill(p.a.mr.segment(), 0, 1024, 12);
        boolean[] dropped = {false};
        p.dropper = pkt -> {
            if (pkt.fromA() && pkt.opcode() == OP_WRITE_MIDDLE && !dropped[0]) {
                dropped[0] = true;
                return true;
            }
            return false;
        };
        SendWr wr = new SendWr().set(3, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                new Sge(p.a.mr.addr(), 1024, p.a.mr.lkey())).remote(p.b.mr.addr() + 2048, p.b.mr.rkey());
        p.a.qp.postSend(wr);
        WorkCompletion wc = p.next(p.a);
        assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(p.b.mr.segment().asSlice(2048, 1024).mismatch(p.a.mr.segment().asSlice(0, 1024)))
                .isEqualTo(-1);
    }

    /**
     * RFC 5681 §3.1 on a retransmit timeout: after an outage of 200 ms (longer than every RTT-derived
     * timer, shorter than the failure budget of 8 × 67 ms), each go-back-N resends one segment's worth
     * of packets (4 KiB: 3 of 1 KiB with headers), not the whole window again; after the outage the
     * window slow-starts and the 1 MiB of WRITEs completes, every byte in place. Before the collapse a
     * timeout only cut the window to 0.7 x (once per episode), and each timeout resent 243 packets.
     */
    @Test
    void aTimeoutResendsOneSegmentAndTheWindowSlowStartsAfterTheOutage() {
        int msg = 64 * 1024;
        int n = 16;
        try (VirtualRcPair p = new VirtualRcPair((long) n * msg, new Params(Mtu.MTU_1024, 14, 7, 0x100, 0x200),
                VirtualRcPair.ALL_REMOTE, 50_000)) {
            fill(p.a.mr.segment(), 0, n * msg, 21);
            long[] outage = outage(p, Pkt::fromA, 100);
            postWrites(p, n, msg);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.mr.segment().asSlice(0, (long) n * msg).mismatch(p.a.mr.segment().asSlice(0, (long) n * msg)))
                    .as("every byte in place").isEqualTo(-1);
            java.util.List<java.util.List<Pkt>> sent = bursts(p, Pkt::fromA, outage[0], outage[1]);
            java.util.List<Integer> bursts = sent.stream().map(java.util.List::size).toList();
            // the packet that fills the slow start's bound asks for the ACK that lets the QP go on (the
            // last burst may be cut by the outage's end)
            assertThat(sent.subList(1, Math.max(1, sent.size() - 1))).as("AckReq on each resend burst's last packet")
                    .allMatch(b -> b.get(b.size() - 1).ackReq());
            assertThat(bursts.size()).as("the first window, then timeouts and probes: %s", bursts).isGreaterThanOrEqualTo(4);
            assertThat(bursts.subList(1, bursts.size())).as("every resend after a timeout: one segment, %s", bursts)
                    .allMatch(b -> b <= 4);
            assertThat(p.a.dev.counter("retransmit_timeouts") + p.a.dev.counter("rtt_timeouts")).isGreaterThanOrEqualTo(2);
            assertThat(p.a.dev.counter("retry_exceeded_err")).isZero();
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    /**
     * A timeout of one QP while another QP to the same peer keeps being acknowledged: the path is
     * alive, so its shared window only shrinks as on a loss, but the QP that timed out slow-starts on
     * its own (RFC 5681 §3.1 per connection): each of its resends is one segment's packets, while
     * the other QP's stream goes on; both complete with every byte in place.
     */
    @Test
    void aQpThatTimedOutSlowStartsAloneWhileAnotherQpOfThePathFlows() {
        int msg = 64 * 1024;
        int n = 8;
        try (VirtualRcPair p = new VirtualRcPair(2L * n * msg, new Params(Mtu.MTU_1024, 14, 7, 0x100, 0x200),
                VirtualRcPair.ALL_REMOTE, 50_000)) {
            VirtualRcPair.Conn other = p.newConnection();
            fill(p.a.mr.segment(), 0, 2 * n * msg, 22);
            int lossyDest = p.b.qp.qpNum();
            long[] outage = outage(p, k -> k.fromA() && k.destQp() == lossyDest, 50);
            postWrites(p, n, msg);
            // the other QP: a stream that keeps the path acknowledged through the outage
            int posted = 0;
            int done = 0;
            long other0 = (long) n * msg;
            while (p.vs.nanoTime() < (outage[1] < 0 ? Long.MAX_VALUE : outage[1]) && done < 100_000) {
                while (posted - done < 4) {
                    other.qa().postSend(new SendWr().set(1000 + posted, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                            new Sge(p.a.mr.addr() + other0, msg, p.a.mr.lkey())).remote(p.b.mr.addr() + other0,
                            p.b.mr.rkey()));
                    posted++;
                }
                assertThat(p.next(other.cqa(), "the other QP").status).isEqualTo(WcStatus.SUCCESS);
                done++;
            }
            assertThat(outage[0]).as("the outage happened").isNotNegative();
            assertThat(p.vs.nanoTime()).as("the other QP flowed through the outage").isGreaterThanOrEqualTo(outage[1]);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.mr.segment().asSlice(0, (long) n * msg).mismatch(p.a.mr.segment().asSlice(0, (long) n * msg)))
                    .as("every byte in place").isEqualTo(-1);
            java.util.List<java.util.List<Pkt>> sent = bursts(p, k -> k.fromA() && k.destQp() == lossyDest, outage[0], outage[1]);
            java.util.List<Integer> bursts = sent.stream().map(java.util.List::size).toList();
            // the packet that fills the slow start's bound asks for the ACK that lets the QP go on (the
            // last burst may be cut by the outage's end)
            assertThat(sent.subList(1, Math.max(1, sent.size() - 1))).as("AckReq on each resend burst's last packet")
                    .allMatch(b -> b.get(b.size() - 1).ackReq());
            assertThat(bursts.size()).as("the first window, then timeouts: %s", bursts).isGreaterThanOrEqualTo(3);
            assertThat(bursts.subList(1, bursts.size())).as("each resend of the QP that timed out: one segment, %s", bursts)
                    .allMatch(b -> b <= 4);
            assertThat(p.a.dev.counter("retry_exceeded_err")).isZero();
        }
    }

    /**
     * @return the packets {@code which} selects that crossed the fabric in [{@code from}, {@code to})
     *     virtual ns, in bursts (a burst ends at a pause of more than 1 ms)
     */
    private static java.util.List<java.util.List<Pkt>> bursts(VirtualRcPair p, java.util.function.Predicate<Pkt> which,
            long from, long to) {
        java.util.List<java.util.List<Pkt>> bursts = new java.util.ArrayList<>();
        long last = Long.MIN_VALUE;
        for (Pkt k : p.log) {
            if (!which.test(k) || k.time() < from || k.time() >= to) {
                continue;
            }
            if (bursts.isEmpty() || k.time() - last > 1_000_000) {
                bursts.add(new java.util.ArrayList<>());
            }
            bursts.get(bursts.size() - 1).add(k);
            last = k.time();
        }
        return bursts;
    }

    /**
     * Drops every packet {@code which} selects for 200 ms of virtual time from the {@code nth} one on.
     *
     * @return {start, end} of the outage in virtual ns ({-1, -1} until it starts)
     */
    private static long[] outage(VirtualRcPair p, java.util.function.Predicate<Pkt> which, int nth) {
        long[] outage = {-1, -1};
        int[] seen = {0};
        p.dropper = pkt -> {
            if (!which.test(pkt)) {
                return false;
            }
            if (++seen[0] == nth) {
                outage[0] = pkt.time();
                outage[1] = pkt.time() + 200_000_000L;
            }
            return outage[0] >= 0 && pkt.time() >= outage[0] && pkt.time() < outage[1];
        };
        return outage;
    }

    /** Posts {@code n} RDMA WRITEs of {@code msg} bytes from A's MR to B's, the last one signaled. */
    private static void postWrites(VirtualRcPair p, int n, int msg) {
        for (int i = 0; i < n; i++) {
            p.a.qp.postSend(new SendWr().set(i, WrOpcode.RDMA_WRITE, i == n - 1 ? SendFlags.SIGNALED : 0,
                    new Sge(p.a.mr.addr() + (long) i * msg, msg, p.a.mr.lkey())).remote(p.b.mr.addr() + (long) i * msg,
                    p.b.mr.rkey()));
        }
    }
}
