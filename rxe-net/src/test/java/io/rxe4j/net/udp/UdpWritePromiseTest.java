package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.rxe4j.verbs.spi.PacketReceiver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The transport's write promises are reused ({@code WritePromise}): the promises created are bounded
 * by the datagrams in flight at once, not by the datagrams sent, every packet is released, and a
 * write the kernel refuses after many reuses is still reported with its own bytes.
 */
class UdpWritePromiseTest {
    private static final int BATCH = 64;
    private static final int BATCHES = 40;

    @ParameterizedTest
    @EnumSource(value = UdpTransport.Io.class, names = {"NIO", "EPOLL"})
    void promisesAreReusedAndARefusalAfterReuseIsStillReported(UdpTransport.Io io) throws Exception {
        assumeTrue(io != UdpTransport.Io.EPOLL || UdpTransport.isEpollAvailable(), "epoll unavailable");
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        AtomicLong received = new AtomicLong();
        CompletableFuture<String> refused = new CompletableFuture<>();
        try (UdpTransport a = UdpTransport.builder(lo).port(0).io(io).gso(false).directSend(false).bind();
                UdpTransport b = UdpTransport.builder(lo).port(0).io(io).gso(false).bind()) {
            b.start((p, s, r) -> received.incrementAndGet());
            a.start(new PacketReceiver() {
                @Override
                public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {}

                @Override
                public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
                    refused.complete(packet.readableBytes() + " " + packet.getByte(packet.readerIndex()));
                }
            });
            ByteBuf[] sent = new ByteBuf[BATCH * BATCHES];
            for (int k = 0; k < BATCHES; k++) {
                int first = k * BATCH;
                CompletableFuture<Void> done = new CompletableFuture<>();
                a.scheduler().execute(() -> {
                    for (int i = first; i < first + BATCH; i++) {
                        ByteBuf p = a.allocator().directBuffer(200);
                        p.writeInt(i).writeZero(196);
                        sent[i] = p;
                        a.send(p, b.localAddress());
                    }
                    a.flush();
                    done.complete(null);
                });
                done.get(30, TimeUnit.SECONDS);
                long want = first + BATCH;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (received.get() < want && System.nanoTime() < deadline) {
                    Thread.onSpinWait(); // the receiver runs on its own loop; nothing is dropped at 64 x 200 B
                }
                assertThat(received.get()).as("datagrams received after batch %d", k).isEqualTo(want);
            }
            CompletableFuture<Long> created = new CompletableFuture<>();
            a.scheduler().execute(() -> created.complete(a.writePromisesCreated()));
            assertThat(created.get(30, TimeUnit.SECONDS))
                    .as("promises created for %d writes", BATCH * BATCHES)
                    .isPositive()
                    .isLessThanOrEqualTo(2L * BATCH);
            for (ByteBuf p : sent) {
                assertThat(p.refCnt()).as("a sent packet is released").isZero();
            }

            int tooBig = UdpTransport.MAX_UDP_PAYLOAD_BYTES + 1;
            a.scheduler().execute(() -> {
                ByteBuf p = a.allocator().directBuffer(tooBig);
                p.writeByte(0x2A).writeZero(tooBig - 1);
                a.send(p, b.localAddress());
                a.flush();
            });
            assertThat(refused.get(30, TimeUnit.SECONDS)).isEqualTo(tooBig + " 42");
            assertThat(a.sendErrors()).isEqualTo(1);
        }
    }
}
