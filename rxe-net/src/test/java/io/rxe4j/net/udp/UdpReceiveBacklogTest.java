package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link UdpTransport#receiveBacklogged()}: a read batch that stops at its limit (one recvmmsg of 16,
 * or 16 NIO reads) says that the socket may hold more, so that the engine's retransmit timers wait for the
 * next batch; the batch that empties the socket says it does not.
 */
class UdpReceiveBacklogTest {

    /** How the transport reads, and the most datagrams one of its read batches delivers. */
    enum Reads {
        NIO(16), EPOLL_RECVMMSG(16);

        final int batch;

        Reads(int batch) {
            this.batch = batch;
        }
    }

    @ParameterizedTest
    @EnumSource(Reads.class)
    void aFullReadBatchReportsABacklogAndTheLastBatchDoesNot(Reads reads) throws Exception {
        assumeTrue(reads == Reads.NIO || UdpTransport.isEpollAvailable(), "epoll unavailable");
        int n = 300; // full batches, then a shorter one that empties the socket (300 is no multiple of 16)
        UdpTransport.Builder b = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(reads == Reads.NIO ? UdpTransport.Io.NIO : UdpTransport.Io.EPOLL);
        if (reads == Reads.EPOLL_RECVMMSG) {
            b.gro(false);
        }
        try (UdpTransport t = b.bind();
                DatagramSocket sender = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            assumeTrue(t.receiveBufferBytes() >= 2 * 1024 * 1024, "a receive buffer that holds the burst");
            assertThat(t.gro()).isFalse();
            byte[] payload = new byte[512];
            for (int i = 0; i < n; i++) { // queued in the socket before the transport reads anything
                sender.send(new DatagramPacket(payload, payload.length, t.localAddress()));
            }
            AtomicInteger received = new AtomicInteger();
            List<Integer> batches = new CopyOnWriteArrayList<>();
            List<Boolean> backlogged = new CopyOnWriteArrayList<>();
            CountDownLatch all = new CountDownLatch(1);
            int[] inBatch = {0};
            t.start(new io.rxe4j.verbs.spi.PacketReceiver() {
                @Override
                public void onPacket(io.netty.buffer.ByteBuf packet, java.net.InetSocketAddress s, java.net.InetSocketAddress r) {
                    inBatch[0]++;
                    if (received.incrementAndGet() == n) {
                        all.countDown();
                    }
                }

                @Override
                public void onReadComplete() {
                    batches.add(inBatch[0]);
                    inBatch[0] = 0;
                    backlogged.add(t.receiveBacklogged());
                }
            });
            assertThat(all.await(30, TimeUnit.SECONDS)).as("all %d datagrams read", n).isTrue();
            // the last onReadComplete runs after the last onPacket: wait for the batch count to cover n
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (batches.stream().mapToInt(Integer::intValue).sum() < n && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(batches.stream().mapToInt(Integer::intValue).sum()).isEqualTo(n);
            assertThat(batches.get(0)).as("the first batch stops at the limit: %s", batches).isEqualTo(reads.batch);
            assertThat(backlogged.get(0)).as("a full batch: more may wait").isTrue();
            assertThat(batches).as("no batch beyond the limit").allMatch(x -> x <= reads.batch);
            assertThat(backlogged.get(backlogged.size() - 1)).as("the batch that emptied the socket").isFalse();
            for (int i = 0; i < batches.size(); i++) {
                assertThat(backlogged.get(i)).as("batch %d of %d datagrams", i, batches.get(i))
                        .isEqualTo(batches.get(i) >= reads.batch);
            }
        }
    }
}
