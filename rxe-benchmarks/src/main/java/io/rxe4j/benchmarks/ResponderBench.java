package io.rxe4j.benchmarks;

import static io.rxe4j.benchmarks.PostSendBench.LOCAL;
import static io.rxe4j.benchmarks.PostSendBench.PEER;
import static io.rxe4j.benchmarks.PostSendBench.PEER_QPN;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.benchmarks.PostSendBench.ReleasingTransport;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * Packet → receive completion on one core {@link RxeDevice} (the responder side): a prebuilt,
 * in-sequence RoCEv2 request from the peer, a SEND ONLY or an RDMA WRITE ONLY with immediate
 * (AckReq set, as the requester sets it on a message's last packet), is handed to the device's lane
 * as its transport hands it ({@code PacketReceiver.onPacket}), and its receive completion is
 * polled from the CQ. One op: structure parse, ICRC check, P_Key/QP/peer/state checks, the
 * responder's PSN, opcode-sequence, access, receive-WQE and length checks, the payload copy (SEND:
 * scattered into the receive WQE's SGE; WRITE: into the MR named by the RETH's rkey), the
 * completion pushed to the receive CQ, the ACK built, ICRC'd and sent (the transport of {@link
 * PostSendBench} runs inline and releases it), and {@code poll(1)}.
 *
 * <p>Not in the op: the peer's work and the application's refill. Each invocation handles {@value
 * #BATCH} packets; before it, untimed ({@code @Setup(Level.Invocation)}), the benchmark posts
 * {@value #BATCH} receive WRs (so the responder never answers RNR) and rewrites the PSN of each of
 * its {@value #BATCH} packet buffers to the next expected one and recomputes their ICRC. The
 * device checks ICRC as configured by default. Each completion is checked (SUCCESS, opcode,
 * wr_id, length), and at the end of the trial every drop, duplicate, out-of-sequence, RNR and
 * error counter of the device must be zero ({@link DeviceChecks}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", EventLoopThreadExecutor.OPT_EXECUTOR,
    EventLoopThreadExecutor.OPT_CLASS})
public class ResponderBench {
    static final int BATCH = 64;
    private static final int BUF = 4096;

    /** The request: {@code RC_SEND_ONLY} or {@code RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE}. */
    @Param({"RC_SEND_ONLY", "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"})
    public String opcode;

    /** Payload bytes of the request (= message length); path MTU 4096. */
    @Param({"64", "4096"})
    public int size;

    private ReleasingTransport net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeCq cq;
    private Arena arena;
    private RxeMr mr;
    private Opcode op;
    private WcOpcode wcOpcode;
    private int length;
    private final ByteBuf[] packets = new ByteBuf[BATCH];
    private final RecvWr recvWr = new RecvWr();
    private final Icrc peerIcrc = new Icrc();
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private int nextPsn;
    private long postedRecvs;
    private long completedRecvs;

    @Setup(Level.Trial)
    public void setUp() {
        ForkChecks.requireEventLoopThread();
        op = Opcode.valueOf(opcode);
        if (op != Opcode.RC_SEND_ONLY && op != Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) {
            throw new IllegalArgumentException("opcode " + opcode);
        }
        if (size % 4 != 0 || size > BUF) {
            throw new IllegalArgumentException("size must be a multiple of 4 up to " + BUF + " (no padding)");
        }
        wcOpcode = op == Opcode.RC_SEND_ONLY ? WcOpcode.RECV : WcOpcode.RECV_RDMA_WITH_IMM;
        net = new ReleasingTransport();
        dev = new RxeDevice(net, DeviceConfig.defaults());
        RxePd pd = dev.allocPd();
        cq = dev.createCq(4 * BATCH);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 2 * BATCH, 1, 1, 0), false);
        arena = Arena.ofShared();
        // [0, BUF): the receive buffer of every receive WR; [BUF, 2 BUF): the RDMA WRITE target
        MemorySegment seg = arena.allocate(2 * BUF, 4096);
        mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.REMOTE_WRITE));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_4096).destQpNum(PEER_QPN).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(1));
        recvWr.set(0, new Sge(mr.iova(), BUF, mr.lkey()));
        length = op.headerLength() + size + Icrc.LENGTH;
        for (int i = 0; i < BATCH; i++) {
            ByteBuf b = ByteBufAllocator.DEFAULT.directBuffer(length, length);
            for (int j = 0; j < size; j++) {
                b.setByte(op.headerLength() + j, j * 31 + i);
            }
            if (op.has(Header.RETH)) {
                Reth.write(b, op.offset(Header.RETH), mr.iova() + BUF, mr.rkey(), size);
            }
            if (op.has(Header.IMM_DT)) {
                ImmDt.write(b, op.offset(Header.IMM_DT), 0x1000 + i);
            }
            packets[i] = b;
        }
    }

    /** Untimed: {@value #BATCH} receive WRs, and the next {@value #BATCH} PSNs into the packets (with their ICRC). */
    @Setup(Level.Invocation)
    public void prepare() {
        for (int i = 0; i < BATCH; i++) {
            recvWr.wrId = ++postedRecvs;
            qp.postRecv(recvWr);
        }
        for (int i = 0; i < BATCH; i++) {
            ByteBuf b = packets[i];
            Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), true, nextPsn);
            nextPsn = Psn.next(nextPsn);
            b.setIndex(0, length);
            peerIcrc.write(b, 0, length, PEER, LOCAL);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (completedRecvs == 0 || completedRecvs != postedRecvs) {
            throw new IllegalStateException("completed " + completedRecvs + " of " + postedRecvs + " receives");
        }
        // one ACK per request (AckReq), one receive per request
        DeviceChecks.assertClean(dev, qp, completedRecvs, completedRecvs);
        dev.close();
        for (ByteBuf b : packets) {
            b.release();
        }
        arena.close();
    }

    /** {@value #BATCH} × (request packet → responder → receive completion, ACK sent → poll 1). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long requestToRecvCompletion() {
        long sentBefore = net.sent;
        for (int i = 0; i < BATCH; i++) {
            net.receiver.onPacket(packets[i], PEER, LOCAL);
            WorkCompletion wc = wcs[0];
            if (cq.poll(wcs, 1) != 1 || wc.status != WcStatus.SUCCESS || wc.wrId != ++completedRecvs
                    || wc.opcode != wcOpcode || wc.byteLen != size) {
                throw new IllegalStateException("no or a wrong completion after request " + completedRecvs + ": " + wc);
            }
        }
        if (net.sent - sentBefore != BATCH) {
            throw new IllegalStateException("sent " + (net.sent - sentBefore) + " ACKs for " + BATCH + " requests");
        }
        return wcs[0].wrId;
    }
}
