package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.udp.UdpTransport;
import org.junit.jupiter.api.Test;

/**
 * {@link VerbsConformanceSuite} over io_uring UDP sockets with UDP GSO (runs of equally sized
 * packets to one peer leave as one {@code UDP_SEGMENT} sendmsg); skipped where io_uring or the
 * kernel's GSO is missing.
 */
class UdpIoUringGsoVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udpIoUringGso();
    }

    /** io_uring sockets with GSO, and a 64-packet WRITE does leave in GSO sends, intact. */
    @Test
    void endpointsUseGsoAndALongWriteIsSegmentedByTheKernel() {
        UdpNet udp = (UdpNet) net;
        assertThat(udp.transports).hasSizeGreaterThanOrEqualTo(2).allSatisfy(t -> {
            assertThat(t.io()).isEqualTo(UdpTransport.Io.IO_URING);
            assertThat(t.gso()).isTrue();
        });
        Pair p = connect(new Cfg().mtu(Mtu.MTU_1024));
        long before = udp.gsoSends();
        int len = 64 * 1024;
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, len))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, p.a().qp);
        assertThat(bytes(p.b().mem(), 0, len)).isEqualTo(bytes(p.a().mem(), 0, len));
        assertThat(udp.gsoSends() - before).as("GSO sends of the 64-packet WRITE").isPositive();
    }
}
