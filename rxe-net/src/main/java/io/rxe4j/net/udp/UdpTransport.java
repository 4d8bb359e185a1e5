package io.rxe4j.net.udp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.ChannelException;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.SegmentedDatagramPacket;
import io.netty.channel.unix.UnixChannelOption;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.DatagramChannelConfig;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.channel.socket.nio.NioChannelOption;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.util.IntSupplier;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.rxe4j.verbs.spi.DatagramTooLargeException;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.net.NettyScheduler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import jdk.net.ExtendedSocketOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * RoCEv2 over UDP: a Netty datagram channel bound to one concrete local (IP, UDP port), on Linux
 * native epoll where it loads, else NIO, or, asked for, io_uring ({@link Builder#io(Io)}); an IPv6
 * socket uses epoll whenever it can (see "IPv6 and zero UDP checksums").
 *
 * <h2>I/O: NIO, epoll or io_uring</h2>
 *
 * <p>{@link Io#IO_URING} is never chosen by default: on the 2-vCPU host of {@code
 * docs/performance.md} it is slower than epoll, raw UDP included. It has epoll's socket options
 * (DF, {@code UDP_NO_CHECK6_RX}, {@code SO_REUSEPORT} and the QPN steering program) and GSO, but no
 * GRO and no {@link LoopIdle} other than BLOCK.
 *
 * <h2>Defaults: the fastest path the host supports</h2>
 *
 * <p>A builder that does not choose gets {@link Io#EPOLL} with UDP GRO, and over IPv6 also UDP GSO,
 * where Netty's native epoll loads and the kernel has {@code UDP_SEGMENT} (Linux 4.18+; GRO 5.0+),
 * and {@link Io#NIO} without them elsewhere. GSO stays off over IPv4 unless asked for: the kernel
 * gives the segments of one GSO send the IP IDs 0, 1, 2, …, the RoCEv2 ICRC covers the IPv4 ID,
 * and so a kernel {@code rdma_rxe} peer or a RoCE NIC drops every segment after the first (seen
 * against Linux 6.12: a 4-packet SEND arrived one retransmission at a time). rxe4j peers accept
 * such segments only because a UDP socket cannot see the ID; an explicit {@code gso(true)} over
 * IPv4 logs that once at WARN. The fallback is logged once at INFO with its cause. {@link #io()}, {@link
 * #gso()} and {@link #gro()} tell which path a socket uses, and the counters {@link #gsoSends()},
 * {@link #gsoSegments()} and {@link #packetsSent()} how many packets went out in GSO trains. A
 * feature asked for explicitly and not available is an error, never a silent fallback.
 *
 * <p>{@link Io#NIO} uses {@link NioDatagramChannel} and works everywhere, except
 * that an IPv6 socket is switched to epoll when possible (below). {@link
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
 * Epoll#unavailabilityCause()}. {@link #io()} reports the implementation really in use.
 *
 * <h2>IPv6 and zero UDP checksums</h2>
 *
 * <p>Linux kernel {@code rdma_rxe} sends RoCEv2 over IPv6 with UDP checksum 0 (the ICRC protects
 * the packet). RFC 8200 §8.1 tells IPv6 receivers to discard such datagrams, and a Linux UDP
 * socket drops them (counted in {@code Udp6InCsumErrors} of {@code /proc/net/snmp6}) unless the
 * socket option {@code UDP_NO_CHECK6_RX} (level {@code SOL_UDP} 17, option 102, Linux 3.16+) is
 * set. The JDK's {@code DatagramChannel} cannot set it; Netty's epoll channel can. Therefore, for
 * an IPv6 bind address:
 *
 * <ul>
 *   <li>with {@link Io#EPOLL}, the option is set on the socket;
 *   <li>with {@link Io#NIO} asked for explicitly and epoll available, the transport uses an {@link
 *       EpollDatagramChannel} (and, unless a group is supplied, an epoll event loop) instead and
 *       sets the option; this is logged once per JVM at INFO level, and {@link #io()} returns
 *       {@link Io#EPOLL}. Checking whether epoll is available loads the native library, so the
 *       JVM flag above applies to IPv6 NIO transports too;
 *   <li>with {@link Io#NIO} and epoll unavailable (not Linux x86_64, or the native library cannot
 *       be loaded), or a caller-supplied {@link Builder#eventLoopGroup} that is not an epoll group,
 *       the transport stays on NIO and logs a WARN: zero-checksum datagrams from kernel peers are
 *       then dropped by the kernel before rxe4j sees them.
 * </ul>
 *
 * <p>If the option cannot be set on an epoll socket, {@link Builder#bind()} throws an {@link
 * IllegalStateException}. {@link #acceptsZeroChecksum()} tells whether the socket accepts
 * zero-checksum datagrams. IPv4 needs no option: there a zero UDP checksum means "no checksum" and
 * every datagram is accepted. rxe4j itself always sends a real UDP checksum.
 *
 * <h2>Direct sends (epoll; on by default with native access)</h2>
 *
 * <p>Over epoll the datagrams do not go through Netty's channel: {@link #send} (or, with GSO,
 * {@link #flush}) adds each to a batch of at most 64, and the batch goes to the kernel in one
 * {@code sendmmsg(2)} call made by the transport itself on the channel's socket (the JDK's foreign
 * function API; {@link Builder#directSend(boolean)}, {@link #directSend()}): when it is full and at
 * {@link #flush}. A datagram then costs no {@code DatagramPacket} envelope, write promise,
 * outbound-buffer entry or pipeline pass, and the packet is released as soon as the kernel has it.
 * The bytes on the wire are the same. A refused datagram is reported as a refused channel write is
 * (below); when the socket's send buffer is full ({@code EAGAIN}), that datagram and the rest of its
 * batch go to the channel, which sends them once the socket has room, and later datagrams follow
 * them through the channel until it holds none, so that nothing overtakes. Packets held in the
 * batch count for {@link #isWritable()} as unflushed packets held in the channel do. Needs {@code
 * --enable-native-access} for rxe-net (every rxe4j launcher passes {@code ALL-UNNAMED}); without it
 * the transport uses the channel and logs why once at INFO.
 *
 * <h2>UDP GSO and GRO (epoll; on by default where supported)</h2>
 *
 * <p>With {@link Builder#gso(boolean)} (epoll only) {@link #send} does not write: it appends the
 * packet to a pending list, and {@link #flush} walks the list in order, coalescing each maximal run
 * of consecutive packets to the same peer whose sizes equal the run's first packet (the run's last
 * packet may be shorter) into one {@code SegmentedDatagramPacket}: one {@code sendmmsg} entry with
 * {@code UDP_SEGMENT}, which the kernel cuts back into one UDP datagram per packet, so the peer
 * receives exactly what one-by-one sends would give. A run holds at most {@link #GSO_MAX_SEGMENTS}
 * packets and {@link #MAX_UDP_PAYLOAD_BYTES} bytes. Packets built in the buffers {@link
 * #packetBuffer} hands out (the engine's SEND, WRITE and READ response packets) are built in place,
 * in the slots of a GSO train, so that a run costs no copy; other packets of a run are copied into
 * one buffer from the channel's allocator (cheaper here than a {@code CompositeByteBuf}, see {@code
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
 * bind address (IPv4 or IPv6), with {@code SO_RCVBUF} requested as 64 MiB and {@code SO_SNDBUF} as 4 MiB by default
 * (the kernel may clamp them, e.g. to {@code net.core.rmem_max}), and with {@link
 * ExtendedSocketOptions#IP_DONTFRAGMENT} set so that Linux sends IPv4 datagrams with DF and IP ID
 * 0, the IPv4 header rxe4j rebuilds for the ICRC. If the platform does not support that option, a
 * warning is logged and the transport works without it ({@link #dontFragment()} is then {@code
 * false}). The bind address must be a concrete IP, not the wildcard: a Java socket cannot tell to
 * which local IP a datagram was sent, so the bound IP is what the receiver gets as the recipient.
 *
 * <h2>Threads</h2>
 *
 * <p>By default the transport creates its own event loop group with one daemon thread (NIO or
 * epoll, see {@link Builder#io}; daemon, so that a program that forgets {@link #close()} can still
 * exit) and shuts it down on {@link #close()}; with {@link
 * Builder#eventLoopGroup(EventLoopGroup)} the channel is registered on a caller-supplied group (or
 * single {@link io.netty.channel.EventLoop}) that the caller owns. {@link #scheduler()} is that
 * channel's event loop. Received packets are delivered on
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
 *
 * <h2>Writability</h2>
 *
 * <p>{@link #isWritable()} follows Netty's write-buffer water marks ({@link
 * Builder#writeBufferWaterMark(int, int)}, default {@link #DEFAULT_WRITE_BUFFER_LOW_WATER_MARK}
 * and {@link #DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK}): the channel turns not writable when the bytes
 * it holds (written but not yet flushed, or flushed but not yet taken by the socket's send buffer,
 * plus Netty's small per-entry overhead) exceed the high-water mark, and writable again when they
 * fall below the low-water mark. With {@link Builder#gso(boolean)} the packets sent but not yet
 * flushed are not in the channel yet; they count too: the transport is not writable while they
 * hold more than the high-water mark in bytes (UDP payload bytes); {@link #flush()} moves them into
 * the channel, which then holds more than the high-water mark too. With {@link
 * Builder#directSend(boolean)} the packets in the direct writer's batch count the same way, and
 * a flush (or a full batch) whose {@code sendmmsg} takes what made the transport not writable calls
 * {@link PacketReceiver#onWritable()} as a channel transition would. When the channel becomes
 * writable again (Netty's {@code channelWritabilityChanged}), the receiver's {@link
 * PacketReceiver#onWritable()} is called from a separate task on the event loop, never from
 * inside {@link #send} or {@link #flush}; it is skipped if the transport is not writable any more
 * by then (a later transition calls it). An exception thrown by {@code onWritable} is handled
 * like one from {@code onPacket}. Over loopback a UDP send never waits for socket buffer space
 * (the datagram is delivered or dropped at once), so there the channel is only not writable while
 * unflushed packets pile up; on a real interface the socket's send buffer can fill.
 */
public final class UdpTransport implements Transport {

    private static final Logger log = LoggerFactory.getLogger(UdpTransport.class);

    /** The IANA UDP port of RoCEv2, 4791: the default local port. */
    public static final int ROCE_V2_PORT = 4791;

    /** Default {@code SO_SNDBUF}: 4 MiB, in bytes. */
    public static final int DEFAULT_SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;

    /**
     * Default {@code SO_RCVBUF} requested: 64 MiB, in bytes, i.e. as large as the system allows (Linux
     * clamps the request to {@code net.core.rmem_max}; {@link #receiveBufferBytes()} reports what
     * was granted, which Linux doubles for its bookkeeping).
     */
    public static final int DEFAULT_RECEIVE_BUFFER_BYTES = 64 * 1024 * 1024;

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

    /**
     * Default low-water mark of the channel's write buffer: 256 KiB, in bytes. Below it a transport
     * that was not writable becomes writable again (see {@link #isWritable()}).
     */
    public static final int DEFAULT_WRITE_BUFFER_LOW_WATER_MARK = 256 * 1024;

    /**
     * Default high-water mark of the channel's write buffer: 1 MiB, in bytes. Above it the
     * transport is not writable (see {@link #isWritable()}).
     */
    public static final int DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK = 1024 * 1024;

    /** Read buffer with {@link Builder#gro(boolean)}: one GRO read returns at most 64 KiB. */
    private static final int GRO_READ_BUFFER_BYTES = 64 * 1024;

    private static final long CLOSE_TIMEOUT_SECONDS = 5;

    // <linux/udp.h>: accept IPv6 datagrams with UDP checksum 0 (Linux 3.16+)
    private static final int SOL_UDP = 17;
    private static final int UDP_NO_CHECK6_RX = 102;
    private static final IntegerUnixChannelOption UDP_NO_CHECK6_RX_OPTION =
            new IntegerUnixChannelOption("UDP_NO_CHECK6_RX", SOL_UDP, UDP_NO_CHECK6_RX);

    /** Whether the INFO "IPv6 uses epoll instead of NIO" was logged (once per JVM). */
    private static final AtomicBoolean IPV6_EPOLL_LOGGED = new AtomicBoolean();
    private static final AtomicBoolean FALLBACK_LOGGED = new AtomicBoolean();
    private static final AtomicBoolean DIRECT_FALLBACK_LOGGED = new AtomicBoolean();
    private static final AtomicBoolean IPV4_GSO_WARNED = new AtomicBoolean();
    private static final AtomicBoolean GRO_FALLBACK_LOGGED = new AtomicBoolean();

    /**
     * The I/O of a builder that did not set one: {@link Io#EPOLL} where Netty's native epoll loads
     * (and the caller's group, if any, is an epoll group), else {@link Io#NIO}.
     */
    private static Io defaultIo(EventLoopGroup group) {
        if (!Epoll.isAvailable()) {
            return Io.NIO;
        }
        if (group instanceof IoEventLoopGroup g && g.isIoType(IoUringIoHandler.class)) {
            return Io.IO_URING; // the caller's io_uring group
        }
        if (group != null && !(group instanceof IoEventLoopGroup g && g.isIoType(EpollIoHandler.class))) {
            return Io.NIO;
        }
        return Io.EPOLL;
    }

    private final DatagramChannel channel;
    /** The reused promises of the channel's writes (one per datagram or GSO send in flight); loop only. */
    private final WritePromise.Pool promises;
    /**
     * With {@link Builder#directSend(boolean)}: the datagrams go to the kernel by our own {@code
     * sendmmsg} call, not through the channel; else null. Event loop only.
     */
    private final SendmmsgWriter direct;
    /** Datagrams were handed to the channel since the last {@link #flush}; event loop only. */
    private boolean channelWrites;
    /**
     * The channel may hold datagrams (the socket was full, or a packet had no native address): the
     * direct writer waits until it holds none, so that datagrams leave in order. Event loop only.
     */
    private boolean channelBacklog;
    /** Datagrams one read batch delivers at most before the loop turns to its tasks (the socket may hold more). */
    private int readBatchDatagrams;
    /** Datagrams of the read batch under way. Loop only. */
    private int batchDatagrams;
    /** Whether the last read batch stopped at {@link #readBatchDatagrams}. Loop only. */
    private boolean receiveBacklogged;
    private final Io io;
    private final EventLoopGroup ownGroup;
    private final NettyScheduler scheduler;
    private final InetSocketAddress localAddress;
    private final int maxDatagramBytes;
    private final boolean dontFragment;
    private final boolean zeroChecksumRx;
    private final int writeBufferLowWaterMark;
    private final int writeBufferHighWaterMark;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder receiveErrors = new LongAdder();
    private final LongAdder channelErrors = new LongAdder();
    private final LongAdder oversized = new LongAdder();
    private final LongAdder received = new LongAdder();
    private final LongAdder sent = new LongAdder();
    private final LongAdder gsoSends = new LongAdder();
    private final LongAdder gsoSegments = new LongAdder();
    private final LongAdder writableNotifications = new LongAdder();
    private final LongAdder sendErrors = new LongAdder();
    /** The link MTU given to the builder, or 0: read the interface's ({@link #linkMtu()}). */
    private final int configuredLinkMtu;
    /** Last MTU read from the interface (-1: none found) and when, for {@link #linkMtu()}. */
    private volatile int interfaceMtu;
    private volatile long interfaceMtuReadAt;
    private final boolean gso;
    private final boolean gro;
    /** With GSO: packets and peers sent but not yet flushed; touched only on the event loop. */
    private final ArrayList<ByteBuf> pendingPackets;
    private final ArrayList<InetSocketAddress> pendingPeers;
    /**
     * With GSO: per entry of {@link #pendingPackets}, 0 for a packet, or the segment size of a GSO
     * train built in place ({@link #packetBuffer}); event loop only.
     */
    private int[] pendingSegments;
    /** With GSO: readable bytes of {@link #pendingPackets} and of the open train; event loop only. */
    private long pendingBytes;
    /**
     * With GSO: the open train, a buffer in which {@link #packetBuffer} hands out consecutive slots
     * and {@link #send} commits them (its writer index is the end of the last packet sent), or null;
     * event loop only.
     */
    private ByteBuf train;
    private InetSocketAddress trainPeer;
    /** The train's segment size (its first packet's length), 0 before its first packet. */
    private int trainSegment;
    private int trainCount;
    /** A shorter packet ended the train: no more slots. */
    private boolean trainEnded;
    /** The slot handed out and not yet sent (or released by the engine without sending), or null. */
    private ByteBuf trainSlot;
    private final LongAdder trainPackets = new LongAdder();
    /** With GSO: train buffers allocated so far (at most {@link #SPARE_TRAINS} are alive); event loop only. */
    private long trainsAllocated;
    /**
     * With GSO: every train buffer but the open one, oldest first, at most {@link #SPARE_TRAINS}
     * (about 2 MiB); each entry holds one reference of its own, and is free for reuse once that is
     * the only one left (the write sent, every slot released). Event loop only.
     */
    private final java.util.ArrayDeque<ByteBuf> spareTrains = new java.util.ArrayDeque<>();
    static final int SPARE_TRAINS = 32;
    /** Where GSO trains come from: pooled, so that {@code retainedSlice} recycles its slot objects. */
    private static final ByteBufAllocator TRAIN_ALLOCATOR = PooledByteBufAllocator.DEFAULT;
    /** An {@link #notifyWritable} task is queued on the event loop; event loop only. */
    private boolean writableTaskQueued;
    private final Runnable writableTask = this::notifyWritable;
    private volatile PacketReceiver receiver;
    /** The reuseport group's cBPF program steers datagrams to sockets by DestQP (see {@link Builder#loops}). */
    private volatile boolean steersByQpn;
    /** Another socket of such a group: it reports no drops of its own (the first reports them all). */
    private final boolean reuseMember;

    private UdpTransport(Builder b) {
        this.reuseMember = b.reusePort && b.steerLanes == 0;
        this.configuredLinkMtu = b.linkMtu;
        InetAddress ip = b.bindAddress;
        SocketProtocolFamily family =
                ip instanceof Inet6Address ? SocketProtocolFamily.INET6 : SocketProtocolFamily.INET;
        this.maxDatagramBytes = b.maxDatagramBytes;
        this.writeBufferLowWaterMark = b.writeBufferLowWaterMark;
        this.writeBufferHighWaterMark = b.writeBufferHighWaterMark;
        Io requestedIo = b.io != null ? b.io : defaultIo(b.group);
        if (requestedIo == Io.EPOLL) {
            ensureEpoll();
        } else if (requestedIo == Io.IO_URING) {
            ensureIoUring();
        }
        boolean wantGso = b.gso != null && b.gso;
        boolean wantGro = b.gro != null && b.gro;
        if (wantGro && requestedIo != Io.EPOLL) {
            throw new IllegalStateException("UDP GRO needs io(Io.EPOLL) (Netty splits GRO reads on epoll only), got "
                    + requestedIo);
        }
        if (b.directSend != null && b.directSend && requestedIo != Io.EPOLL) {
            throw new IllegalStateException("directSend(true) needs io(Io.EPOLL), got " + requestedIo);
        }
        if (wantGso && requestedIo == Io.NIO) {
            throw new IllegalStateException("UDP GSO needs io(Io.EPOLL) or io(Io.IO_URING), got " + requestedIo);
        }
        this.io = chooseIo(requestedIo, ip, b.group);
        if (wantGso && requestedIo == Io.IO_URING && !isGsoSupported(Io.IO_URING)) {
            throw new IllegalStateException("UDP GSO (UDP_SEGMENT) is not supported by this kernel or Netty's io_uring"
                    + " library; build without gso");
        }
        if ((wantGso || wantGro) && requestedIo == Io.EPOLL && !isGsoSupported()) {
            throw new IllegalStateException(
                    "UDP GSO/GRO (UDP_SEGMENT) is not supported by this kernel or Netty native library;"
                            + " check UdpTransport.isGsoSupported() and build without gso/gro");
        }
        // not set: on where the socket can do it (epoll and UDP_SEGMENT), else off (defaultOffloads logs why once)
        boolean offloads = io == Io.EPOLL && isGsoSupported();
        // io_uring: GSO where the kernel has UDP_SEGMENT (by default over IPv6 only, as epoll); no GRO
        boolean uringGso = io == Io.IO_URING && isGsoSupported(Io.IO_URING);
        // GSO only over IPv6 by default: over IPv4 the kernel gives the segments of one GSO send IP IDs
        // 0, 1, 2, ..., and the RoCEv2 ICRC covers the IPv4 ID, so every segment after the first
        // fails the ICRC check of any peer that sees the IP header (kernel rdma_rxe, RoCE NICs)
        boolean ipv4 = !(ip instanceof Inet6Address);
        this.gso = b.gso != null ? b.gso : (offloads || uringGso) && !ipv4;
        boolean groWanted = b.gro != null ? b.gro : offloads;
        boolean groActive = groWanted;
        if (gso && ipv4 && IPV4_GSO_WARNED.compareAndSet(false, true)) {
            log.warn("UDP GSO over IPv4 on {}: the kernel numbers the segments of one send with IP IDs 0, 1, 2, ...,"
                    + " which the RoCEv2 ICRC covers, so peers that check the ICRC against the IP header (kernel"
                    + " rdma_rxe, RoCE NICs) drop every segment after the first; only rxe4j peers, which cannot see the"
                    + " IP ID, accept them (logged once)", ip);
        }
        if ((b.gso == null || b.gro == null) && !offloads && io != Io.IO_URING
                && FALLBACK_LOGGED.compareAndSet(false, true)) {
            log.info("UDP transports run without GSO/GRO: {} (logged once; UdpTransport.gso()/gro() tell per socket)",
                    io != Io.EPOLL ? "they use NIO" + (b.io == null ? ", native epoll is unavailable: "
                            + Epoll.unavailabilityCause() + modulePathHint() : "")
                            : "the kernel or Netty's native library lacks UDP_SEGMENT");
        }
        this.pendingPackets = gso ? new ArrayList<>() : null;
        this.pendingPeers = gso ? new ArrayList<>() : null;
        this.pendingSegments = gso ? new int[64] : null;
        EventLoopGroup group = b.group;
        if (group != null && b.loopIdle != LoopIdle.BLOCK && !b.ownLoops) {
            throw new IllegalArgumentException("loopIdle(" + b.loopIdle + ") applies to the transport's own event loops;"
                    + " create the supplied group with UdpTransport.newEventLoopGroup(io, n, name, idle) instead");
        }
        this.ownGroup = group == null ? newEventLoopGroup(io, 1, "rxe-udp", b.loopIdle) : null;
        if (group == null) {
            group = ownGroup;
        }
        DatagramChannel ch = null;
        boolean ok = false;
        try {
            ch = switch (io) {
                case EPOLL -> new EpollDatagramChannel(family);
                case IO_URING -> new IoUringDatagramChannel(family);
                case NIO -> new NioDatagramChannel(family);
            };
            DatagramChannelConfig config = ch.config();
            config.setAutoRead(false);
            config.setAllocator(b.allocator);
            // one byte more than the largest accepted datagram, so that truncation is detectable
            if (ch instanceof EpollDatagramChannel epoll && groWanted) {
                groActive = setGro(epoll, b.gro == null);
            }
            // a read batch ends when the socket is empty or after readBatchDatagrams datagrams (Netty's
            // maxMessagesPerRead, which a new allocator would otherwise set to 1: over NIO one datagram
            // per pass of the event loop; with GRO it stays one read)
            if (ch instanceof EpollDatagramChannel epoll && groActive) {
                // GRO: recvmsg into a 64 KiB buffer, Netty splits the coalesced datagrams
                epoll.config().setMaxDatagramPayloadSize(0);
                // (one read per batch, which may return a coalesced train)
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator(
                        Math.max(GRO_READ_BUFFER_BYTES, b.maxDatagramBytes + 1)));
                this.readBatchDatagrams = Integer.MAX_VALUE; // one read: a backlog cannot be told from a train
            } else if (ch instanceof EpollDatagramChannel epoll) {
                // recvmmsg: each read buffer is cut into recvBatch slots of this size
                epoll.config().setMaxDatagramPayloadSize(b.maxDatagramBytes + 1);
                this.readBatchDatagrams = b.recvBatch; // one recvmmsg per batch (4 were tried, no measurable gain)
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator((b.maxDatagramBytes + 1) * b.recvBatch)
                        .maxMessagesPerRead(readBatchDatagrams));
            } else if (ch instanceof IoUringDatagramChannel) {
                // io_uring: each read buffer is cut into recvBatch slots, one recvmsg submission each
                config.setOption(IoUringChannelOption.MAX_DATAGRAM_PAYLOAD_SIZE, b.maxDatagramBytes + 1);
                this.readBatchDatagrams = b.recvBatch;
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator((b.maxDatagramBytes + 1) * b.recvBatch)
                        .maxMessagesPerRead(readBatchDatagrams));
            } else {
                this.readBatchDatagrams = DEFAULT_RECV_BATCH;
                config.setRecvByteBufAllocator(new FixedRecvByteBufAllocator(b.maxDatagramBytes + 1)
                        .maxMessagesPerRead(readBatchDatagrams));
            }
            config.setReceiveBufferSize(b.receiveBufferBytes);
            config.setSendBufferSize(b.sendBufferBytes);
            config.setWriteBufferWaterMark(
                    new WriteBufferWaterMark(b.writeBufferLowWaterMark, b.writeBufferHighWaterMark));
            this.dontFragment = b.dontFragment && setDontFragment(ch, ip);
            if (!(ip instanceof Inet6Address)) {
                this.zeroChecksumRx = true; // IPv4: checksum 0 means "none", always accepted
            } else if (isNative(ch)) {
                setNoCheck6Rx(ch, ip);
                this.zeroChecksumRx = true;
            } else {
                this.zeroChecksumRx = false;
            }
            if (b.reusePort) {
                setReusePort(ch);
            }
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
            this.gro = groActive;
            this.channel = ch;
            this.promises = new WritePromise.Pool(ch, this::writeCompleted);
            this.direct = directWriter(b, ch, family);
            this.localAddress = ch.localAddress();
            this.scheduler = new NettyScheduler(ch.eventLoop());
            this.interfaceMtu = readInterfaceMtu(localAddress.getAddress());
            this.interfaceMtuReadAt = System.nanoTime();
            if (log.isDebugEnabled()) {
                log.debug(
                        "UDP transport ({}) bound to {} (SO_RCVBUF {} B, SO_SNDBUF {} B, DF {},"
                                + " zero checksum accepted {})",
                        io,
                        localAddress,
                        config.getReceiveBufferSize(),
                        config.getSendBufferSize(),
                        dontFragment,
                        zeroChecksumRx);
            }
            ok = true;
        } finally {
            if (!ok) {
                if (ch != null && ch.isRegistered()) {
                    ch.close().awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                } else if (ch != null) {
                    ch.unsafe().closeForcibly(); // not registered: close the socket directly
                }
                if (ownGroup != null) {
                    ownGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS)
                            .awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                }
            }
        }
    }

    /**
     * Sets {@code UDP_GRO} (Linux 5.0+; {@code UDP_SEGMENT}, which decides {@link #isGsoSupported()},
     * came in 4.18).
     *
     * @param byDefault GRO was not asked for: a refusal falls back to reads without GRO (logged once)
     * @return whether GRO is on
     * @throws IllegalStateException if GRO was asked for and the socket refuses it
     */
    private static boolean setGro(EpollDatagramChannel ch, boolean byDefault) {
        String problem;
        try {
            if (ch.config().setOption(EpollChannelOption.UDP_GRO, Boolean.TRUE)) {
                return true;
            }
            problem = "not supported";
        } catch (ChannelException | UnsupportedOperationException e) {
            problem = e.toString();
        }
        if (!byDefault) {
            throw new IllegalStateException("cannot set UDP_GRO on the socket (Linux 5.0+): " + problem);
        }
        if (GRO_FALLBACK_LOGGED.compareAndSet(false, true)) {
            log.info("UDP transports read without GRO: the kernel refused UDP_GRO ({}); logged once", problem);
        }
        return false;
    }

    private static void setReusePort(DatagramChannel ch) {
        boolean set;
        try {
            set = ch instanceof EpollDatagramChannel
                    ? ch.config().setOption(EpollChannelOption.SO_REUSEPORT, Boolean.TRUE)
                    : ch instanceof IoUringDatagramChannel
                            ? ch.config().setOption(UnixChannelOption.SO_REUSEPORT, Boolean.TRUE)
                            : ch.config().setOption(NioChannelOption.of(java.net.StandardSocketOptions.SO_REUSEPORT),
                                    Boolean.TRUE);
        } catch (ChannelException | UnsupportedOperationException e) {
            throw new IllegalStateException("cannot set SO_REUSEPORT, which a multi-loop UDP transport needs: " + e, e);
        }
        if (!set) {
            throw new IllegalStateException("SO_REUSEPORT is not supported here; a multi-loop UDP transport needs it"
                    + " (use loops(1))");
        }
    }

    // <asm-generic/socket.h>, <linux/filter.h>
    private static final int SOL_SOCKET = 1;
    private static final int SO_ATTACH_REUSEPORT_CBPF = 51;
    private static final short BPF_LD_W_ABS = 0x20;
    private static final short BPF_ALU_AND_K = 0x54;
    private static final short BPF_ALU_SUB_K = 0x14;
    private static final short BPF_ALU_MOD_K = 0x94;
    private static final short BPF_RET_A = 0x16;

    /**
     * Attaches a classic BPF program to the socket's {@code SO_REUSEPORT} group that picks, for
     * each datagram, the socket {@code (DestQP - 16) % lanes}: the kernel runs it with the packet
     * data at the UDP payload, so it reads BTH bytes 4..7 (big-endian: DW1, whose low 24 bits are
     * DestQP). A result of {@code lanes} or more (never, after the modulo) would fall back to the
     * kernel's hash. This is the lane of the device's QP with that QPN ({@code RxeDevice.createQp}
     * gives lane {@code i} the QPNs with {@code (qpn - 16) % lanes == i}); socket {@code i} of the
     * group is the {@code i}-th bound, which is lane {@code i}. TID RDMA packets carry a KDETH QPN
     * in DestQP and may land on another lane: the device steers those itself. This is the
     * software form of an RNIC's QPN-based receive steering, so that a packet is read on the loop
     * that owns its QP. Epoll only.
     *
     * @return whether the program is attached (failure is logged: the device then steers every
     *     packet itself, which costs a hand-off between loops)
     */
    private static boolean attachQpnSteering(DatagramChannel ch, int lanes) {
        if (!isNative(ch)) {
            return false;
        }
        short[] code = {BPF_LD_W_ABS, BPF_ALU_AND_K, BPF_ALU_SUB_K, BPF_ALU_MOD_K, BPF_RET_A};
        int[] k = {4, 0xFFFFFF, 16, lanes, 0};
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment filter = arena.allocate(8L * code.length, 8);
            java.nio.ByteBuffer f = filter.asByteBuffer().order(java.nio.ByteOrder.nativeOrder());
            for (int i = 0; i < code.length; i++) {
                f.putShort(code[i]).put((byte) 0).put((byte) 0).putInt(k[i]); // struct sock_filter
            }
            java.nio.ByteBuffer prog = java.nio.ByteBuffer.allocateDirect(16).order(java.nio.ByteOrder.nativeOrder());
            prog.putShort(0, (short) code.length).putLong(8, filter.address()); // struct sock_fprog
            boolean set = ch.config().setOption(
                    new io.netty.channel.unix.RawUnixChannelOption("SO_ATTACH_REUSEPORT_CBPF", SOL_SOCKET,
                            SO_ATTACH_REUSEPORT_CBPF, 16), prog);
            if (!set) {
                log.info("UDP {}: SO_ATTACH_REUSEPORT_CBPF not supported; the device steers packets to their QP's loop itself",
                        ch.localAddress());
            }
            return set;
        } catch (ChannelException | UnsupportedOperationException | IllegalArgumentException e) {
            log.info("UDP {}: cannot attach the QPN steering program ({}); the device steers packets to their QP's loop"
                    + " itself", ch.localAddress(), e.toString());
            return false;
        }
    }

    /**
     * @return whether this socket's {@code SO_REUSEPORT} group steers datagrams to sockets by
     *     DestQP in the kernel (the first lane of a multi-loop epoll transport; see {@link
     *     Builder#loops})
     */
    public boolean steersByQpn() {
        return steersByQpn;
    }

    /**
     * {@inheritDoc}
     *
     * @return {@code true}: Netty's {@code channelReadComplete} follows every read batch
     */
    @Override
    public boolean signalsReadComplete() {
        return true;
    }

    /**
     * {@inheritDoc}
     *
     * @return whether the last read batch delivered its maximum of datagrams (one recvmmsg of
     *     {@link Builder#recvBatch(int)} datagrams over epoll, 16 reads over NIO), so that the socket
     *     may hold more; always false with UDP GRO, whose single read per batch may return a
     *     coalesced train (a backlog cannot be told from one)
     */
    @Override
    public boolean receiveBacklogged() {
        return receiveBacklogged;
    }

    /** @return the default number of event loops of {@link Builder#bindLoops()}: the available cores, at most 8 */
    public static int defaultLoops() {
        return Math.max(1, Math.min(8, Runtime.getRuntime().availableProcessors()));
    }

    // <netinet/in.h>, <linux/in6.h>: the options behind the JDK's IP_DONTFRAGMENT on Linux
    private static final int IPPROTO_IP = 0;
    private static final int IP_MTU_DISCOVER = 10;
    private static final int IPPROTO_IPV6 = 41;
    private static final int IPV6_MTU_DISCOVER = 23;
    private static final int PMTUDISC_DO = 2;

    /** @return whether {@code ch} is one of Netty's native Linux channels (epoll, io_uring): Unix socket options work */
    private static boolean isNative(DatagramChannel ch) {
        return ch instanceof EpollDatagramChannel || ch instanceof IoUringDatagramChannel;
    }

    private static boolean setDontFragment(DatagramChannel ch, InetAddress ip) {
        String problem;
        try {
            boolean set;
            if (isNative(ch)) {
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

    /**
     * The implementation really used for {@code requested}: {@link Io#EPOLL} instead of {@link
     * Io#NIO} for an IPv6 socket when epoll can be used (see the class comment), else {@code
     * requested}. Logs the INFO (once per JVM) or the WARN described there.
     */
    private static Io chooseIo(Io requested, InetAddress ip, EventLoopGroup group) {
        if (requested != Io.NIO || !(ip instanceof Inet6Address)) {
            return requested;
        }
        if (!Epoll.isAvailable()) {
            log.warn(
                    "UDP transport on {} uses NIO: native epoll is unavailable ({}), and the JDK cannot set"
                            + " UDP_NO_CHECK6_RX, so IPv6 datagrams with UDP checksum 0, as Linux kernel"
                            + " rdma_rxe peers send them, will be dropped by the kernel{}",
                    ip,
                    String.valueOf(Epoll.unavailabilityCause()), modulePathHint());
            return Io.NIO;
        }
        if (group != null && !(group instanceof IoEventLoopGroup g && g.isIoType(EpollIoHandler.class))) {
            log.warn(
                    "UDP transport on {} uses NIO because the supplied event loop group is not an epoll group;"
                            + " the JDK cannot set UDP_NO_CHECK6_RX, so IPv6 datagrams with UDP checksum 0,"
                            + " as Linux kernel rdma_rxe peers send them, will be dropped by the kernel"
                            + " (use UdpTransport.newEventLoopGroup(Io.EPOLL, ...))",
                    ip);
            return Io.NIO;
        }
        if (IPV6_EPOLL_LOGGED.compareAndSet(false, true)) {
            log.info("IPv6 UDP transports use native epoll instead of the requested NIO: only epoll can set"
                    + " UDP_NO_CHECK6_RX, which accepts datagrams with UDP checksum 0 as Linux kernel rdma_rxe"
                    + " sends them over IPv6 (logged once)");
        }
        return Io.EPOLL;
    }

    /** Sets {@code UDP_NO_CHECK6_RX} on an epoll IPv6 socket, or throws. */
    private static void setNoCheck6Rx(DatagramChannel ch, InetAddress ip) {
        Object problem;
        Throwable cause = null;
        try {
            if (ch.config().setOption(UDP_NO_CHECK6_RX_OPTION, 1)) {
                Integer value = ch.config().getOption(UDP_NO_CHECK6_RX_OPTION);
                if (value != null && value != 0) {
                    return;
                }
                problem = "the option reads back as " + value;
            } else {
                problem = "the channel does not support the option";
            }
        } catch (ChannelException | UnsupportedOperationException e) {
            problem = e;
            cause = e;
        }
        throw new IllegalStateException(
                "cannot set UDP_NO_CHECK6_RX (SOL_UDP 17, option 102) on the IPv6 UDP socket for " + ip + " ("
                        + problem + "); without it the kernel drops datagrams with UDP checksum 0, which Linux"
                        + " kernel rdma_rxe peers send over IPv6 (the option needs Linux 3.16 or later)",
                cause);
    }

    /** The channel implementation: portable NIO, or Linux native epoll. */
    public enum Io {
        /**
         * {@code NioDatagramChannel} on a {@code NioIoHandler} loop (every platform; the default where epoll is unavailable). For an
         * IPv6 bind address the transport uses {@link #EPOLL} instead when it can, see {@link
         * UdpTransport}.
         */
        NIO,
        /**
         * {@code EpollDatagramChannel} on an {@code EpollIoHandler} loop (the default where it loads), with {@code recvmmsg}
         * batching (Linux x86_64; needs {@code --enable-native-access=ALL-UNNAMED} on JDK 22+).
         */
        EPOLL,
        /**
         * {@code IoUringDatagramChannel} on an {@code IoUringIoHandler} loop: reads and writes as
         * io_uring submissions ({@code IORING_OP_RECVMSG}/{@code SENDMSG}, a batch of {@link
         * Builder#recvBatch(int)} receives outstanding), UDP GSO where the kernel has {@code
         * UDP_SEGMENT} (by default over IPv6 only, as with epoll), no GRO, no {@link LoopIdle} other
         * than BLOCK. Never a default: ask for it (Linux 5.9+ x86_64 with io_uring allowed, see
         * {@link UdpTransport#isIoUringAvailable()}; {@code --enable-native-access=ALL-UNNAMED} on
         * JDK 22+). Figures against epoll: {@code docs/performance.md}, "io_uring".
         */
        IO_URING;

        /**
         * @param name {@code nio}, {@code epoll} or {@code io_uring} ({@code iouring} too),
         *     case-insensitive
         * @return the constant
         * @throws IllegalArgumentException for another name
         */
        public static Io parse(String name) {
            String n = name == null ? "" : name.replace("-", "_");
            if (n.equalsIgnoreCase("iouring")) {
                return IO_URING;
            }
            for (Io v : values()) {
                if (v.name().equalsIgnoreCase(n)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("I/O must be nio, epoll or io_uring, got '" + name + "'");
        }
    }

    /**
     * The fix to add to a message about unavailable epoll when rxe4j runs as a named module (on the
     * module path), else an empty string. There Netty's JNI library comes from the module {@code
     * io.netty.transport.epoll.linux.x86_64} (which {@code io.rxe4j.net} requires, so that it is
     * resolved at all), and native access is granted per module.
     */
    static String modulePathHint() {
        if (!UdpTransport.class.getModule().isNamed()) {
            return "";
        }
        return " (on the module path: netty-transport-native-epoll-<version>-linux-x86_64.jar, module"
                + " io.netty.transport.epoll.linux.x86_64, must be on it, and the JVM needs"
                + " --enable-native-access=io.rxe4j.core,io.netty.common; see docs/architecture.md, \"The module path\")";
    }

    /**
     * @return whether Netty's native epoll transport can be used in this JVM
     */
    public static boolean isEpollAvailable() {
        return Epoll.isAvailable();
    }

    /**
     * @return whether Netty's io_uring transport can be used in this JVM (Linux 5.9+ x86_64, the JNI
     *     library loads, and the kernel allows io_uring: {@code /proc/sys/kernel/io_uring_disabled} 0,
     *     no seccomp filter refusing {@code io_uring_setup})
     */
    public static boolean isIoUringAvailable() {
        return IoUring.isAvailable();
    }

    /**
     * @throws IllegalStateException naming {@link IoUring#unavailabilityCause()} if io_uring cannot be used
     */
    public static void ensureIoUring() {
        if (!IoUring.isAvailable()) {
            Throwable cause = IoUring.unavailabilityCause();
            throw new IllegalStateException(
                    "Netty io_uring is unavailable (" + cause + "); it needs Linux 5.9+ x86_64 with io_uring allowed"
                            + " (/proc/sys/kernel/io_uring_disabled 0, no seccomp filter refusing it),"
                            + " io.netty:netty-transport-native-io_uring:linux-x86_64 on the class path and, on JDK 22+,"
                            + " --enable-native-access=ALL-UNNAMED; use EPOLL or NIO instead",
                    cause);
        }
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
                            + "on JDK 22+, --enable-native-access=ALL-UNNAMED; use NIO instead" + modulePathHint(),
                    cause);
        }
    }

    /**
     * Creates an event loop group of the kind a channel of {@code io} needs (for {@link
     * Builder#eventLoopGroup}, or for other channels sharing the same settings). Its threads are
     * daemon threads. The caller shuts it down.
     *
     * @param io NIO, EPOLL or IO_URING
     * @param threads number of loop threads, {@code >= 1}
     * @param threadName prefix of the thread names
     * @return the group
     * @throws IllegalStateException for EPOLL when epoll is unavailable (see {@link #ensureEpoll()}),
     *     for IO_URING when io_uring is (see {@link #ensureIoUring()})
     */
    public static EventLoopGroup newEventLoopGroup(Io io, int threads, String threadName) {
        return newEventLoopGroup(io, threads, threadName, LoopIdle.BLOCK);
    }

    /**
     * As {@link #newEventLoopGroup(Io, int, String)}, with the loops waiting for I/O as {@code idle}
     * says.
     *
     * @param idle how an idle loop waits ({@link LoopIdle})
     * @return the group
     * @throws IllegalStateException for EPOLL when epoll is unavailable, for IO_URING when io_uring is
     * @throws IllegalArgumentException for IO_URING with an {@code idle} other than BLOCK
     */
    public static EventLoopGroup newEventLoopGroup(Io io, int threads, String threadName, LoopIdle idle) {
        Objects.requireNonNull(idle, "idle");
        SelectStrategyFactory strategy = idle == LoopIdle.BLOCK
                ? DefaultSelectStrategyFactory.INSTANCE : () -> new PollingSelectStrategy(idle);
        IoHandlerFactory factory;
        if (io == Io.EPOLL) {
            ensureEpoll();
            factory = EpollIoHandler.newFactory(0, strategy);
        } else if (io == Io.IO_URING) {
            ensureIoUring();
            if (idle != LoopIdle.BLOCK) {
                throw new IllegalArgumentException("loopIdle(" + idle + ") needs NIO or EPOLL loops (a select"
                        + " strategy); io_uring loops wait in io_uring_enter: use LoopIdle.BLOCK");
            }
            factory = IoUringIoHandler.newFactory();
        } else {
            factory = NioIoHandler.newFactory(java.nio.channels.spi.SelectorProvider.provider(), strategy);
        }
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(threadName, true), factory);
    }

    /**
     * How an event loop of the transport waits when it has nothing to do (for latency-sensitive
     * users; {@link Builder#loopIdle}). The shape is Aeron's {@code BackoffIdleStrategy}: spin, then
     * yield, then wait; the last step here blocks in {@code epoll_wait}/{@code select} until I/O or a
     * task arrives, instead of parking for a growing time.
     */
    public enum LoopIdle {
        /** Block in {@code epoll_wait}/{@code select} at once (Netty's default): no CPU while idle. */
        BLOCK,
        /**
         * Poll without blocking ({@code epoll_wait} with timeout 0, or {@code selectNow}) {@value
         * PollingSelectStrategy#SPINS} times, then yield {@value PollingSelectStrategy#YIELDS}
         * times, then block; any I/O or task starts the count again. A loop that just worked stays
         * awake for about 0.1–0.3 ms, so a reply that comes back within that time costs no
         * wake-up.
         */
        BACKOFF,
        /** Never block: poll without blocking forever. Takes one core per loop, always. */
        SPIN
    }

    /** Netty select strategy of {@link LoopIdle#BACKOFF} and {@link LoopIdle#SPIN}; one per loop. */
    static final class PollingSelectStrategy implements SelectStrategy {
        static final int SPINS = 200;
        static final int YIELDS = 20;
        private final LoopIdle idle;
        private int idleRounds;

        PollingSelectStrategy(LoopIdle idle) {
            this.idle = idle;
        }

        @Override
        public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
            int ready = selectNow.get();
            if (ready > 0 || hasTasks || idle == LoopIdle.SPIN) {
                idleRounds = 0;
                return ready;
            }
            int n = ++idleRounds;
            if (n <= SPINS) {
                Thread.onSpinWait();
                return CONTINUE;
            }
            if (n <= SPINS + YIELDS) {
                Thread.yield();
                return CONTINUE;
            }
            idleRounds = 0;
            return SELECT;
        }
    }

    /**
     * @return whether UDP GSO ({@code UDP_SEGMENT}, Netty's {@code SegmentedDatagramPacket}) and
     *     so {@link Builder#gso(boolean)} / {@link Builder#gro(boolean)} can be used: epoll is
     *     available and the kernel supports it
     */
    public static boolean isGsoSupported() {
        return Epoll.isAvailable() && EpollDatagramChannel.isSegmentedDatagramPacketSupported();
    }

    /**
     * @param io the channel implementation
     * @return whether UDP GSO ({@link Builder#gso(boolean)}) can be used with {@code io}: epoll as
     *     {@link #isGsoSupported()}; io_uring when it is available and the kernel has {@code
     *     UDP_SEGMENT}; never with NIO
     */
    public static boolean isGsoSupported(Io io) {
        return switch (Objects.requireNonNull(io, "io")) {
            case EPOLL -> isGsoSupported();
            case IO_URING -> IoUring.isAvailable() && IoUringDatagramChannel.isSegmentedDatagramPacketSupported();
            case NIO -> false;
        };
    }

    /** @return whether {@link #send} packets are coalesced with UDP GSO on {@link #flush} */
    public boolean gso() {
        return gso;
    }

    /** @return whether {@code UDP_GRO} is set on the socket */
    public boolean gro() {
        return gro;
    }

    /**
     * @return the channel implementation in use: what {@link Builder#io(Io)} asked for, except
     *     {@link Io#EPOLL} for an IPv6 socket switched from NIO to epoll (see {@link UdpTransport})
     */
    public Io io() {
        return io;
    }

    /**
     * @return whether the socket accepts datagrams with UDP checksum 0: always {@code true} over
     *     IPv4 (where 0 means "no checksum"); over IPv6, {@code true} exactly when {@code
     *     UDP_NO_CHECK6_RX} is set, that is on epoll ({@code false} if the transport had to stay on
     *     NIO, see {@link UdpTransport})
     */
    public boolean acceptsZeroChecksum() {
        return zeroChecksumRx;
    }

    /** @return the channel's write-buffer low-water mark, in bytes (see {@link #isWritable()}) */
    public int writeBufferLowWaterMark() {
        return writeBufferLowWaterMark;
    }

    /** @return the channel's write-buffer high-water mark, in bytes (see {@link #isWritable()}) */
    public int writeBufferHighWaterMark() {
        return writeBufferHighWaterMark;
    }

    /**
     * Starts a builder.
     *
     * @param bindAddress the concrete local IP to bind (IPv4 or IPv6; not the wildcard address)
     * @return a builder with the default settings: port {@link #ROCE_V2_PORT}, 64 MiB / 4 MiB socket
     *     buffers, {@link #DEFAULT_MAX_DATAGRAM_BYTES}, don't-fragment on, an own one-thread NIO
     *     event loop (epoll for an IPv6 address when available, see {@link UdpTransport}), write
     *     buffer water marks {@link #DEFAULT_WRITE_BUFFER_LOW_WATER_MARK} / {@link
     *     #DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK}, {@link ByteBufAllocator#DEFAULT}
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
     * flushing. A write the kernel refuses (for example a datagram larger than the interface MTU,
     * which don't-fragment forbids splitting: {@code EMSGSIZE}, "Message too long"; or any other
     * socket error) is counted in {@link #sendErrors()} and {@link #channelErrors()}, logged at debug
     * level, and reported to the receiver with the packet ({@link PacketReceiver#onSendFailed}, on the
     * loop, during the flush or when the socket writes it later); the device logs it at WARN and fails
     * the QP that sent it. After {@link #close()} the packet is released and dropped silently.
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
            if (train != null) {
                if (packet == trainSlot && atTrainEnd(packet) && commitSlot(packet, peer)) {
                    return;
                }
                closeTrain(); // a packet from elsewhere (or a slot out of turn) goes after the train
            }
            addPending(packet, peer, 0);
            pendingBytes += packet.readableBytes();
            return;
        }
        emit(packet, 0, peer);
    }

    /**
     * Writes one datagram (a GSO train if {@code segmentSize} > 0), taking {@code packet}'s
     * reference: into the direct writer's batch while the channel holds nothing, else into the
     * channel (sent at its flush). Event loop only.
     */
    private void emit(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
        SendmmsgWriter d = direct;
        if (d != null) {
            if (packet.hasMemoryAddress()) {
                if (d.pending() == SendmmsgWriter.BATCH) {
                    flushDirect();
                }
                if (!channelBacklogged()) {
                    d.add(packet, segmentSize, peer);
                    return;
                }
            } else {
                flushDirect(); // what the batch holds goes first
                channelBacklog = true;
            }
        }
        writeToChannel(packet, segmentSize, peer);
    }

    private void writeToChannel(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
        channelWrites = true;
        channel.write(segmentSize > 0 ? new SegmentedDatagramPacket(packet.retain(), segmentSize, peer)
                : new DatagramPacket(packet.retain(), peer), promises.acquire(packet, segmentSize, peer));
    }

    /** @return whether the channel may still hold datagrams written to it; event loop only */
    private boolean channelBacklogged() {
        if (!channelBacklog) {
            return false;
        }
        io.netty.channel.ChannelOutboundBuffer out = channel.unsafe().outboundBuffer();
        if (out == null || out.totalPendingWriteBytes() == 0) {
            channelBacklog = false;
            return false;
        }
        return true;
    }

    /** The direct writer's sink: what the kernel did not take. */
    private final class DirectSink implements SendmmsgWriter.Sink {
        @Override
        public void refused(ByteBuf packet, int segmentSize, InetSocketAddress peer, Throwable cause) {
            UdpTransport.this.refused(packet, segmentSize, peer, cause);
        }

        @Override
        public void deferred(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
            channelBacklog = true;
            writeToChannel(packet, segmentSize, peer); // the channel sends it once the socket has room
        }
    }

    /** @return the direct writer the builder asks for (on by default on epoll with native access), or null */
    private SendmmsgWriter directWriter(Builder b, DatagramChannel ch, SocketProtocolFamily family) {
        if (b.directSend != null && !b.directSend) {
            return null;
        }
        if (!(ch instanceof EpollDatagramChannel epoll)) {
            return null; // the builder refused an explicit directSend(true) already
        }
        if (!SendmmsgWriter.available()) {
            if (b.directSend != null) {
                throw new IllegalStateException("directSend(true): " + SendmmsgWriter.unavailability());
            }
            if (DIRECT_FALLBACK_LOGGED.compareAndSet(false, true)) {
                log.info("UDP transports over epoll write datagrams through Netty's channel: {} (logged once)",
                        SendmmsgWriter.unavailability());
            }
            return null;
        }
        return new SendmmsgWriter(epoll.fd().intValue(), family == SocketProtocolFamily.INET6, new DirectSink(),
                b.sendmmsg);
    }

    /** @return whether datagrams go to the kernel by the transport's own {@code sendmmsg} ({@link Builder#directSend}) */
    public boolean directSend() {
        return direct != null;
    }

    /** @return {@code sendmmsg} calls the direct writer made (0 without {@link #directSend()}); event loop only */
    long directCalls() {
        return direct == null ? 0 : direct.calls();
    }

    /** @return datagrams the direct writer gave the kernel (a GSO train once); event loop only */
    long directDatagrams() {
        return direct == null ? 0 : direct.datagrams();
    }

    /** @return datagrams the direct writer handed to the channel because the socket was full; event loop only */
    long directDeferred() {
        return direct == null ? 0 : direct.deferredCount();
    }

    /** @return train buffers allocated so far (GSO): bounded by {@link #SPARE_TRAINS}, not by the trains sent */
    long trainsAllocated() {
        return trainsAllocated;
    }

    /** @return write promises created so far: bounded by the writes in flight at once, not by the writes made */
    long writePromisesCreated() {
        return promises.created();
    }

    /** A write completed ({@link WritePromise}): a failed one is reported; the promise releases the packet. */
    private void writeCompleted(ByteBuf packet, int segmentSize, InetSocketAddress peer, Throwable cause) {
        if (cause != null) {
            refused(packet, segmentSize, peer, cause);
        }
    }

    /** A write failed: counts it and tells the receiver about each datagram in it. On the loop. */
    private void refused(ByteBuf packet, int segmentSize, InetSocketAddress peer, Throwable cause) {
        if (closed.get() || cause instanceof java.nio.channels.ClosedChannelException) {
            return; // dropped at close: not a refusal
        }
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        int n = segmentSize > 0 ? Math.max(1, (len + segmentSize - 1) / segmentSize) : 1;
        sendErrors.add(n);
        channelErrors.increment();
        if (log.isDebugEnabled()) {
            log.debug("{}: the kernel refused a write of {} UDP payload bytes{} to {} (link MTU {}): {}", localAddress,
                    len, segmentSize > 0 ? " (GSO, " + n + " segments of " + segmentSize + ")" : "", peer, linkMtu(),
                    cause.toString());
        }
        PacketReceiver r = receiver;
        if (r == null) {
            return;
        }
        if (DatagramTooLargeException.isTooLarge(cause)) {
            cause = new DatagramTooLargeException(cause.getMessage() + " (link MTU " + linkMtu() + ")",
                    cause); // the engine fails the QP for this one; other causes are transient losses
        }
        for (int k = 0; k < n; k++) {
            int from = at + k * (segmentSize > 0 ? segmentSize : 0);
            int size = segmentSize > 0 ? Math.min(segmentSize, at + len - from) : len;
            try {
                r.onSendFailed(packet.slice(from, size), peer, cause);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                receiveErrors.increment();
                log.debug("{}: receiver threw in onSendFailed", localAddress, e);
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>With {@link Builder#gso(boolean)}, first writes the pending packets in order, runs of
     * equally sized packets to one peer as GSO sends (see {@link UdpTransport}). If the pending
     * packets held more than the high-water mark, writing them makes the channel not writable, so
     * the channel's return to writable calls {@link PacketReceiver#onWritable()} as usual.
     */
    @Override
    public void flush() {
        boolean blocked = direct != null && !writableNow(); // by packets held here, not in the channel
        if (gso) {
            closeTrain();
            if (!pendingPackets.isEmpty()) {
                writePending();
            }
        }
        if (direct == null) {
            channel.flush();
            return;
        }
        if (closed.get()) {
            direct.discard();
        } else if (direct.pending() > 0) {
            direct.flush(); // onWritable, if this made it writable: below
        }
        if (channelWrites) {
            channelWrites = false;
            channel.flush();
        }
        if (blocked && writableNow()) {
            scheduleWritable(); // the kernel took what made it not writable: no channel transition tells
        }
    }

    /**
     * Gives the direct writer's batch to the kernel between flushes (a full batch, or before a write
     * through the channel); tells the receiver if that made the transport writable.
     */
    private void flushDirect() {
        boolean blocked = !writableNow();
        direct.flush();
        if (blocked && writableNow()) {
            scheduleWritable();
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>{@code false} while the channel is not writable (it holds more bytes than the high-water
     * mark and has not yet fallen below the low-water mark, see {@link
     * Builder#writeBufferWaterMark(int, int)}), or, with {@link Builder#gso(boolean)}, while the
     * packets sent but not yet flushed hold more than the high-water mark in bytes. Also {@code
     * false} once the transport is closed. {@link PacketReceiver#onWritable()} follows when it
     * becomes writable again (see {@link UdpTransport}). Loop only.
     */
    @Override
    public boolean isWritable() {
        return writableNow();
    }

    private boolean writableNow() {
        return channel.isWritable() && (!gso || pendingBytes <= writeBufferHighWaterMark)
                && (direct == null || direct.pendingBytes() <= writeBufferHighWaterMark);
    }

    /** Queues (at most one) {@link #notifyWritable} task. Event loop only. */
    private void scheduleWritable() {
        if (writableTaskQueued) {
            return;
        }
        try {
            channel.eventLoop().execute(writableTask);
            writableTaskQueued = true;
        } catch (RejectedExecutionException e) {
            log.debug("{}: event loop gone, onWritable not called", localAddress, e);
        }
    }

    /** Tells the receiver that the transport is writable again, if it still is. Event loop only. */
    private void notifyWritable() {
        writableTaskQueued = false;
        PacketReceiver r = receiver;
        if (r == null || closed.get() || !writableNow()) {
            return; // not writable again: a later transition queues a new task
        }
        writableNotifications.increment();
        try {
            r.onWritable();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            receiveErrors.increment();
            log.debug("{}: receiver threw in onWritable", localAddress, e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>With {@link Builder#gso(boolean)}: a slot of the open GSO train to {@code peer}, so that a
     * message's packets are built once, in the buffer the kernel reads them from (no copy into a
     * GSO buffer at {@link #flush}). A train is one pooled direct buffer of {@link
     * #MAX_UDP_PAYLOAD_BYTES} holding whole segments of the first slot's size, at most {@link
     * #GSO_MAX_SEGMENTS} of them; slot after slot is handed out while the packets sent are of that
     * size and go to that peer (a shorter one ends the train). The train is closed (queued for the
     * next flush) on a change of peer or size, when it is full, when another packet is sent in
     * between, when a slot was not sent before the next one was asked for (a slot released unsent,
     * or sent later, never shares bytes with another), and at {@link #flush}. A train that closes
     * with a single packet has that packet copied into a buffer of its own size, so that a train
     * buffer is never held for one datagram. Train buffers are reused once the kernel has sent them;
     * at most 32 exist per transport (about 2 MiB), and while all of them are
     * queued this method returns a buffer of the packet's own size, which {@link #flush} coalesces
     * by copying as before. Without GSO, and for packets too large for two to share a train, a
     * pooled direct buffer from {@link #allocator()}.
     */
    @Override
    public ByteBuf packetBuffer(InetSocketAddress peer, int length) {
        if (!gso || length <= 0 || length > MAX_UDP_PAYLOAD_BYTES / 2 || closed.get() || !started.get()) {
            return allocator().directBuffer(length, length);
        }
        if (train != null && (trainSlot != null || trainEnded || trainCount >= GSO_MAX_SEGMENTS
                || (trainSegment != 0 && length > trainSegment)
                || train.writerIndex() + length > train.capacity() || !samePeer(peer, trainPeer))) {
            closeTrain();
        }
        if (train == null) {
            train = newTrain();
            if (train == null) {
                return allocator().directBuffer(length, length); // every train is queued: copied at flush
            }
            trainPeer = peer;
            trainSegment = 0;
            trainCount = 0;
            trainEnded = false;
        }
        ByteBuf slot = train.retainedSlice(train.writerIndex(), length);
        slot.writerIndex(0);
        trainSlot = slot;
        return slot;
    }

    /**
     * @return whether two peers are the same address: by identity first (a QP passes the same
     *     object for every packet), so that the per-packet checks rarely compare address bytes
     */
    private static boolean samePeer(InetSocketAddress a, InetSocketAddress b) {
        return a == b || a.equals(b);
    }

    /**
     * @return whether {@code slot}'s memory starts where the open train's packets end (a slot object
     *     recycled by Netty for another buffer does not); true where buffers have no address
     */
    private boolean atTrainEnd(ByteBuf slot) {
        return !slot.hasMemoryAddress() || !train.hasMemoryAddress()
                || slot.memoryAddress() == train.memoryAddress() + train.writerIndex();
    }

    /**
     * Commits the slot just sent to the open train if it lies where the train ends and fits its
     * segment size; releases the slot then. Event loop only.
     *
     * @return false (nothing changed) when it does not fit: the caller sends it as a packet of its own
     */
    private boolean commitSlot(ByteBuf slot, InetSocketAddress peer) {
        trainSlot = null;
        int len = slot.readableBytes();
        if (len == 0 || slot.readerIndex() != 0 || (trainSegment != 0 && len > trainSegment)
                || !samePeer(peer, trainPeer)) {
            return false;
        }
        if (trainSegment == 0) {
            trainSegment = len;
        } else if (len < trainSegment) {
            trainEnded = true; // a shorter packet can only end a run
        }
        train.writerIndex(train.writerIndex() + len);
        trainCount++;
        pendingBytes += len;
        trainPackets.increment();
        slot.release();
        return true;
    }

    /**
     * @return an empty train buffer of {@link #MAX_UDP_PAYLOAD_BYTES}: a kept one that the kernel and
     *     every slot have let go of (only {@link #spareTrains} holds it), else a new one while fewer
     *     than {@link #SPARE_TRAINS} exist, else null (all of them are queued or being sent)
     */
    private ByteBuf newTrain() {
        for (java.util.Iterator<ByteBuf> it = spareTrains.iterator(); it.hasNext(); ) {
            ByteBuf t = it.next();
            if (t.refCnt() == 1) {
                it.remove();
                return t.clear();
            }
        }
        if (spareTrains.size() >= SPARE_TRAINS) {
            return null;
        }
        trainsAllocated++;
        // from Netty's pooled arena allocator: its buffers' retained slices are recycled objects, so a
        // slot costs no allocation (an adaptive buffer's slice is a new object per packet); kept for
        // reuse since a train is larger than the allocator's thread cache (32 KiB), and a freed one
        // would go back to its arena, which unmaps and maps chunks as the write queue fills and drains
        return TRAIN_ALLOCATOR.directBuffer(MAX_UDP_PAYLOAD_BYTES, MAX_UDP_PAYLOAD_BYTES);
    }

    /**
     * Queues the open train (if it holds packets) after the pending packets and forgets it; the
     * buffer goes back to {@link #spareTrains} (reused once the write is done). Event loop only.
     */
    private void closeTrain() {
        ByteBuf t = train;
        if (t == null) {
            return;
        }
        train = null;
        trainSlot = null; // an outstanding slot is the engine's to send or release; it holds the buffer
        InetSocketAddress peer = trainPeer;
        trainPeer = null;
        if (trainCount >= 2) {
            spareTrains.addLast(t.retain());
            addPending(t, peer, trainSegment);
            return;
        }
        if (trainCount == 1) {
            // one packet: a buffer of its own size, so that a queued write never pins a whole train
            ByteBuf one = allocator().directBuffer(t.readableBytes(), t.readableBytes());
            one.writeBytes(t, t.readerIndex(), t.readableBytes());
            addPending(one, peer, 0);
        }
        if (t.refCnt() == 1) {
            spareTrains.addFirst(t); // free at once: the next train
        } else {
            spareTrains.addLast(t); // a slot released later, or sent out of turn, still reads it
        }
    }

    private void addPending(ByteBuf packet, InetSocketAddress peer, int segment) {
        int k = pendingPackets.size();
        if (k == pendingSegments.length) {
            pendingSegments = java.util.Arrays.copyOf(pendingSegments, k * 2);
        }
        pendingSegments[k] = segment;
        pendingPackets.add(packet);
        pendingPeers.add(peer);
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
                int segment = pendingSegments[i];
                if (segment > 0) {
                    // a train built in place: written as it is
                    packets.set(i, null);
                    gsoSends.increment();
                    gsoSegments.add((size + segment - 1) / segment);
                    emit(first, segment, peer);
                    i++;
                    continue;
                }
                int end = i + 1; // exclusive end of the run
                int total = size;
                if (size > 0) {
                    while (end < n
                            && end - i < GSO_MAX_SEGMENTS
                            && pendingSegments[end] == 0
                            && samePeer(peer, peers.get(end))) {
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
                    packets.set(i, null);
                    emit(first, 0, peer);
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
                    emit(content, size, peer);
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
            pendingBytes = 0;
        }
    }

    /** Releases packets sent but not flushed (GSO, or in the direct writer's batch). On the event loop. */
    private void releasePending() {
        if (direct != null) {
            direct.discard();
        }
        if (gso) {
            if (train != null) {
                train.release();
                train = null;
                trainSlot = null;
                trainPeer = null;
            }
            for (ByteBuf t; (t = spareTrains.pollFirst()) != null; ) {
                t.release(); // the kept reference; a write still queued in the channel holds its own
            }
            for (ByteBuf p : pendingPackets) {
                p.release();
            }
            pendingPackets.clear();
            pendingPeers.clear();
            pendingBytes = 0;
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
        if (gso || direct != null) {
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

    /**
     * {@inheritDoc}
     *
     * <p>The MTU given to {@link Builder#linkMtu(int)}, else the MTU of the network interface that
     * carries the bound address ({@link java.net.NetworkInterface#getByInetAddress}; an IPv6
     * link-local address by its scope), read at bind and again at most once a second (an interface's
     * MTU may change): 1500 on a standard Ethernet, 65536 on Linux's loopback; -1 when no interface
     * carries the address.
     */
    @Override
    public int linkMtu() {
        if (configuredLinkMtu > 0) {
            return configuredLinkMtu;
        }
        long now = System.nanoTime();
        if (now - interfaceMtuReadAt >= 1_000_000_000L) {
            interfaceMtuReadAt = now;
            interfaceMtu = readInterfaceMtu(localAddress.getAddress());
        }
        return interfaceMtu;
    }

    /** @return the MTU of the interface that has {@code ip}, or -1 when none has it or it cannot be read */
    static int readInterfaceMtu(InetAddress ip) {
        try {
            java.net.NetworkInterface ni = java.net.NetworkInterface.getByInetAddress(ip);
            int mtu = ni == null ? -1 : ni.getMTU();
            return mtu > 0 ? mtu : -1;
        } catch (IOException | RuntimeException e) {
            log.debug("cannot read the MTU of the interface of {}", ip, e);
            return -1;
        }
    }

    /**
     * @return datagrams the kernel refused to send (e.g. larger than the interface MTU with
     *     don't-fragment: EMSGSIZE), each also reported to the receiver ({@link
     *     PacketReceiver#onSendFailed}); a refused GSO send counts each of its segments
     */
    public long sendErrors() {
        return sendErrors.sum();
    }

    /** @return the largest UDP payload, in bytes, that is received whole. */
    public int maxDatagramBytes() {
        return maxDatagramBytes;
    }

    /**
     * {@inheritDoc}
     *
     * <p>A quarter of the smaller of the granted {@code SO_RCVBUF} and {@code SO_SNDBUF}, in bytes.
     * The granted size is what Linux charges datagrams against: for an MTU-sized RoCEv2 datagram
     * (about 4.1 KB) it charges the whole allocation, about twice the payload, so half the buffer is
     * what fits in payload; the other half is headroom for the peer's ACKs and its own scheduling.
     * (With half the buffer as budget, 128 QPs between two processes still overflowed it now and
     * then; {@code docs/performance.md}.)
     */
    @Override
    public long inFlightBudgetHint() {
        return Math.min((long) receiveBufferBytes(), sendBufferBytes()) / 4;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The socket's {@code drops} column of Linux's {@code /proc/net/udp} ({@code udp6} for IPv6):
     * datagrams the kernel dropped for this socket, because the receive buffer was full or because
     * their UDP checksum was wrong (Linux counts both there; {@link #receiveBufferErrors()} and {@link
     * #receiveChecksumErrors()} tell them apart namespace-wide); 0 where that file is not available.
     */
    @Override
    public long receiveQueueDrops() {
        if (closed.get()) {
            return lastDrops;
        }
        if (reuseMember) {
            return 0; // the group's first socket reports the drops of all of them
        }
        // one row for a plain socket; for a multi-loop transport's group, the first socket sums them all
        long[] g = ProcNetUdp.group(localAddress);
        long d = g == null || g[0] == 0 ? -1 : g[1];
        if (d >= 0) {
            lastDrops = d;
        }
        return lastDrops;
    }

    /** Last value read by {@link #receiveQueueDrops()}. */
    private volatile long lastDrops;

    /** The namespace's UDP error counters when the transport was bound ({@link ProcNetUdp#udpErrors()}). */
    private final long[] udpErrorsAtBind = ProcNetUdp.udpErrors();

    /**
     * {@inheritDoc}
     *
     * <p>The growth of the network namespace's {@code RcvbufErrors} (IPv4 and IPv6, {@code
     * /proc/net/snmp} and {@code snmp6}) since this transport was bound: every UDP socket of the
     * namespace counts, so it is an upper bound of this socket's overflows. 0 for the other sockets of
     * a multi-loop group (the first reports it).
     */
    @Override
    public long receiveBufferErrors() {
        return reuseMember ? 0 : Math.max(0, ProcNetUdp.udpErrors()[ProcNetUdp.RCVBUF_ERRORS]
                - udpErrorsAtBind[ProcNetUdp.RCVBUF_ERRORS]);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The growth of the network namespace's {@code InCsumErrors} (IPv4 and IPv6) since this
     * transport was bound: datagrams corrupted on the way, which Linux also counts in this socket's
     * {@link #receiveQueueDrops()} when they were addressed to it. Namespace-wide, as {@link
     * #receiveBufferErrors()}; 0 for the other sockets of a multi-loop group.
     */
    @Override
    public long receiveChecksumErrors() {
        return reuseMember ? 0 : Math.max(0, ProcNetUdp.udpErrors()[ProcNetUdp.IN_CSUM_ERRORS]
                - udpErrorsAtBind[ProcNetUdp.IN_CSUM_ERRORS]);
    }

    /** @return the {@code SO_RCVBUF} the kernel granted, in bytes (Linux reports twice what it accepted). */
    public int receiveBufferBytes() {
        return channel.config().getReceiveBufferSize();
    }

    /** @return the {@code SO_SNDBUF} the kernel granted, in bytes. */
    public int sendBufferBytes() {
        return channel.config().getSendBufferSize();
    }

    /**
     * @return the number of exceptions thrown by the receiver, from {@link PacketReceiver#onPacket}
     *     or {@link PacketReceiver#onWritable()} (each caught and logged)
     */
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

    /** @return the number of calls of the receiver's {@link PacketReceiver#onWritable()} */
    public long writableNotifications() {
        return writableNotifications.sum();
    }

    /** @return with {@link Builder#gso(boolean)}: the number of GSO sends (runs of ≥ 2 packets) written */
    public long gsoSends() {
        return gsoSends.sum();
    }

    /** @return with {@link Builder#gso(boolean)}: the number of packets sent inside GSO sends */
    public long gsoSegments() {
        return gsoSegments.sum();
    }

    /**
     * @return with {@link Builder#gso(boolean)}: the number of packets built in place in a GSO
     *     train ({@link #packetBuffer}) and sent there, never copied again
     */
    public long trainPackets() {
        return trainPackets.sum();
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
                batchDatagrams++;
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

        /** The end of one read batch (one recvmmsg, one GRO read, or up to 16 NIO reads): the receiver flushes once. */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            receiveBacklogged = batchDatagrams >= readBatchDatagrams;
            batchDatagrams = 0;
            PacketReceiver r = receiver;
            if (r == null) {
                return;
            }
            try {
                r.onReadComplete();
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                receiveErrors.increment();
                log.debug("{}: receiver threw at the end of a read batch", localAddress, e);
            }
        }

        /**
         * Becoming writable: tells the receiver from a separate task, since this may run inside
         * {@code channel.flush()} (Netty fires it synchronously when a flush drains the buffer).
         */
        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                scheduleWritable();
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
        private int receiveBufferBytes = DEFAULT_RECEIVE_BUFFER_BYTES;
        private int sendBufferBytes = DEFAULT_SOCKET_BUFFER_BYTES;
        private int maxDatagramBytes = DEFAULT_MAX_DATAGRAM_BYTES;
        private boolean dontFragment = true;
        private EventLoopGroup group;
        private ByteBufAllocator allocator = ByteBufAllocator.DEFAULT;
        /** null: {@link #defaultIo} */
        private Io io;
        private int recvBatch = DEFAULT_RECV_BATCH;
        /** null: on where the socket supports it */
        private Boolean gso;
        private Boolean directSend;
        /** Tests: the system call the direct writer makes instead of the real sendmmsg. */
        SendmmsgWriter.Syscall sendmmsg;
        /** null: on where the socket supports it */
        private Boolean gro;
        private int writeBufferLowWaterMark = DEFAULT_WRITE_BUFFER_LOW_WATER_MARK;
        private int writeBufferHighWaterMark = DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK;
        private int loops = defaultLoops();
        private LoopIdle loopIdle = LoopIdle.BLOCK;
        /** The group was made by bindLoops() for these lanes (with loopIdle): not the caller's. */
        private boolean ownLoops;
        private boolean reusePort;
        private int steerLanes;
        /** 0: the interface's MTU. */
        private int linkMtu;

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
         * @param bytes requested {@code SO_RCVBUF} in bytes, {@code > 0}; default 64 MiB (the kernel
         *     clamps it to {@code net.core.rmem_max})
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
         * Sets the link MTU the transport reports ({@link UdpTransport#linkMtu()}) instead of the
         * interface's: for a path whose MTU is smaller than the interface's (a tunnel, a router with a
         * smaller MTU further on), or for tests. The device derives its port's active MTU from it. It
         * changes nothing the kernel does: datagrams larger than the interface MTU are still refused.
         *
         * @param bytes the IP MTU in bytes, 68..65536 (IPv4's minimum to loopback's), or 0 (the
         *     default) for the interface's MTU
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder linkMtu(int bytes) {
            if (bytes != 0 && (bytes < 68 || bytes > 65536)) {
                throw new IllegalArgumentException("linkMtu must be 68..65536 bytes, or 0 for the interface's, got "
                        + bytes);
            }
            this.linkMtu = bytes;
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
         * @param io the channel implementation, {@link Io#NIO}, {@link Io#EPOLL} or {@link
         *     Io#IO_URING}; default: epoll where Netty's native epoll loads (and a caller-supplied
         *     group, if any, is an epoll group; io_uring for an io_uring group), else NIO. With a caller-supplied {@link #eventLoopGroup} the group must be of
         *     the same kind (see
         *     {@link UdpTransport#newEventLoopGroup}). For an IPv6 bind address NIO is replaced by
         *     epoll when epoll is available and the group (if any) is an epoll group, so that
         *     zero-checksum datagrams are accepted (see {@link UdpTransport}); {@link
         *     UdpTransport#io()} reports the result.
         * @return this builder
         * @throws NullPointerException if {@code io} is {@code null}
         */
        public Builder io(Io io) {
            this.io = Objects.requireNonNull(io, "io");
            return this;
        }

        /**
         * @param datagrams with {@link Io#EPOLL}: how many datagrams one {@code recvmmsg} call
         *     may return, 1..1024 (1 turns recvmmsg off); with {@link Io#IO_URING}: how many {@code
         *     RECVMSG} submissions one read keeps outstanding; each read buffer is {@code datagrams ×
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
         * @param enabled whether datagrams go to the kernel by the transport's own {@code
         *     sendmmsg(2)} call on the epoll socket (through the JDK's foreign function API), batches of
         *     up to 64 datagrams built in a native block made once, with no Netty envelope, promise or
         *     pipeline pass per datagram, instead of through Netty's channel. A datagram the socket has
         *     no room for ({@code EAGAIN}) and every one after it goes through the channel as before
         *     until the channel has sent them all; a refused one is reported as from the channel
         *     ({@link PacketReceiver#onSendFailed}, {@link UdpTransport#sendErrors()}). Default (not
         *     called): on with {@link Io#EPOLL} when native access is enabled for rxe-net ({@code
         *     --enable-native-access}), else off, logged once at INFO; {@link
         *     UdpTransport#directSend()} tells. {@code true} needs {@link Io#EPOLL} and native access,
         *     otherwise {@link #bind()} throws an {@link IllegalStateException}.
         * @return this builder
         */
        public Builder directSend(boolean enabled) {
            this.directSend = enabled;
            return this;
        }

        /**
         * @param enabled whether {@link UdpTransport#send} queues packets and {@link
         *     UdpTransport#flush} coalesces runs of equally sized packets to one peer into UDP GSO
         *     sends (see {@link UdpTransport}). Default (not called): on for IPv6 sockets where the
         *     socket can do it (epoll and {@link UdpTransport#isGsoSupported()}), else off, logged once
         *     at INFO; off for IPv4, whose GSO segments carry IP IDs 1, 2, … that break the ICRC for
         *     peers other than rxe4j (see the class comment: {@code true} over IPv4 logs a WARN);
         *     {@link UdpTransport#gso()} tells. {@code true} needs {@link Io#EPOLL} or {@link
         *     Io#IO_URING} and kernel support ({@link UdpTransport#isGsoSupported(Io)});
         *     otherwise {@link #bind()} throws an {@link IllegalStateException} (no silent fallback
         *     when asked for explicitly).
         * @return this builder
         */
        public Builder gso(boolean enabled) {
            this.gso = enabled;
            return this;
        }

        /**
         * @param enabled whether to set {@code UDP_GRO} on the socket (see {@link UdpTransport}).
         *     Default (not called): on where supported (IPv4 and IPv6: GRO changes nothing on the wire); {@link
         *     UdpTransport#gro()} tells. Each datagram is still delivered as one packet. {@code true}
         *     needs {@link Io#EPOLL} and {@link UdpTransport#isGsoSupported()}, else {@link #bind()}
         *     throws an {@link IllegalStateException}. Reads then use one 64 KiB buffer ({@link
         *     #recvBatch(int)} is ignored).
         * @return this builder
         */
        public Builder gro(boolean enabled) {
            this.gro = enabled;
            return this;
        }

        /**
         * Sets the channel's write-buffer water marks, which decide {@link
         * UdpTransport#isWritable()}: above {@code highBytes} the transport is not writable, and it
         * becomes writable again below {@code lowBytes}. Defaults {@link
         * #DEFAULT_WRITE_BUFFER_LOW_WATER_MARK} (256 KiB) and {@link
         * #DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK} (1 MiB).
         *
         * @param lowBytes the low-water mark, in bytes, {@code 0 <= lowBytes <= highBytes}
         * @param highBytes the high-water mark, in bytes, {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if {@code lowBytes < 0}, {@code highBytes < 1} or
         *     {@code lowBytes > highBytes}
         */
        public Builder writeBufferWaterMark(int lowBytes, int highBytes) {
            if (lowBytes < 0 || highBytes < 1 || lowBytes > highBytes) {
                throw new IllegalArgumentException(
                        "write buffer water marks need 0 <= low <= high and high >= 1, got low "
                                + lowBytes + ", high " + highBytes);
            }
            this.writeBufferLowWaterMark = lowBytes;
            this.writeBufferHighWaterMark = highBytes;
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
         * @throws IllegalStateException if the channel cannot be registered on the event loop, if
         *     epoll or GSO/GRO was asked for and is unavailable, or if {@code UDP_NO_CHECK6_RX}
         *     cannot be set on an epoll IPv6 socket
         */
        public UdpTransport bind() {
            return new UdpTransport(this);
        }

        /**
         * @param idle how the transport's own event loops wait when idle ({@link LoopIdle}); default
         *     {@link LoopIdle#BLOCK}. With a caller-supplied {@link #eventLoopGroup} anything but
         *     BLOCK is refused (the group's loops wait as the group was built: see {@link
         *     UdpTransport#newEventLoopGroup(Io, int, String, LoopIdle)}).
         * @return this builder
         * @throws NullPointerException if {@code idle} is {@code null}
         */
        public Builder loopIdle(LoopIdle idle) {
            this.loopIdle = Objects.requireNonNull(idle, "idle");
            return this;
        }

        /**
         * @param loops event loops (and sockets) of {@link #bindLoops()}, 1..64; default {@link
         *     UdpTransport#defaultLoops()} (the available cores, at most 8). Ignored by {@link
         *     #bind()}, which always opens one socket on one loop.
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder loops(int loops) {
            if (loops < 1 || loops > 64) {
                throw new IllegalArgumentException("loops must be 1..64, got " + loops);
            }
            this.loops = loops;
            return this;
        }

        /**
         * Opens a transport for a multi-core device: {@link #loops(int)} UDP sockets bound to the
         * same address with {@code SO_REUSEPORT}, each on its own event loop, as the lanes of one
         * {@link io.rxe4j.net.MultiLoopTransport} (with one loop: a plain {@link #bind()}). The
         * device opened on it spreads its QPs over the loops ({@code RdmaDevice.createCq}'s
         * completion vector). With {@link Io#EPOLL} a classic BPF program on the socket group
         * steers each datagram to the socket of its QP's loop by DestQP ({@link
         * UdpTransport#steersByQpn()}); with NIO the kernel spreads datagrams by a hash of their
         * addresses, and the device hands a packet that arrives on another QP's loop to that loop
         * (counter {@code steered_pkts}). The loops come from the {@link #eventLoopGroup} if one is
         * given (one {@code next()} per socket; the group should have at least as many threads),
         * else from an own group of {@code loops} daemon threads, shut down when the transport is
         * closed. Other settings apply to each socket, except that GRO is off unless {@link #gro(boolean)}
         * asks for it: the kernel's GRO stage picks a socket by address hash before the steering
         * program runs, so coalesced trains would land on any loop and need the software hand-off.
         *
         * @return the bound transport, not yet started
         * @throws UncheckedIOException if a socket cannot be bound
         * @throws IllegalStateException as {@link #bind()}, or if {@code SO_REUSEPORT} cannot be set
         */
        public io.rxe4j.verbs.spi.Transport bindLoops() {
            if (loops == 1) {
                return bind();
            }
            if (group != null && loopIdle != LoopIdle.BLOCK) {
                throw new IllegalArgumentException("loopIdle(" + loopIdle + ") applies to the transport's own event loops;"
                        + " create the supplied group with UdpTransport.newEventLoopGroup(io, n, name, idle) instead");
            }
            EventLoopGroup own = group == null
                    ? newEventLoopGroup(chooseIo(io != null ? io : defaultIo(null), bindAddress, null), loops, "rxe-udp",
                            loopIdle) : null;
            EventLoopGroup g = group != null ? group : own;
            java.util.List<UdpTransport> lanes = new ArrayList<>();
            boolean ok = false;
            try {
                // SO_REUSEPORT would let another process's (or device's) sockets join the group silently,
                // and port 0 may even hand out a port such a group already holds: after binding, the
                // group must hold exactly our sockets (/proc/net/udp); port 0 is retried, a fixed port fails
                for (int attempt = 1; ; attempt++) {
                    for (int i = 0; i < loops; i++) {
                        Builder lane = copy();
                        lane.group = g.next();
                        lane.ownLoops = own != null;
                        lane.reusePort = true;
                        if (lane.gro == null) {
                            // GRO's socket lookup runs before the steering program, by address hash, so
                            // coalesced trains land on any loop; off unless asked for (see bindLoops)
                            lane.gro = false;
                        }
                        lane.steerLanes = i == 0 ? loops : 0;
                        lane.port = i == 0 ? port : lanes.get(0).localAddress().getPort();
                        lanes.add(new UdpTransport(lane));
                    }
                    long[] sockets = ProcNetUdp.group(lanes.get(0).localAddress());
                    if (sockets == null || sockets[0] == loops) {
                        // ours alone (or not Linux: nothing to check). Only now the steering program goes on
                        // the group: a program attached by a socket that then finds the port taken would
                        // replace the owner's
                        UdpTransport first = lanes.get(0);
                        first.steersByQpn = attachQpnSteering(first.channel, loops);
                        break;
                    }
                    InetSocketAddress taken = lanes.get(0).localAddress();
                    for (UdpTransport t : lanes) {
                        t.close();
                    }
                    lanes.clear();
                    if (port != 0 || attempt == 8) {
                        throw new UncheckedIOException(new java.net.BindException("UDP address in use: " + taken
                                + " is also bound by " + (sockets[0] - loops) + " other SO_REUSEPORT socket(s)"));
                    }
                }
                io.rxe4j.net.MultiLoopTransport<UdpTransport> t = new io.rxe4j.net.MultiLoopTransport<>(lanes,
                        own == null ? null : () -> own.shutdownGracefully(0, 2, TimeUnit.SECONDS)
                                .awaitUninterruptibly(CLOSE_TIMEOUT_SECONDS, TimeUnit.SECONDS));
                ok = true;
                return t;
            } finally {
                if (!ok) {
                    for (UdpTransport t : lanes) {
                        t.close();
                    }
                    if (own != null) {
                        own.shutdownGracefully(0, 1, TimeUnit.SECONDS);
                    }
                }
            }
        }

        private Builder copy() {
            Builder c = new Builder(bindAddress);
            c.port = port;
            c.receiveBufferBytes = receiveBufferBytes;
            c.sendBufferBytes = sendBufferBytes;
            c.maxDatagramBytes = maxDatagramBytes;
            c.dontFragment = dontFragment;
            c.group = group;
            c.allocator = allocator;
            c.io = io;
            c.recvBatch = recvBatch;
            c.gso = gso;
            c.gro = gro;
            c.writeBufferLowWaterMark = writeBufferLowWaterMark;
            c.writeBufferHighWaterMark = writeBufferHighWaterMark;
            c.loops = loops;
            c.loopIdle = loopIdle;
            c.linkMtu = linkMtu;
            return c;
        }

        private static int positive(int v, String name) {
            if (v <= 0) {
                throw new IllegalArgumentException(name + " <= 0: " + v);
            }
            return v;
        }
    }
}
