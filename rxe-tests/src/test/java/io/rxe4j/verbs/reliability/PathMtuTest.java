package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/**
 * Path MTU and the link (issue 19 item 2), on virtual time over an in-JVM fabric that models a
 * 1500-byte Ethernet ({@link InJvmFabric.Builder#linkMtu}): the port's active MTU is 1024 there, a
 * path MTU of 4096 is accepted at modify_qp (as rdma_rxe) but its first refused packet fails the QP
 * at once with LOC_QP_OP_ERR naming the MTUs (counted in {@code send_err}), never RETRY_EXC_ERR after
 * ACK timeouts, and OPFN does not turn TID RDMA on.
 */
class PathMtuTest {
    private static final InetSocketAddress A = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress B = new InetSocketAddress("10.0.0.2", 4791);
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
    private static final long MAX_WAIT = 10_000_000_000L;

    /** Two devices on one fabric of this link MTU (0: none), one RC QP each, connected at these path MTUs. */
    private static final class Pair implements AutoCloseable {
        final VirtualScheduler vs = new VirtualScheduler();
        final InJvmFabric fabric;
        final RdmaDevice da;
        final RdmaDevice db;
        final CompletionQueue ca;
        final CompletionQueue cb;
        final QueuePair qa;
        final QueuePair qb;
        final MemoryRegion ma;
        final MemoryRegion mb;
        final ProtectionDomain pa;
        final ProtectionDomain pb;

        Pair(int linkMtu, Mtu mtuA, Mtu mtuB, DeviceConfig config) {
            fabric = InJvmFabric.builder().sharedScheduler(vs).linkMtu(linkMtu).build();
            da = RdmaDevice.open(fabric.newTransport(A), config.withSeed(1));
            db = RdmaDevice.open(fabric.newTransport(B), config.withSeed(2));
            pa = da.allocPd();
            pb = db.allocPd();
            ca = da.createCq(64);
            cb = db.createCq(64);
            qa = pa.createQp(QpInitAttr.rc(ca, ca));
            qb = pb.createQp(QpInitAttr.rc(cb, cb));
            ma = pa.allocMr(1 << 16, ACCESS);
            mb = pb.allocMr(1 << 16, ACCESS);
            connect(qa, qb, B, mtuA, 0x100, 0x200);
            connect(qb, qa, A, mtuB, 0x200, 0x100);
        }

        private static void connect(QueuePair me, QueuePair peer, InetSocketAddress peerAddr, Mtu mtu, int myPsn,
                int peerPsn) {
            me.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
            me.modify(new QpAttr().state(QpState.RTR).av(peerAddr).pathMtu(mtu).destQpNum(peer.qpNum())
                    .rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
            me.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(myPsn).maxRdAtomic(16));
        }

        WorkCompletion next(CompletionQueue cq) {
            WorkCompletion[] out = {new WorkCompletion()};
            assertThat(vs.runUntil(() -> cq.poll(out) == 1, MAX_WAIT)).as("a completion within 10 s").isTrue();
            return out[0];
        }

        SendWr op(long id, WrOpcode op, int len) {
            return new SendWr().set(id, op, SendFlags.SIGNALED, new Sge(ma.addr(), len, ma.lkey()))
                    .remote(mb.addr(), mb.rkey());
        }

        @Override
        public void close() {
            qa.close();
            qb.close();
            ma.close();
            mb.close();
            ca.close();
            cb.close();
            pa.close();
            pb.close();
            da.close();
            db.close();
        }
    }

    @Test
    void activeMtuFollowsTheLinkAsRdmaRxeComputesIt() {
        assertThat(Mtu.activeForLinkMtu(1500)).isEqualTo(Mtu.MTU_1024); // 1420
        assertThat(Mtu.activeForLinkMtu(9000)).isEqualTo(Mtu.MTU_4096);
        assertThat(Mtu.activeForLinkMtu(65536)).isEqualTo(Mtu.MTU_4096); // loopback
        assertThat(Mtu.activeForLinkMtu(2128)).isEqualTo(Mtu.MTU_2048); // 2048 + 80
        assertThat(Mtu.activeForLinkMtu(2127)).isEqualTo(Mtu.MTU_1024);
        assertThat(Mtu.activeForLinkMtu(576)).isEqualTo(Mtu.MTU_256); // below 512 + 80: the minimum
        assertThat(Mtu.activeForLinkMtu(-1)).isEqualTo(Mtu.MTU_4096); // no limit known
        try (Pair p = new Pair(1500, Mtu.MTU_1024, Mtu.MTU_1024, DeviceConfig.defaults())) {
            assertThat(p.da.linkMtu()).isEqualTo(1500);
            assertThat(p.da.queryPort(1).activeMtu()).isEqualTo(Mtu.MTU_1024);
            assertThat(p.da.queryPort(1).maxMtu()).isEqualTo(Mtu.MTU_4096);
        }
        try (Pair p = new Pair(0, Mtu.MTU_1024, Mtu.MTU_1024, DeviceConfig.defaults())) {
            assertThat(p.da.linkMtu()).isEqualTo(-1);
            assertThat(p.da.queryPort(1).activeMtu()).isEqualTo(Mtu.MTU_4096);
        }
    }

    @Test
    void aWriteAboveTheLinkMtuFailsAtOnceWithALocalErrorNamingTheMtus() {
        try (Pair p = new Pair(1500, Mtu.MTU_4096, Mtu.MTU_4096, DeviceConfig.defaults())) {
            long t0 = p.vs.nanoTime();
            p.qa.postSend(p.op(7, WrOpcode.RDMA_WRITE, 8192));
            WorkCompletion wc = p.next(p.ca);
            assertThat(wc.wrId).isEqualTo(7);
            assertThat(wc.status).isEqualTo(WcStatus.LOC_QP_OP_ERR);
            assertThat(p.qa.state()).isEqualTo(QpState.ERR);
            assertThat(p.qa.errorReason()).contains("4128-byte UDP payload", "Message too long", "path MTU 4096",
                    "active MTU 1024", "link MTU 1500").doesNotContain("no acknowledgement");
            assertThat(p.da.counter(Counter.SEND_ERR)).isGreaterThanOrEqualTo(1);
            assertThat(p.da.counter(Counter.RETRANSMIT_TIMEOUTS)).isZero();
            assertThat(p.da.counter(Counter.RETRY_EXCEEDED_ERR)).isZero();
            assertThat(p.vs.nanoTime() - t0).as("virtual time: no ACK timeout waited for").isLessThan(1_000_000L);
        }
    }

    @Test
    void aRefusedReadResponseNaksTheRequesterInsteadOfLeavingItToTimeOut() {
        // A asks at 1024 (its requests fit), B answers at 4096 (its READ responses do not)
        try (Pair p = new Pair(1500, Mtu.MTU_1024, Mtu.MTU_4096, DeviceConfig.defaults())) {
            p.qa.postSend(p.op(9, WrOpcode.RDMA_READ, 8192));
            WorkCompletion wc = p.next(p.ca);
            assertThat(wc.status).isEqualTo(WcStatus.REM_OP_ERR);
            assertThat(p.qb.state()).isEqualTo(QpState.ERR);
            assertThat(p.qb.errorReason()).contains("Message too long", "path MTU 4096", "link MTU 1500");
            assertThat(p.db.counter(Counter.SEND_ERR)).isGreaterThanOrEqualTo(1);
            assertThat(p.da.counter(Counter.RETRANSMIT_TIMEOUTS)).isZero();
        }
    }

    @Test
    void writesAtTheActiveMtuPass() {
        try (Pair p = new Pair(1500, Mtu.MTU_1024, Mtu.MTU_1024, DeviceConfig.defaults())) {
            p.qa.postSend(p.op(1, WrOpcode.RDMA_WRITE, 8192));
            assertThat(p.next(p.ca).status).isEqualTo(WcStatus.SUCCESS);
            p.qa.postSend(p.op(2, WrOpcode.RDMA_READ, 8192));
            assertThat(p.next(p.ca).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.da.counter(Counter.SEND_ERR) + p.db.counter(Counter.SEND_ERR)).isZero();
        }
    }

    @Test
    void opfnDoesNotNegotiateTidRdmaOnALinkThatCannotCarry4096BytePackets() {
        DeviceConfig tid = DeviceConfig.defaults().withTidRdma();
        try (Pair p = new Pair(1500, Mtu.MTU_4096, Mtu.MTU_4096, tid)) {
            p.qa.postSend(p.op(1, WrOpcode.RDMA_WRITE, 100)); // fits; carries OPFN's bit 24
            assertThat(p.next(p.ca).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(100_000_000L); // the OPFN exchange (hidden COMPARE_SWAPs) ends
            assertThat(p.qa.tidRdma()).isNull();
            assertThat(p.qb.tidRdma()).isNull();
            assertThat(p.da.counter(Counter.SEND_ERR) + p.db.counter(Counter.SEND_ERR)).isZero();
        }
        try (Pair p = new Pair(9000, Mtu.MTU_4096, Mtu.MTU_4096, tid)) { // control: a jumbo link negotiates it
            p.qa.postSend(p.op(1, WrOpcode.RDMA_WRITE, 100));
            assertThat(p.next(p.ca).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(100_000_000L);
            assertThat(p.qa.tidRdma()).isNotNull();
        }
    }
}
