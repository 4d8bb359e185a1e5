package io.rxe4j.net.udp;

import io.netty.buffer.ByteBuf;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;

/**
 * Writes a {@link UdpTransport}'s datagrams with Linux's {@code sendmmsg(2)} on its epoll socket,
 * called through the JDK's foreign function API, instead of through Netty's channel: a batch of at
 * most {@link #BATCH} datagrams (each one {@code struct mmsghdr} with one {@code iovec} pointing at
 * the packet's own bytes, and for a GSO train a {@code UDP_SEGMENT} control message with its segment
 * size, {@code udp(7)}) goes to the kernel in one call, in the order added. The batch's headers,
 * addresses and control messages live in one native block made once per transport, so a datagram
 * costs no object: no {@code DatagramPacket} envelope, no write promise, no outbound-buffer entry,
 * no pipeline pass ({@code docs/performance.md}, issue 25).
 *
 * <p>What the kernel does with each datagram goes to the {@link Sink}: sent (the writer releases
 * the packet); refused with an errno other than {@code EAGAIN}/{@code EINTR} (the sink is told with
 * a Netty {@code NativeIoException} naming the errno, as Netty's own write would fail, then the
 * packet is released; the datagrams after it are still sent); or, when the socket's send buffer is
 * full ({@code EAGAIN}), handed to the sink with its reference, in order, together with every
 * datagram after it in the batch, for the channel to queue and send when the socket is writable.
 * {@code EINTR} is retried.
 *
 * <p>Needs native access for this module ({@code --enable-native-access}); {@link #available()}
 * says whether the downcall could be made. Event loop only; not thread-safe.
 */
final class SendmmsgWriter {
    /** Most datagrams per {@code sendmmsg} call (the kernel takes at most {@code UIO_MAXIOV}, 1024). */
    static final int BATCH = 64;

    /** What happens to the datagrams the kernel did not send. Called on the loop, in order. */
    interface Sink {
        /** The kernel refused the datagram; the writer releases {@code packet} after this returns. */
        void refused(ByteBuf packet, int segmentSize, InetSocketAddress peer, Throwable cause);

        /** The socket's send buffer is full: the sink takes {@code packet}'s reference and sends it later. */
        void deferred(ByteBuf packet, int segmentSize, InetSocketAddress peer);
    }

    /** The system call, replaceable in tests. */
    interface Syscall {
        /**
         * {@code sendmmsg(fd, msgvec, vlen, 0)}.
         *
         * @return the number of messages sent (≥ 1), or a negative errno
         */
        int sendmmsg(int fd, MemorySegment msgvec, int vlen);
    }

    // x86-64 / aarch64 LP64 layouts (linux/socket.h, bits/socket.h)
    private static final long MSGHDR_NAME = 0;
    private static final long MSGHDR_NAMELEN = 8;
    private static final long MSGHDR_IOV = 16;
    private static final long MSGHDR_IOVLEN = 24;
    private static final long MSGHDR_CONTROL = 32;
    private static final long MSGHDR_CONTROLLEN = 40;
    private static final long MSGHDR_FLAGS = 48;
    /** sizeof(struct mmsghdr): a msghdr (56 bytes) and msg_len, padded to 8. */
    static final long MMSGHDR = 64;
    private static final long IOVEC = 16;
    /** Room for one sockaddr_in6 (28 bytes), 8-aligned. */
    private static final long SOCKADDR = 32;
    private static final int SOCKADDR_IN = 16;
    private static final int SOCKADDR_IN6 = 28;
    /** CMSG_SPACE(sizeof(uint16_t)): a cmsghdr (16 bytes) and the segment size, padded to 8. */
    private static final long CMSG_SPACE = 24;
    /** CMSG_LEN(sizeof(uint16_t)). */
    private static final long CMSG_LEN = 18;
    private static final int SOL_UDP = 17;
    private static final int UDP_SEGMENT = 103;
    private static final short AF_INET = 2;
    private static final short AF_INET6 = 10;
    private static final int EAGAIN = 11;
    private static final int EINTR = 4;
    /** Peers whose socket address is kept encoded (direct-mapped by identity hash). */
    private static final int PEER_CACHE = 8;

    private static final ValueLayout.OfShort NATIVE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final int fd;
    private final boolean ipv6Socket;
    private final Syscall syscall;
    private final Sink sink;
    private final MemorySegment mmsg;
    private final MemorySegment iov;
    private final MemorySegment names;
    private final MemorySegment cmsgs;
    private final MemorySegment peerNames;
    /** The batch from message i on, one view per i (no slice per call). */
    private final MemorySegment[] batchAt = new MemorySegment[BATCH];
    private final InetSocketAddress[] cachedPeers = new InetSocketAddress[PEER_CACHE];
    private final int[] cachedLengths = new int[PEER_CACHE];
    private final ByteBuf[] packets = new ByteBuf[BATCH];
    private final int[] segments = new int[BATCH];
    private final InetSocketAddress[] peers = new InetSocketAddress[BATCH];
    private int count;
    private long batchBytes;
    private long calls;
    private long datagrams;
    private long deferred;

    /**
     * @param fd the socket (non-blocking, as Netty's channels are)
     * @param ipv6Socket whether the socket is AF_INET6 (IPv4 peers are then written as v4-mapped)
     * @param syscall null for the real {@code sendmmsg}
     */
    SendmmsgWriter(int fd, boolean ipv6Socket, Sink sink, Syscall syscall) {
        if (syscall == null && !Native.available()) {
            throw new IllegalStateException("sendmmsg is not available: " + Native.unavailability());
        }
        this.fd = fd;
        this.ipv6Socket = ipv6Socket;
        this.sink = sink;
        this.syscall = syscall != null ? syscall : Native.syscall();
        MemorySegment block = Arena.ofAuto().allocate(
                BATCH * (MMSGHDR + IOVEC + SOCKADDR + CMSG_SPACE) + PEER_CACHE * SOCKADDR, 8);
        long at = 0;
        mmsg = block.asSlice(at, BATCH * MMSGHDR);
        at += BATCH * MMSGHDR;
        iov = block.asSlice(at, BATCH * IOVEC);
        at += BATCH * IOVEC;
        names = block.asSlice(at, BATCH * SOCKADDR);
        at += BATCH * SOCKADDR;
        cmsgs = block.asSlice(at, BATCH * CMSG_SPACE);
        at += BATCH * CMSG_SPACE;
        peerNames = block.asSlice(at, PEER_CACHE * SOCKADDR);
        for (int i = 0; i < BATCH; i++) {
            long m = i * MMSGHDR;
            batchAt[i] = mmsg.asSlice(m);
            mmsg.set(ValueLayout.ADDRESS, m + MSGHDR_NAME, names.asSlice(i * SOCKADDR));
            mmsg.set(ValueLayout.ADDRESS, m + MSGHDR_IOV, iov.asSlice(i * IOVEC));
            mmsg.set(ValueLayout.JAVA_LONG, m + MSGHDR_IOVLEN, 1);
            long c = i * CMSG_SPACE;
            cmsgs.set(ValueLayout.JAVA_LONG, c, CMSG_LEN);
            cmsgs.set(ValueLayout.JAVA_INT, c + 8, SOL_UDP);
            cmsgs.set(ValueLayout.JAVA_INT, c + 12, UDP_SEGMENT);
        }
    }

    /** @return whether the real {@code sendmmsg} can be called (native access, Linux, a known ABI) */
    static boolean available() {
        return Native.available();
    }

    /** @return the real {@code sendmmsg} (tests wrap it); requires {@link #available()} */
    static Syscall realSyscall() {
        if (!Native.available()) {
            throw new IllegalStateException("sendmmsg is not available: " + Native.unavailability());
        }
        return Native.syscall();
    }

    /** @return why {@link #available()} is false, or null */
    static String unavailability() {
        return Native.unavailability();
    }

    /**
     * Adds one datagram to the batch, taking {@code packet}'s reference; the batch must not be full
     * ({@link #pending()} below {@link #BATCH}: {@link #flush()} first). A packet whose memory has no native address is refused as {@link
     * IllegalArgumentException} (callers only pass direct buffers), an unresolved peer likewise.
     *
     * @param segmentSize the GSO segment size if {@code packet} is a train of several segments, else 0
     */
    void add(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
        if (!packet.hasMemoryAddress() || peer.getAddress() == null) {
            try {
                sink.refused(packet, segmentSize, peer, new IllegalArgumentException(peer.getAddress() == null
                        ? "unresolved peer " + peer : "a packet buffer without a native address: " + packet));
            } finally {
                packet.release();
            }
            return;
        }
        if (count == BATCH) {
            packet.release();
            throw new IllegalStateException("sendmmsg batch full (" + BATCH + " datagrams): flush first");
        }
        int i = count;
        long m = i * MMSGHDR;
        int len = packet.readableBytes();
        iov.set(ValueLayout.JAVA_LONG, i * IOVEC, packet.memoryAddress() + packet.readerIndex());
        iov.set(ValueLayout.JAVA_LONG, i * IOVEC + 8, len);
        mmsg.set(ValueLayout.JAVA_INT, m + MSGHDR_NAMELEN, name(peer, i));
        if (segmentSize > 0 && len > segmentSize) {
            cmsgs.set(NATIVE_SHORT, i * CMSG_SPACE + 16, (short) segmentSize);
            mmsg.set(ValueLayout.JAVA_LONG, m + MSGHDR_CONTROL, cmsgs.address() + i * CMSG_SPACE);
            mmsg.set(ValueLayout.JAVA_LONG, m + MSGHDR_CONTROLLEN, CMSG_SPACE);
        } else {
            mmsg.set(ValueLayout.JAVA_LONG, m + MSGHDR_CONTROL, 0);
            mmsg.set(ValueLayout.JAVA_LONG, m + MSGHDR_CONTROLLEN, 0);
        }
        mmsg.set(ValueLayout.JAVA_INT, m + MSGHDR_FLAGS, 0);
        packets[i] = packet;
        segments[i] = segmentSize;
        peers[i] = peer;
        count = i + 1;
        batchBytes += len;
    }

    /** @return the datagrams added and not yet given to the kernel */
    int pending() {
        return count;
    }

    /** @return the UDP payload bytes of the datagrams added and not yet given to the kernel */
    long pendingBytes() {
        return batchBytes;
    }

    /**
     * Gives the batch to the kernel: one {@code sendmmsg} call while it takes them all, more after a
     * refused datagram; the rest to {@link Sink#deferred} when the socket is full.
     */
    void flush() {
        int done = 0;
        try {
            while (done < count) {
                int r = syscall.sendmmsg(fd, batchAt[done], count - done);
                calls++;
                if (r > 0) {
                    for (int k = done; k < done + r; k++) {
                        release(k);
                    }
                    datagrams += r;
                    done += r;
                } else if (r == -EINTR) {
                    continue;
                } else if (r == -EAGAIN || r == 0) {
                    for (int k = done; k < count; k++) {
                        ByteBuf p = packets[k];
                        InetSocketAddress peer = peers[k];
                        packets[k] = null;
                        peers[k] = null;
                        deferred++;
                        sink.deferred(p, segments[k], peer);
                    }
                    done = count;
                } else {
                    ByteBuf p = packets[done];
                    try {
                        sink.refused(p, segments[done], peers[done],
                                io.netty.channel.unix.Errors.newIOException("sendmmsg", r));
                    } finally {
                        release(done);
                    }
                    done++;
                }
            }
        } finally {
            for (int k = done; k < count; k++) {
                release(k); // an exception from a sink: nothing is left holding a packet
            }
            count = 0;
            batchBytes = 0;
        }
    }

    private void release(int k) {
        ByteBuf p = packets[k];
        if (p != null) {
            packets[k] = null;
            peers[k] = null;
            p.release();
        }
    }

    /** Releases the datagrams not yet sent (the transport closed). */
    void discard() {
        for (int k = 0; k < count; k++) {
            release(k);
        }
        count = 0;
        batchBytes = 0;
    }

    /** @return sendmmsg calls made */
    long calls() {
        return calls;
    }

    /** @return datagrams (GSO trains counted once) the kernel took */
    long datagrams() {
        return datagrams;
    }

    /** @return datagrams handed to {@link Sink#deferred} because the socket was full */
    long deferredCount() {
        return deferred;
    }

    /** Writes {@code peer}'s socket address for message {@code i}; @return its length in bytes */
    private int name(InetSocketAddress peer, int i) {
        int slot = System.identityHashCode(peer) & (PEER_CACHE - 1);
        if (cachedPeers[slot] != peer) {
            cachedLengths[slot] = encode(peer, peerNames.asSlice(slot * SOCKADDR, SOCKADDR));
            cachedPeers[slot] = peer;
        }
        MemorySegment.copy(peerNames, slot * SOCKADDR, names, i * SOCKADDR, SOCKADDR);
        return cachedLengths[slot];
    }

    /** Encodes a {@code sockaddr_in} or {@code sockaddr_in6} into {@code to}; @return its length */
    private int encode(InetSocketAddress peer, MemorySegment to) {
        to.fill((byte) 0);
        InetAddress a = peer.getAddress();
        byte[] bytes = a.getAddress();
        if (!ipv6Socket && a instanceof Inet4Address) {
            to.set(NATIVE_SHORT, 0, AF_INET);
            to.set(BE_SHORT, 2, (short) peer.getPort());
            MemorySegment.copy(bytes, 0, to, ValueLayout.JAVA_BYTE, 4, 4);
            return SOCKADDR_IN;
        }
        to.set(NATIVE_SHORT, 0, AF_INET6);
        to.set(BE_SHORT, 2, (short) peer.getPort());
        if (a instanceof Inet4Address) {
            // v4-mapped ::ffff:a.b.c.d on an IPv6 socket
            to.set(ValueLayout.JAVA_BYTE, 18, (byte) 0xff);
            to.set(ValueLayout.JAVA_BYTE, 19, (byte) 0xff);
            MemorySegment.copy(bytes, 0, to, ValueLayout.JAVA_BYTE, 20, 4);
        } else {
            MemorySegment.copy(bytes, 0, to, ValueLayout.JAVA_BYTE, 8, 16);
            to.set(ValueLayout.JAVA_INT_UNALIGNED, 24, ((Inet6Address) a).getScopeId());
        }
        return SOCKADDR_IN6; // an IPv6 address on an IPv4 socket: the kernel refuses it (EAFNOSUPPORT)
    }

    /** The downcall to libc's {@code sendmmsg}, with errno captured; constant, so that it inlines. */
    private static final class Native {
        private static final String UNAVAILABLE;
        private static final MethodHandle SENDMMSG;
        private static final StructLayout STATE = Linker.Option.captureStateLayout();
        private static final long ERRNO = STATE.byteOffset(MemoryLayout.PathElement.groupElement("errno"));

        static {
            String why = null;
            MethodHandle h = null;
            try {
                Module m = SendmmsgWriter.class.getModule();
                if (!m.isNativeAccessEnabled()) {
                    why = "native access is not enabled for "
                            + (m.isNamed() ? "module " + m.getName() : "the class path") + " (--enable-native-access)";
                } else if (!"Linux".equals(System.getProperty("os.name")) || ValueLayout.ADDRESS.byteSize() != 8) {
                    why = "not a 64-bit Linux";
                } else {
                    Linker linker = Linker.nativeLinker();
                    MemorySegment fn = linker.defaultLookup().find("sendmmsg").orElse(null);
                    if (fn == null) {
                        why = "libc has no sendmmsg";
                    } else {
                        h = linker.downcallHandle(fn, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                                Linker.Option.captureCallState("errno"));
                    }
                }
            } catch (RuntimeException | LinkageError e) {
                why = e.toString();
                h = null;
            }
            UNAVAILABLE = why;
            SENDMMSG = h;
        }

        static boolean available() {
            return SENDMMSG != null;
        }

        static String unavailability() {
            return UNAVAILABLE;
        }

        /** @return a syscall with its own errno buffer */
        static Syscall syscall() {
            MemorySegment state = Arena.ofAuto().allocate(STATE);
            return (fd, vec, vlen) -> sendmmsg(state, fd, vec, vlen);
        }

        static int sendmmsg(MemorySegment state, int fd, MemorySegment msgvec, int vlen) {
            int r;
            try {
                r = (int) SENDMMSG.invokeExact(state, fd, msgvec, vlen, 0);
            } catch (Throwable t) {
                throw new IllegalStateException("sendmmsg downcall failed", t);
            }
            return r >= 0 ? r : -state.get(ValueLayout.JAVA_INT, ERRNO);
        }
    }
}
