package io.rxe4j.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ib.CmMad;
import io.rxe4j.verbs.cm.ib.IbCm;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The IB CM on QP1 between two devices on virtual time ({@code cm-facts.md} §5): REQ, REP, RTU and a
 * working RC connection; REJ 8 for a port nobody listens on; a handler's reject (REJ 28 with its
 * private data); lost REQs, REPs and RTUs recovered by the CM's retries, a retransmitted REQ answered
 * with the same REP; DREQ and DREP; and the retries running out. Every MAD crossing the fabric is
 * logged by attribute.
 */
class IbCmTest {
    private static final InetSocketAddress A = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress B = new InetSocketAddress("10.0.0.2", 4791);
    private static final long MAX = 200_000_000_000L; // 200 s of virtual time

    private VirtualScheduler vs;
    private InJvmFabric fabric;
    private RdmaDevice da;
    private RdmaDevice db;
    /** CM attributes that crossed the fabric, in order (from A: positive; from B: negative). */
    private final List<Integer> mads = new ArrayList<>();
    /** Drops the n-th MAD of an attribute when it returns true for the attribute. */
    private IntPredicate drop = attr -> false;

    @BeforeEach
    void open() {
        vs = new VirtualScheduler();
        fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(20_000).build();
        fabric.setFilter(this::filter);
        da = RdmaDevice.open(fabric.newTransport(A), DeviceConfig.defaults().withSeed(1));
        db = RdmaDevice.open(fabric.newTransport(B), DeviceConfig.defaults().withSeed(2));
    }

    @AfterEach
    void close() {
        IbCm.of(da).close();
        IbCm.of(db).close();
        da.closeAll();
        db.closeAll();
        fabric.closeAll();
        vs.shutdown();
    }

    private boolean filter(ByteBuf b, InetSocketAddress from, InetSocketAddress to) {
        int at = b.readerIndex();
        if ((b.getInt(at + 4) & 0xFFFFFF) != 1) {
            return true; // not to QP1
        }
        int attr = b.getUnsignedShort(at + 12 + 8 + 16);
        mads.add(from.equals(A) ? attr : -attr);
        return !drop.test(from.equals(A) ? attr : -attr);
    }

    record Side(ProtectionDomain pd, CompletionQueue cq, QueuePair qp, MemoryRegion mr) {}

    private Side side(RdmaDevice d) {
        ProtectionDomain pd = d.allocPd();
        CompletionQueue cq = d.createCq(64);
        QueuePair qp = pd.createQp(QpInitAttr.rc(cq, cq));
        MemoryRegion mr = pd.allocMr(65536, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        return new Side(pd, cq, qp, mr);
    }

    private <T> T await(CompletableFuture<T> f) {
        assertThat(vs.runUntil(f::isDone, MAX)).as("done within 200 s of virtual time: %s", f).isTrue();
        return f.join();
    }

    /** B listens on 7174 and accepts with {@code reply}; @return A's connection future */
    private CompletableFuture<IbCm.Connection> connectTo(Side a, Side b, byte[] reply,
            List<CompletableFuture<IbCm.Connection>> accepted) {
        IbCm.of(db).listen(7174, req -> accepted.add(req.accept(b.qp(), IbCm.Options.defaults(), reply)));
        vs.runFor(1_000_000);
        return IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(), "hello".getBytes());
    }

    @Test
    void reqRepRtuConnectTwoQpsThatThenWork() {
        Side a = side(da);
        Side b = side(db);
        List<CompletableFuture<IbCm.Connection>> accepted = new ArrayList<>();
        List<byte[]> seen = new ArrayList<>();
        IbCm.of(db).listen(7174, req -> {
            seen.add(req.privateData());
            assertThat(req.cmaHeader().dst()).isEqualTo(B.getAddress());
            accepted.add(req.accept(b.qp(), IbCm.Options.defaults(), "welcome".getBytes()));
        });
        vs.runFor(1_000_000);
        IbCm.Connection ca = await(IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(), "hello".getBytes()));
        IbCm.Connection cb = await(accepted.get(0));
        assertThat(mads).containsExactly(CmMad.ATTR_REQ, -CmMad.ATTR_REP, CmMad.ATTR_RTU);
        assertThat(new String(seen.get(0), 0, 5)).isEqualTo("hello");
        assertThat(seen.get(0)).as("56 bytes after the cma header").hasSize(56);
        assertThat(new String(ca.remotePrivateData(), 0, 7)).isEqualTo("welcome");
        assertThat(ca.remoteQpn()).isEqualTo(b.qp().qpNum());
        assertThat(cb.remoteQpn()).isEqualTo(a.qp().qpNum());
        assertThat(a.qp().state()).isEqualTo(QpState.RTS);
        assertThat(b.qp().state()).isEqualTo(QpState.RTS);
        a.mr().segment().fill((byte) 7);
        a.qp().postSend(new SendWr().rdmaWrite(1, b.mr().addr(), b.mr().rkey(), new Sge(a.mr().addr(), 4096,
                a.mr().lkey())).signaled());
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(vs.runUntil(() -> a.cq().poll(wc) == 1, MAX)).isTrue();
        assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
        assertThat(b.mr().segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4095)).isEqualTo((byte) 7);
        // A disconnects: DREQ, DREP; both sides see it, both QPs are in ERR
        await(ca.disconnect());
        await(cb.disconnected());
        assertThat(mads.subList(3, mads.size())).containsExactly(CmMad.ATTR_DREQ, -CmMad.ATTR_DREP);
        assertThat(a.qp().state()).isEqualTo(QpState.ERR);
        assertThat(b.qp().state()).isEqualTo(QpState.ERR);
    }

    @Test
    void aPortNobodyListensOnIsRejectedWithReason8() {
        Side a = side(da);
        CompletableFuture<IbCm.Connection> f = IbCm.of(da).connect(a.qp(), B, 9999, IbCm.Options.defaults(), new byte[0]);
        assertThat(vs.runUntil(f::isDone, MAX)).isTrue();
        assertThat(f).isCompletedExceptionally();
        IbCm.RejectedException e = (IbCm.RejectedException) f.handle((c, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).isEqualTo(IbCm.REJ_INVALID_SERVICE_ID);
        assertThat(mads).containsExactly(CmMad.ATTR_REQ, -CmMad.ATTR_REJ);
    }

    @Test
    void aHandlersRejectIsReason28WithItsPrivateData() {
        Side a = side(da);
        IbCm.of(db).listen(7174, req -> req.reject("no room".getBytes()));
        vs.runFor(1_000_000);
        CompletableFuture<IbCm.Connection> f = IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(), new byte[0]);
        assertThat(vs.runUntil(f::isDone, MAX)).isTrue();
        IbCm.RejectedException e = (IbCm.RejectedException) f.handle((c, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).isEqualTo(IbCm.REJ_CONSUMER_DEFINED);
        assertThat(new String(e.privateData(), 0, 7)).isEqualTo("no room");
    }

    @Test
    void lostReqRepAndRtuAreRecoveredByTheRetries() {
        Side a = side(da);
        Side b = side(db);
        int[] left = {1, 1, 1}; // drop the first REQ, the first REP and the first RTU
        drop = attr -> attr == CmMad.ATTR_REQ && left[0]-- > 0 || attr == -CmMad.ATTR_REP && left[1]-- > 0
                || attr == CmMad.ATTR_RTU && left[2]-- > 0;
        List<CompletableFuture<IbCm.Connection>> accepted = new ArrayList<>();
        IbCm.Connection ca = await(connectTo(a, b, new byte[0], accepted));
        IbCm.Connection cb = await(accepted.get(0));
        assertThat(accepted).as("a retransmitted REQ is not a second request").hasSize(1);
        // REQ (lost), REQ, REP (lost), REQ again answered by the same REP (the REP's own retry may come first), RTU
        // (lost), then the REP again (its retry) answered by the RTU
        assertThat(mads.stream().filter(x -> x == CmMad.ATTR_REQ).count()).isGreaterThanOrEqualTo(2);
        assertThat(mads.stream().filter(x -> x == -CmMad.ATTR_REP).count()).isGreaterThanOrEqualTo(2);
        assertThat(mads.stream().filter(x -> x == CmMad.ATTR_RTU).count()).isEqualTo(2);
        assertThat(ca.qp().state()).isEqualTo(QpState.RTS);
        assertThat(cb.qp().state()).isEqualTo(QpState.RTS);
    }

    @Test
    void whenNothingAnswersTheRetriesRunOutWithReason4() {
        Side a = side(da);
        drop = attr -> true;
        CompletableFuture<IbCm.Connection> f = IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(), new byte[0]);
        long t0 = vs.nanoTime();
        assertThat(vs.runUntil(f::isDone, MAX)).isTrue();
        IbCm.RejectedException e = (IbCm.RejectedException) f.handle((c, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).isEqualTo(IbCm.REJ_TIMEOUT);
        assertThat(mads).as("the REQ and its 15 retries").hasSize(16);
        // rdma_cm's timing: 2 x 256 ms + 4096 ms per try (cm-facts §5.1), 16 periods
        assertThat(vs.nanoTime() - t0).isEqualTo(16L * 4608 * 1_000_000);
    }

    /** udaddy's SIDR (cm-facts §2.6, §7.3): the listener's UD QP and Q_Key; status 1 where nobody listens. */
    @Test
    void sidrResolvesAUdServiceAndADatagramReachesIt() {
        CompletionQueue cq = db.createCq(16);
        ProtectionDomain pd = db.allocPd();
        QueuePair ud = pd.createQp(QpInitAttr.ud(cq, cq));
        ud.modify(new io.rxe4j.verbs.QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(IbCm.RDMA_UDP_QKEY));
        ud.modify(new io.rxe4j.verbs.QpAttr().state(QpState.RTR));
        ud.modify(new io.rxe4j.verbs.QpAttr().state(QpState.RTS).sqPsn(0));
        MemoryRegion mr = pd.allocMr(4096, Access.LOCAL_WRITE);
        ud.postRecv(new io.rxe4j.verbs.RecvWr().set(1, new Sge(mr.addr(), 40 + 100, mr.lkey())));
        List<String> asked = new ArrayList<>();
        IbCm.of(db).listenUd(7174, (from, cma, data) -> {
            asked.add(new String(data, 0, 4));
            return new IbCm.SidrAnswer(ud.qpNum(), IbCm.RDMA_UDP_QKEY, "ok".getBytes());
        });
        vs.runFor(1_000_000);
        IbCm.SidrAnswer a = await(IbCm.of(da).resolveUd(B, 7174, "ping".getBytes()));
        assertThat(asked).containsExactly("ping");
        assertThat(a.qpn()).isEqualTo(ud.qpNum());
        assertThat(a.qkey()).isEqualTo(IbCm.RDMA_UDP_QKEY);
        assertThat(new String(a.privateData(), 0, 2)).isEqualTo("ok");
        assertThat(mads).containsExactly(CmMad.ATTR_SIDR_REQ, -CmMad.ATTR_SIDR_REP);
        // A sends to what SIDR answered
        Side sa = side(da);
        QueuePair uda = sa.pd().createQp(QpInitAttr.ud(sa.cq(), sa.cq()));
        uda.modify(new io.rxe4j.verbs.QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(0x4444));
        uda.modify(new io.rxe4j.verbs.QpAttr().state(QpState.RTR));
        uda.modify(new io.rxe4j.verbs.QpAttr().state(QpState.RTS).sqPsn(0));
        io.rxe4j.verbs.AddressHandle ah = sa.pd().createAh(io.rxe4j.verbs.AhAttr.of(B));
        uda.postSend(new SendWr().send(1, new Sge(sa.mr().addr(), 100, sa.mr().lkey())).ud(ah, a.qpn(), a.qkey()));
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(vs.runUntil(() -> cq.poll(wc) == 1, MAX)).isTrue();
        assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc[0].srcQp).isEqualTo(uda.qpNum());
        // nobody on another port: status 1 (unsupported), at once
        CompletableFuture<IbCm.SidrAnswer> none = IbCm.of(da).resolveUd(B, 7175, new byte[0]);
        assertThat(vs.runUntil(none::isDone, MAX)).isTrue();
        IbCm.RejectedException e = (IbCm.RejectedException) none.handle((x, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).as("SIDR status unsupported").isEqualTo(1);
    }

    /** A REQ from a QP that is still connected here (another comm ID, same QPN and CA GUID) is REJ 10, stale. */
    @Test
    void aReqFromAQpStillConnectedHereIsStale() {
        Side a = side(da);
        Side b = side(db);
        Side b2 = side(db);
        List<CompletableFuture<IbCm.Connection>> accepted = new ArrayList<>();
        await(connectTo(a, b, new byte[0], accepted));
        await(accepted.get(0));
        // A's QP starts over without disconnecting: B still holds its connection
        a.qp().modify(new io.rxe4j.verbs.QpAttr().state(QpState.RESET));
        IbCm.of(db).unlisten(7174); // a port is listened on once (EADDRINUSE)
        IbCm.of(db).listen(7174, req -> accepted.add(req.accept(b2.qp(), IbCm.Options.defaults(), new byte[0])));
        CompletableFuture<IbCm.Connection> again = IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(),
                new byte[0]);
        assertThat(vs.runUntil(again::isDone, MAX)).isTrue();
        IbCm.RejectedException e = (IbCm.RejectedException) again.handle((c, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).isEqualTo(IbCm.REJ_STALE_CONN);
        assertThat(accepted).as("no second request reached the listener").hasSize(1);
    }

    /** Our RTU lost and the client disconnects at once: the DREQ ends the passive side's REP retries, accept completes. */
    @Test
    void aDreqWhileTheRepIsUnconfirmedEndsTheRetries() {
        Side a = side(da);
        Side b = side(db);
        drop = attr -> attr == CmMad.ATTR_RTU; // every RTU lost
        List<CompletableFuture<IbCm.Connection>> accepted = new ArrayList<>();
        IbCm.Connection ca = await(connectTo(a, b, new byte[0], accepted));
        await(ca.disconnect());
        IbCm.Connection cb = await(accepted.get(0));
        assertThat(cb.disconnected()).isDone();
        long reps = mads.stream().filter(x -> x == -CmMad.ATTR_REP).count();
        vs.runFor(60_000_000_000L);
        assertThat(mads.stream().filter(x -> x == -CmMad.ATTR_REP).count()).as("no REP retries after the DREQ")
                .isEqualTo(reps);
        assertThat(b.qp().state()).isEqualTo(QpState.ERR);
    }

    /** A handler that throws: REJ 28 at once (not the client's 74 s of REQ retries), and the active QP goes to ERR. */
    @Test
    void aFailingHandlerIsAReject() {
        Side a = side(da);
        IbCm.of(db).listen(7174, req -> {
            throw new IllegalStateException("handler bug");
        });
        vs.runFor(1_000_000);
        CompletableFuture<IbCm.Connection> f = IbCm.of(da).connect(a.qp(), B, 7174, IbCm.Options.defaults(), new byte[0]);
        long t0 = vs.nanoTime();
        assertThat(vs.runUntil(f::isDone, MAX)).isTrue();
        IbCm.RejectedException e = (IbCm.RejectedException) f.handle((c, t) -> t.getCause() != null ? t.getCause() : t)
                .join();
        assertThat(e.reason()).isEqualTo(IbCm.REJ_CONSUMER_DEFINED);
        assertThat(vs.nanoTime() - t0).as("at once").isLessThan(1_000_000_000L);
        assertThat(a.qp().state()).as("rdma_cm moves a rejected QP to ERR").isEqualTo(QpState.ERR);
    }
}
