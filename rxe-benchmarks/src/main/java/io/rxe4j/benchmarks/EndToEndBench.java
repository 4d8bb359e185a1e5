package io.rxe4j.benchmarks;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
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
 * End to end in one JVM with the verbs API: two {@link RdmaDevice}s on an {@link InJvmFabric}
 * (each endpoint on its own Netty event loop), one RC QP each, connected. The benchmark thread
 * posts and busy-polls the send CQ: {@code *Latency} has one WR in flight (post → requester
 * loop → fabric → responder loop → fabric → completer → CQ → poll), {@code *Pipelined16} posts
 * {@value #DEPTH} WRs and then polls their {@value #DEPTH} completions (per-WR time).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
public class EndToEndBench {
    static final int DEPTH = 16;
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC;

    /** WRITE / READ message bytes (path MTU 4096: 4096 is one packet, 65536 sixteen). */
    @Param({"64", "4096", "65536"})
    public int size;

    private InJvmFabric fabric;
    private Side a;
    private Side b;
    private SendWr write;
    private SendWr read;
    private SendWr faa;
    private final WorkCompletion[] wcs = new WorkCompletion[DEPTH];
    private long wrId;

    static final class Side {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemoryRegion mr;

        Side(RdmaDevice dev) {
            this.dev = dev;
            this.pd = dev.allocPd();
            this.cq = dev.createCq(256);
            this.qp = pd.createQp(QpInitAttr.rc(cq, cq));
            this.mr = pd.allocMr(1 << 20, ALL);
        }

        void close() {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            dev.close();
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        fabric = new InJvmFabric();
        a = new Side(RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791))));
        b = new Side(RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791))));
        connect(a, b, 0x100, 0x200);
        connect(b, a, 0x200, 0x100);
        write = new SendWr().set(0, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(a.mr.addr(), size, a.mr.lkey()))
                .remote(b.mr.addr(), b.mr.rkey());
        read = new SendWr().set(0, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                new Sge(a.mr.addr() + (1 << 19), size, a.mr.lkey())).remote(b.mr.addr(), b.mr.rkey());
        faa = new SendWr().set(0, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                new Sge(a.mr.addr() + (1 << 20) - 8, 8, a.mr.lkey())).remote(b.mr.addr() + (1 << 20) - 8, b.mr.rkey());
        faa.compareAdd = 1;
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    private static void connect(Side me, Side peer, int myPsn, int peerPsn) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(Mtu.MTU_4096)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(myPsn)
                .maxRdAtomic(16));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        a.close();
        b.close();
        fabric.closeAll();
    }

    private void await(int n) {
        int got = 0;
        long spins = 0;
        while (got < n) {
            int k = a.cq.poll(wcs, n - got);
            for (int i = 0; i < k; i++) {
                if (wcs[i].status != WcStatus.SUCCESS) {
                    throw new IllegalStateException("completion " + wcs[i].status + " on " + a.qp.debugState());
                }
            }
            got += k;
            if (k == 0 && ++spins > 200_000_000L) {
                throw new IllegalStateException("no completion: " + a.qp.debugState());
            }
            if (k == 0) {
                Thread.onSpinWait();
            }
        }
    }

    private long one(SendWr wr) {
        wr.wrId = ++wrId;
        a.qp.postSend(wr);
        await(1);
        return wcs[0].wrId;
    }

    private long pipelined(SendWr wr) {
        for (int i = 0; i < DEPTH; i++) {
            wr.wrId = ++wrId;
            a.qp.postSend(wr);
        }
        await(DEPTH);
        return wrId;
    }

    @Benchmark
    public long writeLatency() {
        return one(write);
    }

    @Benchmark
    public long readLatency() {
        return one(read);
    }

    /** FETCH_ADD (8 bytes; {@code size} does not apply, so only size=64 is meaningful). */
    @Benchmark
    public long faaLatency() {
        return one(faa);
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH)
    public long writePipelined16() {
        return pipelined(write);
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH)
    public long readPipelined16() {
        return pipelined(read);
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH)
    public long faaPipelined16() {
        return pipelined(faa);
    }
}
