package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SelectStrategy;
import io.rxe4j.verbs.spi.PacketReceiver;
import java.net.InetAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The event loops' idle strategies ({@link UdpTransport.LoopIdle}). */
class LoopIdleTest {

    @Test
    void backoffPollsThenYieldsThenBlocksAndStartsAgainAfterWork() throws Exception {
        UdpTransport.PollingSelectStrategy s = new UdpTransport.PollingSelectStrategy(UdpTransport.LoopIdle.BACKOFF);
        int polls = 0;
        int r;
        while ((r = s.calculateStrategy(() -> 0, false)) == SelectStrategy.CONTINUE) {
            polls++;
        }
        assertThat(r).isEqualTo(SelectStrategy.SELECT);
        assertThat(polls).isEqualTo(UdpTransport.PollingSelectStrategy.SPINS + UdpTransport.PollingSelectStrategy.YIELDS);
        // after the blocking wait it polls again; ready I/O and queued tasks reset the count
        for (int i = 0; i < 50; i++) {
            assertThat(s.calculateStrategy(() -> 0, false)).isEqualTo(SelectStrategy.CONTINUE);
        }
        assertThat(s.calculateStrategy(() -> 3, false)).as("ready events are handed on").isEqualTo(3);
        assertThat(s.calculateStrategy(() -> 0, true)).as("tasks: no blocking").isZero();
        polls = 0;
        while (s.calculateStrategy(() -> 0, false) == SelectStrategy.CONTINUE) {
            polls++;
        }
        assertThat(polls).as("a full backoff again after the work").isEqualTo(
                UdpTransport.PollingSelectStrategy.SPINS + UdpTransport.PollingSelectStrategy.YIELDS);
    }

    @Test
    void spinNeverBlocks() throws Exception {
        UdpTransport.PollingSelectStrategy s = new UdpTransport.PollingSelectStrategy(UdpTransport.LoopIdle.SPIN);
        for (int i = 0; i < 10_000; i++) {
            assertThat(s.calculateStrategy(() -> 0, false)).isZero();
        }
    }

    @ParameterizedTest
    @EnumSource(UdpTransport.LoopIdle.class)
    void packetsFlowWithEveryStrategyOnNioAndEpoll(UdpTransport.LoopIdle idle) throws Exception {
        exchange(UdpTransport.Io.NIO, idle);
        if (UdpTransport.isEpollAvailable()) {
            exchange(UdpTransport.Io.EPOLL, idle);
        }
    }

    private static void exchange(UdpTransport.Io io, UdpTransport.LoopIdle idle) throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        int n = 200;
        CountDownLatch got = new CountDownLatch(n);
        try (UdpTransport a = UdpTransport.builder(lo).port(0).io(io).loopIdle(idle).bind();
                UdpTransport b = UdpTransport.builder(lo).port(0).io(io).loopIdle(idle).bind()) {
            b.start((PacketReceiver) (packet, sender, recipient) -> got.countDown());
            a.start((packet, sender, recipient) -> {});
            a.scheduler().execute(() -> {
                for (int i = 0; i < n; i++) {
                    ByteBuf p = a.allocator().directBuffer(64).writeZero(64);
                    a.send(p, b.localAddress());
                    if (i % 16 == 15) {
                        a.flush();
                    }
                }
                a.flush();
            });
            assertThat(got.await(20, TimeUnit.SECONDS)).as("%s %s: all %d datagrams arrive", io, idle, n).isTrue();
        }
    }

    @Test
    void aSuppliedGroupCannotTakeAnIdleStrategy() {
        EventLoopGroup g = UdpTransport.newEventLoopGroup(UdpTransport.Io.NIO, 1, "t");
        try {
            assertThatThrownBy(() -> UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).eventLoopGroup(g)
                    .loopIdle(UdpTransport.LoopIdle.SPIN).bind())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loopIdle(SPIN)");
        } finally {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
