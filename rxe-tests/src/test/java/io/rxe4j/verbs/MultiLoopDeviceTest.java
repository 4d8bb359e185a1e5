package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.core.device.RxeLane;
import io.rxe4j.net.MultiLoopTransport;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.spi.Transport;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Multi-core devices (issue 13, item 2): a device on a multi-loop transport runs one event loop
 * per lane, puts each QP on the lane of its send CQ (its completion vector), and steers every
 * received packet to its QP's lane.
 */
class MultiLoopDeviceTest {
    private static final int ACCESS = RcPair.ALL_REMOTE;

    /** One QP per CQ on each side, connected pairwise. */
    private static final class Pairs implements AutoCloseable {
        final RdmaDevice a;
        final RdmaDevice b;
        final List<CompletionQueue> cqa = new ArrayList<>();
        final List<CompletionQueue> cqb = new ArrayList<>();
        final List<QueuePair> qa = new ArrayList<>();
        final List<QueuePair> qb = new ArrayList<>();
        final MemoryRegion ma;
        final MemoryRegion mb;
        final ProtectionDomain pa;
        final ProtectionDomain pb;

        Pairs(Transport ta, Transport tb, int n) {
            a = RdmaDevice.open(ta);
            b = RdmaDevice.open(tb);
            pa = a.allocPd();
            pb = b.allocPd();
            ma = pa.allocMr(1 << 20, ACCESS);
            mb = pb.allocMr(1 << 20, ACCESS);
            for (int i = 0; i < n; i++) {
                cqa.add(a.createCq(256));
                cqb.add(b.createCq(256));
                qa.add(pa.createQp(QpInitAttr.rc(cqa.get(i), cqa.get(i))));
                qb.add(pb.createQp(QpInitAttr.rc(cqb.get(i), cqb.get(i))));
                wire(qa.get(i), a, qb.get(i), b);
            }
        }

        @Override
        public void close() {
            for (QueuePair q : qa) {
                q.close();
            }
            for (QueuePair q : qb) {
                q.close();
            }
            ma.close();
            mb.close();
            for (CompletionQueue c : cqa) {
                c.close();
            }
            for (CompletionQueue c : cqb) {
                c.close();
            }
            pa.close();
            pb.close();
            a.close();
            b.close();
        }
    }

    static WorkCompletion next(CompletionQueue cq) {
        return RcPair.next(cq, cq::toString);
    }

    private static RxeLane laneOf(QueuePair qp) {
        return RxeLane.of((io.rxe4j.core.qp.RxeQp) qp.core);
    }

    @Test
    void qpsGoToTheirSendCqsLoopAndEachLoopIsItsOwnThread() {
        InJvmFabric fabric = new InJvmFabric();
        try (Pairs p = pairs(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791), 4),
                fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791), 4), 8)) {
            assertThat(p.a.numCompVectors()).isEqualTo(4);
            Set<String> threads = new HashSet<>();
            for (int i = 0; i < 8; i++) {
                RxeLane lane = laneOf(p.qa.get(i));
                assertThat(lane.index()).as("QP %d: CQs are spread round robin", i).isEqualTo(i % 4);
                assertThat(((io.rxe4j.core.cq.RxeCq) p.cqa.get(i).core).lane()).isEqualTo(i % 4);
                assertThat((p.qa.get(i).qpNum() - 16) % 4).as("QPN residue = lane").isEqualTo(i % 4);
                threads.add(lane.callOnLoop(() -> Thread.currentThread().getName()));
            }
            assertThat(threads).as("one thread per loop").hasSize(4);
            exercise(p, 8);
            assertThat(p.a.counter(Counter.DROP_NO_QP) + p.b.counter(Counter.DROP_NO_QP)).isZero();
        }
    }

    /** Direct buffers of an unpooled allocator, each remembered, so that a test can find the ones never released. */
    static final class TrackingAllocator extends io.netty.buffer.AbstractByteBufAllocator {
        final List<io.netty.buffer.ByteBuf> all = java.util.Collections.synchronizedList(new ArrayList<>());

        TrackingAllocator() {
            super(true);
        }

        @Override
        protected io.netty.buffer.ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
            io.netty.buffer.ByteBuf b = io.netty.buffer.Unpooled.directBuffer(initialCapacity, maxCapacity);
            all.add(b);
            return b;
        }

        @Override
        protected io.netty.buffer.ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
            io.netty.buffer.ByteBuf b = io.netty.buffer.Unpooled.buffer(initialCapacity, maxCapacity);
            all.add(b);
            return b;
        }

        @Override
        public boolean isDirectBufferPooled() {
            return false;
        }

        long live() {
            synchronized (all) {
                return all.stream().filter(b -> b.refCnt() > 0).count();
            }
        }
    }

    @Test
    void packetsArrivingOnAnotherLoopAreSteeredToTheirQpsLoopAndReleased() {
        // virtual time: every lane shares one scheduler, so the run is deterministic; device B has
        // one loop, so everything it sends arrives on A's lane 0 and A's QPs on lanes 1..3 are
        // reached only by steering
        VirtualScheduler vs = new VirtualScheduler();
        TrackingAllocator alloc = new TrackingAllocator();
        InJvmFabric fabric = InJvmFabric.builder().sharedScheduler(vs).allocator(alloc).build();
        Transport ta = fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791), 4);
        Transport tb = fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791), 1);
        try (Pairs p = pairs(ta, tb, 4)) {
            for (int i = 0; i < 4; i++) {
                long addr = p.mb.addr() + i * 4096L;
                p.ma.segment().asSlice(i * 4096L, 3000).fill((byte) (0x40 + i));
                p.qa.get(i).postSend(new SendWr().rdmaWrite(i, addr, p.mb.rkey(),
                        new Sge(p.ma.addr() + i * 4096L, 3000, p.ma.lkey())).signaled());
            }
            vs.runUntilIdle();
            WorkCompletion[] wc = {new WorkCompletion()};
            for (int i = 0; i < 4; i++) {
                assertThat(p.cqa.get(i).poll(wc)).isEqualTo(1);
                assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
                assertThat(p.mb.segment().asSlice(i * 4096L, 3000).mismatch(p.ma.segment().asSlice(i * 4096L, 3000)))
                        .isEqualTo(-1);
            }
            // ACKs for A's QPs on lanes 1..3 came in on lane 0 (3 messages of 3 packets, ACK per message or more)
            assertThat(p.a.counter(Counter.STEERED_PKTS)).isGreaterThanOrEqualTo(3);
            assertThat(p.b.counter(Counter.STEERED_PKTS)).isZero();
            assertThat(p.a.counter(Counter.DROP_NO_QP)).isZero();
            assertThat(p.a.counter(Counter.DROP_STEER_QUEUE_FULL)).isZero();
        }
        vs.runUntilIdle();
        assertThat(alloc.all).as("packets were sent").hasSizeGreaterThan(10);
        assertThat(alloc.live()).as("every packet buffer released, steered ones included").isZero();
    }

    @Test
    void aReceiveCqOnAnotherLoopTakesCompletionsFromBoth() {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice a = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791), 2));
        RdmaDevice b = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791), 2));
        try {
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            MemoryRegion ma = pa.allocMr(1 << 16, ACCESS);
            MemoryRegion mb = pb.allocMr(1 << 16, ACCESS);
            CompletionQueue s0 = b.createCq(64, 0);
            CompletionQueue shared = b.createCq(256, 1);
            QueuePair b0 = pb.createQp(QpInitAttr.rc(s0, shared)); // lane 0, receive CQ on lane 1
            QueuePair b1 = pb.createQp(QpInitAttr.rc(shared, shared)); // lane 1
            assertThat(laneOf(b0).index()).isZero();
            assertThat(laneOf(b1).index()).isEqualTo(1);
            assertThat(((io.rxe4j.core.cq.RxeCq) shared.core).sharedAcrossLanes()).isTrue();
            assertThat(((io.rxe4j.core.cq.RxeCq) s0.core).sharedAcrossLanes()).isFalse();
            CompletionQueue ca = a.createCq(256);
            QueuePair a0 = pa.createQp(QpInitAttr.rc(ca, ca));
            QueuePair a1 = pa.createQp(QpInitAttr.rc(ca, ca));
            wire(a0, a, b0, b);
            wire(a1, a, b1, b);
            int n = 100;
            for (int i = 0; i < n; i++) {
                b0.postRecv(new RecvWr().set(1000 + i, new Sge(mb.addr() + i * 64L, 64, mb.lkey())));
                b1.postRecv(new RecvWr().set(2000 + i, new Sge(mb.addr() + 8192 + i * 64L, 64, mb.lkey())));
            }
            for (int i = 0; i < n; i++) {
                ma.segment().set(ValueLayout.JAVA_INT_UNALIGNED, i * 4L, i);
                a0.postSend(new SendWr().send(i, new Sge(ma.addr() + i * 4L, 4, ma.lkey())));
                a1.postSend(new SendWr().send(i, new Sge(ma.addr() + i * 4L, 4, ma.lkey())));
            }
            int[] byQp = new int[2];
            for (int i = 0; i < 2 * n; i++) {
                WorkCompletion wc = next(shared);
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode).isEqualTo(WcOpcode.RECV);
                byQp[wc.qpNum == b0.qpNum() ? 0 : 1]++;
            }
            assertThat(byQp).containsExactly(n, n);
            for (int i = 0; i < n; i++) {
                assertThat(mb.segment().get(ValueLayout.JAVA_INT_UNALIGNED, i * 64L)).isEqualTo(i);
                assertThat(mb.segment().get(ValueLayout.JAVA_INT_UNALIGNED, 8192 + i * 64L)).isEqualTo(i);
            }
            for (QueuePair q : List.of(a0, a1, b0, b1)) {
                q.close();
            }
            ma.close();
            mb.close();
            for (CompletionQueue c : List.of(s0, shared, ca)) {
                c.close();
            }
            pa.close();
            pb.close();
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void fetchAndAddFromQpsOnEveryLoopIsAtomic() {
        InJvmFabric fabric = new InJvmFabric();
        try (Pairs p = pairs(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791), 4),
                fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791), 4), 4)) {
            int perQp = 400;
            long target = p.mb.addr();
            for (int round = 0; round < perQp; round += 16) {
                for (int q = 0; q < 4; q++) {
                    for (int k = 0; k < 16; k++) {
                        p.qa.get(q).postSend(new SendWr().fetchAndAdd(k, target, p.mb.rkey(), 1,
                                new Sge(p.ma.addr() + 65536 + (q * 16 + k) * 8L, 8, p.ma.lkey())).signaled());
                    }
                }
                for (int q = 0; q < 4; q++) {
                    for (int k = 0; k < 16; k++) {
                        assertThat(next(p.cqa.get(q)).status).isEqualTo(WcStatus.SUCCESS);
                    }
                }
            }
            // B's responders ran on 4 loops at once: a lost update would leave less than 4 * perQp
            assertThat(p.mb.segment().get(ValueLayout.JAVA_LONG, 0)).isEqualTo(4L * perQp);
        }
    }

    @Test
    void udpEpollSocketsSteerByQpnSoNoPacketChangesLoops() {
        Assumptions.assumeTrue(UdpTransport.isEpollAvailable(), "native epoll not available");
        InetAddress lo = InetAddress.getLoopbackAddress();
        Transport ta = UdpTransport.builder(lo).port(0).io(UdpTransport.Io.EPOLL).loops(4).bindLoops();
        Transport tb = UdpTransport.builder(lo).port(0).io(UdpTransport.Io.EPOLL).loops(4).bindLoops();
        assertThat(ta).isInstanceOf(MultiLoopTransport.class);
        assertThat(ta.lanes()).hasSize(4);
        assertThat(((UdpTransport) ta.lanes().get(0)).steersByQpn()).isTrue();
        assertThat(ta.lanes()).as("no GRO by default on several loops: its socket lookup bypasses the steering")
                .allSatisfy(t -> assertThat(((UdpTransport) t).gro()).isFalse());
        assertThat(ta.lanes()).extracting(Transport::localAddress).containsOnly(ta.localAddress());
        assertThatThrownBy(() -> UdpTransport.builder(lo).port(ta.localAddress().getPort()).io(UdpTransport.Io.EPOLL)
                .loops(2).bindLoops()).as("SO_REUSEPORT must not let another device join the port")
                .isInstanceOf(java.io.UncheckedIOException.class).hasMessageContaining("in use");
        try (Pairs p = pairs(ta, tb, 8)) {
            exercise(p, 8);
            RxeLane lane = laneOf(p.qa.get(1));
            long hint = ta.lanes().get(1).inFlightBudgetHint();
            assertThat(lane.callOnLoop(() -> lane.peerBudget(p.b.address()).limitBytes()))
                    .as("the derived budget towards a peer is shared by the 4 lanes").isEqualTo(hint / 4);
            assertThat(p.a.counter(Counter.STEERED_PKTS)).as("the kernel put every packet on its QP's socket").isZero();
            assertThat(p.b.counter(Counter.STEERED_PKTS)).isZero();
            long received = 0;
            for (Transport t : ta.lanes()) {
                received += ((UdpTransport) t).packetsReceived();
                assertThat(((UdpTransport) t).packetsReceived()).as("every socket of A received").isPositive();
            }
            assertThat(received).isEqualTo(p.a.counter(Counter.RCVD_PKTS));
        }
    }

    /**
     * TID RDMA packets name a KDETH QPN, not the verbs QPN, so on a multi-loop UDP device they land
     * on any socket and are steered in software; with two QPs on two loops, 1 MiB TID WRITEs and
     * READs still complete with the right bytes (a new user's trial found them failing while steered
     * packets leaked).
     */
    @Test
    void tidRdmaOnTwoLoopsOverUdpCompletesWithTheRightBytes() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        DeviceConfig tid = DeviceConfig.defaults().withTidRdma();
        RdmaDevice a = RdmaDevice.open(UdpTransport.builder(lo).port(0).loops(2).bindLoops(), tid);
        RdmaDevice b = RdmaDevice.open(UdpTransport.builder(lo).port(0).loops(2).bindLoops(), tid);
        int mib = 1 << 20;
        try {
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            MemoryRegion ma = pa.allocMr(8L * mib, ACCESS);
            MemoryRegion mb = pb.allocMr(8L * mib, ACCESS);
            List<CompletionQueue> cqs = new ArrayList<>();
            List<QueuePair> qa = new ArrayList<>();
            List<QueuePair> qb = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                CompletionQueue ca = a.createCq(64);
                CompletionQueue cb = b.createCq(64);
                cqs.add(ca);
                cqs.add(cb);
                qa.add(pa.createQp(QpInitAttr.rc(ca, ca)));
                qb.add(pb.createQp(QpInitAttr.rc(cb, cb)));
                wire(qa.get(i), a, qb.get(i), b, Mtu.MTU_4096);
                assertThat(laneOf(qa.get(i)).index()).isEqualTo(i);
            }
            // OPFN: a first small WRITE per QP carries BTH bit 24; wait until TID RDMA is negotiated
            for (int i = 0; i < 2; i++) {
                qa.get(i).postSend(new SendWr().rdmaWrite(1, mb.addr(), mb.rkey(), new Sge(ma.addr(), 8, ma.lkey()))
                        .signaled());
                assertThat(next(cqs.get(2 * i)).status).isEqualTo(WcStatus.SUCCESS);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while ((qa.get(0).tidRdma() == null || qa.get(1).tidRdma() == null) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(qa.get(0).tidRdma()).as("TID RDMA negotiated").isNotNull();
            java.util.Random rnd = new java.util.Random(13);
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 2; i++) {
                    long off = (long) i * 2 * mib;
                    byte[] data = new byte[mib];
                    rnd.nextBytes(data);
                    java.lang.foreign.MemorySegment.copy(java.lang.foreign.MemorySegment.ofArray(data), 0, ma.segment(), off,
                            mib);
                    qa.get(i).postSend(new SendWr().rdmaWrite(2, mb.addr() + off, mb.rkey(),
                            new Sge(ma.addr() + off, mib, ma.lkey())).signaled());
                }
                for (int i = 0; i < 2; i++) {
                    assertThat(next(cqs.get(2 * i)).status).isEqualTo(WcStatus.SUCCESS);
                    long off = (long) i * 2 * mib;
                    qa.get(i).postSend(new SendWr().rdmaRead(3, mb.addr() + off, mb.rkey(),
                            new Sge(ma.addr() + off + mib, mib, ma.lkey())).signaled());
                }
                for (int i = 0; i < 2; i++) {
                    assertThat(next(cqs.get(2 * i)).status).isEqualTo(WcStatus.SUCCESS);
                    long off = (long) i * 2 * mib;
                    assertThat(mb.segment().asSlice(off, mib).mismatch(ma.segment().asSlice(off, mib)))
                            .as("WRITE round %d QP %d", round, i).isEqualTo(-1);
                    assertThat(ma.segment().asSlice(off + mib, mib).mismatch(ma.segment().asSlice(off, mib)))
                            .as("READ round %d QP %d", round, i).isEqualTo(-1);
                }
            }
            assertThat(a.counter(Counter.TID_READ_REQUESTS)).as("READs went as TID RDMA").isPositive();
            assertThat(b.counter(Counter.TID_WRITE_REQUESTS)).as("WRITEs went as TID RDMA").isPositive();
            assertThat(a.counter(Counter.STEERED_PKTS) + b.counter(Counter.STEERED_PKTS))
                    .as("TID packets were steered in software").isPositive();
            for (QueuePair q : qa) {
                q.close();
            }
            for (QueuePair q : qb) {
                q.close();
            }
            ma.close();
            mb.close();
            for (CompletionQueue c : cqs) {
                c.close();
            }
            pa.close();
            pb.close();
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void manyMultiLoopTransportsOnPortZeroNeverShareAPort() {
        InetAddress lo = InetAddress.getLoopbackAddress();
        List<Transport> made = new ArrayList<>();
        try {
            Set<Integer> ports = new HashSet<>();
            for (int i = 0; i < 40; i++) {
                Transport t = UdpTransport.builder(lo).port(0).io(UdpTransport.Io.NIO).loops(2).bindLoops();
                made.add(t);
                assertThat(ports.add(t.localAddress().getPort())).as("port %d handed out twice", t.localAddress().getPort())
                        .isTrue();
            }
        } finally {
            for (Transport t : made) {
                t.close();
            }
        }
    }

    @Test
    void udpNioSocketsShareThePortAndTheDeviceSteers() {
        InetAddress lo = InetAddress.getLoopbackAddress();
        Transport ta = UdpTransport.builder(lo).port(0).io(UdpTransport.Io.NIO).loops(3).bindLoops();
        Transport tb = UdpTransport.builder(lo).port(0).io(UdpTransport.Io.NIO).loops(2).bindLoops();
        assertThat(((UdpTransport) ta.lanes().get(0)).steersByQpn()).isFalse();
        try (Pairs p = pairs(ta, tb, 6)) {
            exercise(p, 6);
            assertThat(p.a.counter(Counter.DROP_NO_QP) + p.b.counter(Counter.DROP_NO_QP)).isZero();
        }
    }

    @Test
    void badCompletionVectorIsRefusedByValue() {
        InJvmFabric fabric = new InJvmFabric();
        try (RdmaDevice d = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791), 2))) {
            assertThatThrownBy(() -> d.createCq(16, 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("comp_vector must be 0..1").hasMessageContaining("got 2");
            assertThatThrownBy(() -> d.createCq(16, -2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("got -2");
        }
        assertThatThrownBy(() -> new InJvmFabric().newTransport(new InetSocketAddress("10.0.0.1", 4791), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
    }

    // ------------------------------------------------------------------ helpers

    private static Pairs pairs(Transport ta, Transport tb, int n) {
        return new Pairs(ta, tb, n);
    }

    static void wire(QueuePair x, RdmaDevice dx, QueuePair y, RdmaDevice dy) {
        wire(x, dx, y, dy, Mtu.MTU_1024);
    }

    static void wire(QueuePair x, RdmaDevice dx, QueuePair y, RdmaDevice dy, Mtu mtu) {
        for (QueuePair[] pair : new QueuePair[][] {{x, y}, {y, x}}) {
            pair[0].modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
        }
        x.modify(new QpAttr().state(QpState.RTR).av(dy.address()).pathMtu(mtu).destQpNum(y.qpNum())
                .rqPsn(0x200).maxDestRdAtomic(16).minRnrTimer(1));
        y.modify(new QpAttr().state(QpState.RTR).av(dx.address()).pathMtu(mtu).destQpNum(x.qpNum())
                .rqPsn(0x100).maxDestRdAtomic(16).minRnrTimer(1));
        x.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x100).maxRdAtomic(16));
        y.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x200).maxRdAtomic(16));
    }

    /** On every pair: a 20 KiB WRITE, a READ of it back, and an FAA; checks bytes and values. */
    private static void exercise(Pairs p, int n) {
        for (int i = 0; i < n; i++) {
            long off = i * 65536L;
            p.ma.segment().asSlice(off, 20_000).fill((byte) (i + 1));
            p.qa.get(i).postSend(new SendWr().rdmaWrite(1, p.mb.addr() + off, p.mb.rkey(),
                    new Sge(p.ma.addr() + off, 20_000, p.ma.lkey())).signaled());
        }
        for (int i = 0; i < n; i++) {
            assertThat(next(p.cqa.get(i)).status).isEqualTo(WcStatus.SUCCESS);
        }
        for (int i = 0; i < n; i++) {
            long off = i * 65536L;
            p.qa.get(i).postSend(new SendWr().rdmaRead(2, p.mb.addr() + off, p.mb.rkey(),
                    new Sge(p.ma.addr() + off + 32768, 20_000, p.ma.lkey())).signaled());
            p.qa.get(i).postSend(new SendWr().fetchAndAdd(3, p.mb.addr() + off + 40000, p.mb.rkey(), 5,
                    new Sge(p.ma.addr() + off + 60000, 8, p.ma.lkey())).signaled());
        }
        for (int i = 0; i < n; i++) {
            assertThat(next(p.cqa.get(i)).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(next(p.cqa.get(i)).status).isEqualTo(WcStatus.SUCCESS);
            long off = i * 65536L;
            assertThat(p.mb.segment().asSlice(off, 20_000).mismatch(p.ma.segment().asSlice(off, 20_000))).isEqualTo(-1);
            assertThat(p.ma.segment().asSlice(off + 32768, 20_000).mismatch(p.ma.segment().asSlice(off, 20_000)))
                    .isEqualTo(-1);
            assertThat(p.mb.segment().get(ValueLayout.JAVA_LONG, off + 40000)).isEqualTo(5);
        }
    }
}
