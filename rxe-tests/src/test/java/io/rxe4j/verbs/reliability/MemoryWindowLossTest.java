package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.MemoryWindow;
import io.rxe4j.verbs.MwBindInfo;
import io.rxe4j.verbs.MwType;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Memory-window binds and local invalidations among retransmitted requests ({@code
 * verbs-surface-facts.md} §5.4 rule 6): a local WQE executes once, when the requester first reaches
 * it, and completes in order behind the requests before it, however often a go-back-N rewind or a
 * selective repair sends those requests again. A second execution would fail (a bind names the
 * window by the key it had, which the first bind changed: MW_BIND_ERR) or undo a later bind (a
 * LOCAL_INV run again frees the window bound after it). Virtual time, seeded loss.
 */
class MemoryWindowLossTest {
    private static final int ROUNDS = 40;

    @ParameterizedTest(name = "adaptive recovery {0}, loss {1}, seed {2}")
    @CsvSource({"true, 0.05, 1", "false, 0.05, 2", "true, 0.15, 3", "false, 0.15, 4"})
    void bindsAndInvalidationsExecuteOnceAmongResentRequests(boolean adaptive, double loss, long seed) {
        DeviceConfig config = DeviceConfig.defaults().withAdaptiveRecovery(adaptive);
        try (VirtualRcPair p = new VirtualRcPair(1 << 16, VirtualRcPair.Params.defaults(), VirtualRcPair.ALL_REMOTE,
                5_000, config)) {
            SplittableRandom rnd = new SplittableRandom(seed);
            p.dropper = pkt -> rnd.nextDouble() < loss; // both directions: requests, ACKs and NAKs
            MemoryRegion target = p.a.pd.allocMr(8192, Access.LOCAL_WRITE | Access.MW_BIND);
            MemoryWindow mw = p.a.pd.allocMw(MwType.TYPE_2B);
            List<Long> expected = new ArrayList<>();
            int key = mw.rkey();
            for (int r = 0; r < ROUNDS; r++) {
                long base = 10L * r;
                int next = MemoryWindow.incRkey(key);
                p.a.qp.postSend(new SendWr().rdmaWrite(base, p.b.mr.addr() + 1024L * (r % 32), p.b.mr.rkey(),
                        new Sge(p.a.mr.addr(), 1024, p.a.mr.lkey())).signaled());
                p.a.qp.postSend(new SendWr().bindMw(base + 1, mw, next, new MwBindInfo(target, target.addr(), 4096,
                        Access.REMOTE_WRITE | Access.REMOTE_READ)).signaled());
                p.a.qp.postSend(new SendWr().rdmaWrite(base + 2, p.b.mr.addr() + 40000, p.b.mr.rkey(),
                        new Sge(p.a.mr.addr() + 2048, 700, p.a.mr.lkey())).signaled());
                expected.add(base);
                expected.add(base + 1);
                expected.add(base + 2);
                if (r < ROUNDS - 1) {
                    p.a.qp.postSend(new SendWr().localInv(base + 3, next).signaled());
                    expected.add(base + 3);
                }
                key = next;
                List<Long> got = new ArrayList<>();
                while (got.size() < (r < ROUNDS - 1 ? 4 : 3)) {
                    WorkCompletion wc = p.next(p.a);
                    assertThat(wc.status).as("round %d: %s (%s)", r, wc, p.a.qp.errorReason()).isEqualTo(WcStatus.SUCCESS);
                    got.add(wc.wrId);
                }
                assertThat(got).as("round %d in order", r).containsExactlyElementsOf(
                        expected.subList(expected.size() - got.size(), expected.size()));
            }
            assertThat(mw.deviceRkey()).as("the last bind's key").isEqualTo(key);
            assertThat(p.log.stream().filter(x -> x.fromA() && x.dropped()).count()).as("requests were lost").isPositive();
            // the window is bound to A's QP: B's requests arrive on it
            p.dropper = null;
            p.b.mr.segment().fill((byte) 0x5A);
            p.b.qp.postSend(new SendWr().rdmaWrite(9, target.addr() + 100, key, new Sge(p.b.mr.addr(), 500,
                    p.b.mr.lkey())).signaled());
            WorkCompletion wc = p.next(p.b);
            assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            assertThat(target.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 599)).isEqualTo((byte) 0x5A);
            mw.close();
            target.close();
        }
    }
}
