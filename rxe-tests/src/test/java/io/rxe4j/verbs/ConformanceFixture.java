package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.net.fault.Direction;
import io.rxe4j.net.fault.FaultAction;
import io.rxe4j.net.fault.FaultInjectingTransport;
import io.rxe4j.net.fault.FaultSpec;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.net.udp.UdpTransport;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * Shared fixture of the verbs conformance suites: two devices on one network ({@link Net}), opened
 * once per test class; each test connects fresh PDs, CQs, MRs and RC QPs on them, which are closed
 * after the test in reverse order of creation.
 *
 * <h2>Transport permutations</h2>
 *
 * <p>One test body runs over every network, as Netty's {@code SocketTestPermutation} does: a
 * concrete class only picks the network in {@link #createNet()}.
 *
 * <ul>
 *   <li>{@link #inJvm()}: the in-JVM fabric, each device on its own event loop;
 *   <li>{@link #udp()}: real UDP sockets on 127.0.0.1 with ephemeral ports, Java NIO;
 *   <li>{@link #udpEpoll()}: the same over Netty's native epoll ({@code recvmmsg}/{@code
 *       sendmmsg}); skipped by an assumption where epoll cannot be loaded;
 *   <li>{@link #udpEpollGsoGro()}: epoll with UDP GSO on send and {@code UDP_GRO} on receive;
 *       skipped where epoll or the kernel's {@code UDP_SEGMENT} is missing;
 *   <li>{@link #faultInjecting(Net, String, long)}: every endpoint of another net wrapped in a
 *       {@link FaultInjectingTransport}, with no rule (the wrapper alone) or with seeded loss;
 *   <li>{@link #virtualTime(long)}: the in-JVM fabric with every endpoint on one {@link
 *       VirtualScheduler}, driven by the test thread (no loop thread at all).
 * </ul>
 *
 * <h2>Waiting</h2>
 *
 * <p>Every wait of a test ({@link #next}, {@link #await}, {@link #awaitState}) goes through {@link
 * Net#awaitUntil}. A real-time net polls the condition for at most {@link #WAIT} of real time,
 * blocking on the CQ's wake-up between polls when it waits for a completion, never sleeping as
 * synchronisation. The virtual-time net runs its scheduler until the condition holds, for at most
 * {@link #WAIT} of virtual time, so timers (ACK timeout, RNR timer) cost no real time. Between two
 * waits nothing runs there, and the calls a test makes into the devices (modify, query, close) run
 * inline, because the test thread owns the scheduler: JUnit runs {@code @BeforeAll} (where the
 * net, and so the scheduler, is created; {@link TestInstance.Lifecycle#PER_CLASS}) and the tests
 * of a class on one thread, and every virtual wait checks that it is that thread.
 *
 * <h2>Loss</h2>
 *
 * <p>On a {@link Net#lossy() lossy} net, tests annotated {@link NotOnLossyNet} are skipped (a JUnit
 * assumption that names the reason), and connections use the net's shorter {@link Net#qpTimeout()}
 * unless the test sets its own, so that a lost packet is resent soon. Drops are seeded: the seed
 * is the class's default or the system property {@value #SEED_PROPERTY}.
 *
 * <p>Data is seeded ({@link SplittableRandom}), so every run moves the same bytes. When a test
 * fails, a description of the net (seed, faults injected so far, virtual clock), the state, debug
 * state, error reason and counters of every QP the test created, and both devices' counters are
 * attached to the failure as a suppressed exception.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ConformanceFixture {
    /** Bound on every wait for a completion or a state (real time, or virtual time on a virtual net). */
    static final Duration WAIT = Duration.ofSeconds(20);
    /** Every remote right plus LOCAL_WRITE. */
    static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    /** Size of each side's main MR: [0, HALF) is the source/target area, [HALF, MR_BYTES) the sink. */
    static final int MR_BYTES = 128 * 1024;
    static final int HALF = MR_BYTES / 2;
    /** Local ACK timeout exponent of a connection on a loss-free net: 4.096 us * 2^14 = 67 ms. */
    static final int DEFAULT_TIMEOUT = 14;
    /** Local ACK timeout exponent on a lossy net: 4.096 us * 2^12 = 16.8 ms until a lost packet is resent. */
    static final int LOSSY_TIMEOUT = 12;
    /** System property that overrides the seed of a fault-injecting net. */
    static final String SEED_PROPERTY = "rxe4j.conformance.seed";

    /**
     * Marks a test whose assertions cannot hold when packets are lost; it is skipped on a {@link
     * Net#lossy() lossy} net, with {@link #value()} as the reason.
     */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @interface NotOnLossyNet {
        /** @return why loss changes what the test asserts */
        String value();
    }

    /** The network a suite runs over. */
    interface Net extends AutoCloseable {
        /** @return a new, unstarted endpoint */
        Transport newTransport();

        /**
         * Lets the network run until {@code cond} holds, for at most {@link ConformanceFixture#WAIT}
         * (of real time, or of virtual time on a virtual-time net).
         *
         * @param cond the condition; evaluated on the calling thread
         * @param cq the CQ whose completions {@code cond} waits for (a real-time net blocks on its
         *     wake-up between two polls), or null
         * @return whether {@code cond} held
         */
        boolean awaitUntil(BooleanSupplier cond, CompletionQueue cq);

        /** @return whether this net loses packets */
        default boolean lossy() {
            return false;
        }

        /** @return the local ACK timeout exponent of connections whose test sets none */
        default int qpTimeout() {
            return lossy() ? LOSSY_TIMEOUT : DEFAULT_TIMEOUT;
        }

        /**
         * Called before each test, on the test's thread.
         *
         * @throws IllegalStateException if the test cannot run on this thread
         */
        default void beforeTest() {}

        /** Called after each test, once the test's resources are closed. */
        default void afterTest() {}

        /** @return one line for failure reports: what the net is, and its state */
        String describe();

        @Override
        void close();
    }

    /**
     * The real-time wait: polls {@code cond} until it holds, for at most {@link #WAIT}, blocking on
     * {@code cq}'s wake-up (or parking 50 us when there is no CQ) between polls.
     */
    static boolean awaitRealTime(BooleanSupplier cond, CompletionQueue cq) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            if (cq != null) {
                cq.await(Math.min(left, Duration.ofMillis(20).toNanos()));
            } else {
                LockSupport.parkNanos(Math.min(left, 50_000));
            }
        }
        return true;
    }

    /** A net whose endpoints run on loop threads of their own, in real time. */
    abstract static class RealTimeNet implements Net {
        @Override
        public boolean awaitUntil(BooleanSupplier cond, CompletionQueue cq) {
            return awaitRealTime(cond, cq);
        }

        @Override
        public void close() {}
    }

    static InetSocketAddress loopback(int port) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    /** The in-JVM fabric; every endpoint runs on its own event loop. */
    static Net inJvm() {
        InJvmFabric fabric = new InJvmFabric();
        return new RealTimeNet() {
            @Override
            public Transport newTransport() {
                return fabric.newTransport(loopback(0));
            }

            @Override
            public String describe() {
                return "in-JVM fabric, one event loop per endpoint";
            }

            @Override
            public void close() {
                fabric.closeAll();
            }
        };
    }

    /** The in-JVM fabric with {@code loops} event loops per endpoint (multi-core devices). */
    static Net inJvmMultiLoop(int loops) {
        InJvmFabric fabric = new InJvmFabric();
        return new RealTimeNet() {
            @Override
            public Transport newTransport() {
                return fabric.newTransport(loopback(0), loops);
            }

            @Override
            public String describe() {
                return "in-JVM fabric, " + loops + " event loops per endpoint";
            }

            @Override
            public void close() {
                fabric.closeAll();
            }
        };
    }

    /** UDP on the loopback address, {@code loops} {@code SO_REUSEPORT} sockets and event loops per endpoint. */
    static Net udpMultiLoop(UdpTransport.Io io, int loops) {
        List<Transport> made = new ArrayList<>();
        return new RealTimeNet() {
            @Override
            public Transport newTransport() {
                Transport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).io(io).loops(loops)
                        .bindLoops();
                made.add(t);
                return t;
            }

            @Override
            public String describe() {
                StringBuilder sb = new StringBuilder("UDP on 127.0.0.1, " + io + ", " + loops + " loops per endpoint");
                for (Transport t : made) {
                    sb.append("; ").append(t.localAddress());
                    for (Transport lane : t.lanes()) {
                        UdpTransport u = (UdpTransport) lane;
                        sb.append(" [sent ").append(u.packetsSent()).append(" received ").append(u.packetsReceived())
                                .append(']');
                    }
                }
                return sb.toString();
            }
        };
    }

    /** Real UDP sockets on the loopback address with ephemeral ports, each with its own loop. */
    static final class UdpNet extends RealTimeNet {
        private final String name;
        private final UnaryOperator<UdpTransport.Builder> options;
        /** Every transport bound so far (test thread only). */
        final List<UdpTransport> transports = new ArrayList<>();

        UdpNet(String name, UnaryOperator<UdpTransport.Builder> options) {
            this.name = name;
            this.options = options;
        }

        @Override
        public Transport newTransport() {
            UdpTransport t = options.apply(UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)).bind();
            transports.add(t);
            return t;
        }

        /** @return the GSO sends of every transport so far (each one datagram train of several packets) */
        long gsoSends() {
            return transports.stream().mapToLong(UdpTransport::gsoSends).sum();
        }

        @Override
        public String describe() {
            StringBuilder sb = new StringBuilder("UDP on 127.0.0.1, ").append(name);
            for (UdpTransport t : transports) {
                sb.append("; ").append(t.localAddress()).append(" io ").append(t.io()).append(" sent ")
                        .append(t.packetsSent()).append(" received ").append(t.packetsReceived());
                if (t.gso()) {
                    sb.append(" GSO sends ").append(t.gsoSends()).append(" segments ").append(t.gsoSegments());
                }
            }
            return sb.toString();
        }
    }

    /** Real UDP sockets on the loopback address with ephemeral ports, Java NIO. */
    static UdpNet udp() {
        return new UdpNet("NIO", b -> b.io(UdpTransport.Io.NIO));
    }

    /** UDP over Netty's native epoll; an assumption fails (naming the cause) where epoll cannot be loaded. */
    static UdpNet udpEpoll() {
        assumeEpoll("UDP epoll");
        return new UdpNet("epoll without GSO/GRO", b -> b.io(UdpTransport.Io.EPOLL).gso(false).gro(false));
    }

    /** UDP over epoll with GSO and GRO; an assumption fails (naming the cause) where they are unavailable. */
    static UdpNet udpEpollGsoGro() {
        assumeEpoll("UDP epoll GSO/GRO");
        Assumptions.assumeTrue(UdpTransport.isGsoSupported(), "the kernel does not support UDP GSO"
                + " (UDP_SEGMENT, Linux 4.18+): the UDP epoll GSO/GRO permutation is skipped");
        return new UdpNet("epoll with GSO and GRO", b -> b.io(UdpTransport.Io.EPOLL).gso(true).gro(true));
    }

    /** UDP over Netty's io_uring; an assumption fails (naming the cause) where io_uring cannot be used. */
    static UdpNet udpIoUring() {
        assumeIoUring("UDP io_uring");
        return new UdpNet("io_uring without GSO", b -> b.io(UdpTransport.Io.IO_URING).gso(false));
    }

    /** UDP over io_uring with GSO (UDP_SEGMENT through io_uring's sendmsg); skipped where unavailable. */
    static UdpNet udpIoUringGso() {
        assumeIoUring("UDP io_uring GSO");
        Assumptions.assumeTrue(UdpTransport.isGsoSupported(UdpTransport.Io.IO_URING),
                "the kernel does not support UDP GSO (UDP_SEGMENT): the io_uring GSO permutation is skipped");
        return new UdpNet("io_uring with GSO", b -> b.io(UdpTransport.Io.IO_URING).gso(true));
    }

    private static void assumeIoUring(String permutation) {
        try {
            UdpTransport.ensureIoUring();
        } catch (IllegalStateException e) {
            Assumptions.abort("the " + permutation + " permutation is skipped: " + e.getMessage());
        }
    }

    private static void assumeEpoll(String permutation) {
        try {
            UdpTransport.ensureEpoll();
        } catch (IllegalStateException e) {
            Assumptions.abort("the " + permutation + " permutation is skipped: " + e.getMessage());
        }
    }

    /** @return the seed of a fault-injecting net: {@value #SEED_PROPERTY} if set, else {@code fallback} */
    static long seed(long fallback) {
        return Long.getLong(SEED_PROPERTY, fallback);
    }

    /**
     * Every endpoint of {@code inner} wrapped in a {@link FaultInjectingTransport} with the rules of
     * {@code spec} ({@link FaultSpec}; empty: no rule). The n-th endpoint (0-based; device A is the
     * first, device B the second) draws from seed {@code seed + n}.
     */
    static Net faultInjecting(Net inner, String spec, long seed) {
        boolean drops = FaultSpec.parse(spec).stream().anyMatch(r -> r.action() == FaultAction.DROP);
        List<FaultInjectingTransport> made = new ArrayList<>();
        return new Net() {
            @Override
            public Transport newTransport() {
                FaultInjectingTransport t = new FaultInjectingTransport(inner.newTransport(), seed + made.size(),
                        FaultSpec.parse(spec));
                made.add(t);
                return t;
            }

            @Override
            public boolean awaitUntil(BooleanSupplier cond, CompletionQueue cq) {
                return inner.awaitUntil(cond, cq);
            }

            @Override
            public boolean lossy() {
                return drops || inner.lossy();
            }

            @Override
            public void beforeTest() {
                inner.beforeTest();
            }

            @Override
            public void afterTest() {
                inner.afterTest();
            }

            @Override
            public String describe() {
                StringBuilder sb = new StringBuilder("fault-injecting transport (")
                        .append(spec.isEmpty() ? "no faults" : spec).append(", seed ").append(seed).append(" + n");
                for (int i = 0; i < made.size(); i++) {
                    FaultInjectingTransport t = made.get(i);
                    sb.append("; ").append(t.localAddress()).append(" seed ").append(seed + i).append(": dropped out ")
                            .append(t.count(Direction.OUTBOUND, FaultAction.DROP)).append(" in ")
                            .append(t.count(Direction.INBOUND, FaultAction.DROP)).append(", passed out ")
                            .append(t.passed(Direction.OUTBOUND)).append(" in ").append(t.passed(Direction.INBOUND));
                }
                return sb.append(") over ").append(inner.describe()).toString();
            }

            @Override
            public void close() {
                inner.close();
            }
        };
    }

    /**
     * The in-JVM fabric with every endpoint on one {@link VirtualScheduler}, created on the calling
     * thread (which so becomes its owner: call this from {@code @BeforeAll}); every packet takes
     * {@code latencyNanos} of virtual time from sender to receiver.
     */
    static Net virtualTime(long latencyNanos) {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(latencyNanos).build();
        return new Net() {
            @Override
            public Transport newTransport() {
                return fabric.newTransport(loopback(0));
            }

            private void checkOwner() {
                if (!vs.inLoop()) {
                    // another thread would wait forever in callOnLoop (modify, query, close) for a task
                    // that only runs inside a wait of the owner
                    throw new IllegalStateException(Thread.currentThread() + " does not own " + vs
                            + ": only the thread that created the net (the @BeforeAll thread) may use it");
                }
            }

            @Override
            public boolean awaitUntil(BooleanSupplier cond, CompletionQueue cq) {
                checkOwner();
                return vs.runUntil(cond, WAIT.toNanos());
            }

            @Override
            public void beforeTest() {
                checkOwner();
            }

            @Override
            public void afterTest() {
                // what the test left behind (timers of closed QPs, packets in flight) runs now, not
                // in the next test, so that an exception it throws is charged to this test
                vs.runUntilIdle();
            }

            @Override
            public String describe() {
                return "in-JVM fabric on one virtual-time scheduler, one-way latency " + latencyNanos + " ns, "
                        + vs + ", " + vs.tasksRun() + " tasks run; fabric delivered " + fabric.delivered()
                        + ", dropped (no endpoint) " + fabric.droppedNoEndpoint();
            }

            @Override
            public void close() {
                fabric.closeAll();
                vs.shutdown();
            }
        };
    }

    /** @return the network this concrete class runs over (called once, by {@code @BeforeAll}) */
    abstract Net createNet();

    Net net;
    RecordingTransport recA;
    RecordingTransport recB;
    RdmaDevice devA;
    RdmaDevice devB;
    private final Deque<AutoCloseable> toClose = new ArrayDeque<>();
    /** The QPs of the running test, for failure reports. */
    private final List<QueuePair> testQps = new ArrayList<>();

    /** Attaches {@link #diagnostics()} to every failure (not to a skip) of a test. */
    @RegisterExtension
    final TestExecutionExceptionHandler attachDiagnostics = (context, failure) -> {
        if (!(failure instanceof TestAbortedException) && net != null) {
            failure.addSuppressed(new Diagnostics(diagnostics()));
        }
        throw failure;
    };

    /** A failure report; no stack trace of its own. */
    static final class Diagnostics extends Exception {
        Diagnostics(String text) {
            super(text, null, false, false);
        }
    }

    /** Why this permutation cannot run here (an assumption of {@link #createNet()} failed), or null. */
    private TestAbortedException unavailable;

    @BeforeAll
    void openDevices() {
        try {
            net = createNet();
        } catch (TestAbortedException e) {
            // reported by every test (a class-level abort would leave no trace in surefire's reports)
            unavailable = e;
            return;
        }
        recA = new RecordingTransport(net.newTransport());
        devA = RdmaDevice.open(recA);
        recB = new RecordingTransport(net.newTransport());
        devB = RdmaDevice.open(recB);
    }

    @AfterAll
    void closeDevices() {
        if (net == null) {
            return; // the permutation was skipped by an assumption
        }
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

    /** Skips the test where the permutation is unavailable, or on a lossy net when it is {@link NotOnLossyNet}. */
    @BeforeEach
    void skipWhatThePermutationCannotRun(TestInfo info) {
        if (unavailable != null) {
            throw new TestAbortedException(unavailable.getMessage());
        }
        net.beforeTest();
        NotOnLossyNet reason = info.getTestMethod().map(m -> m.getAnnotation(NotOnLossyNet.class)).orElse(null);
        if (reason != null) {
            Assumptions.assumeFalse(net.lossy(), () -> "skipped on a lossy net (" + net.describe() + "): "
                    + reason.value());
        }
    }

    @AfterEach
    void closeResources() throws Exception {
        if (net == null) {
            return; // skipped: nothing was opened
        }
        recA.stop();
        recB.stop();
        testQps.clear();
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
        net.afterTest();
        if (first != null) {
            throw first;
        }
    }

    /** Registers {@code c} to be closed after the test (last registered, first closed). @return c */
    <T extends AutoCloseable> T closeLater(T c) {
        toClose.push(c);
        return c;
    }

    /** @return the net, the test's QPs (state, debug state, error reason, counters) and the device counters */
    String diagnostics() {
        StringBuilder sb = new StringBuilder("net: ").append(net.describe());
        for (QueuePair qp : testQps) {
            sb.append("\n  ").append(qp).append(" in ").append(qp.state());
            sb.append("\n    debugState: ").append(quietly(qp::debugState));
            sb.append("\n    errorReason: ").append(quietly(qp::errorReason));
            sb.append("\n    counters: ").append(quietly(qp::counters));
        }
        for (RdmaDevice d : new RdmaDevice[] {devA, devB}) {
            sb.append("\n  ").append(d).append(" counters: ").append(quietly(d::counters));
        }
        return sb.toString();
    }

    private static Object quietly(java.util.function.Supplier<?> s) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return "(" + e + ")";
        }
    }

    // ------------------------------------------------------------------------------ connection

    /**
     * Connection options; the defaults connect two QPs with every right at MTU 1024, with the net's
     * local ACK timeout.
     */
    static final class Cfg {
        Mtu mtu = Mtu.MTU_1024;
        int qpAccessA = ALL;
        int qpAccessB = ALL;
        int mrAccess = ALL;
        /** Local ACK timeout exponent; -1: the net's {@link Net#qpTimeout()}. */
        int timeout = -1;
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
            testQps.add(qp);
            this.mr = closeLater(pd.allocMr(MR_BYTES, cfg.mrAccess));
            fill(mr.segment(), 0, MR_BYTES, seed);
        }

        /** A side made of given parts (an SRQ-attached QP, say). */
        Side(RdmaDevice dev, Cfg cfg, ProtectionDomain pd, MemoryRegion mr, CompletionQueue scq, CompletionQueue rcq,
                QueuePair qp) {
            this.dev = dev;
            this.pd = pd;
            this.scq = scq;
            this.rcq = rcq;
            this.qp = qp;
            testQps.add(qp);
            this.mr = mr;
        }

        /** A side whose QP lives in an existing PD and whose main MR is a shared one (several QPs, one MR). */
        Side(RdmaDevice dev, Cfg cfg, ProtectionDomain pd, MemoryRegion mr) {
            this.dev = dev;
            this.pd = pd;
            this.scq = closeLater(dev.createCq(1024));
            this.rcq = closeLater(dev.createCq(1024));
            QpInitAttr rc = QpInitAttr.rc(scq, rcq);
            this.qp = closeLater(pd.createQp(new QpInitAttr(scq, rcq, rc.caps(), rc.qpType(), cfg.sqSigAll)));
            testQps.add(qp);
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
    void bringUp(Side me, Side peer, int access, Cfg cfg, int myPsn, int peerPsn) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(access));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(cfg.mtu)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(cfg.maxDestRdAtomic)
                .minRnrTimer(cfg.minRnrTimer));
        int timeout = cfg.timeout >= 0 ? cfg.timeout : net.qpTimeout();
        me.qp.modify(new QpAttr().state(QpState.RTS).timeout(timeout).retryCnt(cfg.retryCnt)
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

    /** Waits (bounded, through the net) for exactly one completion on {@code cq}. */
    WorkCompletion next(CompletionQueue cq) {
        WorkCompletion[] out = {new WorkCompletion()};
        if (!net.awaitUntil(() -> cq.poll(out) == 1, cq)) {
            throw new AssertionError("no completion within " + WAIT + " on " + cq);
        }
        return out[0];
    }

    /** Asserts that {@code cq} holds no completion now. */
    static void assertNoCompletion(CompletionQueue cq) {
        WorkCompletion[] out = {new WorkCompletion()};
        assertThat(cq.poll(out)).as("unexpected completion %s on %s", out[0], cq).isZero();
    }

    /** Lets the net run until {@code cond} holds, for at most {@link #WAIT}. */
    void await(BooleanSupplier cond, String what) {
        if (!net.awaitUntil(cond, null)) {
            throw new AssertionError("timed out after " + WAIT + " waiting for " + what);
        }
    }

    /** Waits (bounded) for {@code qp} to reach {@code s}. */
    void awaitState(QueuePair qp, QpState s) {
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
    static void assertWc(WorkCompletion wc, long wrId, io.rxe4j.verbs.WcStatus status,
            io.rxe4j.verbs.WcOpcode opcode, int byteLen, int wcFlags, QueuePair qp) {
        assertThat(wc.wrId).as("wr_id of %s", wc).isEqualTo(wrId);
        assertThat(wc.status).as("status of %s", wc).isEqualTo(status);
        assertThat(wc.opcode).as("opcode of %s", wc).isEqualTo(opcode);
        assertThat(wc.byteLen).as("byte_len of %s", wc).isEqualTo(byteLen);
        assertThat(wc.wcFlags).as("wc_flags of %s", wc).isEqualTo(wcFlags);
        assertThat(wc.qpNum).as("qp_num of %s", wc).isEqualTo(qp.qpNum());
    }
}
