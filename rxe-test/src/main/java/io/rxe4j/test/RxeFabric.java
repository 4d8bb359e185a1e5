package io.rxe4j.test;

import io.rxe4j.net.fault.FaultInjectingTransport;
import io.rxe4j.net.fault.FaultRule;
import io.rxe4j.net.fault.FaultSpec;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

/**
 * A set of rxe4j devices for a test, on one {@link RxeTransport}: device {@code i} is at
 * {@code 10.0.0.(i+1):4791} on the in-JVM fabric, or on {@code 127.0.0.1} and an ephemeral port
 * over UDP. It connects RC pairs through the connection manager ({@link #connect}), switches faults
 * on and off ({@link #faults}), waits for futures, conditions and completions on whichever clock the
 * devices run on ({@link #await}, {@link #nextCompletion}: virtual time moves only while it waits),
 * and on {@link #close()} closes what it made and reports what the test left open ({@link #leaks()}).
 *
 * <p>Made by the {@link RxeTest} extension for each test, or by {@link #builder()} in code:
 *
 * <pre>{@code
 * try (RxeFabric fabric = RxeFabric.builder().faults("drop=0.02").seed(7).build()) {
 *     ConnectedPair pair = fabric.connect();
 *     ...
 * }
 * }</pre>
 *
 * <p>Threading: call it from the test's thread. On {@link RxeTransport#VIRTUAL} that thread runs
 * the devices' loop while it waits; the devices' callbacks (completion handlers, future callbacks)
 * run on it too.
 */
public final class RxeFabric implements AutoCloseable {
    /** How long {@link #await} waits unless told: 30 s (of virtual time on {@link RxeTransport#VIRTUAL}). */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    private final Builder config;
    private final long seed;
    private final VirtualScheduler vs;
    private final InJvmFabric fabric;
    private final TrackingAllocator allocator = new TrackingAllocator();
    private final List<RdmaDevice> devices = new ArrayList<>();
    private final List<FaultInjectingTransport> faulty = new ArrayList<>();
    private final List<ConnectedPair> pairs = new ArrayList<>();
    private final Map<RdmaDevice, RdmaListener> listeners = new IdentityHashMap<>();
    private final Map<RdmaDevice, ProtectionDomain> pds = new IdentityHashMap<>();
    private final Set<Object> own = Collections.newSetFromMap(new IdentityHashMap<>());
    private String faultSpec;
    private boolean closed;
    /** The virtual time when {@link #close()} began (the teardown's own time is not the test's), or -1. */
    private long endedAt = -1;

    private RxeFabric(Builder b) {
        this.config = b.copy();
        this.seed = b.seed != 0 ? b.seed : new SecureRandom().nextLong() | 1;
        this.faultSpec = b.faults;
        List<FaultRule> rules = FaultSpec.parse(b.faults); // a bad spec fails before anything opens
        if (!rules.isEmpty() && b.loops > 1) {
            throw new IllegalArgumentException("faults need devices of one loop (loops=1), got loops=" + b.loops);
        }
        this.vs = b.transport == RxeTransport.VIRTUAL ? new VirtualScheduler() : null;
        this.fabric = switch (b.transport) {
            case VIRTUAL -> InJvmFabric.builder().sharedScheduler(vs).latencyNanos(b.latencyMicros * 1000)
                    .allocator(allocator).build();
            case IN_JVM -> InJvmFabric.builder().latencyNanos(b.latencyMicros * 1000).allocator(allocator).build();
            case UDP -> null;
        };
        try {
            for (int i = 0; i < b.devices; i++) {
                Transport t = transport(i, b);
                if (b.loops == 1) {
                    FaultInjectingTransport f = new FaultInjectingTransport(t, seed * 31 + i, rules);
                    faulty.add(f);
                    t = f;
                }
                DeviceConfig dc = DeviceConfig.defaults().withSeed(seed + i);
                if (b.tidRdma) {
                    dc = dc.withTidRdma();
                }
                devices.add(RdmaDevice.open(t, dc));
            }
        } catch (RuntimeException e) {
            closeQuietly();
            throw e;
        }
    }

    private Transport transport(int i, Builder b) {
        if (fabric != null) {
            InetSocketAddress at = new InetSocketAddress("10.0.0." + (i + 1), 4791);
            return b.loops == 1 ? fabric.newTransport(at) : fabric.newTransport(at, b.loops);
        }
        UdpTransport.Builder u = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).allocator(allocator);
        return b.loops == 1 ? u.bind() : u.loops(b.loops).bindLoops();
    }

    /** @return a builder with the defaults of {@link RxeTest} */
    public static Builder builder() {
        return new Builder();
    }

    static Builder builder(RxeTest a) {
        return new Builder().transport(a.transport()).devices(a.devices()).mtu(a.mtu()).faults(a.faults()).seed(a.seed())
                .tidRdma(a.tidRdma()).loops(a.loops()).latencyMicros(a.latencyMicros()).leakCheck(a.leakCheck());
    }

    // ------------------------------------------------------------------ the devices

    /** @return device {@code i} (0-based) */
    public RdmaDevice device(int i) {
        if (i < 0 || i >= devices.size()) {
            throw new IllegalArgumentException("device index must be 0.." + (devices.size() - 1) + ", got " + i);
        }
        return devices.get(i);
    }

    /** @return the devices, in order */
    public List<RdmaDevice> devices() {
        return List.copyOf(devices);
    }

    /** @return the seed of the devices and the faults (drawn when none was given): replay with it */
    public long seed() {
        return seed;
    }

    /** @return what the devices run on */
    public RxeTransport transport() {
        return config.transport;
    }

    /** @return the virtual clock's loop on {@link RxeTransport#VIRTUAL}, else null (for tests that drive it themselves) */
    public VirtualScheduler virtualScheduler() {
        return vs;
    }

    /** @return the devices' clock, nanoseconds: virtual time on {@link RxeTransport#VIRTUAL}, else {@link System#nanoTime()} */
    public long nanoTime() {
        return vs != null ? vs.nanoTime() : System.nanoTime();
    }

    // ------------------------------------------------------------------ connections

    /** Connects device 0 (client) to device 1 (server); see {@link #connect(int, int, ConnectionParams)}. */
    public ConnectedPair connect() {
        return connect(0, devices.size() > 1 ? 1 : 0);
    }

    /** Connects {@code client} to {@code server} with the defaults and the fabric's path MTU. */
    public ConnectedPair connect(int client, int server) {
        return connect(client, server, ConnectionParams.defaults());
    }

    /**
     * Connects an RC QP of device {@code client} to one of device {@code server} through the
     * connection manager (IB CM on QP1, as {@code RdmaConnection.connect} and {@code
     * RdmaListener.accept} do), each side's QP in its device's {@link #pd(int)} with a CQ of its
     * own for sends and receives (2 × max send WRs + max receive WRs entries). The server device listens on a free rdma_cm port, kept for later
     * pairs. The fabric's MTU is the path MTU unless {@code params} names one. The kit closes both
     * connections at {@link #close()}. Both indices may be the same device (a loopback pair).
     *
     * @throws AssertionError if the pair is not connected within {@link #DEFAULT_TIMEOUT}, naming the
     *     connection manager's error
     */
    public ConnectedPair connect(int client, int server, ConnectionParams params) {
        checkOpen();
        RdmaDevice cd = device(client);
        RdmaDevice sd = device(server);
        ConnectionParams p = params.pathMtu() != null ? params : params.withPathMtu(mtu(config.mtu));
        int cqe = 2 * p.caps().maxSendWr() + p.caps().maxRecvWr();
        RdmaListener l = listeners.computeIfAbsent(sd, d -> RdmaListener.listen(d, 0));
        ProtectionDomain spd = pd(server);
        CompletionQueue scq = own(sd.createCq(cqe));
        ProtectionDomain cpd = pd(client);
        CompletionQueue ccq = own(cd.createCq(cqe));
        long faultsBefore = faultsInjected();
        CompletableFuture<io.rxe4j.verbs.cm.ConnectRequest> request = l.nextRequest();
        Accepting accepting = new Accepting();
        CompletableFuture<RdmaConnection> s = request.thenCompose(r -> accepting.accept(r, spd, scq, p));
        CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(cpd, ccq, ccq, sd.address(), l.port(), p,
                qp -> { });
        try {
            RdmaConnection cc = await(c, DEFAULT_TIMEOUT, "the client's connect (device " + client + " to " + server
                    + ")");
            RdmaConnection sc = await(s, DEFAULT_TIMEOUT, "the server's accept (device " + server + ")");
            ConnectedPair pair = new ConnectedPair(new ConnectedPair.Side(cd, cpd, ccq, cc),
                    new ConnectedPair.Side(sd, spd, scq, sc));
            pairs.add(pair);
            return pair;
        } catch (AssertionError e) {
            abandon(sd, request, accepting.abandon(), c);
            long lost = faultsInjected() - faultsBefore;
            String hint = lost == 0 ? ""
                    : "; the injected faults hit " + lost + " packet(s) during the connection manager's handshake:"
                            + " connect first, then switch them on with fabric.faults(...)";
            throw new AssertionError(e.getMessage() + " (the kit closed the half-made pair" + hint + ")", e.getCause());
        }
    }

    /** The server half of a pair being made: its accept, unless the pair was abandoned first. */
    private static final class Accepting {
        private CompletableFuture<RdmaConnection> accept;
        private boolean abandoned;

        synchronized CompletableFuture<RdmaConnection> accept(io.rxe4j.verbs.cm.ConnectRequest r,
                ProtectionDomain pd, CompletionQueue cq, ConnectionParams p) {
            if (abandoned) {
                r.reject(new byte[0]);
                return CompletableFuture.failedFuture(new IllegalStateException("the pair was abandoned"));
            }
            accept = r.acceptAsync(pd, cq, cq, p);
            return accept;
        }

        /** @return the accept begun, or null: none will begin now */
        synchronized CompletableFuture<RdmaConnection> abandon() {
            abandoned = true;
            return accept;
        }
    }

    /**
     * A pair that did not come up: both halves go (a connected half is disconnected, a pending one
     * withdrawn), and the server's listener with them so that no request of it is left queued for
     * the next pair; their QPs are gone before the leak check looks.
     */
    private void abandon(RdmaDevice server, CompletableFuture<io.rxe4j.verbs.cm.ConnectRequest> request,
            CompletableFuture<RdmaConnection> accept, CompletableFuture<RdmaConnection> connect) {
        RdmaListener l = listeners.remove(server);
        if (l != null) {
            l.close();
        }
        request.cancel(false); // a request not taken yet: the listener's close rejected it
        List<CompletableFuture<RdmaConnection>> halves = new ArrayList<>(List.of(connect));
        if (accept != null) {
            halves.add(accept);
        }
        for (CompletableFuture<RdmaConnection> f : halves) {
            if (!f.cancel(false) && !f.isCompletedExceptionally()) {
                f.join().close(); // it came up: disconnected and destroyed
            }
        }
        settle();
    }

    /**
     * @return device {@code i}'s protection domain, made by the kit on first use and closed by it:
     *     {@link #connect} puts its QPs there, so that the test's MRs in it are usable by them (what
     *     the test makes in it, it closes, or the leak check names it)
     */
    public ProtectionDomain pd(int i) {
        checkOpen();
        RdmaDevice d = device(i);
        return pds.computeIfAbsent(d, x -> own(x.allocPd()));
    }

    private <T> T own(T o) {
        own.add(o);
        return o;
    }

    private static Mtu mtu(int bytes) {
        for (Mtu m : Mtu.values()) {
            if (m.bytes() == bytes) {
                return m;
            }
        }
        throw new IllegalArgumentException("MTU must be 256, 512, 1024, 2048 or 4096 bytes, got " + bytes);
    }

    // ------------------------------------------------------------------ faults

    /**
     * Replaces the faults of every device's transport with {@code spec} (a {@link FaultSpec}; blank:
     * none), from the next packet on. Packets already held or delayed still arrive.
     *
     * @throws IllegalArgumentException naming a bad key or value of {@code spec}
     * @throws IllegalStateException if the devices have more than one loop (faults need one)
     */
    public void faults(String spec) {
        for (int i = 0; i < devices.size(); i++) {
            faults(i, spec);
        }
        faultSpec = spec;
    }

    /** Replaces the faults of device {@code i}'s transport with {@code spec}; see {@link #faults(String)}. */
    public void faults(int i, String spec) {
        device(i);
        List<FaultRule> rules = FaultSpec.parse(spec);
        if (faulty.isEmpty()) {
            throw new IllegalStateException("faults need devices of one loop (loops=1); this fabric has loops="
                    + config.loops);
        }
        FaultInjectingTransport f = faulty.get(i);
        f.clearRules();
        rules.forEach(f::addRule);
        faultSpec = spec;
    }

    /** Stops injecting faults on every device. */
    public void clearFaults() {
        if (!faulty.isEmpty()) {
            faults("");
        }
    }

    /** @return the faults injected so far, all devices, both directions */
    public long faultsInjected() {
        long n = 0;
        for (FaultInjectingTransport f : faulty) {
            n += f.faults();
        }
        return n;
    }

    // ------------------------------------------------------------------ waiting, on either clock

    /**
     * Waits up to {@link #DEFAULT_TIMEOUT} for {@code f}, named in a timeout by the caller's file and
     * line; see {@link #await(CompletableFuture, Duration, String)}. A future of {@code
     * QueuePair.submit} completes only when its CQ is polled: wait with {@code await(() -> {
     * cq.pollFutures(); return f.isDone(); }, what)}, or use {@link #execute}.
     */
    public <T> T await(CompletableFuture<T> f) {
        return await(f, DEFAULT_TIMEOUT, "the future awaited at " + caller());
    }

    /**
     * Waits until {@code f} completes and returns its value: on {@link RxeTransport#VIRTUAL} by
     * running the devices' loop (virtual time moves to the next timer as soon as nothing else is to
     * do), otherwise by polling on the real clock.
     *
     * @param timeout at most this long on the devices' clock
     * @param what what is waited for, for the failure message
     * @throws AssertionError naming {@code what} and the timeout if {@code f} did not complete in
     *     time, or naming its exception (the cause) if it failed
     */
    public <T> T await(CompletableFuture<T> f, Duration timeout, String what) {
        await(f::isDone, timeout, what);
        try {
            return f.get();
        } catch (ExecutionException | CompletionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new AssertionError(what + " failed: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(what + ": interrupted", e);
        } catch (java.util.concurrent.CancellationException e) {
            throw new AssertionError(what + " was cancelled", e);
        }
    }

    /**
     * Waits up to {@link #DEFAULT_TIMEOUT} until {@code condition} holds; see {@link
     * #await(BooleanSupplier, Duration, String)}.
     */
    public void await(BooleanSupplier condition, String what) {
        await(condition, DEFAULT_TIMEOUT, what);
    }

    /**
     * Waits up to {@link #DEFAULT_TIMEOUT} until {@code condition} holds; a timeout names the
     * condition by the file and line of the caller ({@code "the condition at MyTest.java:42"}).
     */
    public void await(BooleanSupplier condition) {
        await(condition, DEFAULT_TIMEOUT, "the condition at " + caller());
    }

    /** @return the file and line of the first frame outside this class */
    private static String caller() {
        return StackWalker.getInstance().walk(frames -> frames
                .filter(f -> !f.getClassName().equals(RxeFabric.class.getName()))
                .findFirst()
                .map(f -> f.getFileName() + ":" + f.getLineNumber())
                .orElse("an unknown caller"));
    }

    /**
     * Waits until {@code condition} holds, on the devices' clock (see {@link #await(CompletableFuture,
     * Duration, String)}); on a real clock it is checked every 100 µs or so.
     *
     * @throws AssertionError naming {@code what} and the timeout (and the clock) if it does not hold in time
     */
    public void await(BooleanSupplier condition, Duration timeout, String what) {
        long nanos = timeout.toNanos();
        if (vs != null) {
            if (!vs.runUntil(condition, nanos)) {
                throw new AssertionError("timed out after " + timeout + " of virtual time waiting for " + what
                        + " (" + describe() + ")");
            }
            return;
        }
        long deadline = System.nanoTime() + nanos;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what + " (" + describe() + ")");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(100_000);
        }
    }

    /**
     * @return the next completion of {@code cq} (polled: the CQ must not be in dispatch mode), a copy,
     *     whatever its status, within {@link #DEFAULT_TIMEOUT} on the devices' clock
     * @throws AssertionError naming the CQ if none comes in time
     */
    public WorkCompletion nextCompletion(CompletionQueue cq) {
        return nextCompletion(cq, DEFAULT_TIMEOUT);
    }

    /** As {@link #nextCompletion(CompletionQueue)} with a timeout of its own. */
    public WorkCompletion nextCompletion(CompletionQueue cq, Duration timeout) {
        WorkCompletion[] wc = {new WorkCompletion()};
        await(() -> cq.poll(wc) == 1, timeout, "a completion on " + cq);
        return wc[0];
    }

    /**
     * As {@link #nextCompletion(CompletionQueue)}, for a completion expected to succeed.
     *
     * @return the next completion of {@code cq}, whose status is {@link WcStatus#SUCCESS}
     * @throws AssertionError naming the completion (wr_id, opcode, status, vendor_err, QP) and, for
     *     a QP of the kit's pairs in the error state, its {@link QueuePair#errorReason()}, if its
     *     status is another; or naming the CQ if none comes within {@link #DEFAULT_TIMEOUT}
     */
    public WorkCompletion nextSuccess(CompletionQueue cq) {
        WorkCompletion wc = nextCompletion(cq);
        if (wc.status != WcStatus.SUCCESS) {
            String reason = null;
            String peerReason = null;
            for (ConnectedPair p : pairs) {
                for (ConnectedPair.Side side : List.of(p.client(), p.server())) {
                    if (side.qp().qpNum() == wc.qpNum && side.cq() == cq) {
                        reason = side.qp().errorReason();
                        ConnectedPair.Side peer = side == p.client() ? p.server() : p.client();
                        peerReason = peer.qp().errorReason();
                    }
                }
            }
            throw new AssertionError("expected a successful completion on " + cq + ", got wr_id " + wc.wrId + " ("
                    + wc.opcode + ") on QP 0x" + Integer.toHexString(wc.qpNum) + " with " + wc.status
                    + ", vendor_err 0x" + Integer.toHexString(wc.vendorErr) + (reason != null ? ": " + reason : "")
                    + (peerReason != null ? "; the peer's QP: " + peerReason : "") + " (" + describe() + ")");
        }
        return wc;
    }

    /**
     * Posts {@code wrs} on {@code qp} and waits for all their completions on the devices' clock
     * (on virtual time it runs the loop and polls the QP's send CQ for them, as {@link
     * QueuePair#execute} does on the real clock); other completions polled meanwhile stay for the
     * test's next poll.
     *
     * @return the last WR's completion
     * @throws io.rxe4j.verbs.WorkCompletionException for the first WR that failed, naming its status
     *     and the QP's error reason
     * @throws AssertionError if they did not all complete within {@link #DEFAULT_TIMEOUT}
     */
    public WorkCompletion execute(QueuePair qp, SendWr... wrs) {
        if (vs == null) {
            try {
                return qp.execute(DEFAULT_TIMEOUT, wrs);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError(e.getMessage() + " (" + describe() + ")", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
        if (wrs.length == 0) {
            throw new IllegalArgumentException("execute needs at least one work request");
        }
        List<CompletableFuture<WorkCompletion>> fs = new ArrayList<>();
        for (SendWr wr : wrs) {
            fs.add(qp.submit(wr));
        }
        CompletionQueue cq = qp.sendCq();
        await(() -> {
            cq.pollFutures();
            return fs.stream().allMatch(CompletableFuture::isDone);
        }, DEFAULT_TIMEOUT, wrs.length + " work request(s) on " + qp);
        for (CompletableFuture<WorkCompletion> f : fs) {
            try {
                f.join();
            } catch (CompletionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : e;
            }
        }
        return fs.get(fs.size() - 1).join();
    }

    /** Lets {@code d} pass on the devices' clock: runs the virtual loop for it, or sleeps. */
    public void sleep(Duration d) {
        if (vs != null) {
            vs.runFor(d.toNanos());
            return;
        }
        try {
            Thread.sleep(d.toMillis(), (int) (d.toNanos() % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    // ------------------------------------------------------------------ the end

    /**
     * @return one line per object the test left open on the fabric's devices (the kit's own pairs,
     *     PDs, CQs and listeners excluded), each naming its device and the object ({@code "device
     *     /10.0.0.1:4791: MR MR{lkey=0x…, length=4096, …} in PD …"}); empty when nothing leaked
     */
    public List<String> leaks() {
        Set<String> mine = new java.util.HashSet<>();
        for (Object o : own) {
            mine.add((o instanceof ProtectionDomain ? "PD " : "CQ ") + o);
        }
        for (ConnectedPair p : pairs) {
            for (ConnectedPair.Side s : List.of(p.client(), p.server())) {
                mine.add("connection " + s.connection());
                mine.add("QP " + s.qp() + " in PD " + s.pd());
            }
        }
        List<String> out = new ArrayList<>();
        for (RdmaDevice d : devices) {
            if (d.isClosed()) {
                continue;
            }
            for (String line : d.openObjectDescriptions()) {
                if (!mine.contains(line)) {
                    out.add("device " + d.address() + ": " + line);
                }
            }
        }
        return out;
    }

    /** @return the fabric's settings and seed, and how to replay a run of it */
    public String describe() {
        return "rxe4j fabric: transport=" + config.transport + ", devices=" + config.devices + ", mtu=" + config.mtu
                + ", faults=\"" + (faultSpec == null ? "" : faultSpec) + "\", seed=" + seed + ", tidRdma=" + config.tidRdma
                + ", loops=" + config.loops + (vs == null ? "" : endedAt >= 0 ? ", virtual time " + endedAt
                        + " ns at the test's end" : ", virtual time " + vs.nanoTime() + " ns")
                + "; replay with @RxeTest(seed = " + seed + "L" + (faultSpec == null || faultSpec.isBlank() ? ""
                        : ", faults = \"" + faultSpec + "\"") + ")";
    }

    /**
     * Closes the pairs and listeners the kit made, checks for leaks (when the fabric was built with
     * the leak check on), then closes every device (everything still open on them too) and the
     * transports. Idempotent.
     *
     * @throws AssertionError after everything is closed, listing the leaked objects (one per line)
     *     and packet buffers never released, if the leak check is on and anything leaked
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (vs != null) {
            endedAt = vs.nanoTime();
        }
        for (ConnectedPair p : pairs) {
            p.client().connection().close();
            p.server().connection().close();
        }
        for (RdmaListener l : listeners.values()) {
            l.close();
        }
        settle();
        List<String> leaked = leaks();
        closeQuietly();
        long buffers = settledBuffers();
        if (config.leakCheck && (!leaked.isEmpty() || buffers > 0)) {
            StringBuilder sb = new StringBuilder("the test left ").append(leaked.size()).append(" object(s) open");
            if (buffers > 0) {
                sb.append(" and ").append(buffers).append(" packet buffer(s) unreleased (of ")
                        .append(allocator.allocated()).append(" allocated)");
            }
            sb.append(" (").append(describe()).append("):");
            for (String l : leaked) {
                sb.append("\n  ").append(l);
            }
            throw new AssertionError(sb.toString());
        }
    }

    /**
     * @return the packet buffers still unreleased once the transports stopped: on a real clock the
     *     fabric's and sockets' threads release what was in flight after {@code closeAll} returns, so
     *     this waits for them, up to a second
     */
    private long settledBuffers() {
        long deadline = System.nanoTime() + 1_000_000_000L;
        while (vs == null && allocator.live() > 0 && System.nanoTime() - deadline < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
        return allocator.live();
    }

    /** Lets the DREQs and DREPs of the closed pairs cross (virtual time: 10 ms of it). */
    private void settle() {
        if (vs != null) {
            vs.runFor(10_000_000L);
        }
    }

    private void closeQuietly() {
        for (RdmaDevice d : devices) {
            try {
                d.closeAll();
            } catch (RuntimeException e) {
                // closeAll closes what it can; what it could not is in leaks() already
            }
        }
        if (vs != null) {
            vs.runFor(1_000_000_000L); // packets in flight reach closed endpoints and are released
        }
        if (fabric != null) {
            fabric.closeAll();
        }
        if (vs != null) {
            vs.shutdown();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the fabric is closed");
        }
    }

    @Override
    public String toString() {
        return "RxeFabric{" + describe() + '}';
    }

    /** The settings of a fabric; the defaults are {@link RxeTest}'s. */
    public static final class Builder {
        private RxeTransport transport = RxeTransport.VIRTUAL;
        private int devices = 2;
        private int mtu = 1024;
        private String faults = "";
        private long seed;
        private boolean tidRdma;
        private int loops = 1;
        private long latencyMicros = 20;
        private boolean leakCheck = true;

        private Builder() {}

        private Builder copy() {
            Builder b = new Builder();
            b.transport = transport;
            b.devices = devices;
            b.mtu = mtu;
            b.faults = faults;
            b.seed = seed;
            b.tidRdma = tidRdma;
            b.loops = loops;
            b.latencyMicros = latencyMicros;
            b.leakCheck = leakCheck;
            return b;
        }

        /** @see RxeTest#transport() */
        public Builder transport(RxeTransport t) {
            if (t == null) {
                throw new IllegalArgumentException("transport must not be null");
            }
            this.transport = t;
            return this;
        }

        /** @see RxeTest#devices() */
        public Builder devices(int n) {
            if (n < 1 || n > 64) {
                throw new IllegalArgumentException("devices must be 1..64, got " + n);
            }
            this.devices = n;
            return this;
        }

        /** @see RxeTest#mtu() */
        public Builder mtu(int bytes) {
            RxeFabric.mtu(bytes); // checks
            this.mtu = bytes;
            return this;
        }

        /** @see RxeTest#faults() */
        public Builder faults(String spec) {
            FaultSpec.parse(spec); // names a bad key or value now
            this.faults = spec == null ? "" : spec;
            return this;
        }

        /** @see RxeTest#seed() */
        public Builder seed(long s) {
            this.seed = s;
            return this;
        }

        /** @see RxeTest#tidRdma() */
        public Builder tidRdma(boolean on) {
            this.tidRdma = on;
            return this;
        }

        /** @see RxeTest#loops() */
        public Builder loops(int n) {
            if (n < 1 || n > 64) {
                throw new IllegalArgumentException("loops must be 1..64, got " + n);
            }
            this.loops = n;
            return this;
        }

        /** @see RxeTest#latencyMicros() */
        public Builder latencyMicros(long us) {
            if (us < 0) {
                throw new IllegalArgumentException("latencyMicros must be >= 0, got " + us);
            }
            this.latencyMicros = us;
            return this;
        }

        /** @see RxeTest#leakCheck() */
        public Builder leakCheck(boolean on) {
            this.leakCheck = on;
            return this;
        }

        /** @return a new fabric with its devices open */
        public RxeFabric build() {
            return new RxeFabric(this);
        }
    }
}
