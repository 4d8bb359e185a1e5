package io.rxe4j.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.net.udp.UdpTransport.Io;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * {@code --raw-udp}: the traffic pattern of a test with plain UDP datagrams and no RDMA protocol.
 * The requester sends each message as {@link Shape#count()} datagrams of rxe4j's packet sizes and
 * keeps a window of messages outstanding; the responder answers the last datagram of each message
 * with the response datagrams ({@link Shape}: an ACK-sized datagram per message for WRITE/SEND
 * streams, mirroring one coalesced RC ACK per message; the READ response stream; the atomic ACK;
 * for send_lat the echoed message). Channels are Netty NIO or epoll like {@link UdpTransport}'s,
 * one event-loop thread per side, 4 MiB socket buffers, and with epoll the same recvmmsg batching.
 * There is no retransmission: a window whose responses stop arriving for {@link #STALL_MILLIS} is
 * counted as lost and refilled.
 *
 * <p>Datagram header (fits the smallest, 20-byte ACK): flags (1 byte, bit 0 = last of message),
 * message id (int), then in the last request datagram the response's count, first, middle and last
 * sizes (unsigned shorts).
 */
final class RawUdpBench {
    static final int STALL_MILLIS = 50;
    private static final int MAX_DATAGRAM = UdpTransport.DEFAULT_MAX_DATAGRAM_BYTES;
    private static final int LAST = 1;

    private RawUdpBench() {}

    /**
     * The UDP features of the raw side, which a fair comparison takes from the rxe4j side: the
     * channel implementation, UDP GSO on send (runs of equal-size datagrams to one peer coalesced
     * into one {@code SegmentedDatagramPacket}, at most {@link UdpTransport#GSO_MAX_SEGMENTS}, as
     * {@code UdpTransport} does) and UDP GRO on receive (epoll only).
     */
    record Features(Io io, boolean gso, boolean gro) {
        Features {
            if (gro && io != Io.EPOLL) {
                throw new IllegalArgumentException("GRO needs the epoll transport");
            }
            if (gso && io == Io.NIO) {
                throw new IllegalArgumentException("GSO needs the epoll or io_uring transport");
            }
        }
    }

    /** GRO reads: one buffer for a whole coalesced burst (64 KiB), as UdpTransport. */
    private static final int GRO_READ_BUFFER_BYTES = 65_536;

    static DatagramChannel open(Features f, EventLoopGroup group, InetAddress ip, ChannelInboundHandlerAdapter handler) {
        Io io = f.io();
        DatagramChannel ch = switch (io) {
            case EPOLL -> new EpollDatagramChannel();
            case IO_URING -> new IoUringDatagramChannel();
            case NIO -> new NioDatagramChannel();
        };
        ch.config().setReceiveBufferSize(UdpTransport.DEFAULT_SOCKET_BUFFER_BYTES);
        ch.config().setSendBufferSize(UdpTransport.DEFAULT_SOCKET_BUFFER_BYTES);
        if (ch instanceof EpollDatagramChannel e && f.gro()) {
            if (!e.config().setOption(EpollChannelOption.UDP_GRO, Boolean.TRUE)) {
                throw new IllegalStateException("cannot set UDP_GRO on the raw socket");
            }
            e.config().setMaxDatagramPayloadSize(0); // Netty splits the coalesced datagrams
            ch.config().setRecvByteBufAllocator(new FixedRecvByteBufAllocator(
                    Math.max(GRO_READ_BUFFER_BYTES, MAX_DATAGRAM + 1)));
        } else if (ch instanceof EpollDatagramChannel e) {
            e.config().setMaxDatagramPayloadSize(MAX_DATAGRAM + 1);
            ch.config().setRecvByteBufAllocator(
                    new FixedRecvByteBufAllocator((MAX_DATAGRAM + 1) * UdpTransport.DEFAULT_RECV_BATCH));
        } else if (ch instanceof IoUringDatagramChannel) {
            // as UdpTransport on io_uring: a batch of recvmsg submissions, one slot each
            ch.config().setOption(IoUringChannelOption.MAX_DATAGRAM_PAYLOAD_SIZE, MAX_DATAGRAM + 1);
            ch.config().setRecvByteBufAllocator(
                    new FixedRecvByteBufAllocator((MAX_DATAGRAM + 1) * UdpTransport.DEFAULT_RECV_BATCH));
        } else {
            ch.config().setRecvByteBufAllocator(new FixedRecvByteBufAllocator(MAX_DATAGRAM + 1));
        }
        ch.pipeline().addLast(handler);
        group.register(ch).syncUninterruptibly();
        ch.bind(new InetSocketAddress(ip, 0)).syncUninterruptibly();
        return ch;
    }

    /**
     * Writes the datagrams of one message to {@code peer}: one {@code DatagramPacket} each, or with
     * GSO runs of equal-size datagrams (a shorter one may end a run) copied into one buffer and sent
     * as a {@code SegmentedDatagramPacket}, as {@code UdpTransport.writePending} does.
     */
    static void write(io.netty.channel.Channel ch, boolean gso, java.util.List<ByteBuf> datagrams, InetSocketAddress peer) {
        int n = datagrams.size();
        int i = 0;
        while (i < n) {
            ByteBuf first = datagrams.get(i);
            int size = first.readableBytes();
            int end = i + 1;
            int total = size;
            if (gso && size > 0) {
                while (end < n && end - i < UdpTransport.GSO_MAX_SEGMENTS) {
                    int s = datagrams.get(end).readableBytes();
                    if (s > size || s == 0 || total + s > UdpTransport.MAX_UDP_PAYLOAD_BYTES) {
                        break;
                    }
                    total += s;
                    end++;
                    if (s < size) {
                        break;
                    }
                }
            }
            if (end - i == 1) {
                ch.write(new DatagramPacket(first, peer), ch.voidPromise());
            } else {
                ByteBuf content = ch.alloc().directBuffer(total);
                for (int k = i; k < end; k++) {
                    ByteBuf d = datagrams.get(k);
                    content.writeBytes(d, d.readerIndex(), d.readableBytes());
                    d.release();
                }
                ch.write(new io.netty.channel.epoll.SegmentedDatagramPacket(content, size, peer), ch.voidPromise());
            }
            i = end;
        }
        datagrams.clear();
    }

    /** The passive side: answers each message's last datagram with the response it names. */
    static final class Responder implements AutoCloseable {
        private final EventLoopGroup group;
        private final DatagramChannel channel;

        private final java.util.List<ByteBuf> batch = new java.util.ArrayList<>();

        Responder(Features f, InetAddress ip) {
            group = UdpTransport.newEventLoopGroup(f.io(), 1, "raw-udp-responder");
            channel = open(f, group, ip, new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    DatagramPacket p = (DatagramPacket) msg;
                    try {
                        ByteBuf b = p.content();
                        if (b.readableBytes() >= 13 && (b.getByte(0) & LAST) != 0) {
                            int id = b.getInt(1);
                            int n = b.getUnsignedShort(5);
                            int first = b.getUnsignedShort(7);
                            int mid = b.getUnsignedShort(9);
                            int last = b.getUnsignedShort(11);
                            for (int i = 0; i < n; i++) {
                                int size = i == 0 ? first : i == n - 1 ? last : mid;
                                ByteBuf out = ctx.alloc().directBuffer(size);
                                out.writeByte(i == n - 1 ? LAST : 0).writeInt(id);
                                out.writerIndex(size);
                                batch.add(out);
                            }
                            write(ctx.channel(), f.gso(), batch, p.sender());
                            ctx.flush();
                        }
                    } finally {
                        p.release();
                    }
                }
            });
        }

        InetSocketAddress address() {
            return channel.localAddress();
        }

        @Override
        public void close() {
            channel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    /** The active side; all of its state lives on its one event loop. */
    static final class Requester extends ChannelInboundHandlerAdapter implements AutoCloseable {
        private final EventLoopGroup group;
        private final DatagramChannel channel;
        private final InetSocketAddress peer;
        // phase state, touched on the loop only
        private Shape shape;
        private int window;
        private long target;
        private long deadline;
        private long[] sentAt;
        private int mask;
        private int nextId;
        private long completed;
        private long lost;
        private int outstanding;
        private long lastCompleted;
        private long startNanos;
        private long endNanos;
        private Histogram histogram;
        private CompletableFuture<Result> done;
        private PerfTest test;
        private int bytes;
        private ScheduledFuture<?> stallCheck;

        private final boolean gso;
        private final java.util.List<ByteBuf> batch = new java.util.ArrayList<>();

        Requester(Features f, InetAddress ip, InetSocketAddress peer) {
            this.peer = peer;
            this.gso = f.gso();
            group = UdpTransport.newEventLoopGroup(f.io(), 1, "raw-udp-requester");
            channel = open(f, group, ip, this);
        }

        /**
         * Runs one phase: {@code iterations} messages, or until {@code durationNanos} has passed.
         */
        Result run(PerfTest test, int bytes, Shape shape, int window, long iterations, long durationNanos)
                throws Exception {
            CompletableFuture<Result> f = new CompletableFuture<>();
            channel.eventLoop().execute(() -> start(test, bytes, shape, window, iterations, durationNanos, f));
            return f.get(Math.max(60, TimeUnit.NANOSECONDS.toSeconds(durationNanos) * 3 + 60), TimeUnit.SECONDS);
        }

        private void start(PerfTest t, int b, Shape s, int w, long iterations, long durationNanos,
                CompletableFuture<Result> f) {
            test = t;
            bytes = b;
            shape = s;
            window = w;
            target = iterations > 0 ? iterations : Long.MAX_VALUE;
            startNanos = System.nanoTime();
            deadline = durationNanos > 0 ? startNanos + durationNanos : Long.MAX_VALUE;
            int cap = Integer.highestOneBit(Math.max(1, w) * 2 - 1) * 2;
            sentAt = new long[cap];
            mask = cap - 1;
            completed = 0;
            lost = 0;
            outstanding = 0;
            lastCompleted = -1;
            histogram = t.latency() ? new Histogram(TimeUnit.SECONDS.toNanos(60), 3) : null;
            done = f;
            fill();
            stallCheck = channel.eventLoop().scheduleAtFixedRate(this::checkStall, STALL_MILLIS, STALL_MILLIS,
                    TimeUnit.MILLISECONDS);
        }

        private boolean stopping() {
            return completed + outstanding >= target || System.nanoTime() >= deadline;
        }

        private void fill() {
            boolean wrote = false;
            // and while the channel is writable: Netty queues what the socket cannot take yet, and a
            // window of 8 MiB messages would otherwise queue a gigabyte of direct memory
            while (outstanding < window && !stopping() && (outstanding == 0 || channel.isWritable())) {
                sendMessage();
                wrote = true;
                if (!channel.isWritable()) {
                    channel.flush();
                }
            }
            if (wrote) {
                channel.flush();
            }
            if (outstanding == 0 && stopping()) {
                finish();
            }
        }

        private void sendMessage() {
            int id = nextId++;
            outstanding++;
            sentAt[id & mask] = System.nanoTime();
            int n = shape.count();
            for (int i = 0; i < n; i++) {
                int size = shape.request(i);
                ByteBuf out = channel.alloc().directBuffer(size);
                out.writeByte(i == n - 1 ? LAST : 0).writeInt(id);
                if (i == n - 1) {
                    out.writeShort(shape.respCount()).writeShort(shape.respFirst()).writeShort(shape.respMiddle())
                            .writeShort(shape.respLast());
                }
                out.writerIndex(size);
                batch.add(out);
            }
            write(channel, gso, batch, peer);
        }

        // ---- the mirrored latency mode: the caller posts and waits, as an rxe4j application does ----

        /** How the caller waits for its reply, the same choice rxe-perf makes for the rxe4j side. */
        enum Wait { BUSY, BLOCK, BACKOFF }

        /** Replies received in the mirrored mode; written on the loop, read by the caller. */
        private volatile long mirroredReplies;
        private volatile Thread mirroredWaiter;
        private volatile boolean mirrored;

        /**
         * One latency phase run like an rxe4j ping-pong: the calling thread hands each message to the
         * channel's event loop (as {@code postSend} hands a WR to the device loop), the loop sends it
         * and receives the reply, and the caller waits for that reply the way the rxe4j side waits for
         * its completion ({@code wait}). So a latency ratio compares equal structures and equal waiting.
         * A reply missing for 50 ms is counted lost and the next message is sent.
         */
        Result runLatency(PerfTest t, int b, Shape s, long iterations, long durationNanos, Wait wait)
                throws Exception {
            channel.eventLoop().submit(() -> {
                shape = s;
                sentAt = new long[1];
                mask = 0;
            }).get(10, TimeUnit.SECONDS);
            org.agrona.concurrent.IdleStrategy backoff = wait == Wait.BACKOFF
                    ? new org.agrona.concurrent.BackoffIdleStrategy(100, 10, 1_000, 100_000) : null;
            Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
            long target = iterations > 0 ? iterations : Long.MAX_VALUE;
            long start = System.nanoTime();
            long deadlineAll = durationNanos > 0 ? start + durationNanos : Long.MAX_VALUE;
            long lostHere = 0;
            long n = 0;
            mirroredWaiter = Thread.currentThread();
            mirrored = true;
            try {
                long seen = mirroredReplies;
                while (n < target && System.nanoTime() < deadlineAll) {
                    long t0 = System.nanoTime();
                    channel.eventLoop().execute(() -> {
                        sendMessage();
                        outstanding = 0; // the mirrored mode does not use the window
                        channel.flush();
                    });
                    long stallAt = t0 + TimeUnit.MILLISECONDS.toNanos(STALL_MILLIS);
                    boolean got = false;
                    while (!got) {
                        if (mirroredReplies != seen) {
                            got = true;
                            break;
                        }
                        if (System.nanoTime() > stallAt) {
                            break;
                        }
                        switch (wait) {
                            case BUSY -> Thread.onSpinWait();
                            case BLOCK -> java.util.concurrent.locks.LockSupport.parkNanos(this,
                                    TimeUnit.MILLISECONDS.toNanos(1));
                            case BACKOFF -> backoff.idle();
                        }
                    }
                    if (got) {
                        seen = mirroredReplies;
                        h.recordValue(Math.max(0, System.nanoTime() - t0));
                        n++;
                        if (backoff != null) {
                            backoff.reset();
                        }
                    } else {
                        lostHere++;
                        seen = mirroredReplies;
                    }
                }
            } finally {
                mirrored = false;
                mirroredWaiter = null;
            }
            return new Result(t, true, b, n, (System.nanoTime() - start) / 1e9, h, lostHere);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (mirrored) {
                try {
                    if (msg instanceof DatagramPacket p && (p.content().getByte(0) & LAST) != 0) {
                        mirroredReplies = mirroredReplies + 1; // single writer: the loop
                        Thread w = mirroredWaiter;
                        if (w != null) {
                            java.util.concurrent.locks.LockSupport.unpark(w);
                        }
                    }
                } finally {
                    ReferenceCountUtil.release(msg);
                }
                return;
            }
            try {
                if (done == null || !(msg instanceof DatagramPacket p)) {
                    return;
                }
                ByteBuf b = p.content();
                if ((b.getByte(0) & LAST) == 0 || outstanding == 0) {
                    return;
                }
                int id = b.getInt(1);
                long now = System.nanoTime();
                if (histogram != null) {
                    histogram.recordValue(Math.max(0, now - sentAt[id & mask]));
                }
                outstanding--;
                completed++;
                endNanos = now;
                fill();
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (done != null && ctx.channel().isWritable()) {
                fill();
            }
            ctx.fireChannelWritabilityChanged();
        }

        private void checkStall() {
            if (done == null) {
                return;
            }
            if (completed == lastCompleted && outstanding > 0) {
                lost += outstanding;
                outstanding = 0;
                fill();
            }
            lastCompleted = completed;
        }

        private void finish() {
            if (done == null) {
                return;
            }
            stallCheck.cancel(false);
            CompletableFuture<Result> f = done;
            done = null;
            long end = completed == 0 ? System.nanoTime() : endNanos;
            f.complete(new Result(test, true, bytes, completed, (end - startNanos) / 1e9, histogram, lost));
        }

        @Override
        public void close() {
            channel.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

}
