package io.rxe4j.verbs;

import io.rxe4j.verbs.provider.DeviceOps;
import io.rxe4j.verbs.provider.VerbsProvider;
import io.rxe4j.verbs.spi.Transport;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An opened rxe4j device ({@code ibv_context}): one soft-RoCE HCA bound to a {@link Transport}
 * (UDP socket or in-JVM fabric). Thread-safe.
 *
 * <p>Ownership: the device owns its {@link ProtectionDomain}s and {@link CompletionQueue}s;
 * {@link #close()} throws {@link IllegalStateException} while any is open (libibverbs EBUSY).
 * {@link #closeAll()} closes the whole tree instead (connections, QPs, MRs, CQs, PDs, then the
 * device), which is what a {@code finally} block or an error path wants:
 *
 * <pre>{@code
 * RdmaDevice dev = RdmaDevice.open(transport);
 * try {
 *     ProtectionDomain pd = dev.allocPd();
 *     ...
 * } finally {
 *     dev.closeAll();   // never EBUSY, whatever is still open
 * }
 * }</pre>
 */
public final class RdmaDevice implements AutoCloseable {
    final DeviceOps core;
    /** Open PDs, CQs, completion channels and connections, each in order of creation (see {@link #closeAll()}). */
    final Set<ProtectionDomain> pds = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<CompletionQueue> cqs = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<CompletionChannel> channels = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    final Set<AutoCloseable> connections = java.util.Collections.synchronizedSet(new java.util.LinkedHashSet<>());
    /** The API handle of every live QP by QPN, to name it in events. */
    final Map<Integer, QueuePair> qpsByNum = new ConcurrentHashMap<>();
    final EventDispatcher events;
    private final DeviceMBean mbean;
    private volatile boolean closed;

    static {
        io.rxe4j.verbs.internal.VerbsAccess.install(new CmAccess());
    }

    private RdmaDevice(DeviceOps core) {
        this.core = core;
        this.events = new EventDispatcher("rxe4j-events-" + core.address());
        this.mbean = DeviceMBean.register(this);
        core.onQpFatal((qpn, reason) -> {
            QueuePair h = qpsByNum.get(qpn);
            if (h != null) {
                events.raise(new AsyncEvent(AsyncEventType.QP_FATAL, h, null, reason));
            }
        });
        core.onLastWqeReached((qpn, reason) -> {
            QueuePair h = qpsByNum.get(qpn);
            if (h != null) {
                events.raise(new AsyncEvent(AsyncEventType.QP_LAST_WQE_REACHED, h, null, reason));
            }
        });
    }

    /** Raises {@code e} on the device's event thread (SRQ events). */
    void raiseEvent(AsyncEvent e) {
        events.raise(e);
    }

    /**
     * Opens a device on {@code transport} with default options.
     *
     * @param transport the transport; the device takes ownership and closes it
     */
    public static RdmaDevice open(Transport transport) {
        return open(transport, DeviceConfig.defaults());
    }

    /**
     * Opens a device on {@code transport}.
     *
     * @param transport the transport; the device takes ownership and closes it
     * <p>The device comes from the verbs provider on the class or module path, found with {@link
     * java.util.ServiceLoader} ({@link io.rxe4j.verbs.provider.VerbsProvider}): the soft-RoCE
     * engine, artifact {@code io.rxe4j:rxe-core} (module {@code io.rxe4j.core}).
     *
     * @param config device options (seed, table sizes, ICRC checking)
     * @throws IllegalStateException when no provider is on the class or module path (the message
     *     names the artifact and module to add)
     * @throws IllegalArgumentException if {@code transport} or {@code config} is null
     */
    public static RdmaDevice open(Transport transport, DeviceConfig config) {
        if (transport == null) {
            throw new IllegalArgumentException("transport must not be null");
        }
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        RdmaDevice d = new RdmaDevice(Providers.provider().open(transport, config));
        d.startCm();
        return d;
    }

    /** The device's IB CM takes the MADs of its GSI QP from now on (REJ 8 for a port nobody listens on). */
    private void startCm() {
        try {
            io.rxe4j.verbs.cm.ib.IbCm.of(this);
        } catch (UnsupportedOperationException noGsi) {
            // a provider without a GSI QP: no IB CM
        }
    }

    /** @return device attributes ({@code ibv_query_device}) */
    public DeviceAttr queryDevice() {
        DeviceConfig c = core.config();
        return new DeviceAttr(c.maxQp(), QpCaps.MAX_WR, QpCaps.MAX_SGE, Integer.MAX_VALUE, c.maxCqe(), c.maxMr(),
                Long.MAX_VALUE, 128, 128, DeviceCap.ATOMIC_HCA, DeviceCap.ATOMIC_HCA,
                DeviceCap.RC_RNR_NAK_GEN | DeviceCap.SRQ_RESIZE | DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B
                        | DeviceCap.FLUSH_GLOBAL | DeviceCap.FLUSH_PERSISTENT | DeviceCap.ATOMIC_WRITE,
                15, 1L << 31, DeviceAttr.MAX_AH, SrqInitAttr.MAX_WR, SrqInitAttr.MAX_SGE,
                Math.min(c.maxMr(), (1 << 19) - 1));
    }

    /**
     * Port attributes ({@code ibv_query_port}). The active MTU comes from the link, as {@code
     * rdma_rxe}'s does from its netdev ({@code rxe-facts.md} §4.2): {@link Mtu#activeForLinkMtu} of
     * the transport's {@link Transport#linkMtu()}, i.e. the largest IB MTU not above the IP MTU minus
     * 80 bytes. Over UDP that is the MTU of the network interface that carries the device's bound
     * address (a wildcard bind: the smallest MTU of the interfaces that are up): 1024 on a 1500-byte
     * Ethernet, 4096 on a 9000-byte one and on loopback (MTU 65536). A transport without a limit
     * (the in-JVM fabric unless configured) gives 4096. {@code maxMtu} is always 4096: modify_qp
     * accepts any path MTU up to it, as {@code rdma_rxe} does, and a path MTU above the active MTU
     * then fails on the first packet the link refuses (the WQE completes with LOC_QP_OP_ERR; see
     * {@code docs/verbs.md}). The connection manager and the tools use the active MTU as their
     * default path MTU. Read afresh on every call (the interface's MTU may change).
     *
     * @param port must be 1
     * @return port attributes
     * @throws IllegalArgumentException for another port number
     */
    public PortAttr queryPort(int port) {
        if (port != 1) {
            throw new IllegalArgumentException("rxe4j devices have one port, number 1; got " + port);
        }
        return new PortAttr(Mtu.MTU_4096, core.activeMtu(), core.address(), 1, 1);
    }

    /**
     * @return the IP MTU of the link the device sends on ({@link Transport#linkMtu()}: over UDP the
     *     interface's MTU, e.g. 1500), in bytes, or -1 when the transport knows no limit; the port's
     *     active MTU derives from it ({@link #queryPort})
     */
    public int linkMtu() {
        return core.linkMtu();
    }

    /** @return the (IP, UDP port) peers use to reach this device */
    public java.net.InetSocketAddress address() {
        return core.address();
    }

    /**
     * One device counter ({@code rdma_rxe}'s hw_counters where one exists).
     *
     * @return its current total (device and every QP, live or destroyed)
     */
    public long counter(Counter c) {
        return counters().get(c.rxeName());
    }

    /** @return every device counter, typed (a snapshot; see {@link #counters()}) */
    public java.util.EnumMap<Counter, Long> counterValues() {
        Map<String, Long> m = counters();
        java.util.EnumMap<Counter, Long> e = new java.util.EnumMap<>(Counter.class);
        for (Counter c : Counter.values()) {
            e.put(c, m.get(c.rxeName()));
        }
        return e;
    }

    /**
     * @return the JMX name of this device's MBean ({@code io.rxe4j:type=RdmaDevice,...}; one
     *     {@code long} attribute per {@link Counter}), or null if JMX registration failed
     */
    public javax.management.ObjectName mbeanName() {
        return mbean == null ? null : mbean.name();
    }

    /** @return the device counters, by rxe-style name */
    public Map<String, Long> counters() {
        return core.counterSnapshot();
    }

    /**
     * One device counter by its rxe-style name (see {@link #counters()}), e.g.
     * {@code "retransmit_timeouts"}.
     *
     * @throws IllegalArgumentException for an unknown name
     */
    public long counter(String name) {
        java.util.Map<String, Long> all = core.counterSnapshot();
        Long v = all.get(name);
        if (v == null) {
            throw new IllegalArgumentException("unknown counter '" + name + "'; known: " + all.keySet());
        }
        return v;
    }

    /** @return a new protection domain ({@code ibv_alloc_pd}) */
    public ProtectionDomain allocPd() {
        checkOpen();
        ProtectionDomain pd = new ProtectionDomain(this, core.allocPd());
        pds.add(pd);
        return pd;
    }

    /**
     * Creates a completion queue ({@code ibv_create_cq}) on the next completion vector, round
     * robin (see {@link #createCq(int, int)}).
     *
     * @param cqe capacity in completions, 1..{@link DeviceAttr#maxCqe()}
     * @throws IllegalArgumentException if {@code cqe} is out of range
     */
    public CompletionQueue createCq(int cqe) {
        return createCq(cqe, -1);
    }

    /**
     * Creates a completion queue on completion vector {@code compVector} ({@code ibv_create_cq}'s
     * {@code comp_vector}). A device has one completion vector per event loop ({@link
     * #numCompVectors()}, {@code ibv_context.num_comp_vectors}); a QP runs on the event loop of its
     * send CQ, so QPs whose CQs are on different vectors run in parallel, and QPs that share a
     * send CQ share a loop. A QP whose receive CQ is on another vector works too: that CQ then
     * takes a lock per completion.
     *
     * @param cqe capacity in completions, 1..{@link DeviceAttr#maxCqe()}
     * @param compVector 0..{@code numCompVectors() - 1}, or -1 for the next vector round robin
     * @throws IllegalArgumentException if {@code cqe} or {@code compVector} is out of range
     */
    public CompletionQueue createCq(int cqe, int compVector) {
        checkOpen();
        CompletionQueue cq = new CompletionQueue(this, core.createCq(cqe, compVector));
        cqs.add(cq);
        return cq;
    }

    /**
     * @return the number of completion vectors, one per event loop of the device ({@code
     *     ibv_context.num_comp_vectors}): 1 unless the transport runs several loops (e.g. {@code
     *     UdpTransport.Builder.loops})
     */
    public int numCompVectors() {
        return core.numCompVectors();
    }

    /**
     * Creates a completion queue that reports completion events to {@code channel} ({@code
     * ibv_create_cq} with a {@code comp_channel}): arm it with {@link CompletionQueue#reqNotify}
     * and wait with {@link CompletionChannel#getCqEvent}.
     *
     * @param cqe capacity in completions, 1..{@link DeviceAttr#maxCqe()}
     * @param channel a channel of this device
     * @throws IllegalArgumentException if {@code cqe} is out of range or the channel belongs to
     *     another device
     */
    public CompletionQueue createCq(int cqe, CompletionChannel channel) {
        if (channel == null || channel.device != this) {
            throw new IllegalArgumentException("completion channel " + channel + " does not belong to " + this);
        }
        channel.checkOpen();
        CompletionQueue cq = createCq(cqe);
        cq.attach(channel);
        return cq;
    }

    /**
     * Creates a completion channel ({@code ibv_create_comp_channel}): a queue of completion
     * events that threads can block on, shared by any number of CQs.
     */
    public CompletionChannel createCompletionChannel() {
        checkOpen();
        CompletionChannel ch = new CompletionChannel(this);
        channels.add(ch);
        return ch;
    }

    /**
     * Adds a listener for asynchronous events (QP fatal, CQ overflow, connections established and
     * ended; see {@link AsyncEventType}). Listeners run on the device's event thread, one event at
     * a time, in the order the events were raised; they must not block for long. An exception a
     * listener throws is logged and does not stop the others.
     *
     * @throws IllegalArgumentException if {@code listener} is null
     */
    public void addAsyncEventListener(java.util.function.Consumer<AsyncEvent> listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener is null");
        }
        events.addListener(listener);
    }

    /** Removes a listener added with {@link #addAsyncEventListener}. @return whether it was registered */
    public boolean removeAsyncEventListener(java.util.function.Consumer<AsyncEvent> listener) {
        return events.removeListener(listener);
    }

    /**
     * Takes the oldest asynchronous event not taken yet ({@code ibv_get_async_event}), waiting up
     * to {@code timeout}. Every event is queued here as well as given to the listeners; the queue
     * keeps the last 1024 events (older ones are dropped and counted in {@link
     * #droppedAsyncEvents()}).
     *
     * @return the event, or null if none arrived in time
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    public AsyncEvent getAsyncEvent(java.time.Duration timeout) throws InterruptedException {
        return events.take(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** @return how many asynchronous events were dropped because nobody took them (see {@link #getAsyncEvent}) */
    public long droppedAsyncEvents() {
        return events.dropped();
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("device " + core.address() + " is closed");
        }
    }

    /**
     * Closes the device and its transport ({@code ibv_close_device}). Idempotent.
     *
     * @throws IllegalStateException if a PD or CQ of this device is still open (libibverbs EBUSY);
     *     nothing is closed then. {@link #closeAll()} closes them too.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (!pds.isEmpty() || !cqs.isEmpty()) {
            throw new IllegalStateException("device " + core.address() + " still has " + pds.size() + " PD(s) and "
                    + cqs.size() + " CQ(s) open (EBUSY): close them first, or use closeAll()");
        }
        closeDevice();
    }

    /** @return whether the device is closed ({@link #close()} or {@link #closeAll()} ran) */
    public boolean isClosed() {
        return closed;
    }

    /**
     * @return how many objects of this device are open: connections, PDs, QPs, AHs, MRs, CQs and
     *     completion channels (0 after {@link #closeAll()}); a snapshot, for leak checks
     */
    public int openObjects() {
        int n = connections.size() + cqs.size() + channels.size();
        for (ProtectionDomain pd : snapshot(pds)) {
            n += 1 + pd.qps.size() + pd.mrs.size() + pd.ahs.size() + pd.srqs.size() + pd.mws.size();
        }
        return n;
    }

    /**
     * @return one line per open object of this device, in the order {@link #openObjects()} counts
     *     them (connections, completion queues and channels, then each PD with its QPs, SRQs, AHs,
     *     memory windows and MRs), each its {@code toString()} with its kind, e.g. {@code "MR
     *     RxeMr{...} in PD ..."}; empty after {@link #closeAll()}. A snapshot, for leak reports.
     */
    public java.util.List<String> openObjectDescriptions() {
        java.util.List<String> out = new java.util.ArrayList<>();
        for (AutoCloseable c : snapshot(connections)) {
            out.add("connection " + c);
        }
        for (CompletionQueue cq : snapshot(cqs)) {
            out.add("CQ " + cq);
        }
        for (CompletionChannel ch : snapshot(channels)) {
            out.add("completion channel " + ch);
        }
        for (ProtectionDomain pd : snapshot(pds)) {
            out.add("PD " + pd);
            for (QueuePair qp : snapshot(pd.qps)) {
                out.add("QP " + qp + " in PD " + pd);
            }
            for (SharedReceiveQueue srq : snapshot(pd.srqs)) {
                out.add("SRQ " + srq + " in PD " + pd);
            }
            for (AddressHandle ah : snapshot(pd.ahs)) {
                out.add("AH " + ah + " in PD " + pd);
            }
            for (MemoryWindow mw : snapshot(pd.mws)) {
                out.add("MW " + mw + " in PD " + pd);
            }
            for (MemoryRegion mr : snapshot(pd.mrs)) {
                out.add("MR " + mr + " in PD " + pd);
            }
        }
        return out;
    }

    /** @return the address handles open in this device's PDs */
    int openAhs() {
        int n = 0;
        for (ProtectionDomain pd : snapshot(pds)) {
            n += pd.ahs.size();
        }
        return n;
    }

    /**
     * Closes everything this device owns, then the device: a safe teardown from any state, for
     * {@code finally} blocks and error paths. In this order, each kind newest first (reverse
     * order of creation): the {@link io.rxe4j.verbs.cm.RdmaConnection}s (each sends its DREQ, so the peer sees the
     * disconnect; nothing waits for the DREP), the remaining {@link QueuePair}s (outstanding
     * work requests are dropped, pending futures fail), the {@link SharedReceiveQueue}s, {@link AddressHandle}s,
     * {@link MemoryWindow}s and {@link MemoryRegion}s, the {@link
     * CompletionQueue}s, the {@link CompletionChannel}s, the {@link ProtectionDomain}s, and the
     * device with its transport. Never fails with EBUSY: a child that fails to close is logged,
     * left behind and does not stop the others. Idempotent; closing some children first is fine.
     *
     * @throws IllegalStateException after everything else is closed, if some objects failed to
     *     close (each failure is a {@linkplain Throwable#getSuppressed() suppressed} exception)
     */
    public void closeAll() {
        java.util.List<RuntimeException> failures = new java.util.ArrayList<>();
        synchronized (this) {
            for (AutoCloseable c : reversed(connections)) {
                tryClose(() -> {
                    try {
                        c.close();
                    } catch (RuntimeException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, c, failures);
            }
            java.util.List<ProtectionDomain> pdList = reversed(pds);
            for (ProtectionDomain pd : pdList) {
                for (QueuePair qp : reversed(pd.qps)) {
                    tryClose(qp::close, qp, failures);
                }
            }
            for (ProtectionDomain pd : pdList) {
                for (SharedReceiveQueue srq : reversed(pd.srqs)) {
                    tryClose(srq::close, srq, failures);
                }
                for (AddressHandle ah : reversed(pd.ahs)) {
                    tryClose(ah::close, ah, failures);
                }
                for (MemoryWindow mw : reversed(pd.mws)) {
                    tryClose(mw::close, mw, failures);
                }
                for (MemoryRegion mr : reversed(pd.mrs)) {
                    tryClose(mr::close, mr, failures);
                }
            }
            for (CompletionQueue cq : reversed(cqs)) {
                tryClose(() -> cq.close(true), cq, failures);
            }
            for (CompletionChannel ch : reversed(channels)) {
                tryClose(ch::close, ch, failures);
            }
            for (ProtectionDomain pd : pdList) {
                tryClose(() -> pd.close(true), pd, failures);
            }
            pds.clear();
            cqs.clear();
            tryClose(this::closeDevice, this, failures);
        }
        if (!failures.isEmpty()) {
            IllegalStateException e = new IllegalStateException("closeAll of " + this + ": " + failures.size()
                    + " object(s) failed to close; everything else is closed");
            failures.forEach(e::addSuppressed);
            throw e;
        }
    }

    private static <T> java.util.List<T> snapshot(Set<T> s) {
        synchronized (s) {
            return new java.util.ArrayList<>(s);
        }
    }

    private static <T> java.util.List<T> reversed(Set<T> s) {
        return snapshot(s).reversed();
    }

    private static void tryClose(Runnable close, Object what, java.util.List<RuntimeException> failures) {
        try {
            close.run();
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(RdmaDevice.class).warn("closeAll: closing {} failed", what, e);
            failures.add(e);
        }
    }

    private synchronized void closeDevice() {
        if (closed) {
            return;
        }
        closed = true;
        io.rxe4j.verbs.cm.ib.IbCm.closeFor(this);
        core.close();
        events.shutdown();
        if (mbean != null) {
            mbean.unregister();
        }
    }

    @Override
    public String toString() {
        return "RdmaDevice{" + core.address() + '}';
    }
}
