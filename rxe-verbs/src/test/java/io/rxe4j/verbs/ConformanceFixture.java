package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.spi.Transport;
import io.rxe4j.core.verbs.Access;
import io.rxe4j.core.verbs.Mtu;
import io.rxe4j.core.verbs.QpAttr;
import io.rxe4j.core.verbs.QpState;
import io.rxe4j.core.verbs.Sge;
import io.rxe4j.core.verbs.WorkCompletion;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.udp.UdpTransport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * Shared fixture of the verbs conformance suites: two devices on one network (the in-JVM fabric,
 * each device on its own loop, or real UDP on 127.0.0.1 with ephemeral ports), opened once per
 * test class; each test connects fresh PDs, CQs, MRs and RC QPs on them, which are closed after
 * the test in reverse order of creation.
 *
 * <p>Synchronisation is only ever a bounded poll of a CQ (or of a QP state / device counter) with
 * a real-time deadline, never a sleep. Data is seeded ({@link SplittableRandom}), so every run
 * moves the same bytes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ConformanceFixture {
    /** Bound on every wait for a completion or a state. */
    static final Duration WAIT = Duration.ofSeconds(20);
    /** Every remote right plus LOCAL_WRITE. */
    static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    /** Size of each side's main MR: [0, HALF) is the source/target area, [HALF, MR_BYTES) the sink. */
    static final int MR_BYTES = 128 * 1024;
    static final int HALF = MR_BYTES / 2;

    /** The network a suite runs over. */
    interface Net extends AutoCloseable {
        /** @return a new, unstarted endpoint with its own loop */
        Transport newTransport();

        @Override
        void close();
    }

    /** The in-JVM fabric; every endpoint runs on its own event loop. */
    static Net inJvm() {
        InJvmFabric fabric = new InJvmFabric();
        return new Net() {
            @Override
            public Transport newTransport() {
                return fabric.newTransport(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            }

            @Override
            public void close() {
                fabric.closeAll();
            }
        };
    }

    /** Real UDP sockets on the loopback address with ephemeral ports. */
    static Net udp() {
        return new Net() {
            @Override
            public Transport newTransport() {
                return UdpTransport.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            }

            @Override
            public void close() {}
        };
    }

    /** @return the network this concrete class runs over */
    abstract Net createNet();

    Net net;
    RecordingTransport recA;
    RecordingTransport recB;
    RdmaDevice devA;
    RdmaDevice devB;
    private final Deque<AutoCloseable> toClose = new ArrayDeque<>();

    @BeforeAll
    void openDevices() {
        net = createNet();
        recA = new RecordingTransport(net.newTransport());
        devA = RdmaDevice.open(recA);
        recB = new RecordingTransport(net.newTransport());
        devB = RdmaDevice.open(recB);
    }

    @AfterAll
    void closeDevices() {
        try {
            if (devA != null) {
                devA.close();
            }
            if (devB != null) {
                devB.close();
            }
        } finally {
            net.close();
        }
    }

    @AfterEach
    void closeResources() throws Exception {
        recA.stop();
        recB.stop();
        Exception first = null;
        while (!toClose.isEmpty()) {
            try {
                toClose.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Registers {@code c} to be closed after the test (last registered, first closed). @return c */
    <T extends AutoCloseable> T closeLater(T c) {
        toClose.push(c);
        return c;
    }

    // ------------------------------------------------------------------------------ connection

    /** Connection options; the defaults connect two QPs with every right at MTU 1024. */
    static final class Cfg {
        Mtu mtu = Mtu.MTU_1024;
        int qpAccessA = ALL;
        int qpAccessB = ALL;
        int mrAccess = ALL;
        int timeout = 14;
        int retryCnt = 7;
        int rnrRetry = 7;
        int minRnrTimer = 1;
        int psnA = 0x1000;
        int psnB = 0x2000;
        int maxRdAtomic = 16;
        int maxDestRdAtomic = 16;
        boolean sqSigAll;

        Cfg mtu(Mtu m) { mtu = m; return this; }
        Cfg qpAccessB(int f) { qpAccessB = f; return this; }
        Cfg mrAccess(int f) { mrAccess = f; return this; }
        Cfg timeout(int t) { timeout = t; return this; }
        Cfg rnrRetry(int r) { rnrRetry = r; return this; }
        Cfg minRnrTimer(int c) { minRnrTimer = c; return this; }
        Cfg psnA(int p) { psnA = p; return this; }
        Cfg psnB(int p) { psnB = p; return this; }
        Cfg sqSigAll(boolean on) { sqSigAll = on; return this; }
        Cfg maxRdAtomic(int n) { maxRdAtomic = n; return this; }
    }

    /** One end: a PD, separate send and receive CQs, an RC QP and an MR filled with seeded bytes. */
    final class Side {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue scq;
        final CompletionQueue rcq;
        final QueuePair qp;
        final MemoryRegion mr;

        Side(RdmaDevice dev, Cfg cfg, long seed) {
            this.dev = dev;
            this.pd = closeLater(dev.allocPd());
            this.scq = closeLater(dev.createCq(1024));
            this.rcq = closeLater(dev.createCq(1024));
            QpInitAttr rc = QpInitAttr.rc(scq, rcq); // 256-deep queues, 4 SGEs, 64 bytes inline
            this.qp = closeLater(pd.createQp(new QpInitAttr(scq, rcq, rc.caps(), rc.qpType(), cfg.sqSigAll)));
            this.mr = closeLater(pd.allocMr(MR_BYTES, cfg.mrAccess));
            fill(mr.segment(), 0, MR_BYTES, seed);
        }

        /** A side whose QP lives in an existing PD and whose main MR is a shared one (several QPs, one MR). */
        Side(RdmaDevice dev, Cfg cfg, ProtectionDomain pd, MemoryRegion mr) {
            this.dev = dev;
            this.pd = pd;
            this.scq = closeLater(dev.createCq(1024));
            this.rcq = closeLater(dev.createCq(1024));
            QpInitAttr rc = QpInitAttr.rc(scq, rcq);
            this.qp = closeLater(pd.createQp(new QpInitAttr(scq, rcq, rc.caps(), rc.qpType(), cfg.sqSigAll)));
            this.mr = mr;
        }

        /** @return an extra MR of this side's PD, seeded, closed after the test */
        MemoryRegion extraMr(int bytes, int access, long seed) {
            MemoryRegion m = closeLater(pd.allocMr(bytes, access));
            fill(m.segment(), 0, bytes, seed);
            return m;
        }

        /** @return an SGE over {@code [off, off + len)} of the main MR */
        Sge sge(long off, int len) {
            return new Sge(mr.addr() + off, len, mr.lkey());
        }

        /** @return the virtual address of offset {@code off} in the main MR */
        long va(long off) {
            return mr.addr() + off;
        }

        WorkCompletion nextSend() {
            return next(scq);
        }

        WorkCompletion nextRecv() {
            return next(rcq);
        }

        MemorySegment mem() {
            return mr.segment();
        }

        long word(long off) {
            return mr.segment().get(ValueLayout.JAVA_LONG, off);
        }

        void word(long off, long v) {
            mr.segment().set(ValueLayout.JAVA_LONG, off, v);
        }
    }

    /** Two connected sides: {@code a} on device A, {@code b} on device B. */
    record Pair(Side a, Side b) {}

    Pair connect() {
        return connect(new Cfg());
    }

    Pair connect(Cfg cfg) {
        Side a = new Side(devA, cfg, 0xA11CE);
        Side b = new Side(devB, cfg, 0xB0B);
        bringUp(a, b, cfg.qpAccessA, cfg, cfg.psnA, cfg.psnB);
        bringUp(b, a, cfg.qpAccessB, cfg, cfg.psnB, cfg.psnA);
        return new Pair(a, b);
    }

    /** RESET → INIT → RTR → RTS with every required attribute. */
    static void bringUp(Side me, Side peer, int access, Cfg cfg, int myPsn, int peerPsn) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(access));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(cfg.mtu)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(cfg.maxDestRdAtomic)
                .minRnrTimer(cfg.minRnrTimer));
        me.qp.modify(new QpAttr().state(QpState.RTS).timeout(cfg.timeout).retryCnt(cfg.retryCnt)
                .rnrRetry(cfg.rnrRetry).sqPsn(myPsn).maxRdAtomic(cfg.maxRdAtomic));
    }

    // ------------------------------------------------------------------------------ helpers

    /** Fills {@code seg[off, off + len)} with bytes drawn from {@code seed}. */
    static void fill(MemorySegment seg, long off, int len, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            seg.set(ValueLayout.JAVA_BYTE, off + i, (byte) r.nextInt(256));
        }
    }

    /** @return a copy of the MR's bytes */
    static byte[] snapshot(MemoryRegion mr) {
        return mr.segment().toArray(ValueLayout.JAVA_BYTE);
    }

    /** @return a copy of {@code seg[off, off + len)} */
    static byte[] bytes(MemorySegment seg, long off, int len) {
        return seg.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
    }

    /** Waits (bounded) for exactly one completion on {@code cq}. */
    static WorkCompletion next(CompletionQueue cq) {
        WorkCompletion[] out = {new WorkCompletion()};
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (cq.poll(out) == 1) {
                return out[0];
            }
            cq.await(Duration.ofMillis(20).toNanos());
        }
        throw new AssertionError("no completion within " + WAIT + " on " + cq);
    }

    /** Asserts that {@code cq} holds no completion now. */
    static void assertNoCompletion(CompletionQueue cq) {
        WorkCompletion[] out = {new WorkCompletion()};
        assertThat(cq.poll(out)).as("unexpected completion %s on %s", out[0], cq).isZero();
    }

    /** Polls {@code cond} until it holds, for at most {@link #WAIT}. */
    static void await(BooleanSupplier cond, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for " + what);
            }
            LockSupport.parkNanos(50_000);
        }
    }

    /** Waits (bounded) for {@code qp} to reach {@code s}. */
    static void awaitState(QueuePair qp, QpState s) {
        await(() -> qp.state() == s, qp + " to reach " + s);
    }

    /** @return the device counter {@code name} (rxe-style, e.g. {@code rcvd_rnr_err}) */
    static long counter(RdmaDevice dev, String name) {
        Long v = dev.counters().get(name);
        if (v == null) {
            throw new AssertionError("no counter " + name + " in " + dev.counters().keySet());
        }
        return v;
    }

    /** Asserts the common fields of a completion. */
    static void assertWc(WorkCompletion wc, long wrId, io.rxe4j.core.verbs.WcStatus status,
            io.rxe4j.core.verbs.WcOpcode opcode, int byteLen, int wcFlags, QueuePair qp) {
        assertThat(wc.wrId).as("wr_id of %s", wc).isEqualTo(wrId);
        assertThat(wc.status).as("status of %s", wc).isEqualTo(status);
        assertThat(wc.opcode).as("opcode of %s", wc).isEqualTo(opcode);
        assertThat(wc.byteLen).as("byte_len of %s", wc).isEqualTo(byteLen);
        assertThat(wc.wcFlags).as("wc_flags of %s", wc).isEqualTo(wcFlags);
        assertThat(wc.qpNum).as("qp_num of %s", wc).isEqualTo(qp.qpNum());
    }
}
