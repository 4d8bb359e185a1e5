package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One QP in both TID data-destination roles at once ({@code tid-opfn-facts.md} §4: the QP's one
 * hardware flow serves its TID READ requester and its TID WRITE responder): A reads from B with
 * TID READ while B writes to A with TID WRITE, and a lost WRITE_DATA makes B RESYNC A's flow. The
 * RESYNC moves the flow to a new generation; A's TID READ segments not yet received must move with
 * it (and be asked for again in it), or every READ response is dropped as a generation error and
 * the READ ends in RETRY_EXC_ERR (issue 19 item 3). Virtual time.
 */
class TidCrossRoleTest {
    private static final int TID_WRITE_DATA = 0xE2;
    private static final int TID_WRITE_DATA_LAST = 0xE3;
    private static final int TID_READ_RESP = 0xE5;
    private static final int KIB = 1024;
    private static final int SEG = 256 * KIB;
    private static final Params MTU4096 = new Params(Mtu.MTU_4096, 14, 7, 0x100, 0x200);
    private static final DeviceConfig TID = DeviceConfig.defaults().withTidRdma();
    /** Virtual time the test may take: far more than the READ's 7 retries of 64 × 67 ms. */
    private static final long LONG_WAIT = 600_000_000_000L;

    private static boolean isWriteData(VirtualRcPair.Pkt x) {
        return !x.fromA() && (x.opcode() == TID_WRITE_DATA || x.opcode() == TID_WRITE_DATA_LAST);
    }

    private static WorkCompletion await(VirtualRcPair p, VirtualRcPair.Side s) {
        WorkCompletion[] out = {new WorkCompletion()};
        assertThat(p.vs.runUntil(() -> s.cq.poll(out) == 1, LONG_WAIT)).as("a completion; A %s B %s",
                p.a.qp.debugState(), p.b.qp.debugState()).isTrue();
        return out[0];
    }

    /**
     * B's TID WRITE of {@code writeLen} bytes to A loses its data packet {@code lostPkt} (its last:
     * only B's TID retry timer and a RESYNC recover it); while it waits, A posts a TID READ of
     * {@code readLen} bytes from B, whose segments take the next sequences of A's flow and whose
     * responses then meet the gap (A restarts the READ once, to no avail). The RESYNC renumbers
     * A's flow; the READ must complete with B's bytes, the WRITE with A holding B's bytes.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void aResyncOfTheIncomingTidWriteKeepsTheSameQpsOutstandingTidReadAlive(int readSegs) {
        int writeLen = SEG;
        int readLen = readSegs * SEG;
        try (VirtualRcPair p = new VirtualRcPair(4L << 20, MTU4096, VirtualRcPair.ALL_REMOTE, 0, TID, TID)) {
            TidReadTest.negotiate(p);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.b.qp.tidRdma()).isNotNull();
            int lostPkt = writeLen / 4096 - 1;
            int[] seen = {0};
            p.dropper = x -> isWriteData(x) && seen[0]++ == lostPkt;
            // B → A: TID WRITE of B[0, writeLen) to A[2 MiB, …)
            TidReadTest.fill(p.b.mr.segment(), 0, writeLen, 11);
            p.b.qp.postSend(new SendWr().set(21, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.b.mr.addr(), writeLen, p.b.mr.lkey())).remote(p.a.mr.addr() + (2 << 20), p.a.mr.rkey()));
            // run until the data packet is lost: A's flow holds the WRITE segment, one packet short
            assertThat(p.vs.runUntil(() -> p.log.stream().anyMatch(VirtualRcPair.Pkt::dropped), LONG_WAIT)).isTrue();
            // A → B: TID READ of B[1 MiB, …) into A[0, readLen)
            TidReadTest.fill(p.b.mr.segment(), 1 << 20, readLen, 12);
            p.a.qp.postSend(new SendWr().set(22, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), readLen, p.a.mr.lkey())).remote(p.b.mr.addr() + (1 << 20), p.b.mr.rkey()));

            WorkCompletion write = await(p, p.b);
            assertThat(write.status).as("B's TID WRITE; %s", p.b.qp.errorReason()).isEqualTo(WcStatus.SUCCESS);
            assertThat(write.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            WorkCompletion read = await(p, p.a);
            assertThat(read.status).as("A's TID READ; %s; A %s; A counters %s", p.a.qp.errorReason(),
                    p.a.qp.debugState(), p.a.dev.counters()).isEqualTo(WcStatus.SUCCESS);
            assertThat(read.opcode).isEqualTo(WcOpcode.RDMA_READ);
            assertThat(read.byteLen).isEqualTo(readLen);
            assertThat(p.a.mr.segment().asSlice(0, readLen).mismatch(p.b.mr.segment().asSlice(1 << 20, readLen)))
                    .as("first differing byte of the READ").isEqualTo(-1);
            assertThat(p.a.mr.segment().asSlice(2 << 20, writeLen).mismatch(p.b.mr.segment().asSlice(0, writeLen)))
                    .as("first differing byte of the WRITE").isEqualTo(-1);
            // the scenario happened as described: a RESYNC reached A while its READ was outstanding
            assertThat(p.b.dev.counter("tid_resyncs_sent")).isPositive();
            assertThat(p.a.dev.counter("tid_resyncs_rcvd")).isPositive();
            assertThat(p.a.dev.counter("tid_read_requests")).isOne();
            assertThat(p.log.stream().filter(x -> !x.fromA() && x.opcode() == TID_READ_RESP).count())
                    .isGreaterThan(readLen / 4096);
            assertThat(p.a.dev.counter("retry_exceeded_err")).isZero();
            // both roles are done with the flow: it is back in the pool
            assertThat(p.a.qp.debugState()).contains("tid{flow=-1");
        }
    }

    /**
     * The other order on A's flow: A's TID READ takes sequences 0…63 first, B's TID WRITE 64…127.
     * The second half of the READ's responses is lost until the RESYNC, so the READ segment is half
     * received when it comes; B's data meets the gap on A's flow (a TID NAK naming a READ packet,
     * which B cannot use), so B's TID retry timer RESYNCs. The half-received segment is renumbered
     * whole, asked for again from its first packet, and completes with B's bytes.
     */
    @Test
    void aTidReadSegmentHalfReceivedWhenTheResyncComesCompletesWithTheRightBytes() {
        int readLen = SEG;
        int writeLen = SEG;
        try (VirtualRcPair p = new VirtualRcPair(4L << 20, MTU4096, VirtualRcPair.ALL_REMOTE, 0, TID, TID)) {
            TidReadTest.negotiate(p);
            p.dropper = x -> !x.fromA() && x.opcode() == TID_READ_RESP && (x.psn() & 0x7FF) >= 32
                    && p.a.dev.counter("tid_resyncs_rcvd") == 0;
            TidReadTest.fill(p.b.mr.segment(), 1 << 20, readLen, 13);
            TidReadTest.fill(p.b.mr.segment(), 0, writeLen, 14);
            p.a.qp.postSend(new SendWr().set(31, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), readLen, p.a.mr.lkey())).remote(p.b.mr.addr() + (1 << 20), p.b.mr.rkey()));
            p.b.qp.postSend(new SendWr().set(32, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.b.mr.addr(), writeLen, p.b.mr.lkey())).remote(p.a.mr.addr() + (2 << 20), p.a.mr.rkey()));

            WorkCompletion read = await(p, p.a);
            assertThat(read.status).as("A's TID READ; %s; A %s; A counters %s", p.a.qp.errorReason(),
                    p.a.qp.debugState(), p.a.dev.counters()).isEqualTo(WcStatus.SUCCESS);
            assertThat(read.byteLen).isEqualTo(readLen);
            WorkCompletion write = await(p, p.b);
            assertThat(write.status).as("B's TID WRITE; %s", p.b.qp.errorReason()).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.a.mr.segment().asSlice(0, readLen).mismatch(p.b.mr.segment().asSlice(1 << 20, readLen)))
                    .as("first differing byte of the READ").isEqualTo(-1);
            assertThat(p.a.mr.segment().asSlice(2 << 20, writeLen).mismatch(p.b.mr.segment().asSlice(0, writeLen)))
                    .as("first differing byte of the WRITE").isEqualTo(-1);
            assertThat(p.a.dev.counter("tid_resyncs_rcvd")).isPositive();
            assertThat(p.log.stream().anyMatch(VirtualRcPair.Pkt::dropped)).isTrue();
            assertThat(p.a.qp.debugState()).contains("tid{flow=-1");
        }
    }
}
