package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * After a QP enters ERR, requests it had already queued are not executed at the responder and no
 * completion is SUCCESS ({@code rxe-facts.md} §5.6, §6.8).
 */
class ErrorStateTest {
    @Test
    void queuedRequestsAfterAnAccessErrorAreNeverExecuted() {
        try (VirtualRcPair p = new VirtualRcPair(8192, VirtualRcPair.Params.defaults())) {
            MemorySegment remote = p.b.mr.segment();
            p.a.mr.segment().fill((byte) 0x5A); // so any executed WRITE would change the remote bytes
            remote.fill((byte) 0x11);
            MemorySegment before = MemorySegment.ofArray(remote.toArray(ValueLayout.JAVA_BYTE));
            long rva = p.b.mr.addr();
            int lkey = p.a.mr.lkey();
            long lva = p.a.mr.addr();
            // 1: a WRITE with a bad rkey (NAK 0x62), then 6 requests queued behind it before any packet moves
            p.a.qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(lva, 64, lkey))
                    .remote(rva, p.b.mr.rkey() ^ 0x100));
            for (int i = 0; i < 3; i++) {
                p.a.qp.postSend(new SendWr().set(10 + i, WrOpcode.RDMA_WRITE, 0, new Sge(lva, 512, lkey))
                        .remote(rva + 1024L * i, p.b.mr.rkey()));
                SendWr faa = new SendWr().set(20 + i, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                        new Sge(lva + 4096, 8, lkey)).remote(rva + 4096, p.b.mr.rkey());
                faa.compareAdd = 1;
                p.a.qp.postSend(faa);
            }
            List<WorkCompletion> wcs = new ArrayList<>();
            for (int i = 0; i < 7; i++) {
                WorkCompletion wc = p.next(p.a);
                WorkCompletion copy = new WorkCompletion();
                copy.copyFrom(wc);
                wcs.add(copy);
            }
            assertThat(wcs.get(0).status).isEqualTo(WcStatus.REM_ACCESS_ERR);
            assertThat(wcs.subList(1, 7)).allSatisfy(wc -> assertThat(wc.status).isEqualTo(WcStatus.WR_FLUSH_ERR));
            assertThat(wcs).noneMatch(wc -> wc.status == WcStatus.SUCCESS);
            assertThat(wcs).extracting(wc -> wc.wrId).containsExactly(1L, 10L, 20L, 11L, 21L, 12L, 22L);
            p.vs.runFor(1_000_000_000L); // let anything still in flight arrive: it must be dropped
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
            assertThat(p.b.qp.state()).isEqualTo(QpState.ERR);
            assertThat(remote.mismatch(before)).as("no queued WRITE or FETCH_AND_ADD touched memory").isEqualTo(-1);
        }
    }
}
