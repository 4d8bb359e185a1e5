package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.channel.unix.IntegerUnixChannelOption;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * IPv6 datagrams with UDP checksum 0, as Linux kernel rdma_rxe sends them: a plain IPv6 socket
 * does not get them (the kernel drops them as checksum errors), a {@link UdpTransport} does
 * (UDP_NO_CHECK6_RX), even when NIO was asked for. The zero-checksum sender is an epoll socket with
 * UDP_NO_CHECK6_TX.
 */
class UdpTransportZeroChecksumTest {

    private static final long TIMEOUT_S = 30;
    // <linux/udp.h>, <asm-generic/socket.h>
    private static final int SOL_SOCKET = 1;
    private static final int SO_NO_CHECK = 11;
    private static final int SOL_UDP = 17;
    private static final int UDP_NO_CHECK6_TX = 101;
    private static final Path SNMP6 = Path.of("/proc/net/snmp6");

    private final List<AutoCloseable> toClose = new ArrayList<>();
    private EventLoopGroup group;

    @BeforeEach
    void assumeEpoll() {
        assumeTrue(UdpTransport.isEpollAvailable(),
                "Netty native epoll unavailable (zero-checksum IPv6 needs Linux epoll): "
                        + io.netty.channel.epoll.Epoll.unavailabilityCause());
        group = UdpTransport.newEventLoopGroup(UdpTransport.Io.EPOLL, 1, "zero-csum-test");
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** {@code ::1}, or the test is skipped if no UDP socket can be bound to it. */
    private static InetAddress loopback6() throws IOException {
        InetAddress ip = InetAddress.getByName("::1");
        try (java.net.DatagramSocket probe = new java.net.DatagramSocket(new InetSocketAddress(ip, 0))) {
            return ip;
        } catch (IOException e) {
            assumeTrue(false, "IPv6 loopback ::1 unavailable: " + e);
            throw new AssertionError(e);
        }
    }

    /** An epoll datagram channel on ({@code ip}, ephemeral port) with the given int options set to 1. */
    private EpollDatagramChannel channel(
            InetAddress ip, SimpleChannelInboundHandler<DatagramPacket> handler, IntegerUnixChannelOption... options) {
        EpollDatagramChannel ch = new EpollDatagramChannel(
                ip instanceof java.net.Inet6Address ? SocketProtocolFamily.INET6 : SocketProtocolFamily.INET);
        for (IntegerUnixChannelOption o : options) {
            assertThat(ch.config().setOption(o, 1)).as("set %s", o.name()).isTrue();
            assertThat(ch.config().getOption(o)).as("%s reads back", o.name()).isEqualTo(1);
        }
        if (handler != null) {
            ch.pipeline().addLast(handler);
        }
        assertThat(group.register(ch).awaitUninterruptibly().isSuccess()).isTrue();
        toClose.add(() -> ch.close().awaitUninterruptibly(TIMEOUT_S, TimeUnit.SECONDS));
        ChannelFuture bind = ch.bind(new InetSocketAddress(ip, 0)).awaitUninterruptibly();
        if (!bind.isSuccess()) {
            assumeTrue(false, "cannot bind a UDP socket to " + ip + ": " + bind.cause());
        }
        return ch;
    }

    /** Sends {@code text} and waits until the kernel took it (sendmsg returned). */
    private static void sendAndWait(EpollDatagramChannel from, String text, InetSocketAddress to) {
        ChannelFuture f = from.writeAndFlush(
                new DatagramPacket(Unpooled.copiedBuffer(text, StandardCharsets.US_ASCII), to));
        assertThat(f.awaitUninterruptibly(TIMEOUT_S, TimeUnit.SECONDS)).as("send of %s completed", text).isTrue();
        assertThat(f.cause()).as("send of %s", text).isNull();
    }

    /** Collects the payloads a raw channel receives; counts down when {@code last} arrives. */
    private static final class Collector extends SimpleChannelInboundHandler<DatagramPacket> {
        final List<String> payloads = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch last = new CountDownLatch(1);
        private final String lastPayload;

        Collector(String lastPayload) {
            this.lastPayload = lastPayload;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket msg) {
            String p = msg.content().toString(StandardCharsets.US_ASCII);
            payloads.add(p);
            if (p.equals(lastPayload)) {
                last.countDown();
            }
        }
    }

    /** {@code Udp6InCsumErrors} of this network namespace, if readable. */
    private static OptionalLong udp6InCsumErrors() {
        try {
            for (String line : Files.readAllLines(SNMP6)) {
                String[] f = line.trim().split("\\s+");
                if (f.length == 2 && f[0].equals("Udp6InCsumErrors")) {
                    return OptionalLong.of(Long.parseLong(f[1]));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc not mounted: the counter check is skipped
        }
        return OptionalLong.empty();
    }

    private static IntegerUnixChannelOption noCheck6Tx() {
        return new IntegerUnixChannelOption("UDP_NO_CHECK6_TX", SOL_UDP, UDP_NO_CHECK6_TX);
    }

    /**
     * The negative control: without UDP_NO_CHECK6_RX the kernel drops the zero-checksum datagrams,
     * so the ordinary one sent after them is the only one that arrives. This is what the sender
     * below really sends, and what a plain (NIO) socket would do.
     */
    @Test
    void plainIpv6SocketDoesNotReceiveZeroChecksumDatagrams() throws Exception {
        InetAddress ip = loopback6();
        Collector collector = new Collector("normal");
        EpollDatagramChannel plain = channel(ip, collector);
        EpollDatagramChannel zeroSender = channel(ip, null, noCheck6Tx());
        EpollDatagramChannel normalSender = channel(ip, null);
        OptionalLong errorsBefore = udp6InCsumErrors();

        for (int i = 0; i < 3; i++) {
            sendAndWait(zeroSender, "zero" + i, plain.localAddress());
        }
        sendAndWait(normalSender, "normal", plain.localAddress());
        assertThat(collector.last.await(TIMEOUT_S, TimeUnit.SECONDS)).as("the ordinary datagram arrived").isTrue();

        if (errorsBefore.isPresent()) {
            // all three were counted as checksum errors, so none can still arrive later: wait (bounded)
            // for the counter, which softirq processing may update after sendmsg returned
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            while (udp6InCsumErrors().getAsLong() - errorsBefore.getAsLong() < 3 && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
            assertThat(udp6InCsumErrors().getAsLong() - errorsBefore.getAsLong())
                    .as("Udp6InCsumErrors grew by the three zero-checksum datagrams")
                    .isGreaterThanOrEqualTo(3);
        }
        plain.eventLoop().submit(() -> { }).syncUninterruptibly(); // the handler ran for everything read
        assertThat(collector.payloads).containsExactly("normal");
    }

    @Test
    void udpTransportRequestedWithNioReceivesZeroChecksumDatagrams() throws Exception {
        InetAddress ip = loopback6();
        EpollDatagramChannel zeroSender = channel(ip, null, noCheck6Tx());
        EpollDatagramChannel normalSender = channel(ip, null);
        UdpTransport t = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.NIO).bind();
        toClose.add(t);
        assertThat(t.io()).as("IPv6 runs on epoll although NIO was asked for").isEqualTo(UdpTransport.Io.EPOLL);
        assertThat(t.acceptsZeroChecksum()).isTrue();

        List<String> got = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch all = new CountDownLatch(4);
        t.start((p, s, r) -> {
            got.add(p.toString(StandardCharsets.US_ASCII));
            all.countDown();
        });
        for (int i = 0; i < 3; i++) {
            sendAndWait(zeroSender, "zero" + i, t.localAddress());
        }
        sendAndWait(normalSender, "normal", t.localAddress());
        assertThat(all.await(TIMEOUT_S, TimeUnit.SECONDS))
                .as("all four datagrams arrived, got %s", got)
                .isTrue();
        assertThat(got).containsExactlyInAnyOrder("zero0", "zero1", "zero2", "normal");
    }

    @Test
    void udpTransportOnIoUringReceivesZeroChecksumDatagramsAndSetsDontFragment() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(UdpTransport.isIoUringAvailable(), "io_uring is unavailable");
        InetAddress ip = loopback6();
        EpollDatagramChannel zeroSender = channel(ip, null, noCheck6Tx());
        UdpTransport t = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.IO_URING).bind();
        toClose.add(t);
        assertThat(t.io()).isEqualTo(UdpTransport.Io.IO_URING);
        assertThat(t.acceptsZeroChecksum()).isTrue();
        assertThat(t.dontFragment()).as("IPV6_MTU_DISCOVER through io_uring's socket").isTrue();
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch all = new CountDownLatch(3);
        t.start((p, s, r) -> {
            got.add(p.toString(StandardCharsets.US_ASCII));
            all.countDown();
        });
        for (int i = 0; i < 3; i++) {
            sendAndWait(zeroSender, "zero" + i, t.localAddress());
        }
        assertThat(all.await(TIMEOUT_S, TimeUnit.SECONDS)).as("all three arrived, got %s", got).isTrue();
        assertThat(got).containsExactlyInAnyOrder("zero0", "zero1", "zero2");
    }

    @Test
    void udpTransportWithEpollSetsTheOption() throws Exception {
        UdpTransport t = UdpTransport.builder(loopback6()).port(0).io(UdpTransport.Io.EPOLL).bind();
        toClose.add(t);
        assertThat(t.io()).isEqualTo(UdpTransport.Io.EPOLL);
        assertThat(t.acceptsZeroChecksum()).isTrue();
    }

    @Test
    void ipv6OnACallerNioGroupStaysOnNioAndSaysSo() throws Exception {
        EventLoopGroup nio = UdpTransport.newEventLoopGroup(UdpTransport.Io.NIO, 1, "zero-csum-nio");
        try {
            UdpTransport t = UdpTransport.builder(loopback6()).port(0).eventLoopGroup(nio).bind();
            toClose.add(t);
            assertThat(t.io()).isEqualTo(UdpTransport.Io.NIO);
            assertThat(t.acceptsZeroChecksum()).isFalse();
            t.close();
        } finally {
            nio.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void ipv6OnACallerEpollGroupUsesEpoll() throws Exception {
        UdpTransport t = UdpTransport.builder(loopback6()).port(0).eventLoopGroup(group).bind();
        toClose.add(t);
        assertThat(t.io()).isEqualTo(UdpTransport.Io.EPOLL);
        assertThat(t.acceptsZeroChecksum()).isTrue();
        assertThat(t.scheduler().eventLoop().parent()).isSameAs(group);
    }

    /** IPv4 needs no option: checksum 0 means "none" and the kernel accepts it; NIO stays NIO. */
    @Test
    void ipv4AcceptsZeroChecksumWithoutAnyOption() throws Exception {
        InetAddress ip = InetAddress.getByName("127.0.0.1");
        EpollDatagramChannel zeroSender =
                channel(ip, null, new IntegerUnixChannelOption("SO_NO_CHECK", SOL_SOCKET, SO_NO_CHECK));
        UdpTransport t = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.NIO).bind();
        toClose.add(t);
        assertThat(t.io()).isEqualTo(UdpTransport.Io.NIO);
        assertThat(t.acceptsZeroChecksum()).isTrue();
        CountDownLatch all = new CountDownLatch(2);
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        t.start((p, s, r) -> {
            got.add(p.toString(StandardCharsets.US_ASCII));
            all.countDown();
        });
        sendAndWait(zeroSender, "zero0", t.localAddress());
        sendAndWait(zeroSender, "zero1", t.localAddress());
        assertThat(all.await(TIMEOUT_S, TimeUnit.SECONDS)).as("got %s", got).isTrue();
        assertThat(got).containsExactlyInAnyOrder("zero0", "zero1");
    }
}
