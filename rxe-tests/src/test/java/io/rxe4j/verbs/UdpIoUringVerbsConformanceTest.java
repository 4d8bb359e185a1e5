package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.udp.UdpTransport;
import org.junit.jupiter.api.Test;

/**
 * {@link VerbsConformanceSuite} over real UDP sockets on 127.0.0.1 on Netty's io_uring ({@code
 * IORING_OP_RECVMSG} batches, {@code SENDMSG} submissions); skipped, with the reason, where io_uring
 * cannot be used.
 */
class UdpIoUringVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udpIoUring();
    }

    /** The permutation is what it claims: both devices' sockets are io_uring channels. */
    @Test
    void everyEndpointIsOnIoUring() {
        assertThat(((UdpNet) net).transports).hasSizeGreaterThanOrEqualTo(2)
                .allSatisfy(t -> {
                    assertThat(t.io()).isEqualTo(UdpTransport.Io.IO_URING);
                    assertThat(t.gso()).isFalse();
                    assertThat(t.gro()).isFalse();
                });
    }
}
