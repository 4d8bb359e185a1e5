package io.rxe4j.verbs.spi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.net.InetSocketAddress;

/**
 * Moves RoCEv2 UDP payloads (BTH through ICRC) between devices. A transport does no protocol
 * logic: bytes in, bytes out, addresses.
 *
 * <p>Each transport owns the event loop ({@link #scheduler()}) that the device bound to it runs
 * on; received packets are delivered on that loop, and {@link #send} / {@link #flush} must be
 * called on it.
 *
 * <p><b>Multi-loop transports.</b> A transport may spread its work over several event loops
 * ({@link #lanes()}): one lane per loop, each a transport of its own (its own scheduler, socket or
 * queue, allocator), all with the same {@link #localAddress()}. A device then starts and drives
 * every lane, assigns each QP to one lane, and never calls {@link #start}, {@link #send} or {@link
 * #flush} on the multi-loop transport itself; closing it closes every lane. Any lane may deliver any
 * packet: the device hands a packet that arrives on another QP's lane to that lane.
 */
public interface Transport extends AutoCloseable {

    /** @return the concrete local (IP, UDP port) packets are sent from and received on. */
    InetSocketAddress localAddress();

    /** @return the loop that delivers packets and on which the device runs. */
    Scheduler scheduler();

    /** @return the allocator for outgoing packets (pooled). */
    ByteBufAllocator allocator();

    /**
     * Starts delivering received packets to {@code receiver}. Called once.
     *
     * @throws IllegalStateException if already started
     */
    void start(PacketReceiver receiver);

    /**
     * Queues one packet to {@code peer}. Ownership of {@code packet} passes to the transport,
     * which releases it. Must be called on {@link #scheduler()}'s loop. The packet may be held
     * until {@link #flush()}.
     */
    void send(ByteBuf packet, InetSocketAddress peer);

    /**
     * A buffer for one outgoing packet of exactly {@code length} bytes that the caller builds and
     * then passes to {@link #send} with the same {@code peer}, or releases. Its writer index is 0
     * and its capacity and maximum capacity are {@code length}; the caller writes it with absolute
     * setters and sets the writer index to the packet's end. A transport may hand out a slot of a
     * larger buffer in which consecutive packets of equal size to the same peer are built in place,
     * so that it can send them as one unit without copying them again (the UDP transport with GSO
     * builds a GSO train this way); a slot released without being sent, or sent out of turn, is
     * still handled correctly, only not coalesced. Loop only.
     *
     * @param peer the packet's destination
     * @param length the packet's length in bytes (UDP payload: headers, payload, pad, ICRC)
     * @return by default a pooled direct buffer from {@link #allocator()}
     */
    default ByteBuf packetBuffer(InetSocketAddress peer, int length) {
        return allocator().directBuffer(length, length);
    }

    /**
     * Whether the transport can take more packets now. A transport with a bounded output queue
     * (e.g. a socket whose send buffer is full and whose own queue passed its high-water mark)
     * returns {@code false}; the device then stops producing packets until {@link
     * PacketReceiver#onWritable()} is called. Packets passed to {@link #send} while not writable
     * are still accepted (queued), so a caller may finish the packet it is building. Loop only.
     *
     * @return {@code true} by default (an unbounded or in-memory transport)
     */
    default boolean isWritable() {
        return true;
    }

    /**
     * How many bytes a device should keep in flight towards one peer at most, so that neither this
     * side's nor (for a like-configured peer) the other side's socket buffers overflow: for UDP, a
     * quarter of the smaller of the granted {@code SO_RCVBUF} and {@code SO_SNDBUF} (the kernel charges
     * about twice a datagram's payload to the buffer; the rest is headroom). The device's per-peer
     * budget uses it unless configured ({@code DeviceConfig.peerBudgetBytes}).
     *
     * @return bytes; {@link Long#MAX_VALUE} (the default) when the transport has no such limit
     */
    default long inFlightBudgetHint() {
        return Long.MAX_VALUE;
    }

    /**
     * @return datagrams the transport dropped on receipt before handing them over, since it was
     *     opened: its receive queue was full, or (UDP) the kernel dropped them for this socket for any
     *     reason: the per-socket {@code drops} of {@code /proc/net/udp}, which counts a full receive
     *     buffer and a bad UDP checksum alike (see {@link #receiveBufferErrors()} and {@link
     *     #receiveChecksumErrors()} for the split); 0 when the transport cannot tell. Any thread.
     */
    default long receiveQueueDrops() {
        return 0;
    }

    /**
     * @return UDP datagrams the kernel dropped because a receive buffer was full, since the transport
     *     was opened, in the whole network namespace (Linux counts this per namespace only: {@code
     *     RcvbufErrors} of {@code /proc/net/snmp} plus {@code Udp6RcvbufErrors} of {@code snmp6}, as a
     *     delta), so other sockets' overflows count too; 0 (the default) when the transport cannot
     *     tell or has no such buffer. Any thread.
     */
    default long receiveBufferErrors() {
        return 0;
    }

    /**
     * @return UDP datagrams the kernel dropped because their UDP checksum was wrong (corrupted on the
     *     way), since the transport was opened, in the whole network namespace ({@code InCsumErrors}
     *     plus {@code Udp6InCsumErrors}, as a delta; other sockets' count too); 0 (the default) when
     *     the transport cannot tell. Any thread.
     */
    default long receiveChecksumErrors() {
        return 0;
    }

    /**
     * The IP MTU of the link this transport sends on: the largest IP datagram (IP header, UDP header
     * and UDP payload) it can send unfragmented. The device derives its port's active MTU from it as
     * {@code rdma_rxe} does ({@code rxe-facts.md} §4.2: the largest IB MTU not above {@code linkMtu −
     * 80}, at most 4096, at least 256; see {@code RdmaDevice.queryPort}). A UDP transport reports the
     * MTU of the network interface that carries its bound address (for a wildcard bind, the smallest
     * MTU of the interfaces that are up); a wrapper reports its inner transport's; a multi-loop
     * transport its first lane's. Any thread.
     *
     * @return the IP MTU in bytes, or -1 (the default) when the transport has no such limit or
     *     cannot tell; the port's active MTU is then 4096
     */
    default int linkMtu() {
        return -1;
    }

    /**
     * The per-loop transports a device spreads its QPs over (see the class comment).
     *
     * @return a single-loop transport's own list, {@code [this]} (the default); for a multi-loop
     *     transport its lanes, in a fixed order, at least two, none of them multi-loop itself
     */
    default java.util.List<? extends Transport> lanes() {
        return java.util.List.of(this);
    }

    /**
     * Whether this transport calls {@link PacketReceiver#onReadComplete()} after every batch of
     * {@link PacketReceiver#onPacket} calls (and after every packet it delivers outside a batch),
     * so that the receiver may defer its flush to it.
     *
     * @return {@code false} by default: the receiver must not rely on {@code onReadComplete}
     */
    default boolean signalsReadComplete() {
        return false;
    }

    /**
     * Whether received datagrams may still be waiting to be read: the last read batch stopped at
     * the transport's per-batch limit rather than because the socket was empty. The engine's
     * retransmit and probe timers then wait for the next batch before they decide that the peer is
     * silent, so that an acknowledgement already received, but queued behind a backlog on a loaded
     * host, is not answered by a retransmission ({@code docs/reliability.md}, "Timers on a loaded
     * host"). Loop only.
     *
     * @return {@code false} by default (a transport that cannot tell, or that delivers every
     *     packet as it arrives, such as the in-JVM fabric)
     */
    default boolean receiveBacklogged() {
        return false;
    }

    /** Pushes queued packets to the network. Must be called on the loop. */
    void flush();

    /** Stops the transport and releases its resources. Idempotent. */
    @Override
    void close();
}
