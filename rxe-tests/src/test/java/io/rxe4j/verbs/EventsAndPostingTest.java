package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Completion channels (arming, solicited-only), completion callbacks and futures, asynchronous
 * events, list posting with bad_wr, tryPost, inline data from the heap and the typed WR setters.
 * The devices run on one virtual-time loop, so "no event yet" is a fact, not a race.
 */
class EventsAndPostingTest {
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL;

    private VirtualScheduler vs;
    private RdmaDevice da;
    private RdmaDevice db;
    private ProtectionDomain pa;
    private ProtectionDomain pb;
    private CompletionChannel chB;
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private QueuePair qa;
    private QueuePair qb;
    private MemoryRegion ma;
    private MemoryRegion mb;

    @BeforeEach
    void setUp() {
        vs = new VirtualScheduler();
        InJvmFabric fabric = InJvmFabric.withScheduler(vs);
        da = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        db = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        pa = da.allocPd();
        pb = db.allocPd();
        chB = db.createCompletionChannel();
        cqA = da.createCq(64);
        cqB = db.createCq(64, chB);
        qa = pa.createQp(new QpInitAttr(cqA, cqA, new QpCaps(4, 16, 2, 2, 64), QpType.RC, false));
        qb = pb.createQp(new QpInitAttr(cqB, cqB, new QpCaps(16, 16, 2, 2, 64), QpType.RC, false));
        ma = pa.allocMr(1 << 16, ACCESS);
        mb = pb.allocMr(1 << 16, ACCESS);
        connect(qa, qb, db, 0x10, 0x20);
        connect(qb, qa, da, 0x20, 0x10);
    }

    private static void connect(QueuePair me, QueuePair peer, RdmaDevice peerDev, int myPsn, int peerPsn) {
        me.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
        me.modify(new QpAttr().state(QpState.RTR).av(peerDev.address()).pathMtu(Mtu.MTU_1024)
                .destQpNum(peer.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(1).rnrRetry(7).sqPsn(myPsn).maxRdAtomic(16));
    }

    @AfterEach
    void tearDown() {
        for (AutoCloseable c : new AutoCloseable[] {qa, qb, ma, mb, cqA, cqB, chB, pa, pb, da, db}) {
            try {
                c.close();
            } catch (Exception e) {
                // best effort
            }
        }
        vs.shutdown();
    }

    private void postRecvB(long wrId) {
        qb.postRecv(new RecvWr().set(wrId, new Sge(mb.addr(), 256, mb.lkey())));
    }

    private void send(long wrId) {
        qa.postSend(new SendWr().send(wrId, new Sge(ma.addr(), 8, ma.lkey())));
    }

    private List<WorkCompletion> pollAll(CompletionQueue cq) {
        List<WorkCompletion> l = new ArrayList<>();
        WorkCompletion[] wc = {new WorkCompletion()};
        while (cq.poll(wc) == 1) {
            WorkCompletion c = new WorkCompletion();
            c.copyFrom(wc[0]);
            l.add(c);
        }
        return l;
    }

    @Test
    void anArmedCqReportsItsNextCompletionOnceToItsChannel() throws Exception {
        postRecvB(1);
        postRecvB(2);
        assertThat(cqB.reqNotify(false)).as("nothing waiting when armed").isFalse();
        send(11);
        vs.runUntilIdle();
        assertThat(chB.getCqEvent(Duration.ZERO)).isSameAs(cqB);
        assertThat(chB.getCqEvent(Duration.ZERO)).as("one arming, one event").isNull();
        send(12);
        vs.runUntilIdle();
        assertThat(chB.getCqEvent(Duration.ZERO)).as("not re-armed: no event").isNull();
        assertThat(pollAll(cqB)).extracting(w -> w.wrId).containsExactly(1L, 2L);
    }

    @Test
    void reqNotifyReportsCompletionsAlreadyWaiting() {
        postRecvB(1);
        send(11);
        vs.runUntilIdle();
        assertThat(cqB.reqNotify(false)).as("a completion is already in the CQ").isTrue();
    }

    @Test
    void solicitedOnlyArmingIgnoresUnsolicitedCompletionsAndFiresOnASolicitedOne() throws Exception {
        postRecvB(1);
        postRecvB(2);
        cqB.reqNotify(true);
        send(11);
        vs.runUntilIdle();
        assertThat(cqB.size()).isEqualTo(1);
        assertThat(chB.getCqEvent(Duration.ZERO)).as("unsolicited SEND").isNull();
        qa.postSend(new SendWr().send(12, new Sge(ma.addr(), 8, ma.lkey())).solicited());
        vs.runUntilIdle();
        assertThat(chB.getCqEvent(Duration.ZERO)).isSameAs(cqB);
        assertThat(pollAll(cqB)).extracting(w -> w.wrId).containsExactly(1L, 2L);
    }

    @Test
    void solicitedOnlyArmingFiresOnAnUnsuccessfulCompletion() throws Exception {
        postRecvB(1);
        cqB.reqNotify(true);
        qb.modify(new QpAttr().state(QpState.ERR)); // flushes the receive WQE: WR_FLUSH_ERR
        vs.runUntilIdle();
        assertThat(chB.getCqEvent(Duration.ZERO)).isSameAs(cqB);
        assertThat(pollAll(cqB)).extracting(w -> w.status).containsExactly(WcStatus.WR_FLUSH_ERR);
    }

    @Test
    void reqNotifyWithoutAChannelIsRefused() {
        assertThatThrownBy(() -> cqA.reqNotify(false)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no completion channel");
    }

    @Test
    void aCallbackGetsEveryCompletionInOrderAndTheCqCannotBePolledThen() throws Exception {
        List<Long> seen = new CopyOnWriteArrayList<>();
        CountDownLatch three = new CountDownLatch(3);
        cqA.onCompletion(wc -> {
            seen.add(wc.wrId);
            three.countDown();
        });
        for (int i = 0; i < 3; i++) {
            postRecvB(i);
            qa.postSend(new SendWr().send(100 + i, new Sge(ma.addr(), 8, ma.lkey())).signaled());
        }
        vs.runUntilIdle();
        assertThat(three.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(seen).containsExactly(100L, 101L, 102L);
        assertThatThrownBy(() -> cqA.poll(new WorkCompletion[1])).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("cannot also be polled");
    }

    @Test
    void postSendAsyncCompletesWithTheCompletionOrFailsWithItsStatus() throws Exception {
        ma.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0, 0x1122334455667788L);
        CompletableFuture<WorkCompletion> ok = qa.postSendAsync(
                new SendWr().rdmaWrite(1, mb.addr(), mb.rkey(), new Sge(ma.addr(), 8, ma.lkey())));
        vs.runUntilIdle();
        WorkCompletion wc = ok.get(10, TimeUnit.SECONDS);
        assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(mb.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(0x1122334455667788L);

        SendWr dup = new SendWr().rdmaWrite(2, mb.addr(), mb.rkey(), new Sge(ma.addr(), 8, ma.lkey()));
        CompletableFuture<WorkCompletion> pending = qa.postSendAsync(dup);
        assertThatThrownBy(() -> qa.postSendAsync(dup)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("already has a pending future");
        assertThat(dup.sendFlags).as("the caller's WR is left as it was").isZero();
        vs.runUntilIdle();
        assertThat(pending.get(10, TimeUnit.SECONDS).status).isEqualTo(WcStatus.SUCCESS);

        CompletableFuture<WorkCompletion> bad = qa.postSendAsync(
                new SendWr().rdmaWrite(3, mb.addr(), mb.rkey() ^ 0x5A00, new Sge(ma.addr(), 8, ma.lkey())));
        vs.runUntilIdle();
        assertThatThrownBy(() -> bad.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(WorkCompletionException.class)
                .satisfies(e -> assertThat(((WorkCompletionException) e).status()).isEqualTo(WcStatus.REM_ACCESS_ERR));
    }

    @Test
    void aReceiveWithTheSameWrIdDoesNotCompleteASendsFuture() throws Exception {
        // cqA serves qa's sends and receives; a receive completion with wr_id 5 must not complete the
        // future of the send with wr_id 5 (it once did)
        CompletableFuture<WorkCompletion> f = qa.postSendAsync(
                new SendWr().rdmaWrite(5, mb.addr(), mb.rkey(), new Sge(ma.addr(), 8, ma.lkey())));
        qa.postRecv(new RecvWr().set(5, new Sge(ma.addr() + 1024, 64, ma.lkey())));
        qb.postSend(new SendWr().send(9, new Sge(mb.addr(), 8, mb.lkey())));
        vs.runUntilIdle();
        WorkCompletion wc = f.get(10, TimeUnit.SECONDS);
        assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
    }

    @Test
    void aQpThatFailsOnItsOwnRaisesQpFatalWithItsReasonAndCqOverflowRaisesCqErr() throws Exception {
        List<AsyncEvent> events = new CopyOnWriteArrayList<>();
        CountDownLatch fatal = new CountDownLatch(1);
        da.addAsyncEventListener(e -> {
            events.add(e);
            if (e.type() == AsyncEventType.QP_FATAL) {
                fatal.countDown();
            }
        });
        qa.postSend(new SendWr().rdmaWrite(7, mb.addr(), mb.rkey() ^ 0x5A00, new Sge(ma.addr(), 8, ma.lkey())));
        vs.runUntilIdle();
        assertThat(fatal.await(10, TimeUnit.SECONDS)).isTrue();
        AsyncEvent e = da.getAsyncEvent(Duration.ofSeconds(10));
        assertThat(e.type()).isEqualTo(AsyncEventType.QP_FATAL);
        assertThat(e.qp()).isSameAs(qa);
        assertThat(e.reason()).isEqualTo(qa.errorReason()).contains("0x");
        assertThat(events).extracting(AsyncEvent::type).containsExactly(AsyncEventType.QP_FATAL);

        // a CQ of one entry on B, two receive completions not polled
        CompletionQueue tiny = db.createCq(1);
        QueuePair qt = pb.createQp(new QpInitAttr(tiny, tiny, new QpCaps(4, 4, 1, 1, 0), QpType.RC, false));
        try {
            qt.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
            qt.postRecv(new RecvWr().set(1, new Sge(mb.addr(), 64, mb.lkey())));
            qt.postRecv(new RecvWr().set(2, new Sge(mb.addr(), 64, mb.lkey())));
            qt.modify(new QpAttr().state(QpState.ERR)); // two flushed receives for one slot
            vs.runUntilIdle();
            AsyncEvent first = db.getAsyncEvent(Duration.ofSeconds(10));
            assertThat(first.type()).as("B's QP NAKed the bad rkey and failed too").isEqualTo(AsyncEventType.QP_FATAL);
            assertThat(first.qp()).isSameAs(qb);
            AsyncEvent cqErr = db.getAsyncEvent(Duration.ofSeconds(10));
            assertThat(cqErr.type()).isEqualTo(AsyncEventType.CQ_ERR);
            assertThat(cqErr.cq()).isSameAs(tiny);
        } finally {
            qt.close();
            tiny.close();
        }
    }

    @Test
    void tryPostSendReturnsFalseWhenTheSendQueueIsFullAndListsReportTheBadWr() {
        SendWr wr = new SendWr().send(1, new Sge(ma.addr(), 8, ma.lkey()));
        for (int i = 0; i < 4; i++) {
            assertThat(qa.tryPostSend(wr)).isTrue(); // max_send_wr 4, loop not run: nothing completes
        }
        assertThat(qa.tryPostSend(wr)).isFalse();
        assertThatThrownBy(() -> qa.postSend(wr)).isInstanceOf(QueueFullException.class)
                .hasMessageContaining("send queue full (4");
        vs.runFor(Duration.ofMillis(50).toNanos()); // no receive posted on B: RNR, retried forever; the SQ stays full
        assertThat(qa.tryPostSend(wr)).isFalse();

        List<RecvWr> recvs = List.of(new RecvWr().set(1, new Sge(mb.addr(), 64, mb.lkey())),
                new RecvWr().set(2, new Sge(mb.addr(), 64, 0xBAD)), new RecvWr().set(3, new Sge(mb.addr(), 64,
                        mb.lkey())));
        assertThatThrownBy(() -> qb.postRecv(recvs)).isInstanceOfSatisfying(BadWrException.class, e -> {
            assertThat(e.badWrIndex()).isEqualTo(1);
            assertThat(e.badWrId()).isEqualTo(2);
            assertThat(e.getCause()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lkey");
        });
        vs.runFor(Duration.ofMillis(50).toNanos()); // the one receive posted lets one SEND through
        assertThat(pollAll(cqB)).extracting(w -> w.wrId).containsExactly(1L);
    }

    @Test
    void aSendListPostsTheValidPrefixAndNamesTheBadWr() {
        Sge sge = new Sge(ma.addr(), 8, ma.lkey());
        List<SendWr> wrs = new ArrayList<>(List.of(
                new SendWr().rdmaWrite(1, mb.addr(), mb.rkey(), sge).signaled(),
                new SendWr().rdmaWrite(2, mb.addr(), mb.rkey(), sge).signaled(),
                new SendWr().rdmaWrite(3, mb.addr() + 1, mb.rkey(), new Sge(ma.addr(), 8, 0xBAD)).signaled(),
                new SendWr().rdmaWrite(4, mb.addr(), mb.rkey(), sge).signaled()));
        assertThatThrownBy(() -> qa.postSend(wrs)).isInstanceOfSatisfying(BadWrException.class, e -> {
            assertThat(e.badWrIndex()).isEqualTo(2);
            assertThat(e.badWrId()).isEqualTo(3);
            assertThat(e.getCause()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lkey");
        });
        vs.runUntilIdle();
        assertThat(pollAll(cqA)).extracting(w -> w.wrId).containsExactly(1L, 2L);
        // a list longer than the room left (max_send_wr 4): the rest is reported as queue full
        List<SendWr> six = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            six.add(new SendWr().rdmaWrite(10 + i, mb.addr(), mb.rkey(), sge).signaled());
        }
        assertThatThrownBy(() -> qa.postSend(six)).isInstanceOfSatisfying(BadWrException.class, e -> {
            assertThat(e.badWrIndex()).isEqualTo(4);
            assertThat(e.getCause()).isInstanceOf(QueueFullException.class);
        });
        vs.runUntilIdle();
        assertThat(pollAll(cqA)).extracting(w -> w.wrId).containsExactly(10L, 11L, 12L, 13L);
    }

    @Test
    void inlineDataFromTheHeapNeedsNoMrAndIsCopiedAtPostTime() {
        postRecvB(5);
        byte[] hello = "hello, heap".getBytes(StandardCharsets.US_ASCII);
        SendWr wr = new SendWr().send(9).inline(hello).signaled();
        qa.postSend(wr);
        java.util.Arrays.fill(hello, (byte) 'x'); // after the post: not seen by the peer
        vs.runUntilIdle();
        List<WorkCompletion> got = pollAll(cqB);
        assertThat(got).extracting(w -> w.byteLen).containsExactly(11);
        byte[] out = new byte[11];
        java.lang.foreign.MemorySegment.copy(mb.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, 0, out, 0, 11);
        assertThat(new String(out, StandardCharsets.US_ASCII)).isEqualTo("hello, heap");

        assertThatThrownBy(() -> qa.postSend(new SendWr().send(10).inline(new byte[65])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max_inline_data 64");
        assertThatThrownBy(() -> qa.postSend(new SendWr().rdmaRead(10, mb.addr(), mb.rkey()).inline(new byte[8])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SEND and RDMA WRITE only");
    }

    @Test
    void theTypedSettersDriveTheExtendedOperations() throws Exception {
        var L = java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
        mb.segment().set(L, 64, 0x0000_0001_0000_0002L);
        Sge result = new Sge(ma.addr() + 128, 8, ma.lkey());
        // field-wise FETCH_AND_ADD of two 32-bit fields (boundary bits 31 and 63)
        qa.postSend(new SendWr().maskedFetchAndAdd(1, mb.addr() + 64, mb.rkey(), 0x0000_0001_0000_0001L,
                0x8000_0000_8000_0000L, result).signaled());
        qa.postSend(new SendWr().atomicWrite(2, mb.addr() + 72, mb.rkey(), 0x0BADCAFEL).signaled());
        qa.postSend(new SendWr().flush(3, mb.addr(), mb.rkey(), Flush.GLOBAL, Flush.RANGE, 128).signaled());
        qa.postSend(new SendWr().compareAndSwap(4, mb.addr() + 80, mb.rkey(), 0, 42, result).signaled());
        vs.runUntilIdle();
        List<WorkCompletion> got = pollAll(cqA);
        assertThat(got).extracting(w -> w.status).containsOnly(WcStatus.SUCCESS);
        assertThat(got).extracting(w -> w.opcode).containsExactly(WcOpcode.MASKED_FETCH_ADD, WcOpcode.ATOMIC_WRITE,
                WcOpcode.FLUSH, WcOpcode.COMP_SWAP);
        assertThat(mb.segment().get(L, 64)).isEqualTo(0x0000_0002_0000_0003L);
        assertThat(mb.segment().get(L, 72)).isEqualTo(0x0BADCAFEL);
        assertThat(mb.segment().get(L, 80)).isEqualTo(42L);
    }
}
