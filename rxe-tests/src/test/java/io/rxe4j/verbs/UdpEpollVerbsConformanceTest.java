package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.udp.UdpTransport;
import org.junit.jupiter.api.Test;

/**
 * {@link VerbsConformanceSuite} over real UDP sockets on 127.0.0.1 on Netty's native epoll
 * ({@code recvmmsg} reads, {@code sendmmsg} flushes); skipped, with the reason, where epoll cannot
 * be loaded.
 */
class UdpEpollVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udpEpoll();
    }

    /** The permutation is what it claims: both devices' sockets are epoll channels. */
    @Test
    void everyEndpointIsOnEpoll() {
        assertThat(((UdpNet) net).transports).hasSizeGreaterThanOrEqualTo(2)
                .allSatisfy(t -> assertThat(t.io()).isEqualTo(UdpTransport.Io.EPOLL));
    }
}
