package io.rxe4j.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * post_send → packet on one core {@link RxeDevice}: {@link RxeQp#postSend} of a one-packet
 * RDMA WRITE (SGE in a registered MR) runs the requester inline (the transport's loop is the
 * calling thread): WQE fill, opcode/PSN/AckReq, a pooled direct buffer, BTH + RETH, payload copy
 * out of the MR, ICRC, send (the transport releases the packet), retransmit timer arming.
 *
 * <p>Nothing acknowledges on its own, so each invocation posts {@value #BATCH} WRs and then feeds
 * the device one coalesced ACK for the last PSN through its receive path (parse, ICRC check,
 * completer), amortised over the batch. With {@code signaled=true} every WR is SIGNALED and the
 * batch's completions are polled from the CQ too.
 *
 * <p>The device's per-peer congestion window starts at 256 KiB ({@code CongestionWindow}), which
 * holds only 63 WRITE packets of 4096 B plus headers: the set-up therefore first sends and
 * acknowledges half a batch, which grows the window (slow start) past a batch, so that no WR of
 * the measurement waits for budget. At the end of the trial every drop, error and wait counter of
 * the device must be zero ({@link DeviceChecks}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", EventLoopThreadExecutor.OPT_EXECUTOR,
    EventLoopThreadExecutor.OPT_CLASS})
public class PostSendBench {
    static final int BATCH = 64;
    /** The device's address (the transport's local address). */
    static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    /** The simulated peer, the sender of every packet fed to the device. */
    static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    /** The peer's QPN (the DestQP of the device's packets). */
    static final int PEER_QPN = 0x77;

    /** WRITE message (= packet payload) bytes; path MTU 4096. */
    @Param({"64", "4096"})
    public int size;

    /** Whether each WR is SIGNALED (then its completion is polled). */
    @Param({"false", "true"})
    public boolean signaled;

    /** Runs every task inline and releases each sent packet; timers never fire. */
    static final class ReleasingTransport implements Transport, Scheduler {
        private static final Cancellable NOOP = () -> { };
        PacketReceiver receiver;
        long sent;
        int timers;

        @Override public InetSocketAddress localAddress() { return LOCAL; }
        @Override public Scheduler scheduler() { return this; }
        @Override public ByteBufAllocator allocator() { return ByteBufAllocator.DEFAULT; }
        @Override public void start(PacketReceiver r) { receiver = r; }
        @Override public void send(ByteBuf packet, InetSocketAddress peer) { sent++; packet.release(); }
        @Override public void flush() { }
        @Override public void close() { }
        @Override public long nanoTime() { return 0; }
        @Override public boolean inLoop() { return true; }
        @Override public void execute(Runnable task) { task.run(); }
        @Override public Cancellable schedule(Runnable task, long delayNanos) { timers++; return NOOP; }
    }

    private ReleasingTransport net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeCq cq;
    private Arena arena;
    private RxeMr mr;
    private SendWr wr;
    private ByteBuf ack;
    private final Icrc peerIcrc = new Icrc();
    private final WorkCompletion[] wcs = new WorkCompletion[BATCH];
    private int nextPsn;
    private long wrId;

    @Setup(Level.Trial)
    public void setUp() {
        ForkChecks.requireEventLoopThread();
        net = new ReleasingTransport();
        dev = new RxeDevice(net, DeviceConfig.defaults());
        RxePd pd = dev.allocPd();
        cq = dev.createCq(4 * BATCH);
        qp = dev.createQp(pd, cq, cq, new QpCaps(4 * BATCH, 16, 1, 1, 0), false);
        arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(8192, 4096);
        mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_4096).destQpNum(PEER_QPN).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(1));
        wr = new SendWr().set(0, WrOpcode.RDMA_WRITE, signaled ? SendFlags.SIGNALED : 0,
                new Sge(mr.iova(), size, mr.lkey())).remote(0x10_0000L, 0x4242);
        int ackLen = Opcode.RC_ACKNOWLEDGE.headerLength() + Icrc.LENGTH;
        ack = Unpooled.directBuffer(ackLen, ackLen);
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        // grow the congestion window (256 KiB at first) past one batch of 4 KiB packets
        for (int i = 0; i < BATCH / 2; i++) {
            qp.postSend(wr);
        }
        nextPsn = Psn.add(nextPsn, BATCH / 2);
        acknowledge(Psn.add(nextPsn, -1));
        if (signaled && cq.poll(wcs, BATCH) != BATCH / 2) {
            throw new IllegalStateException("priming: missing completions");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        DeviceChecks.assertClean(dev, qp, 1, 1);
        dev.close();
        ack.release();
        arena.close();
    }

    /** Posts {@value #BATCH} one-packet WRITEs, then acknowledges them with one ACK (and polls if signaled). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long postSendBatch() {
        long sentBefore = net.sent;
        for (int i = 0; i < BATCH; i++) {
            wr.wrId = ++wrId;
            qp.postSend(wr);
        }
        if (net.sent - sentBefore != BATCH) {
            throw new IllegalStateException("sent " + (net.sent - sentBefore) + " of " + BATCH);
        }
        nextPsn = Psn.add(nextPsn, BATCH);
        acknowledge(Psn.add(nextPsn, -1));
        if (signaled) {
            int n = cq.poll(wcs, BATCH);
            if (n != BATCH || wcs[BATCH - 1].status != WcStatus.SUCCESS) {
                throw new IllegalStateException("polled " + n);
            }
        }
        return net.sent;
    }

    private void acknowledge(int psn) {
        int len = ack.capacity();
        Bth.write(ack, 0, Opcode.RC_ACKNOWLEDGE.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), false, psn);
        Aeth.write(ack, Bth.LENGTH, Aeth.ACK_UNLIMITED, psn);
        ack.setIndex(0, len);
        peerIcrc.write(ack, 0, len, PEER, LOCAL);
        net.receiver.onPacket(ack, PEER, LOCAL);
    }
}
