package io.rxe4j.net.udp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelException;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.SegmentedDatagramPacket;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.DatagramChannelConfig;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.channel.socket.nio.NioChannelOption;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.rxe4j.core.spi.PacketReceiver;
import io.rxe4j.core.spi.Transport;
import io.rxe4j.net.NettyScheduler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import jdk.net.ExtendedSocketOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * RoCEv2 over UDP: a Netty datagram channel bound to one concrete local (IP, UDP port), NIO by
 * default or, opt-in, Linux native epoll ({@link Builder#io(Io)}).
 *
 * <h2>I/O: NIO or epoll</h2>
 *
 * <p>{@link Io#NIO} (the default) uses {@link NioDatagramChannel} and works everywhere. {@link
 * Io#EPOLL} uses Netty's native {@link EpollDatagramChannel} (Linux x86_64 only; the JNI library
 * comes from {@code io.netty:netty-transport-native-epoll:linux-x86_64}). With epoll, reads use
 * {@code recvmmsg}: {@code EpollChannelOption.MAX_DATAGRAM_PAYLOAD_SIZE} is set to {@link
 * Builder#maxDatagramBytes(int)} + 1 and each read buffer holds {@link Builder#recvBatch(int)}
 * datagrams, so one system call returns up to that many datagrams; a multi-packet flush becomes one
 * {@code sendmmsg}. Don't-fragment is set with the raw socket option {@code IP_MTU_DISCOVER =
 * IP_PMTUDISC_DO} ({@code IPV6_MTU_DISCOVER} over IPv6), which is what the JDK's {@code
 * IP_DONTFRAGMENT} does on Linux. On JDK 22+ the native library needs the JVM flag {@code
 * --enable-native-access=ALL-UNNAMED} (on the class path) to load without a warning, and future
 * JDKs deny it without. If epoll cannot be loaded, {@link Builder#bind()} (and {@link
 * #newEventLoopGroup}) throw an {@link IllegalStateException} naming {@link
 * Epoll#unavailabilityCause()}.
 *
 * <h2>UDP GSO and GRO (epoll, opt-in)</h2>
 *
 * <p>With {@link Builder#gso(boolean)} (epoll only) {@link #send} does not write: it appends the
 * packet to a pending list, and {@link #flush} walks the list in order, coalescing each maximal run
 * of consecutive packets to the same peer whose sizes equal the run's first packet (the run's last
 * packet may be shorter) into one {@code SegmentedDatagramPacket}: one {@code sendmmsg} entry with
 * {@code UDP_SEGMENT}, which the kernel cuts back into one UDP datagram per packet, so the peer
 * receives exactly what one-by-one sends would give. A run holds at most {@link #GSO_MAX_SEGMENTS}
 * packets and {@link #MAX_UDP_PAYLOAD_BYTES} bytes; its packets are copied into one buffer from
 * the channel's allocator (cheaper here than a {@code CompositeByteBuf}, see {@code
 * docs/performance.md}). A run of one packet is written as an ordinary datagram. A failed GSO
 * write loses the whole run (counted once in {@link #channelErrors()}). {@link
 * Builder#gro(boolean)} sets {@code UDP_GRO} on the socket: the kernel may then return several
 * datagrams of one flow in one read, which Netty splits back into one {@code DatagramPacket} per
 * datagram before the handler sees them; reads then use {@code recvmsg} into a 64 KiB buffer
 * ({@link Builder#recvBatch(int)} is ignored).
 *
 * <h2>Socket</h2>
 *
 * <p>The socket is unconnected (one socket talks to every peer), of the address family of the
 * bind address (IPv4 or IPv6), with {@code SO_RCVBUF} and {@code SO_SNDBUF} set to 4 MiB by default
 * (the kernel may clamp them, e.g. to {@code net.core.rmem_max}), and with {@link
 * ExtendedSocketOptions#IP_DONTFRAGMENT} set so that Linux sends IPv4 datagrams with DF and IP ID
 * 0, the IPv4 header rxe4j rebuilds for the ICRC. If the platform does not support that option, a
 * warning is logged and the transport works without it ({@link #dontFragment()} is then {@code
 * false}). The bind address must be a concrete IP, not the wildcard: a Java socket cannot tell to
 * which local IP a datagram was sent, so the bound IP is what the receiver gets as the recipient.
 *
 * <h2>Threads</h2>
 *
 * <p>By default the transport creates its own event loop group with one thread (NIO or epoll, see {@link Builder#io}) and shuts it
 * down on {@link #close()}; with {@link Builder#eventLoopGroup(EventLoopGroup)} the channel is
 * registered on a caller-supplied group (or single {@link io.netty.channel.EventLoop}) that the
 * caller owns. {@link #scheduler()} is that channel's event loop. Received packets are delivered on
 * it; {@link #send} and {@link #flush} must be called on it. {@link #start}, {@link #close()}, the
 * accessors and the counters are thread-safe. {@link Builder#bind()} and {@link #close()} block
 * (briefly) and must not be called on the channel's event loop, except that {@code close()} on the
 * loop does not wait.
 *
 * <h2>Receive path</h2>
 *
 * <p>Nothing is read from the socket before {@link #start}: datagrams wait in the kernel's
 * receive buffer. Each received datagram is passed to the {@link PacketReceiver} with its sender
 * and this transport's {@link #localAddress()} as the recipient, and released after the receiver
 * returns. An exception thrown by the receiver (other than a {@link VirtualMachineError}) is
 * caught, counted in {@link #receiveErrors()} and logged at debug level. A datagram larger than
 * {@link Builder#maxDatagramBytes(int)} cannot be read whole; it is dropped and counted in {@link
 * #oversizedDropped()}.
 */
public final class UdpTransport implements Transport {

    private static final Logger log = LoggerFactory.getLogger(UdpTransport.class);

    /** The IANA UDP port of RoCEv2, 4791: the default local port. */
    public static final int ROCE_V2_PORT = 4791;

    /** Default {@code SO_RCVBUF} and {@code SO_SNDBUF}: 4 MiB, in bytes. */
    public static final int DEFAULT_SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;

    /**
     * Default largest UDP payload received whole: 16 KiB, in bytes (a RoCEv2 packet of path MTU
     * 4096 is at most about 4.2 KB; this leaves room for jumbo frames).
     */
    public static final int DEFAULT_MAX_DATAGRAM_BYTES = 16 * 1024;

    /** Default number of datagrams one {@code recvmmsg} may return with {@link Io#EPOLL}: 16. */
    public static final int DEFAULT_RECV_BATCH = 16;

    /** The largest possible UDP payload, 65 507 bytes over IPv4 (65 535 − 20 − 8). */
    public static final int MAX_UDP_PAYLOAD_BYTES = 65_507;

    /** The most packets coalesced into one GSO send (the kernel's older {@code UDP_MAX_SEGMENTS}): 64. */
    public static final int GSO_MAX_SEGMENTS = 64;

    /** Read buffer with {@link Builder#gro(boolean)}: one GRO read returns at most 64 KiB. */
    private static final int GRO_READ_BUFFER_BYTES = 64 * 1024;

    private static final long CLOSE_TIMEOUT_SECONDS = 5;

    private final DatagramChannel channel;
    private final Io io;
    private final EventLoopGroup ownGroup;
    private final NettyScheduler scheduler;
    private final InetSocketAddress localAddress;
    private final int maxDatagramBytes;
    private final boolean dontFragment;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder receiveErrors = new LongAdder();
    private final LongAdder channelErrors = new LongAdder();
    private final LongAdder oversized = new LongAdder();
    private final LongAdder received = new LongAdder();
    private final LongAdder sent = new LongAdder();
    private final LongAdder gsoSends = new LongAdder();
    private final LongAdder gsoSegments = new LongAdder();
    private final boolean gso;
    private final boolean gro;
    /** With GSO: packets and peers sent but not yet flushed; touched only on the event loop. */
    private final ArrayList<ByteBuf> pendingPackets;
    private final ArrayList<InetSocketAddress> pendingPeers;
    private volatile PacketReceiver receiver;

    private UdpTransport(Builder b) {
        InetAddress ip = b.bindAddress;
        SocketProtocolFamily family =
                ip instanceof Inet6Address ? SocketProtocolFamily.INET6 : SocketProtocolFamily.INET;
        this.maxDatagramBytes = b.maxDatagramBytes;
        this.io = b.io;
        if (io == Io.EPOLL) {
            ensureEpoll();
        }
        if ((b.gso || b.gro) && io != Io.EPOLL) {
            throw new IllegalStateException("UDP GSO/GRO need io(Io.EPOLL), got " + io);
        }
        if ((b.gso || b.gro) && !isGsoSupported()) {
            throw new IllegalStateException(
                    "UDP GSO/GRO (UDP_SEGMENT) is not supported by this kernel or Netty native library;"
                            + " check UdpTransport.isGsoSupported() and build without gso/gro");
        }
        this.gso = b.gso;
        this.gro = b.gro;
        this.pendingPackets = gso ? new ArrayList<>() : null;
        this.pendingPeers = gso ? new ArrayList<>() : null;
        EventLoopGroup group = b.group;
        this.ownGroup = group == null ? newEventLoopGroup(io, 1, "rxe-udp") : null;
        if (group == null) {
            group = ownGroup;
        }
        DatagramChannel ch = null;
        boolean ok = false;
        try {
            ch = io == Io.EPOLL ? new EpollDatagramChannel(family) : new NioDatagramChannel(family);
            DatagramChannelConfig config = ch.config();
            config.setAutoRead(false);
            config.setAllocator(b.allocator);
            // one byte more than the largest accepted datagram, so that truncation is detectable
            if (ch instanceof EpollDatagramChannel epoll && b.gro) {
                // GRO: recvmsg into a 64 KiB buffer, Netty splits the coalesced datagrams
                if (!epoll.config().setOption(EpollChannelOption.UDP_GRO, Boolean.TRUE)) {
                    throw new IllegalStateException("cannot set UDP_GRO on the socket");
                }
                epoll.config().setMaxDatagramPayloadSize(0);
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator(
                        Math.max(GRO_READ_BUFFER_BYTES, b.maxDatagramBytes + 1)));
            } else if (ch instanceof EpollDatagramChannel epoll) {
                // recvmmsg: each read buffer is cut into recvBatch slots of this size
                epoll.config().setMaxDatagramPayloadSize(b.maxDatagramBytes + 1);
                config.setRecvByteBufAllocator(
                        new FixedRecvByteBufAllocator((b.maxDatagramBytes + 1) * b.recvBatch));
            } else {
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator(b.maxDatagramBytes + 1));
            }
            config.setReceiveBufferSize(b.receiveBufferBytes);
            config.setSendBufferSize(b.sendBufferBytes);
            this.dontFragment = b.dontFragment && setDontFragment(ch, ip);
            ch.pipeline().addLast("rxe-udp", new Handler());
            ChannelFuture reg = group.register(ch).awaitUninterruptibly();
            if (!reg.isSuccess()) {
                throw new IllegalStateException("cannot register UDP channel", reg.cause());
            }
            InetSocketAddress requested = new InetSocketAddress(ip, b.port);
            ChannelFuture bind = ch.bind(requested).awaitUninterruptibly();
            if (!bind.isSuccess()) {
                Throwable cause = bind.cause();
                IOException io = new IOException("cannot bind UDP socket to " + requested + ": " + cause, cause);
                throw new UncheckedIOException(io);
            }
            this.channel = ch;
            this.localAddress = ch.localAddress();
            this.scheduler = new NettyScheduler(ch.eventLoop());
            if (log.isDebugEnabled()) {
                log.debug(
                        "UDP transport ({}) bound to {} (SO_RCVBUF {} B, SO_SNDBUF {} B, DF {})",
                        io,
                        localAddress,
                        config.getReceiveBufferSize(),
                        config.getSendBufferSize(),
                        dontFragment);
            }
            ok = true;
        } finally {
            if (!ok) {
                if (ch != null) {
                    ch.close().awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                }
                if (ownGroup != null) {
                    ownGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS)
                            .awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                }
            }
        }
    }

    // <netinet/in.h>, <linux/in6.h>: the options behind the JDK's IP_DONTFRAGMENT on Linux
    private static final int IPPROTO_IP = 0;
    private static final int IP_MTU_DISCOVER = 10;
    private static final int IPPROTO_IPV6 = 41;
    private static final int IPV6_MTU_DISCOVER = 23;
    private static final int PMTUDISC_DO = 2;

    private static boolean setDontFragment(DatagramChannel ch, InetAddress ip) {
        String problem;
        try {
            boolean set;
            if (ch instanceof EpollDatagramChannel) {
                IntegerUnixChannelOption option = ip instanceof Inet6Address
                        ? new IntegerUnixChannelOption("IPV6_MTU_DISCOVER", IPPROTO_IPV6, IPV6_MTU_DISCOVER)
                        : new IntegerUnixChannelOption("IP_MTU_DISCOVER", IPPROTO_IP, IP_MTU_DISCOVER);
                set = ch.config().setOption(option, PMTUDISC_DO);
            } else {
                ChannelOption<Boolean> option = NioChannelOption.of(ExtendedSocketOptions.IP_DONTFRAGMENT);
                set = ch.config().setOption(option, Boolean.TRUE);
            }
            if (set) {
                return true;
            }
            problem = "not supported by this platform";
        } catch (ChannelException | UnsupportedOperationException e) {
            problem = e.toString();
        }
        log.warn(
                "cannot set IP_DONTFRAGMENT on the UDP socket for {} ({}); IPv4 packets may carry a"
                        + " non-zero IP ID, so kernel rdma_rxe peers may reject their ICRC",
                ip,
                problem);
        return false;
    }

    /** The channel implementation: portable NIO, or Linux native epoll. */
    public enum Io {
        /** {@code NioDatagramChannel} on a {@code NioIoHandler} loop (default; every platform). */
        NIO,
        /**
         * {@code EpollDatagramChannel} on an {@code EpollIoHandler} loop, with {@code recvmmsg}
         * batching (Linux x86_64; needs {@code --enable-native-access=ALL-UNNAMED} on JDK 22+).
         */
        EPOLL;

        /**
         * @param name {@code nio} or {@code epoll}, case-insensitive
         * @return the constant
         * @throws IllegalArgumentException for another name
         */
        public static Io parse(String name) {
            for (Io v : values()) {
                if (v.name().equalsIgnoreCase(name)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("I/O must be nio or epoll, got '" + name + "'");
        }
    }

    /**
     * @return whether Netty's native epoll transport can be used in this JVM
     */
    public static boolean isEpollAvailable() {
        return Epoll.isAvailable();
    }

    /**
     * @throws IllegalStateException naming {@link Epoll#unavailabilityCause()} if epoll cannot be used
     */
    public static void ensureEpoll() {
        if (!Epoll.isAvailable()) {
            Throwable cause = Epoll.unavailabilityCause();
            throw new IllegalStateException(
                    "Netty native epoll is unavailable (" + cause + "); it needs Linux x86_64, "
                            + "io.netty:netty-transport-native-epoll:linux-x86_64 on the class path and, "
                            + "on JDK 22+, --enable-native-access=ALL-UNNAMED; use NIO instead",
                    cause);
        }
    }

    /**
     * Creates an event loop group of the kind a channel of {@code io} needs (for {@link
     * Builder#eventLoopGroup}, or for other channels sharing the same settings). The caller shuts
     * it down.
     *
     * @param io NIO or EPOLL
     * @param threads number of loop threads, {@code >= 1}
     * @param threadName prefix of the thread names
     * @return the group
     * @throws IllegalStateException for EPOLL when epoll is unavailable (see {@link #ensureEpoll()})
     */
    public static EventLoopGroup newEventLoopGroup(Io io, int threads, String threadName) {
        IoHandlerFactory factory;
        if (io == Io.EPOLL) {
            ensureEpoll();
            factory = EpollIoHandler.newFactory();
        } else {
            factory = NioIoHandler.newFactory();
        }
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(threadName), factory);
    }

    /**
     * @return whether UDP GSO ({@code UDP_SEGMENT}, Netty's {@code SegmentedDatagramPacket}) and
     *     so {@link Builder#gso(boolean)} / {@link Builder#gro(boolean)} can be used: epoll is
     *     available and the kernel supports it
     */
    public static boolean isGsoSupported() {
        return Epoll.isAvailable() && EpollDatagramChannel.isSegmentedDatagramPacketSupported();
    }

    /** @return whether {@link #send} packets are coalesced with UDP GSO on {@link #flush} */
    public boolean gso() {
        return gso;
    }

    /** @return whether {@code UDP_GRO} is set on the socket */
    public boolean gro() {
        return gro;
    }

    /** @return the channel implementation in use */
    public Io io() {
        return io;
    }

    /**
     * Starts a builder.
     *
     * @param bindAddress the concrete local IP to bind (IPv4 or IPv6; not the wildcard address)
     * @return a builder with the default settings: port {@link #ROCE_V2_PORT}, 4 MiB socket
     *     buffers, {@link #DEFAULT_MAX_DATAGRAM_BYTES}, don't-fragment on, an own one-thread NIO
     *     event loop, {@link ByteBufAllocator#DEFAULT}
     * @throws IllegalArgumentException if {@code bindAddress} is a wildcard address
     * @throws NullPointerException if {@code bindAddress} is {@code null}
     */
    public static Builder builder(InetAddress bindAddress) {
        return new Builder(bindAddress);
    }

    /**
     * Binds a transport with default settings to {@code address}.
     *
     * @param address the concrete local (IP, UDP port); port 0 picks an ephemeral port
     * @return the bound transport, not yet started
     * @throws UncheckedIOException if the socket cannot be bound (e.g. the port is in use)
     * @throws IllegalArgumentException if the address is unresolved or a wildcard address
     * @throws NullPointerException if {@code address} is {@code null}
     */
    public static UdpTransport bind(InetSocketAddress address) {
        Objects.requireNonNull(address, "address");
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("unresolved address: " + address);
        }
        return builder(address.getAddress()).port(address.getPort()).bind();
    }

    /**
     * {@inheritDoc}
     *
     * <p>The actual bound address: with port 0 requested, it carries the ephemeral port chosen by
     * the kernel.
     */
    @Override
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    /** @return the adapter over the channel's event loop. */
    @Override
    public NettyScheduler scheduler() {
        return scheduler;
    }

    /** @return the channel's allocator (by default {@link ByteBufAllocator#DEFAULT}, pooled). */
    @Override
    public ByteBufAllocator allocator() {
        return channel.alloc();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Turns reading on: datagrams queued in the kernel since the bind are delivered too.
     * Thread-safe.
     *
     * @throws IllegalStateException if already started, or closed
     * @throws NullPointerException if {@code receiver} is {@code null}
     */
    @Override
    public void start(PacketReceiver receiver) {
        Objects.requireNonNull(receiver, "receiver");
        if (closed.get()) {
            throw new IllegalStateException("transport closed: " + localAddress);
        }
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("transport already started: " + localAddress);
        }
        this.receiver = receiver;
        channel.config().setAutoRead(true);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Writes one datagram with {@code packet}'s readable bytes as the UDP payload, without
     * flushing. A failed write (for example a datagram larger than the path MTU, which
     * don't-fragment forbids splitting) is counted in {@link #channelErrors()} and logged at debug
     * level. After {@link #close()} the packet is released and dropped silently.
     *
     * @throws IllegalStateException if not {@linkplain #start started} (the packet is released
     *     first)
     * @throws NullPointerException if an argument is {@code null} (a non-null packet is released
     *     first)
     */
    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        Objects.requireNonNull(packet, "packet");
        if (peer == null) {
            packet.release();
            throw new NullPointerException("peer");
        }
        if (!started.get()) {
            packet.release();
            throw new IllegalStateException("send before start on " + localAddress);
        }
        if (closed.get()) {
            packet.release();
            return;
        }
        sent.increment();
        if (gso) {
            pendingPackets.add(packet);
            pendingPeers.add(peer);
            return;
        }
        channel.write(new DatagramPacket(packet, peer), channel.voidPromise());
    }

    /**
     * {@inheritDoc}
     *
     * <p>With {@link Builder#gso(boolean)}, first writes the pending packets in order, runs of
     * equally sized packets to one peer as GSO sends (see {@link UdpTransport}).
     */
    @Override
    public void flush() {
        if (gso && !pendingPackets.isEmpty()) {
            writePending();
        }
        channel.flush();
    }

    /** Writes the pending packets, coalescing runs into GSO sends. On the event loop. */
    private void writePending() {
        ArrayList<ByteBuf> packets = pendingPackets;
        ArrayList<InetSocketAddress> peers = pendingPeers;
        int n = packets.size();
        int i = 0;
        try {
            while (i < n) {
                ByteBuf first = packets.get(i);
                InetSocketAddress peer = peers.get(i);
                int size = first.readableBytes();
                int end = i + 1; // exclusive end of the run
                int total = size;
                if (size > 0) {
                    while (end < n
                            && end - i < GSO_MAX_SEGMENTS
                            && peer.equals(peers.get(end))) {
                        int s = packets.get(end).readableBytes();
                        if (s > size || s == 0 || total + s > MAX_UDP_PAYLOAD_BYTES) {
                            break;
                        }
                        total += s;
                        end++;
                        if (s < size) {
                            break; // a shorter packet can only end a run
                        }
                    }
                }
                if (end - i == 1) {
                    channel.write(new DatagramPacket(first, peer), channel.voidPromise());
                } else {
                    // one contiguous direct buffer: measured as cheap as a CompositeByteBuf (the
                    // copy is ~1 µs of a ~19 µs 64 KiB flush) and independent of heap/direct inputs
                    ByteBuf content = channel.alloc().directBuffer(total);
                    try {
                        for (int k = i; k < end; k++) {
                            ByteBuf p = packets.get(k);
                            content.writeBytes(p, p.readerIndex(), p.readableBytes());
                        }
                    } catch (RuntimeException e) {
                        content.release();
                        throw e;
                    }
                    for (int k = i; k < end; k++) {
                        packets.set(k, null).release();
                    }
                    gsoSends.increment();
                    gsoSegments.add(end - i);
                    channel.write(new SegmentedDatagramPacket(content, size, peer), channel.voidPromise());
                }
                packets.set(i, null);
                i = end;
            }
        } finally {
            // on an exception, release what was not handed to the channel
            for (int k = i; k < n; k++) {
                ByteBuf p = packets.get(k);
                if (p != null) {
                    p.release();
                }
            }
            packets.clear();
            peers.clear();
        }
    }

    /** Releases packets sent but not flushed (GSO). On the event loop. */
    private void releasePending() {
        if (gso) {
            for (ByteBuf p : pendingPackets) {
                p.release();
            }
            pendingPackets.clear();
            pendingPeers.clear();
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Closes the channel and, if the transport created its event loop group, shuts the group
     * down gracefully. Unless called on the channel's event loop, waits up to 5 seconds for each.
     * Packets queued but not flushed are released by Netty. Thread-safe; idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        boolean inLoop = channel.eventLoop().inEventLoop();
        if (gso) {
            if (inLoop) {
                releasePending();
            } else {
                try {
                    channel.eventLoop().execute(this::releasePending);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    log.debug("{}: event loop gone, {} unflushed packets not released", localAddress, e);
                }
            }
        }
        ChannelFuture closeFuture = channel.close();
        if (!inLoop) {
            closeFuture.awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        if (ownGroup != null) {
            var terminated = ownGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            if (!inLoop) {
                terminated.awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    /** @return whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    /** @return whether {@code IP_DONTFRAGMENT} is set on the socket. */
    public boolean dontFragment() {
        return dontFragment;
    }

    /** @return the largest UDP payload, in bytes, that is received whole. */
    public int maxDatagramBytes() {
        return maxDatagramBytes;
    }

    /** @return the {@code SO_RCVBUF} the kernel granted, in bytes. */
    public int receiveBufferBytes() {
        return channel.config().getReceiveBufferSize();
    }

    /** @return the {@code SO_SNDBUF} the kernel granted, in bytes. */
    public int sendBufferBytes() {
        return channel.config().getSendBufferSize();
    }

    /** @return the number of exceptions thrown by the receiver (each caught and logged). */
    public long receiveErrors() {
        return receiveErrors.sum();
    }

    /** @return the number of channel I/O errors (failed writes, read errors). */
    public long channelErrors() {
        return channelErrors.sum();
    }

    /** @return the number of datagrams dropped because they exceeded {@link #maxDatagramBytes()}. */
    public long oversizedDropped() {
        return oversized.sum();
    }

    /** @return the number of datagrams handed to the receiver. */
    public long packetsReceived() {
        return received.sum();
    }

    /** @return the number of packets accepted by {@link #send} (written or failed). */
    public long packetsSent() {
        return sent.sum();
    }

    /** @return with {@link Builder#gso(boolean)}: the number of GSO sends (runs of ≥ 2 packets) written */
    public long gsoSends() {
        return gsoSends.sum();
    }

    /** @return with {@link Builder#gso(boolean)}: the number of packets sent inside GSO sends */
    public long gsoSegments() {
        return gsoSegments.sum();
    }

    @Override
    public String toString() {
        return "UdpTransport[" + localAddress + (closed.get() ? ", closed" : "") + "]";
    }

    /** The channel's only handler: delivers datagrams, counts errors. Runs on the event loop. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof DatagramPacket datagram)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            try {
                ByteBuf content = datagram.content();
                if (content.readableBytes() > maxDatagramBytes) {
                    oversized.increment();
                    log.debug("{}: dropped a datagram from {} larger than {} bytes",
                            localAddress, datagram.sender(), maxDatagramBytes);
                    return;
                }
                PacketReceiver r = receiver;
                if (r == null) {
                    return; // cannot happen: reading starts only after start()
                }
                received.increment();
                r.onPacket(content, datagram.sender(), localAddress);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                receiveErrors.increment();
                log.debug("{}: receiver threw on a packet from {}", localAddress, datagram.sender(), e);
            } finally {
                datagram.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            channelErrors.increment();
            log.debug("{}: UDP channel error", localAddress, cause);
        }
    }

    /** Settings of a {@link UdpTransport}; {@link #bind()} creates it. Not thread-safe. */
    public static final class Builder {
        private final InetAddress bindAddress;
        private int port = ROCE_V2_PORT;
        private int receiveBufferBytes = DEFAULT_SOCKET_BUFFER_BYTES;
        private int sendBufferBytes = DEFAULT_SOCKET_BUFFER_BYTES;
        private int maxDatagramBytes = DEFAULT_MAX_DATAGRAM_BYTES;
        private boolean dontFragment = true;
        private EventLoopGroup group;
        private ByteBufAllocator allocator = ByteBufAllocator.DEFAULT;
        private Io io = Io.NIO;
        private int recvBatch = DEFAULT_RECV_BATCH;
        private boolean gso;
        private boolean gro;

        private Builder(InetAddress bindAddress) {
            Objects.requireNonNull(bindAddress, "bindAddress");
            if (bindAddress.isAnyLocalAddress()) {
                throw new IllegalArgumentException(
                        "bind address must be a concrete IP, not the wildcard " + bindAddress);
            }
            this.bindAddress = bindAddress;
        }

        /**
         * @param port local UDP port, 0..65535; 0 picks an ephemeral port. Default {@link
         *     #ROCE_V2_PORT}.
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port out of range: " + port);
            }
            this.port = port;
            return this;
        }

        /**
         * @param bytes requested {@code SO_RCVBUF} in bytes, {@code > 0}; default 4 MiB
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes <= 0}
         */
        public Builder receiveBufferBytes(int bytes) {
            this.receiveBufferBytes = positive(bytes, "receiveBufferBytes");
            return this;
        }

        /**
         * @param bytes requested {@code SO_SNDBUF} in bytes, {@code > 0}; default 4 MiB
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes <= 0}
         */
        public Builder sendBufferBytes(int bytes) {
            this.sendBufferBytes = positive(bytes, "sendBufferBytes");
            return this;
        }

        /**
         * @param bytes the largest UDP payload received whole, in bytes, 1..{@link
         *     #MAX_UDP_PAYLOAD_BYTES}; larger datagrams are dropped and counted. Each read
         *     allocates a buffer of this size plus one byte. Default {@link
         *     #DEFAULT_MAX_DATAGRAM_BYTES}.
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder maxDatagramBytes(int bytes) {
            if (bytes <= 0 || bytes > MAX_UDP_PAYLOAD_BYTES) {
                throw new IllegalArgumentException("maxDatagramBytes out of range: " + bytes);
            }
            this.maxDatagramBytes = bytes;
            return this;
        }

        /**
         * @param enabled whether to set {@code IP_DONTFRAGMENT} (default {@code true}; needed for
         *     interoperable IPv4 ICRCs, see {@link UdpTransport})
         * @return this builder
         */
        public Builder dontFragment(boolean enabled) {
            this.dontFragment = enabled;
            return this;
        }

        /**
         * @param group a caller-owned event loop group of the builder's {@link #io(Io)} kind or single event loop to
         *     register the channel on (not shut down by the transport), or {@code null} (the
         *     default) for an own group of one thread
         * @return this builder
         */
        public Builder eventLoopGroup(EventLoopGroup group) {
            this.group = group;
            return this;
        }

        /**
         * @param io the channel implementation, {@link Io#NIO} (default) or {@link Io#EPOLL}; with
         *     a caller-supplied {@link #eventLoopGroup} the group must be of the same kind (see
         *     {@link UdpTransport#newEventLoopGroup})
         * @return this builder
         * @throws NullPointerException if {@code io} is {@code null}
         */
        public Builder io(Io io) {
            this.io = Objects.requireNonNull(io, "io");
            return this;
        }

        /**
         * @param datagrams with {@link Io#EPOLL}: how many datagrams one {@code recvmmsg} call
         *     may return, 1..1024 (1 turns recvmmsg off); each read buffer is {@code datagrams ×
         *     (maxDatagramBytes + 1)} bytes. Ignored with NIO. Default {@link #DEFAULT_RECV_BATCH}.
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder recvBatch(int datagrams) {
            if (datagrams < 1 || datagrams > 1024) {
                throw new IllegalArgumentException("recvBatch out of range 1..1024: " + datagrams);
            }
            this.recvBatch = datagrams;
            return this;
        }

        /**
         * @param enabled whether {@link UdpTransport#send} queues packets and {@link
         *     UdpTransport#flush} coalesces runs of equally sized packets to one peer into UDP GSO
         *     sends (see {@link UdpTransport}); default {@code false}. Needs {@link Io#EPOLL} and
         *     kernel support ({@link UdpTransport#isGsoSupported()}); otherwise {@link #bind()}
         *     throws an {@link IllegalStateException} (no silent fallback).
         * @return this builder
         */
        public Builder gso(boolean enabled) {
            this.gso = enabled;
            return this;
        }

        /**
         * @param enabled whether to set {@code UDP_GRO} on the socket (see {@link UdpTransport});
         *     default {@code false}. Each datagram is still delivered as one packet. Needs {@link
         *     Io#EPOLL} and {@link UdpTransport#isGsoSupported()}, else {@link #bind()} throws an
         *     {@link IllegalStateException}. Reads then use one 64 KiB buffer ({@link
         *     #recvBatch(int)} is ignored).
         * @return this builder
         */
        public Builder gro(boolean enabled) {
            this.gro = enabled;
            return this;
        }

        /**
         * @param allocator the channel's allocator, used for received and outgoing packets;
         *     default {@link ByteBufAllocator#DEFAULT}
         * @return this builder
         * @throws NullPointerException if {@code allocator} is {@code null}
         */
        public Builder allocator(ByteBufAllocator allocator) {
            this.allocator = Objects.requireNonNull(allocator, "allocator");
            return this;
        }

        /**
         * Opens and binds the socket. Blocks until bound; must not be called on the event loop the
         * channel is registered on.
         *
         * @return the bound transport, not yet started
         * @throws UncheckedIOException if the socket cannot be bound (e.g. the port is in use, or
         *     the IP is not local)
         * @throws IllegalStateException if the channel cannot be registered on the event loop
         */
        public UdpTransport bind() {
            return new UdpTransport(this);
        }

        private static int positive(int v, String name) {
            if (v <= 0) {
                throw new IllegalArgumentException(name + " <= 0: " + v);
            }
            return v;
        }
    }
}
