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
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
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
 * ACK → send completion on one core {@link RxeDevice} (the requester side): a prebuilt ACK from
 * the peer for outstanding one-packet RDMA WRITEs (64 B, SIGNALED) is handed to the device's lane
 * as its transport hands it, and the send completion is polled from the CQ. One op: structure
 * parse, ICRC check, P_Key/QP/peer/state checks, the completer's state machine (GET_WQE →
 * CHECK_PSN → CHECK_ACK → WRITE_SEND → COMP_ACK → UPDATE_COMP), the completion pushed to the
 * send CQ, the retransmit deadline moved, the requester run again (nothing left to send), and the
 * poll. With {@code coalesced=false} each ACK acknowledges one WR and is followed by {@code
 * poll(1)}; with {@code coalesced=true} one ACK for the last PSN acknowledges all {@value #BATCH}
 * WRs (the earlier ones implicitly, COMP_WQE) and one {@code poll(64)} takes them, per WR.
 *
 * <p>Not in the op: posting the WRs and building the ACKs. Before each invocation, untimed
 * ({@code @Setup(Level.Invocation)}), the benchmark posts {@value #BATCH} WRs (the requester
 * sends their packets through the inline transport of {@link PostSendBench}, which releases them;
 * that cost is {@link PostSendBench}'s) and writes the ACKs with the PSNs just sent and their ICRC.
 * The device checks ICRC as configured by default. Every completion is checked (SUCCESS, opcode,
 * wr_id), and at the end of the trial every drop, duplicate, out-of-sequence, retry and error
 * counter of the device must be zero ({@link DeviceChecks}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", EventLoopThreadExecutor.OPT_EXECUTOR,
    EventLoopThreadExecutor.OPT_CLASS})
public class CompleterBench {
    static final int BATCH = 64;
    private static final int SIZE = 64;

    /** One ACK per WR (false) or one ACK for the whole batch of {@value #BATCH} WRs (true). */
    @Param({"false", "true"})
    public boolean coalesced;

    private ReleasingTransport net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeCq cq;
    private Arena arena;
    private SendWr wr;
    private final ByteBuf[] acks = new ByteBuf[BATCH];
    private int ackLength;
    private final Icrc peerIcrc = new Icrc();
    private final WorkCompletion[] wcs = new WorkCompletion[BATCH];
    private int nextPsn;
    private long postedWrs;
    private long completedWrs;

    @Setup(Level.Trial)
    public void setUp() {
        ForkChecks.requireEventLoopThread();
        net = new ReleasingTransport();
        dev = new RxeDevice(net, DeviceConfig.defaults());
        RxePd pd = dev.allocPd();
        cq = dev.createCq(4 * BATCH);
        qp = dev.createQp(pd, cq, cq, new QpCaps(2 * BATCH, 16, 1, 1, 0), false);
        arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(4096, 4096);
        RxeMr mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_4096).destQpNum(PEER_QPN).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(1));
        wr = new SendWr().set(0, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(mr.iova(), SIZE, mr.lkey()))
                .remote(0x10_0000L, 0x4242);
        ackLength = Opcode.RC_ACKNOWLEDGE.headerLength() + Icrc.LENGTH;
        for (int i = 0; i < BATCH; i++) {
            acks[i] = ByteBufAllocator.DEFAULT.directBuffer(ackLength, ackLength);
            wcs[i] = new WorkCompletion();
        }
    }

    /** Untimed: posts {@value #BATCH} WRs (their packets are sent) and writes the ACKs for them. */
    @Setup(Level.Invocation)
    public void prepare() {
        long sentBefore = net.sent;
        for (int i = 0; i < BATCH; i++) {
            wr.wrId = ++postedWrs;
            qp.postSend(wr);
        }
        if (net.sent - sentBefore != BATCH) {
            throw new IllegalStateException("sent " + (net.sent - sentBefore) + " of " + BATCH);
        }
        if (coalesced) {
            nextPsn = Psn.add(nextPsn, BATCH);
            writeAck(acks[0], Psn.add(nextPsn, -1));
        } else {
            for (int i = 0; i < BATCH; i++) {
                writeAck(acks[i], nextPsn);
                nextPsn = Psn.next(nextPsn);
            }
        }
    }

    private void writeAck(ByteBuf ack, int psn) {
        Bth.write(ack, 0, Opcode.RC_ACKNOWLEDGE.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), false, psn);
        Aeth.write(ack, Bth.LENGTH, Aeth.ACK_UNLIMITED, psn);
        ack.setIndex(0, ackLength);
        peerIcrc.write(ack, 0, ackLength, PEER, LOCAL);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (completedWrs == 0 || completedWrs != postedWrs) {
            throw new IllegalStateException("completed " + completedWrs + " of " + postedWrs + " WRs");
        }
        DeviceChecks.assertClean(dev, qp, postedWrs, coalesced ? postedWrs / BATCH : postedWrs);
        dev.close();
        for (ByteBuf b : acks) {
            b.release();
        }
        arena.close();
    }

    /** {@value #BATCH} × (ACK → completer → send completion → poll), or one coalesced ACK and one poll of {@value #BATCH}. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long ackToSendCompletion() {
        if (coalesced) {
            net.receiver.onPacket(acks[0], PEER, LOCAL);
            if (cq.poll(wcs, BATCH) != BATCH) {
                throw new IllegalStateException("fewer than " + BATCH + " completions after WR " + completedWrs);
            }
            for (int i = 0; i < BATCH; i++) {
                check(wcs[i]);
            }
        } else {
            for (int i = 0; i < BATCH; i++) {
                net.receiver.onPacket(acks[i], PEER, LOCAL);
                if (cq.poll(wcs, 1) != 1) {
                    throw new IllegalStateException("no completion after WR " + completedWrs);
                }
                check(wcs[0]);
            }
        }
        return completedWrs;
    }

    private void check(WorkCompletion wc) {
        if (wc.status != WcStatus.SUCCESS || wc.opcode != WcOpcode.RDMA_WRITE || wc.wrId != ++completedWrs) {
            throw new IllegalStateException("wrong completion for WR " + completedWrs + ": " + wc);
        }
    }
}
