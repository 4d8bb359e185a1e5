package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class UdpTransportTest {

    private static final long TIMEOUT_S = 30;
    private static final ByteBufAllocator UNPOOLED = new UnpooledByteBufAllocator(true);

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private static InetAddress ip(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private UdpTransport open(UdpTransport.Builder b) {
        UdpTransport t = b.bind();
        toClose.add(t);
        return t;
    }

    private UdpTransport loopback(String address) {
        return open(UdpTransport.builder(ip(address)).port(0).allocator(UNPOOLED));
    }

    /** Runs {@code r} on {@code s}'s loop and waits for it. */
    private static void onLoop(Scheduler s, Runnable r) throws Exception {
        CompletableFuture<Void> done = new CompletableFuture<>();
        s.execute(() -> {
            try {
                r.run();
                done.complete(null);
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        done.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static void send(UdpTransport t, String text, InetSocketAddress peer) throws Exception {
        onLoop(t.scheduler(), () -> {
            ByteBuf p = t.allocator().buffer();
            p.writeCharSequence(text, StandardCharsets.US_ASCII);
            t.send(p, peer);
            t.flush();
        });
    }

    /** Records what arrives: payload, addresses, thread, the buffers themselves. */
    private static final class Recorder implements PacketReceiver {
        final List<String> payloads = Collections.synchronizedList(new ArrayList<>());
        final List<InetSocketAddress> senders = Collections.synchronizedList(new ArrayList<>());
        final List<InetSocketAddress> recipients = Collections.synchronizedList(new ArrayList<>());
        final List<ByteBuf> buffers = Collections.synchronizedList(new ArrayList<>());
        final Scheduler loop;
        final CountDownLatch latch;
        volatile boolean allInLoop = true;

        Recorder(Scheduler loop, int expected) {
            this.loop = loop;
            this.latch = new CountDownLatch(expected);
        }

        @Override
        public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
            allInLoop &= loop.inLoop();
            buffers.add(packet);
            payloads.add(packet.toString(StandardCharsets.US_ASCII));
            senders.add(sender);
            recipients.add(recipient);
            latch.countDown();
        }

        void await() throws InterruptedException {
            assertThat(latch.await(TIMEOUT_S, TimeUnit.SECONDS)).as("datagrams arrived").isTrue();
        }
    }

    private void exchangeBothWays(String address) throws Exception {
        UdpTransport a = loopback(address);
        UdpTransport b = loopback(address);
        assertThat(a.localAddress().getPort()).isPositive();
        assertThat(b.localAddress().getPort()).isPositive().isNotEqualTo(a.localAddress().getPort());
        assertThat(a.localAddress().getAddress()).isEqualTo(ip(address));

        Recorder ra = new Recorder(a.scheduler(), 2);
        Recorder rb = new Recorder(b.scheduler(), 2);
        a.start(ra);
        b.start(rb);

        send(a, "a->b 1", b.localAddress());
        send(a, "a->b 2", b.localAddress());
        send(b, "b->a 1", a.localAddress());
        send(b, "b->a 2", a.localAddress());
        ra.await();
        rb.await();
        // barrier: each receiving loop released its buffers before running this
        onLoop(a.scheduler(), () -> {});
        onLoop(b.scheduler(), () -> {});

        assertThat(rb.payloads).containsExactlyInAnyOrder("a->b 1", "a->b 2");
        assertThat(ra.payloads).containsExactlyInAnyOrder("b->a 1", "b->a 2");
        assertThat(rb.senders).containsOnly(a.localAddress());
        assertThat(rb.recipients).containsOnly(b.localAddress());
        assertThat(ra.senders).containsOnly(b.localAddress());
        assertThat(ra.recipients).containsOnly(a.localAddress());
        assertThat(ra.allInLoop).isTrue();
        assertThat(rb.allInLoop).isTrue();
        assertThat(ra.buffers).allMatch(buf -> buf.refCnt() == 0);
        assertThat(rb.buffers).allMatch(buf -> buf.refCnt() == 0);
        assertThat(a.packetsSent()).isEqualTo(2);
        assertThat(b.packetsReceived()).isEqualTo(2);
        assertThat(a.receiveErrors()).isZero();
        assertThat(a.channelErrors()).isZero();
    }

    @Test
    void ipv4LoopbackExchangesBothWays() throws Exception {
        exchangeBothWays("127.0.0.1");
    }

    @Test
    void ipv6LoopbackExchangesBothWays() throws Exception {
        UdpTransport probe;
        try {
            probe = UdpTransport.builder(ip("::1")).port(0).bind();
        } catch (UncheckedIOException | IllegalStateException e) {
            assumeTrue(false, "IPv6 loopback unavailable: " + e);
            return;
        }
        probe.close();
        exchangeBothWays("::1");
    }

    @Test
    void sentBuffersAreReleased() throws Exception {
        UdpTransport a = loopback("127.0.0.1");
        UdpTransport b = loopback("127.0.0.1");
        Recorder rb = new Recorder(b.scheduler(), 2);
        a.start((p, s, r) -> {});
        b.start(rb);

        ByteBuf direct = UNPOOLED.directBuffer().writeLong(1);
        ByteBuf heap = UNPOOLED.heapBuffer().writeLong(2);
        onLoop(a.scheduler(), () -> {
            a.send(direct, b.localAddress());
            a.send(heap, b.localAddress());
            a.flush();
        });
        rb.await();
        onLoop(a.scheduler(), () -> {});

        assertThat(direct.refCnt()).isZero();
        assertThat(heap.refCnt()).isZero();
    }

    @Test
    void defaultsAndSocketOptions() {
        UdpTransport t = open(UdpTransport.builder(ip("127.0.0.1")).port(0));
        assertThat(t.maxDatagramBytes()).isEqualTo(UdpTransport.DEFAULT_MAX_DATAGRAM_BYTES);
        assertThat(t.allocator()).isSameAs(ByteBufAllocator.DEFAULT);
        // the kernel may clamp the 4 MiB request (net.core.rmem_max), but it grants something
        assertThat(t.receiveBufferBytes()).isPositive();
        assertThat(t.sendBufferBytes()).isPositive();
        if (System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            assertThat(t.dontFragment()).as("IP_DONTFRAGMENT is supported on Linux").isTrue();
        }
        UdpTransport noDf = open(UdpTransport.builder(ip("127.0.0.1")).port(0).dontFragment(false));
        assertThat(noDf.dontFragment()).isFalse();
        assertThat(UdpTransport.ROCE_V2_PORT).isEqualTo(4791);
        assertThat(t.writeBufferLowWaterMark()).isEqualTo(256 * 1024);
        assertThat(t.writeBufferHighWaterMark()).isEqualTo(1024 * 1024);
        UdpTransport marks = open(UdpTransport.builder(ip("127.0.0.1")).port(0).writeBufferWaterMark(0, 1));
        assertThat(marks.writeBufferLowWaterMark()).isZero();
        assertThat(marks.writeBufferHighWaterMark()).isEqualTo(1);
    }

    @Test
    void sendBeforeStartThrowsAndReleases() {
        UdpTransport t = loopback("127.0.0.1");
        ByteBuf p = UNPOOLED.buffer().writeByte(1);
        assertThatThrownBy(() -> t.send(p, t.localAddress())).isInstanceOf(IllegalStateException.class);
        assertThat(p.refCnt()).isZero();
    }

    @Test
    void startTwiceThrows() {
        UdpTransport t = loopback("127.0.0.1");
        t.start((p, s, r) -> {});
        assertThatThrownBy(() -> t.start((p, s, r) -> {})).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void datagramsSentBeforeStartWaitInTheKernel() throws Exception {
        UdpTransport a = loopback("127.0.0.1");
        UdpTransport b = loopback("127.0.0.1");
        a.start((p, s, r) -> {});
        send(a, "early", b.localAddress());

        Recorder rb = new Recorder(b.scheduler(), 1);
        b.start(rb);
        rb.await();
        assertThat(rb.payloads).containsExactly("early");
    }

    @Test
    void receiverExceptionsAreCountedAndTheReceivePathGoesOn() throws Exception {
        UdpTransport a = loopback("127.0.0.1");
        UdpTransport b = loopback("127.0.0.1");
        List<ByteBuf> seen = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch good = new CountDownLatch(1);
        a.start((p, s, r) -> {});
        b.start((p, s, r) -> {
            seen.add(p);
            if (p.toString(StandardCharsets.US_ASCII).equals("bad")) {
                throw new IllegalStateException("receiver failure (expected by the test)");
            }
            good.countDown();
        });

        send(a, "bad", b.localAddress());
        send(a, "good", b.localAddress());
        assertThat(good.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        onLoop(b.scheduler(), () -> {});

        assertThat(b.receiveErrors()).isEqualTo(1);
        assertThat(seen).hasSize(2).allMatch(buf -> buf.refCnt() == 0);
    }

    @Test
    void oversizedDatagramsAreDroppedAndCounted() throws Exception {
        UdpTransport a = loopback("127.0.0.1");
        UdpTransport b = open(UdpTransport.builder(ip("127.0.0.1")).port(0).maxDatagramBytes(100));
        Recorder rb = new Recorder(b.scheduler(), 2);
        a.start((p, s, r) -> {});
        b.start(rb);

        send(a, "x".repeat(100), b.localAddress()); // exactly the limit: accepted
        send(a, "y".repeat(101), b.localAddress()); // one byte more: dropped
        send(a, "small", b.localAddress());
        rb.await();
        onLoop(b.scheduler(), () -> {});

        assertThat(rb.payloads).containsExactly("x".repeat(100), "small");
        assertThat(b.oversizedDropped()).isEqualTo(1);
    }

    @Test
    void callerSuppliedGroupIsUsedAndNotShutDown() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            UdpTransport t = UdpTransport.builder(ip("127.0.0.1")).port(0).eventLoopGroup(group).bind();
            assertThat(group.next().inEventLoop(Thread.currentThread())).isFalse();
            CompletableFuture<Boolean> onGroupThread = new CompletableFuture<>();
            group.next().execute(() -> onGroupThread.complete(t.scheduler().inLoop()));
            assertThat(onGroupThread.get(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
            assertThat(t.scheduler().eventLoop().parent()).isSameAs(group);
            t.close();
            assertThat(t.isClosed()).isTrue();
            assertThat(group.isShuttingDown()).isFalse();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void closeShutsDownTheOwnGroupAndIsIdempotent() {
        UdpTransport t = UdpTransport.builder(ip("127.0.0.1")).port(0).bind();
        t.start((p, s, r) -> {});
        t.close();
        t.close();
        assertThat(t.isClosed()).isTrue();
        assertThat(t.scheduler().eventLoop().isTerminated()).isTrue();
        // send after close drops silently and releases
        ByteBuf p = UNPOOLED.buffer().writeByte(1);
        t.send(p, t.localAddress());
        assertThat(p.refCnt()).isZero();
        assertThatThrownBy(() -> t.start((x, s, r) -> {})).isInstanceOf(IllegalStateException.class);
    }

    /** Reads {@code isDaemon()} of the thread that runs a task on {@code loop}. */
    private static boolean daemonOn(java.util.concurrent.Executor loop) throws Exception {
        CompletableFuture<Boolean> daemon = new CompletableFuture<>();
        loop.execute(() -> daemon.complete(Thread.currentThread().isDaemon()));
        return daemon.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Issue 13: by default the fastest path the host supports, and every choice can be read back. */
    @Test
    void defaultsAreEpollWithGsoAndGroWhereSupportedAndExplicitChoicesStick() {
        UdpTransport d = loopback("127.0.0.1");
        if (UdpTransport.isEpollAvailable()) {
            assertThat(d.io()).isEqualTo(UdpTransport.Io.EPOLL);
            assertThat(d.gso()).as("no GSO over IPv4 by default: its segments' IP IDs break the ICRC").isFalse();
            assertThat(d.gro()).isEqualTo(UdpTransport.isGsoSupported());
            UdpTransport v6 = loopback("::1");
            assertThat(v6.io()).isEqualTo(UdpTransport.Io.EPOLL);
            assertThat(v6.gso()).as("IPv6 has no IP ID: GSO on where supported").isEqualTo(UdpTransport.isGsoSupported());
            assertThat(v6.gro()).isEqualTo(UdpTransport.isGsoSupported());
        } else {
            assertThat(d.io()).isEqualTo(UdpTransport.Io.NIO);
            assertThat(d.gso()).isFalse();
            assertThat(d.gro()).isFalse();
        }
        UdpTransport nio = open(UdpTransport.builder(ip("127.0.0.1")).port(0).io(UdpTransport.Io.NIO));
        assertThat(nio.io()).isEqualTo(UdpTransport.Io.NIO);
        assertThat(nio.gso()).as("NIO: no GSO, and no error, when not asked for").isFalse();
        assertThat(nio.gro()).isFalse();
        if (UdpTransport.isGsoSupported()) {
            UdpTransport off = open(UdpTransport.builder(ip("127.0.0.1")).port(0).gso(false).gro(false));
            assertThat(off.io()).isEqualTo(UdpTransport.Io.EPOLL);
            assertThat(off.gso()).isFalse();
            assertThat(off.gro()).isFalse();
        }
    }

    @Test
    void ownAndCreatedLoopsRunOnDaemonThreads() throws Exception {
        UdpTransport nio = open(UdpTransport.builder(ip("127.0.0.1")).port(0).io(UdpTransport.Io.NIO));
        assertThat(nio.io()).isEqualTo(UdpTransport.Io.NIO);
        assertThat(daemonOn(nio.scheduler()::execute)).as("own NIO loop thread is a daemon").isTrue();
        List<UdpTransport.Io> kinds = new ArrayList<>(List.of(UdpTransport.Io.NIO));
        if (UdpTransport.isEpollAvailable()) {
            UdpTransport epoll = open(UdpTransport.builder(ip("127.0.0.1")).port(0).io(UdpTransport.Io.EPOLL));
            assertThat(daemonOn(epoll.scheduler()::execute)).as("own epoll loop thread is a daemon").isTrue();
            kinds.add(UdpTransport.Io.EPOLL);
        }
        for (UdpTransport.Io io : kinds) {
            EventLoopGroup group = UdpTransport.newEventLoopGroup(io, 2, "daemon-test");
            try {
                assertThat(daemonOn(group.next())).as("%s group thread is a daemon", io).isTrue();
                assertThat(daemonOn(group.next())).as("%s group thread is a daemon", io).isTrue();
            } finally {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }

    @Test
    void closeOnTheLoopDoesNotDeadlock() throws Exception {
        UdpTransport t = UdpTransport.builder(ip("127.0.0.1")).port(0).bind();
        onLoop(t.scheduler(), t::close);
        assertThat(t.scheduler().eventLoop().terminationFuture().await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void portInUseFails() {
        UdpTransport a = loopback("127.0.0.1");
        assertThatThrownBy(() -> UdpTransport.bind(a.localAddress()))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(String.valueOf(a.localAddress().getPort()));
    }

    @Test
    void invalidSettingsAreRejected() {
        assertThatThrownBy(() -> UdpTransport.builder(ip("0.0.0.0")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("wildcard");
        assertThatThrownBy(() -> UdpTransport.builder(ip("::")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> UdpTransport.bind(InetSocketAddress.createUnresolved("x", 1)))
                .isInstanceOf(IllegalArgumentException.class);
        UdpTransport.Builder b = UdpTransport.builder(ip("127.0.0.1"));
        assertThatThrownBy(() -> b.port(65536)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.port(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.maxDatagramBytes(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.maxDatagramBytes(70_000)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.receiveBufferBytes(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.sendBufferBytes(-5)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.writeBufferWaterMark(-1, 10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.writeBufferWaterMark(11, 10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("low 11, high 10");
        assertThatThrownBy(() -> b.writeBufferWaterMark(0, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
