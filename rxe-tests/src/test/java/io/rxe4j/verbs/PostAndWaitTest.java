package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.test.ConnectedPair;
import io.rxe4j.test.RxeFabric;
import io.rxe4j.test.RxeTest;
import io.rxe4j.test.RxeTransport;
import io.rxe4j.verbs.cm.ConnectionParams;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * {@link QueuePair#submit} (a future completed by polling, the CQ stays pollable) and {@link
 * QueuePair#execute} (post a chain and wait, a failure as {@link WorkCompletionException} with the
 * QP's reason), on the real clock and, through the test kit, on virtual time.
 */
class PostAndWaitTest {
    private static void fill(MemoryRegion mr, int seed) {
        for (int i = 0; i < mr.length(); i++) {
            mr.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + seed));
        }
    }

    @Test
    @RxeTest(transport = RxeTransport.IN_JVM)
    void executeRunsAChainOnTheRealClockAndReturnsTheLastCompletion(RxeFabric fabric) throws Exception {
        ConnectedPair pair = fabric.connect();
        try (MemoryRegion src = pair.client().pd().allocMr(8192, Access.LOCAL_WRITE);
                MemoryRegion back = pair.client().pd().allocMr(8192, Access.LOCAL_WRITE);
                MemoryRegion dst = pair.server().pd().allocMr(8192,
                        Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ)) {
            fill(src, 1);
            WorkCompletion wc = pair.client().qp().execute(Duration.ofSeconds(30),
                    new SendWr().rdmaWrite(1, dst.addr(), dst.rkey(), new Sge(src.addr(), 8192, src.lkey())),
                    new SendWr().rdmaRead(2, dst.addr(), dst.rkey(), new Sge(back.addr(), 8192, back.lkey())));
            assertThat(wc.wrId).isEqualTo(2);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_READ);
            assertThat(back.segment().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(src.segment().toArray(ValueLayout.JAVA_BYTE));
            assertThatThrownBy(() -> pair.client().qp().execute(Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one");
        }
    }

    @Test
    @RxeTest(transport = RxeTransport.IN_JVM)
    void aFailedWorkRequestThrowsWithItsStatusAndTheQpsReason(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        try (MemoryRegion src = pair.client().pd().allocMr(4096, Access.LOCAL_WRITE)) {
            assertThatThrownBy(() -> pair.client().qp().execute(Duration.ofSeconds(30),
                    new SendWr().rdmaWrite(7, 0x1000, 0xBAD, new Sge(src.addr(), 64, src.lkey())),
                    new SendWr().rdmaWrite(8, 0x1000, 0xBAD, new Sge(src.addr(), 64, src.lkey()))))
                    .isInstanceOfSatisfying(WorkCompletionException.class, e -> {
                        assertThat(e.status()).isEqualTo(WcStatus.REM_ACCESS_ERR);
                        assertThat(e.completion().wrId).isEqualTo(7);
                        assertThat(e.getMessage()).contains("REM_ACCESS_ERR")
                                .contains(pair.client().qp().errorReason());
                    });
            assertThat(pair.client().qp().state()).isEqualTo(QpState.ERR);
        }
    }

    @Test
    @RxeTest(transport = RxeTransport.IN_JVM)
    void executeTimesOutWhenThePeerNeverReceives(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect(0, 1, ConnectionParams.defaults().withRnrRetry(7)); // RNR: retry forever
        try (MemoryRegion src = pair.client().pd().allocMr(64, Access.LOCAL_WRITE)) {
            assertThatThrownBy(() -> pair.client().qp().execute(Duration.ofMillis(300),
                    new SendWr().send(3, new Sge(src.addr(), 64, src.lkey()))))
                    .isInstanceOf(TimeoutException.class).hasMessageContaining("1 of 1 work requests")
                    .hasMessageContaining("PT0.3S");
            pair.client().qp().modify(new QpAttr().state(QpState.ERR)); // flush it before the MR goes
            fabric.await(() -> pair.client().cq().pollFutures() == 0 && pair.client().qp().state() == QpState.ERR,
                    Duration.ofSeconds(5), "the flush");
        }
    }

    @Test
    @RxeTest
    void submitLeavesTheCqPollableAndItsOwnCompletionOutOfPoll(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        QueuePair qp = pair.client().qp();
        try (MemoryRegion src = pair.client().pd().allocMr(64, Access.LOCAL_WRITE);
                MemoryRegion dst = pair.server().pd().allocMr(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            qp.postSend(new SendWr().rdmaWrite(1, dst.addr(), dst.rkey(), new Sge(src.addr(), 64, src.lkey())).signaled());
            CompletableFuture<WorkCompletion> f = qp.submit(
                    new SendWr().rdmaWrite(2, dst.addr(), dst.rkey(), new Sge(src.addr(), 64, src.lkey())));
            qp.postSend(new SendWr().rdmaWrite(3, dst.addr(), dst.rkey(), new Sge(src.addr(), 64, src.lkey())).signaled());
            // the futures' poll keeps the other two for the application's poll, in order
            fabric.await(() -> {
                qp.sendCq().pollFutures();
                return f.isDone();
            }, Duration.ofSeconds(5), "the submitted WRITE");
            assertThat(f.join().wrId).isEqualTo(2);
            WorkCompletion a = fabric.nextCompletion(qp.sendCq());
            WorkCompletion b = fabric.nextCompletion(qp.sendCq());
            assertThat(a.wrId).isEqualTo(1);
            assertThat(b.wrId).isEqualTo(3);
            // a plain poll completes a future too, and does not return its completion
            CompletableFuture<WorkCompletion> g = qp.submit(
                    new SendWr().rdmaWrite(4, dst.addr(), dst.rkey(), new Sge(src.addr(), 64, src.lkey())));
            qp.postSend(new SendWr().rdmaWrite(5, dst.addr(), dst.rkey(), new Sge(src.addr(), 64, src.lkey())).signaled());
            WorkCompletion c = fabric.nextCompletion(qp.sendCq());
            assertThat(c.wrId).isEqualTo(5);
            assertThat(g).isCompleted();
            assertThat(g.join().wrId).isEqualTo(4);
            CompletableFuture<WorkCompletion> h = qp.submit(new SendWr().rdmaWrite(6, dst.addr(), dst.rkey(),
                    new Sge(src.addr(), 64, src.lkey())));
            assertThatThrownBy(() -> qp.submit(new SendWr().rdmaWrite(6, dst.addr(), dst.rkey(),
                    new Sge(src.addr(), 64, src.lkey())))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("already has a pending future");
            fabric.await(() -> {
                qp.sendCq().pollFutures();
                return h.isDone();
            }, Duration.ofSeconds(5), "wr_id 6");
        }
    }

    @Test
    @RxeTest(faults = "drop=0.05", seed = 11)
    void onVirtualTimeTheKitExecutesAChainUnderLoss(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        try (MemoryRegion src = pair.client().pd().allocMr(65536, Access.LOCAL_WRITE);
                MemoryRegion back = pair.client().pd().allocMr(65536, Access.LOCAL_WRITE);
                MemoryRegion dst = pair.server().pd().allocMr(65536,
                        Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ)) {
            fill(src, 3);
            WorkCompletion wc = fabric.execute(pair.client().qp(),
                    new SendWr().rdmaWrite(1, dst.addr(), dst.rkey(), new Sge(src.addr(), 65536, src.lkey())),
                    new SendWr().rdmaRead(2, dst.addr(), dst.rkey(), new Sge(back.addr(), 65536, back.lkey())));
            assertThat(wc.wrId).isEqualTo(2);
            assertThat(back.segment().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(src.segment().toArray(ValueLayout.JAVA_BYTE));
            assertThat(fabric.faultsInjected()).isPositive();
        }
    }
}
