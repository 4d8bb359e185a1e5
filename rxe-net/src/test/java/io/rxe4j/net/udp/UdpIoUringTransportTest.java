package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.channel.EventLoopGroup;
import java.net.InetAddress;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** {@link UdpTransport.Io#IO_URING}: what it offers and what it refuses, before any I/O. */
class UdpIoUringTransportTest {

    @Test
    void parseKnowsEveryNameAndNamesTheBadOne() {
        assertThat(UdpTransport.Io.parse("io_uring")).isEqualTo(UdpTransport.Io.IO_URING);
        assertThat(UdpTransport.Io.parse("IO-URING")).isEqualTo(UdpTransport.Io.IO_URING);
        assertThat(UdpTransport.Io.parse("iouring")).isEqualTo(UdpTransport.Io.IO_URING);
        assertThat(UdpTransport.Io.parse("Epoll")).isEqualTo(UdpTransport.Io.EPOLL);
        assertThatThrownBy(() -> UdpTransport.Io.parse("kqueue")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("I/O must be nio, epoll or io_uring, got 'kqueue'");
    }

    @Test
    void groAndPollingLoopsAreRefusedNamingWhy() {
        Assumptions.assumeTrue(UdpTransport.isIoUringAvailable(), "io_uring is unavailable");
        assertThatThrownBy(() -> UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(UdpTransport.Io.IO_URING).gro(true).bind())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("UDP GRO needs io(Io.EPOLL)");
        assertThatThrownBy(() -> UdpTransport.newEventLoopGroup(UdpTransport.Io.IO_URING, 1, "x",
                UdpTransport.LoopIdle.SPIN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loopIdle(SPIN)");
        assertThatThrownBy(() -> UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(UdpTransport.Io.NIO).gso(true).bind())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("EPOLL) or io(Io.IO_URING)");
    }

    @Test
    void anIoUringSocketOverIpv4HasNoOffloadsByDefaultAndDontFragment() {
        Assumptions.assumeTrue(UdpTransport.isIoUringAvailable(), "io_uring is unavailable");
        try (UdpTransport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(UdpTransport.Io.IO_URING).bind()) {
            assertThat(t.io()).isEqualTo(UdpTransport.Io.IO_URING);
            assertThat(t.gso()).as("GSO over IPv4 breaks kernel peers' ICRC: off by default").isFalse();
            assertThat(t.gro()).isFalse();
            assertThat(t.dontFragment()).isTrue();
            assertThat(t.acceptsZeroChecksum()).isTrue();
        }
    }

    @Test
    void aCallersIoUringGroupMakesIoUringTheDefault() throws Exception {
        Assumptions.assumeTrue(UdpTransport.isIoUringAvailable(), "io_uring is unavailable");
        EventLoopGroup g = UdpTransport.newEventLoopGroup(UdpTransport.Io.IO_URING, 1, "uring-test");
        try (UdpTransport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).eventLoopGroup(g)
                .bind()) {
            assertThat(t.io()).isEqualTo(UdpTransport.Io.IO_URING);
        } finally {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void gsoSupportIsAskedPerIo() {
        assertThat(UdpTransport.isGsoSupported(UdpTransport.Io.NIO)).isFalse();
        assertThat(UdpTransport.isGsoSupported(UdpTransport.Io.EPOLL)).isEqualTo(UdpTransport.isGsoSupported());
    }
}
