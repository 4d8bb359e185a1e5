package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.TidRdmaConfig;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import io.rxe4j.verbs.reliability.VirtualRcPair.Pkt;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * TID RDMA WRITE between two rxe4j devices on virtual time ({@code tid-opfn-facts.md} §6–§7):
 * the message sequence (WRITE_REQ, one WRITE_RESP per segment, data, TID ACK), completion as an
 * ordinary RDMA_WRITE, which WRITEs qualify, loss of every kind of packet (data in each position of
 * a segment: TID NAK; a last packet or a TID ACK: retry timer and RESYNC; WRITE_REQ and WRITE_RESP:
 * the RC timer and the duplicate request), RNR and waiting when TID entries or flows run out,
 * pipelining, and the interlocks. The responder checks its ack-queue invariants after every step
 * ({@code -ea}).
 */
class TidWriteTest {
    private static final int WRITE_ONLY = 0x0A;
    private static final int WRITE_FIRST = 0x06;
    private static final int TID_WRITE_REQ = 0xE0;
    private static final int TID_WRITE_RESP = 0xE1;
    private static final int TID_WRITE_DATA = 0xE2;
    private static final int TID_WRITE_DATA_LAST = 0xE3;
    private static final int TID_RESYNC = 0xE6;
    private static final int TID_ACK = 0xE7;
    private static final int KIB = 1024;
    private static final int SEG = 256 * KIB;
    private static final Params MTU4096 = new Params(Mtu.MTU_4096, 14, 7, 0x100, 0x200);
    private static final DeviceConfig TID = DeviceConfig.defaults().withTidRdma();
    /** Virtual time a lossy test may take. */
    private static final long LONG_WAIT = 600_000_000_000L;

    private static VirtualRcPair pair(long mrBytes, DeviceConfig a, DeviceConfig b) {
        VirtualRcPair p = new VirtualRcPair(mrBytes, MTU4096, VirtualRcPair.ALL_REMOTE, 0, a, b);
        TidReadTest.negotiate(p);
        return p;
    }

    private static SendWr write(long id, VirtualRcPair.Side from, long off, long len, VirtualRcPair.Side to,
            long toOff) {
        return new SendWr().set(id, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(from.mr.addr() + off, (int) len,
                from.mr.lkey())).remote(to.mr.addr() + toOff, to.mr.rkey());
    }

    private static WorkCompletion await(VirtualRcPair p, VirtualRcPair.Side s, long maxNanos) {
        WorkCompletion[] out = {new WorkCompletion()};
        assertThat(p.vs.runUntil(() -> s.cq.poll(out) == 1, maxNanos)).as("a completion; A %s B %s",
                p.a.qp.debugState(), p.b.qp.debugState()).isTrue();
        return out[0];
    }

    /** WRITEs {@code len} bytes of A (at {@code off}) to B (at {@code toOff}); checks the completion and the bytes. */
    private static void writeAndCheck(VirtualRcPair p, long off, long len, long toOff, long seed) {
        TidReadTest.fill(p.a.mr.segment(), off, len, seed);
        p.a.qp.postSend(write(seed, p.a, off, len, p.b, toOff));
        WorkCompletion wc = await(p, p.a, LONG_WAIT);
        assertThat(wc.status).as("status; %s", p.a.qp.errorReason()).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(wc.byteLen).isEqualTo((int) len);
        assertThat(wc.wrId).isEqualTo(seed);
        assertThat(p.b.mr.segment().asSlice(toOff, len).mismatch(p.a.mr.segment().asSlice(off, len)))
                .as("first differing byte").isEqualTo(-1);
    }

    private static long count(VirtualRcPair p, boolean fromA, int opcode) {
        return p.log.stream().filter(x -> x.fromA() == fromA && x.opcode() == opcode && !x.dropped()).count();
    }

    private static void assertIdle(VirtualRcPair p) {
        assertThat(p.b.qp.debugState()).contains("tidw-resp{tail=").contains("allocW=0").contains("tid{flow=-1");
        assertThat(p.a.qp.debugState()).contains("tidw{run}");
    }

    @ParameterizedTest
    @ValueSource(ints = {SEG, SEG + 4 * KIB, 1 << 20, 3 << 20, (3 << 20) + 8 * KIB})
    void aQualifyingWriteIsCarriedAsTidWriteAndCompletesAsAnOrdinaryWrite(int len) {
        try (VirtualRcPair p = pair(4L << 20, TID, TID)) {
            writeAndCheck(p, 0, len, 4096, len);
            int segs = (len + SEG - 1) / SEG;
            assertThat(count(p, true, TID_WRITE_REQ)).as(p.a.qp.debugState())
                    .isOne();
            assertThat(count(p, false, TID_WRITE_RESP)).isEqualTo(segs);
            assertThat(count(p, true, TID_WRITE_DATA)).isEqualTo(len / 4096 - 1);
            assertThat(count(p, true, TID_WRITE_DATA_LAST)).isOne();
            assertThat(count(p, false, TID_ACK)).isEqualTo(segs);
            assertThat(count(p, true, WRITE_ONLY) + count(p, true, WRITE_FIRST)).isZero();
            assertThat(p.b.dev.counter("tid_write_segments_rcvd")).isEqualTo(segs);
            assertThat(p.a.dev.counter("tid_write_segments_acked")).isEqualTo(segs);
            assertThat(p.b.dev.counter("tid_naks_sent") + p.a.dev.counter("tid_resyncs_sent")).isZero();
            assertIdle(p);
        }
    }

    @Test
    void writesThatDoNotQualifyStayOrdinaryWrites() {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            writeAndCheck(p, 0, SEG - 4096, 0, 1); // shorter than 256 KiB
            writeAndCheck(p, 0, SEG, 8, 2); // remote address not 4 KiB aligned
            writeAndCheck(p, 0, SEG + 100, 0, 3); // not a multiple of 4 KiB
            writeAndCheck(p, 8, SEG, 0, 4); // local address unaligned: qualifies (this side is the source)
            assertThat(count(p, true, TID_WRITE_REQ)).isOne();
            // WRITE_WITH_IMM never qualifies
            p.b.qp.postRecv(new RecvWr().set(9, new Sge(p.b.mr.addr(), 0, p.b.mr.lkey())));
            p.a.qp.postSend(new SendWr().set(5, WrOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), SEG, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()).imm(7));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(count(p, true, TID_WRITE_REQ)).isOne();
        }
    }

    /** Drops the {@code nth} packet (0-based, counted on the fabric) that {@code which} matches, once. */
    private static Predicate<Pkt> dropNth(Predicate<Pkt> which, int nth) {
        int[] seen = {0};
        return x -> which.test(x) && seen[0]++ == nth;
    }

    private static boolean isData(Pkt x) {
        return x.opcode() == TID_WRITE_DATA || x.opcode() == TID_WRITE_DATA_LAST;
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 31, 62, 64, 100, 127, 200, 254})
    void aLostDataPacketBeforeTheEndOfASegmentIsNakedAndResent(int nth) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(TidWriteTest::isData, nth);
            writeAndCheck(p, 0, 1 << 20, 0, nth);
            assertThat(p.b.dev.counter("tid_naks_sent")).isPositive();
            assertThat(p.a.dev.counter("tid_naks_rcvd")).isPositive();
            assertIdle(p);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 60, 127, 150, 186, 187, 190, 191, 192, 193})
    void aShortLastSegmentSurvivesALossAnywhere(int nth) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(TidWriteTest::isData, nth);
            writeAndCheck(p, 0, 794624, 0, 300 + nth); // 64 + 64 + 64 + 2 pages
            assertIdle(p);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {63, 127, 255})
    void aLostLastPacketOfASegmentIsRecoveredByTheRetryTimerAndResync(int nth) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(TidWriteTest::isData, nth);
            writeAndCheck(p, 0, 1 << 20, 0, nth);
            if (nth == 255) { // nothing follows the very last packet: only the timer can tell
                assertThat(p.a.dev.counter("tid_resyncs_sent")).isPositive();
                assertThat(p.b.dev.counter("tid_resyncs_rcvd")).isPositive();
            } else { // the next segment's first packet shows the gap
                assertThat(p.b.dev.counter("tid_naks_sent")).isPositive();
            }
            assertIdle(p);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3})
    void aLostTidAckIsRecovered(int nth) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(x -> x.opcode() == TID_ACK, nth);
            writeAndCheck(p, 0, 1 << 20, 0, 70 + nth);
            assertIdle(p);
            if (nth == 3) { // the last ACK: nothing later covers it, the RESYNC's ACK does
                assertThat(p.a.dev.counter("tid_resyncs_sent")).isPositive();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aLostResyncOrResyncAckIsRecovered(boolean loseTheResync) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            int[] lastAck = {0};
            boolean[] lostOne = {false};
            p.dropper = x -> {
                if (x.opcode() == TID_ACK && (x.psn() & 0x7FF) != 0x7FF && ++lastAck[0] == 4) {
                    return true; // the last segment's ACK: only a RESYNC can recover it
                }
                boolean target = loseTheResync ? x.opcode() == TID_RESYNC
                        : x.opcode() == TID_ACK && (x.psn() & 0x7FF) == 0x7FF;
                if (target && !lostOne[0]) {
                    lostOne[0] = true;
                    return true;
                }
                return false;
            };
            writeAndCheck(p, 0, 1 << 20, 0, 77);
            assertThat(lostOne[0]).isTrue();
            assertThat(p.a.dev.counter("tid_resyncs_sent")).isEqualTo(2); // the same RESYNC again
            assertThat(p.b.dev.counter("tid_resyncs_rcvd")).isEqualTo(loseTheResync ? 1 : 2);
            assertIdle(p);
        }
    }

    @Test
    void aLostWriteRequestIsResentByTheRcTimer() {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(x -> x.opcode() == TID_WRITE_REQ, 0);
            writeAndCheck(p, 0, 1 << 20, 0, 80);
            assertThat(p.a.dev.counter("retransmit_timeouts") + p.a.dev.counter("rtt_timeouts")).isOne();
            assertIdle(p);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3})
    void aLostWriteResponseIsAskedForAgainWithADuplicateRequest(int nth) {
        try (VirtualRcPair p = pair(2L << 20, TID, TID)) {
            p.dropper = dropNth(x -> x.opcode() == TID_WRITE_RESP, nth);
            writeAndCheck(p, 0, 1 << 20, 0, 90 + nth);
            assertThat(p.b.dev.counter("duplicate_request")).isPositive();
            assertThat(count(p, true, TID_WRITE_REQ)).isEqualTo(2);
            assertIdle(p);
        }
    }

    @Test
    void randomLossDuplicationFreeCorrectness() {
        try (VirtualRcPair p = pair(8L << 20, TID, TID)) {
            SplittableRandom loss = new SplittableRandom(2026);
            p.dropper = x -> x.opcode() >= TID_WRITE_REQ && x.opcode() <= TID_ACK && loss.nextInt(100) < 2;
            for (int i = 0; i < 4; i++) {
                writeAndCheck(p, 0, 2 << 20, (long) i << 20, 1000 + i);
            }
            assertIdle(p);
        }
    }

    @Test
    void pipelinedWritesCompleteInOrder() {
        // ten 1 MiB TID WRITEs posted at once: 8 outstanding (every entry of the responder's ring in
        // use), the 9th and 10th go as the first ones complete
        try (VirtualRcPair p = pair(12L << 20, TID, TID)) {
            TidReadTest.fill(p.a.mr.segment(), 0, 10 << 20, 5);
            for (int i = 0; i < 10; i++) {
                p.a.qp.postSend(write(i, p.a, (long) i << 20, 1 << 20, p.b, (long) i << 20));
            }
            for (int i = 0; i < 10; i++) {
                WorkCompletion wc = await(p, p.a, LONG_WAIT);
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.wrId).isEqualTo(i);
            }
            assertThat(p.b.mr.segment().asSlice(0, 10 << 20).mismatch(p.a.mr.segment().asSlice(0, 10 << 20)))
                    .isEqualTo(-1);
            assertThat(count(p, true, TID_WRITE_REQ)).isEqualTo(10);
            assertThat(p.b.dev.counter("tid_write_ring_full")).isZero();
            assertIdle(p);
        }
    }

    @Test
    void aReadAfterATidWriteSeesTheWrittenData() {
        try (VirtualRcPair p = pair(4L << 20, TID, TID)) {
            TidReadTest.fill(p.a.mr.segment(), 0, 1 << 20, 6);
            p.a.qp.postSend(write(1, p.a, 0, 1 << 20, p.b, 0));
            // read it back at once, into another place: the READ waits for the TID WRITE's ACKs
            p.a.qp.postSend(new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr() + (2 << 20), 1 << 20, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()));
            assertThat(await(p, p.a, LONG_WAIT).wrId).isEqualTo(1);
            WorkCompletion wc = await(p, p.a, LONG_WAIT);
            assertThat(wc.wrId).isEqualTo(2);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.a.mr.segment().asSlice(2 << 20, 1 << 20).mismatch(p.a.mr.segment().asSlice(0, 1 << 20)))
                    .isEqualTo(-1);
            assertThat(p.a.dev.counter("tid_interlock_waits")).isPositive();
        }
    }

    @Test
    void oneTidEntryAtTheResponderServesTheWriteSegmentBySegment() {
        DeviceConfig small = DeviceConfig.defaults().withOpfn(true).withTidRdma(TidRdmaConfig.on().withTidEntries(1));
        try (VirtualRcPair p = pair(2L << 20, TID, small)) {
            writeAndCheck(p, 0, 1 << 20, 0, 7);
            assertThat(p.b.dev.counter("tid_write_segments_rcvd")).isEqualTo(4);
            assertIdle(p);
        }
    }

    @Test
    void aResponderWithoutAFreeFlowAnswersRnrAndTheWriteGoesOnLater() {
        DeviceConfig oneFlow = DeviceConfig.defaults().withOpfn(true).withTidRdma(TidRdmaConfig.on().withFlows(1));
        try (VirtualRcPair p = pair(8L << 20, TID, oneFlow)) {
            VirtualRcPair.Conn c = p.newConnection();
            c.qa().postSend(new SendWr().set(-2, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()));
            assertThat(p.next(c.cqa(), "conn").status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            TidReadTest.fill(p.a.mr.segment(), 0, 4 << 20, 8);
            p.a.qp.postSend(write(1, p.a, 0, 2 << 20, p.b, 0));
            c.qa().postSend(write(2, p.a, 2 << 20, 2 << 20, p.b, 2 << 20));
            assertThat(await(p, p.a, LONG_WAIT).status).isEqualTo(WcStatus.SUCCESS);
            WorkCompletion[] out = {new WorkCompletion()};
            assertThat(p.vs.runUntil(() -> c.cqa().poll(out) == 1, LONG_WAIT)).isTrue();
            assertThat(out[0].status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.mr.segment().asSlice(0, 4 << 20).mismatch(p.a.mr.segment().asSlice(0, 4 << 20)))
                    .isEqualTo(-1);
            assertThat(p.b.dev.counter("tid_write_rnr")).isPositive();
            assertThat(p.a.dev.counter("rcvd_rnr_err")).isPositive();
            assertThat(p.a.dev.counter("retry_rnr_exceeded_err")).isZero();
        }
    }
}
