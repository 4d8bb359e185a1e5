package io.rxe4j.net.inproc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.net.NettyScheduler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A network inside one JVM: {@link InJvmTransport} endpoints addressed by {@link
 * InetSocketAddress}, with no sockets and no copies (the sent {@link ByteBuf} itself is handed to
 * the receiver).
 *
 * <h2>Loops</h2>
 *
 * <p>By default ({@link #InJvmFabric()}) every endpoint gets its own single-thread Netty {@link
 * DefaultEventLoop} on a daemon thread (so a program that forgets to close an endpoint can still
 * exit), wrapped by {@link NettyScheduler}, which the endpoint shuts down when it is closed. A
 * fabric created with {@link #withScheduler(Scheduler)} instead puts all of its endpoints on that
 * one shared scheduler (for example a {@link io.rxe4j.net.sim.VirtualScheduler}, which
 * makes a whole multi-device test deterministic); the fabric never shuts a shared scheduler down.
 *
 * <h2>Delivery</h2>
 *
 * <p>{@link InJvmTransport#send} queues a packet on the sending endpoint; {@link
 * InJvmTransport#flush} hands every queued packet to its destination's scheduler ({@link
 * Scheduler#execute}, or {@link Scheduler#schedule} with {@link Builder#latencyNanos(long)} when a
 * latency is configured), where it is passed to the destination's {@link
 * io.rxe4j.verbs.spi.PacketReceiver} and then released. Packets between one pair of endpoints are
 * delivered in the order they were sent (FIFO). The sender's address is the sending endpoint's
 * {@link InJvmTransport#localAddress()}; the recipient is the destination's.
 *
 * <p>A packet is dropped and released, and counted, when its destination is not registered
 * ({@link #droppedNoEndpoint()}: unknown address, closed endpoint, or a destination loop that
 * rejected the task because it shut down), when the destination has not been started yet ({@link
 * #droppedNotStarted()}), or when the {@link PacketFilter} says so ({@link #droppedByFilter()}).
 *
 * <p>All methods of this class are thread-safe.
 */
public final class InJvmFabric {

    /** First port handed out for {@code newTransport(address with port 0)}. */
    public static final int FIRST_EPHEMERAL_PORT = 49152;

    /**
     * Decides whether one packet crosses the fabric; a test hook for loss injection. Called on the
     * sending endpoint's loop during {@link InJvmTransport#flush()}, once per packet, before the
     * packet is handed to the destination.
     */
    @FunctionalInterface
    public interface PacketFilter {
        /**
         * @param packet the packet (read-only use: do not change its indices, retain or release it)
         * @param sender the sending endpoint's address
         * @param recipient the destination address
         * @return {@code true} to deliver the packet, {@code false} to drop it (the fabric releases
         *     it and counts it in {@link #droppedByFilter()})
         */
        boolean deliver(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient);
    }

    private final Scheduler sharedScheduler;
    private final ByteBufAllocator allocator;
    private final long latencyNanos;
    /** The links' IP MTU in bytes, or 0: no limit. */
    private final int linkMtu;
    private final ConcurrentMap<InetSocketAddress, InJvmTransport> endpoints =
            new ConcurrentHashMap<>();
    private final AtomicInteger nextEphemeralPort = new AtomicInteger(FIRST_EPHEMERAL_PORT);
    private final LongAdder droppedNoEndpoint = new LongAdder();
    private final LongAdder droppedNotStarted = new LongAdder();
    private final LongAdder droppedByFilter = new LongAdder();
    private final LongAdder delivered = new LongAdder();
    private final LongAdder droppedByQueue = new LongAdder();
    private final LongAdder markedCe = new LongAdder();
    private final LinkModel link;
    private volatile PacketFilter filter;

    /**
     * Creates a fabric whose endpoints each run on their own {@link DefaultEventLoop}, allocate
     * from {@link ByteBufAllocator#DEFAULT} and deliver with no added latency.
     */
    public InJvmFabric() {
        this(builder());
    }

    private InJvmFabric(Builder b) {
        this.sharedScheduler = b.sharedScheduler;
        this.allocator = b.allocator;
        this.latencyNanos = b.latencyNanos;
        this.linkMtu = b.linkMtu;
        this.link = b.link;
    }

    /**
     * Creates a fabric whose endpoints all run on {@code scheduler} (for example a {@link
     * io.rxe4j.net.sim.VirtualScheduler}).
     *
     * @param scheduler the loop shared by every endpoint; not shut down by the fabric
     * @return the new fabric
     * @throws NullPointerException if {@code scheduler} is {@code null}
     */
    public static InJvmFabric withScheduler(Scheduler scheduler) {
        return builder().sharedScheduler(scheduler).build();
    }

    /** @return a builder for a fabric with non-default settings. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Creates and registers an endpoint at {@code address}.
     *
     * @param address the endpoint's (IP, port); port 0 asks the fabric for a free port from {@link
     *     #FIRST_EPHEMERAL_PORT} upwards, and the endpoint's {@link InJvmTransport#localAddress()}
     *     then carries it. Must be resolved (have an IP address).
     * @return the endpoint, not yet started
     * @throws IllegalArgumentException if {@code address} is unresolved, or another open endpoint
     *     already has that address (the message names it)
     * @throws NullPointerException if {@code address} is {@code null}
     */
    public InJvmTransport newTransport(InetSocketAddress address) {
        Objects.requireNonNull(address, "address");
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("unresolved address: " + address);
        }
        if (address.getPort() == 0) {
            InetAddress ip = address.getAddress();
            while (true) {
                int port = nextEphemeralPort.getAndIncrement();
                if (port > 65535) {
                    throw new IllegalStateException("no free in-JVM port left on " + ip);
                }
                InetSocketAddress candidate = new InetSocketAddress(ip, port);
                InJvmTransport t = tryRegister(candidate);
                if (t != null) {
                    return t;
                }
            }
        }
        InJvmTransport t = tryRegister(address);
        if (t == null) {
            throw new IllegalArgumentException("address already in use on this fabric: " + address);
        }
        return t;
    }

    /**
     * Creates an endpoint that runs on {@code loops} event loops: a {@link
     * io.rxe4j.net.MultiLoopTransport} of {@code loops} lanes with one address (with a shared
     * scheduler, every lane runs on it). A packet sent by lane {@code i} of one endpoint reaches
     * lane {@code i % loops} of its destination (no look into the packet: the device steers it to
     * its QP's lane).
     *
     * @param address as {@link #newTransport(InetSocketAddress)}
     * @param loops 1..64; 1 gives a plain {@link InJvmTransport}
     * @return the endpoint, not yet started
     * @throws IllegalArgumentException if {@code loops} is out of range, or as {@link
     *     #newTransport(InetSocketAddress)}
     */
    public io.rxe4j.verbs.spi.Transport newTransport(InetSocketAddress address, int loops) {
        if (loops < 1 || loops > 64) {
            throw new IllegalArgumentException("loops must be 1..64, got " + loops);
        }
        InJvmTransport first = newTransport(address);
        if (loops == 1) {
            return first;
        }
        InJvmTransport[] group = new InJvmTransport[loops];
        group[0] = first;
        for (int i = 1; i < loops; i++) {
            group[i] = newLane(first.localAddress(), i);
        }
        for (InJvmTransport t : group) {
            t.group = group;
        }
        return new io.rxe4j.net.MultiLoopTransport<>(java.util.List.of(group));
    }

    private InJvmTransport newLane(InetSocketAddress address, int index) {
        Scheduler scheduler;
        DefaultEventLoop ownLoop = null;
        if (sharedScheduler != null) {
            scheduler = sharedScheduler;
        } else {
            ownLoop = new DefaultEventLoop(new DefaultThreadFactory("rxe-injvm-" + address.getPort() + "-" + index, true));
            scheduler = new NettyScheduler(ownLoop);
        }
        InJvmTransport t = new InJvmTransport(this, address, scheduler, ownLoop, allocator);
        t.laneIndex = index;
        return t;
    }

    private InJvmTransport tryRegister(InetSocketAddress address) {
        if (endpoints.containsKey(address)) {
            return null;
        }
        Scheduler scheduler;
        DefaultEventLoop ownLoop = null;
        if (sharedScheduler != null) {
            scheduler = sharedScheduler;
        } else {
            // daemon: a program that forgets to close its endpoints can still exit
            ownLoop = new DefaultEventLoop(new DefaultThreadFactory("rxe-injvm-" + address.getPort(), true));
            scheduler = new NettyScheduler(ownLoop);
        }
        InJvmTransport transport = new InJvmTransport(this, address, scheduler, ownLoop, allocator);
        if (endpoints.putIfAbsent(address, transport) != null) {
            if (ownLoop != null) {
                ownLoop.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS);
            }
            return null;
        }
        return transport;
    }

    /** Removes {@code transport} from the address map (only if it is still the registered one). */
    void unregister(InJvmTransport transport) {
        endpoints.remove(transport.localAddress(), transport);
    }

    /**
     * Hands {@code packet} to its destination; called by the sender on its loop. Always takes
     * ownership of {@code packet}.
     */
    void deliver(InJvmTransport from, ByteBuf packet, InetSocketAddress to) {
        PacketFilter f = filter;
        InetSocketAddress sender = from.localAddress();
        if (f != null) {
            boolean pass;
            try {
                pass = f.deliver(packet, sender, to);
            } catch (RuntimeException e) {
                packet.release();
                throw e;
            }
            if (!pass) {
                droppedByFilter.increment();
                packet.release();
                return;
            }
        }
        InJvmTransport registered = endpoints.get(to);
        if (registered == null) {
            droppedNoEndpoint.increment();
            packet.release();
            return;
        }
        InJvmTransport[] group = registered.group;
        InJvmTransport dest = group == null ? registered : group[from.laneIndex % group.length];
        if (link != null) {
            deliverOverLink(from, dest, packet, sender, to);
            return;
        }
        if (latencyNanos == 0) {
            if (!dest.enqueue(packet, sender)) { // batched, no allocation per packet
                droppedNoEndpoint.increment();
                packet.release();
            }
            return;
        }
        Delivery d = new Delivery(this, dest, packet, sender, false);
        try {
            dest.scheduler().schedule(d, latencyNanos);
        } catch (RejectedExecutionException e) {
            d.onDropped();
        }
    }

    /**
     * A packet on the wire, delivered after the fabric's latency; refused by the destination's loop,
     * or dropped by a {@link io.rxe4j.net.sim.VirtualScheduler} that shuts down first, it is
     * released and counted as undeliverable ({@link #droppedNoEndpoint()}) instead of being left to
     * the garbage collector.
     */
    private record Delivery(InJvmFabric fabric, InJvmTransport dest, ByteBuf packet, InetSocketAddress sender,
            boolean ce) implements io.rxe4j.net.sim.VirtualScheduler.Droppable {
        @Override
        public void run() {
            dest.receive(packet, sender, ce);
        }

        @Override
        public void onDropped() {
            packet.release();
            fabric.countNoEndpoint();
        }
    }

    /**
     * The bottleneck link model (see {@link LinkModel}): the packet waits behind the bytes already
     * queued on the (sender, destination) link, is dropped when they and it exceed the queue, leaves
     * after its serialization time at the link's rate, and arrives {@link #latencyNanos()} later;
     * it is marked CE when the queue it found was longer than the ECN threshold.
     */
    private void deliverOverLink(InJvmTransport from, InJvmTransport dest, ByteBuf packet, InetSocketAddress sender,
            InetSocketAddress to) {
        InJvmTransport.LinkState l = from.link(to);
        long now = from.scheduler().nanoTime();
        long backlogNanos = Math.max(0, l.nextFree - now);
        long backlogBytes = (long) (backlogNanos * link.bytesPerNano());
        int len = packet.readableBytes();
        if (backlogBytes + len > link.queueBytes()) {
            droppedByQueue.increment();
            packet.release();
            return;
        }
        boolean ce = link.ecnThresholdBytes() >= 0 && backlogBytes > link.ecnThresholdBytes();
        if (ce) {
            markedCe.increment();
        }
        l.nextFree = Math.max(now, l.nextFree) + (long) Math.ceil(len / link.bytesPerNano());
        long delay = l.nextFree - now + latencyNanos;
        Delivery d = new Delivery(this, dest, packet, sender, ce);
        try {
            dest.scheduler().schedule(d, delay);
        } catch (RejectedExecutionException e) {
            d.onDropped();
        }
    }

    /** @return packets dropped because the link's queue was full ({@link LinkModel}) */
    public long droppedByQueue() {
        return droppedByQueue.sum();
    }

    /** @return packets the link model marked CE (Congestion Experienced) */
    public long markedCe() {
        return markedCe.sum();
    }

    /** @return the link model, or {@code null} when packets cross without a bottleneck */
    public LinkModel link() {
        return link;
    }

    /**
     * A bottleneck between every two endpoints, per direction: a FIFO queue of at most {@code
     * queueBytes} bytes drained at {@code bytesPerSecond}. A packet that does not fit in the queue
     * is dropped (tail drop), as a switch port or a full socket buffer would; one that finds more
     * than {@code ecnThresholdBytes} queued is delivered marked CE (RoCEv2 ECN), or never when the
     * threshold is -1. Latency ({@link Builder#latencyNanos}) is added after the queue.
     *
     * @param queueBytes the queue per direction, in bytes, {@code > 0}
     * @param bytesPerSecond the link rate in bytes per second, {@code > 0}
     * @param ecnThresholdBytes queue length above which packets are marked CE, or -1 for never
     */
    public record LinkModel(long queueBytes, long bytesPerSecond, long ecnThresholdBytes) {
        /** @throws IllegalArgumentException naming a value out of range */
        public LinkModel {
            if (queueBytes <= 0) {
                throw new IllegalArgumentException("queueBytes must be > 0, got " + queueBytes);
            }
            if (bytesPerSecond <= 0) {
                throw new IllegalArgumentException("bytesPerSecond must be > 0, got " + bytesPerSecond);
            }
            if (ecnThresholdBytes < -1) {
                throw new IllegalArgumentException("ecnThresholdBytes must be >= -1, got " + ecnThresholdBytes);
            }
        }

        /** @return the rate in bytes per nanosecond */
        double bytesPerNano() {
            return bytesPerSecond / 1e9;
        }
    }

    void countDelivered() {
        delivered.increment();
    }

    void countNotStarted() {
        droppedNotStarted.increment();
    }

    void countNoEndpoint() {
        droppedNoEndpoint.increment();
    }

    /**
     * Installs (or, with {@code null}, removes) the packet filter used by later flushes.
     *
     * @param filter the filter, or {@code null} to deliver everything
     */
    public void setFilter(PacketFilter filter) {
        this.filter = filter;
    }

    /**
     * @return the number of packets dropped because no open endpoint had the destination address
     *     (when sent, or by the time they arrived)
     */
    public long droppedNoEndpoint() {
        return droppedNoEndpoint.sum();
    }

    /** @return the number of packets dropped because their destination was not started yet. */
    public long droppedNotStarted() {
        return droppedNotStarted.sum();
    }

    /** @return the number of packets dropped by the {@link PacketFilter}. */
    public long droppedByFilter() {
        return droppedByFilter.sum();
    }

    /**
     * @return the number of packets handed to a receiver (including those whose receiver threw).
     */
    public long delivered() {
        return delivered.sum();
    }

    /** @return the shared scheduler, or {@code null} if every endpoint has its own loop. */
    public Scheduler sharedScheduler() {
        return sharedScheduler;
    }

    /** @return the added one-way delay in nanoseconds (0: delivered as soon as possible). */
    public long latencyNanos() {
        return latencyNanos;
    }

    /**
     * @param address an address
     * @return the open endpoint registered at {@code address}, or {@code null}
     */
    public InJvmTransport endpoint(InetSocketAddress address) {
        return endpoints.get(address);
    }

    /** Closes every endpoint of this fabric (see {@link InJvmTransport#close()}). */
    public void closeAll() {
        for (InJvmTransport t : endpoints.values()) {
            InJvmTransport[] group = t.group;
            if (group == null) {
                t.close();
            } else {
                for (InJvmTransport lane : group) {
                    lane.close();
                }
            }
        }
    }

    /** @return the links' IP MTU in bytes ({@link Builder#linkMtu(int)}), or 0 for no limit */
    public int linkMtu() {
        return linkMtu;
    }

    /** Settings of an {@link InJvmFabric}. Not thread-safe. */
    public static final class Builder {
        private Scheduler sharedScheduler;
        private ByteBufAllocator allocator = ByteBufAllocator.DEFAULT;
        private long latencyNanos;
        private LinkModel link;
        private int linkMtu;

        private Builder() {}

        /**
         * @param link a bottleneck per direction between every two endpoints (bounded queue, rate,
         *     ECN marking), or {@code null} (the default) for none; packets over a link are delivered
         *     by {@link Scheduler#schedule}, in order
         * @return this builder
         */
        public Builder link(LinkModel link) {
            this.link = link;
            return this;
        }

        /**
         * @param scheduler the loop all endpoints share, or {@code null} (the default) for one
         *     {@link DefaultEventLoop} per endpoint
         * @return this builder
         */
        public Builder sharedScheduler(Scheduler scheduler) {
            this.sharedScheduler = scheduler;
            return this;
        }

        /**
         * @param allocator the allocator endpoints return from {@link InJvmTransport#allocator()};
         *     default {@link ByteBufAllocator#DEFAULT}
         * @return this builder
         * @throws NullPointerException if {@code allocator} is {@code null}
         */
        public Builder allocator(ByteBufAllocator allocator) {
            this.allocator = Objects.requireNonNull(allocator, "allocator");
            return this;
        }

        /**
         * @param latencyNanos one-way delay added to every packet, in nanoseconds, {@code >= 0};
         *     default 0. With a delay, packets are delivered by {@link Scheduler#schedule}; FIFO
         *     order still holds because every packet gets the same delay.
         * @return this builder
         * @throws IllegalArgumentException if {@code latencyNanos < 0}
         */
        public Builder latencyNanos(long latencyNanos) {
            if (latencyNanos < 0) {
                throw new IllegalArgumentException("latencyNanos < 0: " + latencyNanos);
            }
            this.latencyNanos = latencyNanos;
            return this;
        }

        /**
         * Models an IP MTU on every link, as a UDP socket with don't-fragment meets one: a packet
         * whose UDP payload plus the UDP and IP headers (28 bytes, 48 over IPv6) exceeds it is refused
         * at {@link InJvmTransport#flush()} ("Message too long", {@link
         * io.rxe4j.verbs.spi.PacketReceiver#onSendFailed}) instead of crossing the fabric, and each
         * endpoint reports it as its {@link InJvmTransport#linkMtu()} (from which a device derives its
         * port's active MTU: 1500 gives 1024).
         *
         * @param bytes the IP MTU in bytes, 68..65536, or 0 (the default) for no limit (endpoints then
         *     report -1 and devices an active MTU of 4096)
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder linkMtu(int bytes) {
            if (bytes != 0 && (bytes < 68 || bytes > 65536)) {
                throw new IllegalArgumentException("linkMtu must be 68..65536 bytes, or 0 for no limit, got " + bytes);
            }
            this.linkMtu = bytes;
            return this;
        }

        /** @return a new fabric with these settings. */
        public InJvmFabric build() {
            return new InJvmFabric(this);
        }
    }
}
