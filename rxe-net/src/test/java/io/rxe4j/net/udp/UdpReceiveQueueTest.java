package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 9, receive side: the socket's receive buffer is as large as the system allows, the
 * transport reports what was granted and derives the per-peer budget hint from it, and the datagrams
 * the kernel dropped because the buffer was full are visible ({@code /proc/net/udp}'s drops column).
 */
class UdpReceiveQueueTest {

    @Test
    void procNetUdpWritesAddressesAsHostOrderWords() {
        InetSocketAddress a = new InetSocketAddress(InetAddress.getLoopbackAddress(), 4791);
        // 127.0.0.1:4791 as Linux prints it on a little-endian host
        assumeTrue(java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN);
        assertThat(ProcNetUdp.hexAddress(a)).isEqualTo("0100007F:12B7");
    }

    @Test
    void theGrantedBuffersGiveTheBudgetHint() {
        try (UdpTransport t = UdpTransport.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            assertThat(t.receiveBufferBytes()).as("granted SO_RCVBUF").isPositive();
            assertThat(t.inFlightBudgetHint())
                    .isEqualTo(Math.min((long) t.receiveBufferBytes(), t.sendBufferBytes()) / 4);
        }
    }

    /**
     * A transport that does not read yet (not started) with a 4 KiB receive buffer: a burst of 200
     * datagrams overflows it, and {@link UdpTransport#receiveQueueDrops()} counts the kernel's drops.
     */
    @Test
    @Timeout(60)
    void datagramsDroppedByAFullReceiveBufferAreCounted() throws Exception {
        assumeTrue(Files.isReadable(Path.of("/proc/net/udp")), "needs Linux /proc/net/udp");
        try (UdpTransport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                        .receiveBufferBytes(4096).bind();
                DatagramSocket sender = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            assertThat(t.receiveQueueDrops()).isZero();
            byte[] payload = new byte[1024];
            for (int i = 0; i < 200; i++) {
                sender.send(new DatagramPacket(payload, payload.length, t.localAddress()));
            }
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (t.receiveQueueDrops() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // the kernel counts the drops as the datagrams arrive
            }
            assertThat(t.receiveQueueDrops()).as("datagrams the full receive buffer dropped").isBetween(1L, 200L);
        }
    }
}
