package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.rxe4j.verbs.spi.PacketReceiver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The link MTU a UDP transport reports ({@link UdpTransport#linkMtu()}) and a send the kernel
 * refuses (issue 19 item 2): the refusal reaches the receiver with the packet ({@link
 * PacketReceiver#onSendFailed}) and is counted, instead of vanishing at debug level.
 */
class UdpSendFailureTest {

    @Test
    void linkMtuIsTheBoundInterfacesOrTheConfiguredOne() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        int loMtu = NetworkInterface.getByInetAddress(lo).getMTU();
        try (UdpTransport t = UdpTransport.builder(lo).port(0).bind()) {
            assertThat(t.linkMtu()).isEqualTo(loMtu).isPositive();
        }
        try (UdpTransport t = UdpTransport.builder(lo).port(0).linkMtu(1500).bind()) {
            assertThat(t.linkMtu()).isEqualTo(1500);
        }
        assertThatThrownBy(() -> UdpTransport.builder(lo).linkMtu(67)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("68..65536");
    }

    @Test
    void aDatagramTheKernelRefusesIsReportedWithItsBytesAndCounted() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        CompletableFuture<String> refused = new CompletableFuture<>();
        try (UdpTransport a = UdpTransport.builder(lo).port(0).bind();
                UdpTransport b = UdpTransport.builder(lo).port(0).bind()) {
            b.start((p, s, r) -> {});
            a.start(new PacketReceiver() {
                @Override
                public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {}

                @Override
                public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
                    refused.complete(packet.readableBytes() + " " + packet.getByte(packet.readerIndex()) + " " + peer
                            + " " + cause.getMessage());
                }
            });
            int tooBig = UdpTransport.MAX_UDP_PAYLOAD_BYTES + 1; // larger than any UDP datagram: EMSGSIZE on any link
            a.scheduler().execute(() -> {
                ByteBuf p = a.allocator().directBuffer(tooBig);
                p.writeByte(0x2A).writeZero(tooBig - 1);
                a.send(p, b.localAddress());
                a.flush();
            });
            String got = refused.get(30, TimeUnit.SECONDS);
            assertThat(got).startsWith(tooBig + " 42 " + b.localAddress()).containsIgnoringCase("message too long");
            assertThat(a.sendErrors()).isEqualTo(1);
            assertThat(a.channelErrors()).isEqualTo(1);
        }
    }
}
