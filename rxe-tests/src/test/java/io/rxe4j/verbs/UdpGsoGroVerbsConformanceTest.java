package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.udp.UdpTransport;
import org.junit.jupiter.api.Test;

/**
 * {@link VerbsConformanceSuite} over real UDP sockets on 127.0.0.1 on epoll with UDP GSO (runs of
 * equally sized packets to one peer leave as one {@code UDP_SEGMENT} send) and {@code UDP_GRO} on
 * receive; skipped, with the reason, where epoll or kernel GSO support is missing.
 */
class UdpGsoGroVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udpEpollGsoGro();
    }

    /** The permutation is what it claims: epoll sockets with GSO and GRO, and a long WRITE does use GSO. */
    @Test
    void endpointsUseGsoAndGroAndALongWriteIsSegmentedByTheKernel() {
        UdpNet udp = (UdpNet) net;
        assertThat(udp.transports).hasSizeGreaterThanOrEqualTo(2).allSatisfy(t -> {
            assertThat(t.io()).isEqualTo(UdpTransport.Io.EPOLL);
            assertThat(t.gso()).isTrue();
            assertThat(t.gro()).isTrue();
        });
        Pair p = connect(new Cfg().mtu(Mtu.MTU_1024));
        long before = udp.gsoSends();
        int len = 64 * 1024; // 64 packets of 1024 bytes
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, len))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, p.a().qp);
        assertThat(bytes(p.b().mem(), 0, len)).isEqualTo(bytes(p.a().mem(), 0, len));
        assertThat(udp.gsoSends() - before).as("GSO sends of the 64-packet WRITE").isPositive();
    }
}
