package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The direct writer ({@link UdpTransport.Builder#directSend}): datagrams leave by the transport's
 * own {@code sendmmsg} on the epoll socket, in order, byte for byte, GSO trains with their segment
 * size; a refused one is reported with its bytes while the rest of its batch is still sent; a full
 * socket hands the rest to Netty's channel without reordering; and no write promise is made.
 */
class UdpDirectSendTest {
    private static final long TIMEOUT_S = 30;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void assumeDirect() {
        assumeTrue(UdpTransport.isEpollAvailable(), "epoll unavailable");
        assumeTrue(SendmmsgWriter.available(), "sendmmsg unavailable: " + SendmmsgWriter.unavailability());
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private <T extends AutoCloseable> T open(T t) {
        toClose.add(t);
        return t;
    }

    private static <T> T onLoop(Scheduler s, Callable<T> c) throws Exception {
        CompletableFuture<T> done = new CompletableFuture<>();
        s.execute(() -> {
            try {
                done.complete(c.call());
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        return done.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Records each datagram's sequence number (its first int) and checks its pattern. */
    private static final class Recorder implements PacketReceiver {
        final List<Integer> seqs = Collections.synchronizedList(new ArrayList<>());
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        final List<String> refused = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void onPacket(ByteBuf p, InetSocketAddress sender, InetSocketAddress recipient) {
            int seq = p.getInt(p.readerIndex());
            for (int j = 4; j < p.readableBytes(); j++) {
                if (p.getByte(p.readerIndex() + j) != (byte) (seq * 7 + j)) {
                    errors.add("seq " + seq + " corrupt at byte " + j);
                    break;
                }
            }
            seqs.add(seq);
            arrived.release();
        }

        @Override
        public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
            refused.add(packet.readableBytes() + " " + packet.getInt(packet.readerIndex()) + " " + cause.getMessage());
        }

        /** Waits (at most {@link #TIMEOUT_S}) until {@code n} datagrams arrived; the caller asserts which. */
        void await(int n) throws InterruptedException {
            arrived.tryAcquire(n, TIMEOUT_S, TimeUnit.SECONDS);
        }

        private final java.util.concurrent.Semaphore arrived = new java.util.concurrent.Semaphore(0);
    }

    private static ByteBuf packet(UdpTransport t, int seq, int size) {
        ByteBuf b = t.allocator().directBuffer(size);
        fill(b, seq, size);
        return b;
    }

    private static void fill(ByteBuf b, int seq, int size) {
        b.writeInt(seq);
        for (int j = 4; j < size; j++) {
            b.writeByte(seq * 7 + j);
        }
    }

    private static List<Integer> range(int from, int to) {
        List<Integer> l = new ArrayList<>();
        for (int i = from; i < to; i++) {
            l.add(i);
        }
        return l;
    }

    private UdpTransport sender(InetAddress ip, boolean gso, SendmmsgWriter.Syscall syscall, Recorder r) {
        UdpTransport.Builder b = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.EPOLL).gso(gso).gro(false);
        b.sendmmsg = syscall;
        UdpTransport t = open(b.bind());
        t.start(r);
        return t;
    }

    private UdpTransport receiver(InetAddress ip, Recorder r) {
        UdpTransport t = open(UdpTransport.builder(ip).port(0).io(UdpTransport.Io.EPOLL).gro(false).bind());
        t.start(r);
        return t;
    }

    @Test
    void datagramsLeaveBySendmmsgInOrderWithTheirBytesAndNoPromise() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        Recorder in = new Recorder();
        Recorder out = new Recorder();
        UdpTransport b = receiver(lo, in);
        UdpTransport a = sender(lo, false, null, out);
        assertThat(a.directSend()).isTrue();
        int n = 3 * SendmmsgWriter.BATCH + 5;
        List<ByteBuf> sent = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < n; i++) {
                ByteBuf p = packet(a, i, 100 + i);
                sent.add(p);
                a.send(p, b.localAddress());
            }
            a.flush();
            return null;
        });
        in.await(n);
        assertThat(in.seqs).containsExactlyElementsOf(range(0, n));
        assertThat(in.errors).isEmpty();
        assertThat(onLoop(a.scheduler(), a::directDatagrams)).isEqualTo(n);
        // a full batch goes out when the next datagram comes, the rest at the flush
        assertThat(onLoop(a.scheduler(), a::directCalls)).isEqualTo(4);
        assertThat(onLoop(a.scheduler(), a::writePromisesCreated)).isZero();
        assertThat(sent).allSatisfy(p -> assertThat(p.refCnt()).as("released once sent").isZero());
        assertThat(out.refused).isEmpty();
    }

    @Test
    void aGsoTrainLeavesAsOneSendmmsgMessageOfEqualSegments() throws Exception {
        assumeTrue(UdpTransport.isGsoSupported(), "UDP GSO unsupported");
        InetAddress lo6 = InetAddress.getByName("::1");
        Recorder in = new Recorder();
        UdpTransport b = receiver(lo6, in);
        UdpTransport a = sender(lo6, true, null, new Recorder());
        int n = 16;
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < n; i++) {
                ByteBuf slot = a.packetBuffer(b.localAddress(), 1000);
                fill(slot, i, i == n - 1 ? 600 : 1000);
                a.send(slot, b.localAddress());
            }
            a.flush();
            return null;
        });
        in.await(n);
        assertThat(in.seqs).containsExactlyElementsOf(range(0, n));
        assertThat(in.errors).isEmpty();
        assertThat(a.gsoSends()).isEqualTo(1);
        assertThat(onLoop(a.scheduler(), a::directDatagrams)).as("one message: the train").isEqualTo(1);
        assertThat(onLoop(a.scheduler(), a::directCalls)).isEqualTo(1);
    }

    @Test
    void aRefusedDatagramIsReportedWithItsBytesAndTheRestOfTheBatchStillLeaves() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        Recorder in = new Recorder();
        Recorder out = new Recorder();
        UdpTransport b = receiver(lo, in);
        UdpTransport a = sender(lo, false, null, out);
        int tooBig = UdpTransport.MAX_UDP_PAYLOAD_BYTES + 1; // EMSGSIZE on any link
        onLoop(a.scheduler(), () -> {
            a.send(packet(a, 0, 200), b.localAddress());
            a.send(packet(a, 1, tooBig), b.localAddress());
            a.send(packet(a, 2, 200), b.localAddress());
            a.flush();
            return null;
        });
        in.await(2);
        assertThat(in.seqs).containsExactly(0, 2);
        assertThat(out.refused).singleElement().asString().startsWith(tooBig + " 1 ")
                .containsIgnoringCase("message too long");
        assertThat(a.sendErrors()).isEqualTo(1);
        assertThat(a.channelErrors()).isEqualTo(1);
        assertThat(onLoop(a.scheduler(), a::directCalls)).as("one call sends 0, one refuses 1, one sends 2").isEqualTo(3);
    }

    @Test
    void aFullSocketHandsTheRestToTheChannelAndNothingOvertakesIt() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        Recorder in = new Recorder();
        UdpTransport b = receiver(lo, in);
        SendmmsgWriter.Syscall real = SendmmsgWriter.realSyscall();
        AtomicInteger calls = new AtomicInteger();
        // the first call sends three, the second finds the socket full, EINTR once, then as the kernel does
        SendmmsgWriter.Syscall fake = (fd, vec, vlen) -> switch (calls.incrementAndGet()) {
            case 1 -> real.sendmmsg(fd, vec, Math.min(vlen, 3));
            case 2 -> -11; // EAGAIN
            case 3 -> -4; // EINTR
            default -> real.sendmmsg(fd, vec, vlen);
        };
        UdpTransport a = sender(lo, false, fake, new Recorder());
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < 10; i++) {
                a.send(packet(a, i, 300), b.localAddress());
            }
            a.flush();
            // the channel's queue has been flushed; the next datagrams go direct again, after those
            for (int i = 10; i < 20; i++) {
                a.send(packet(a, i, 300), b.localAddress());
            }
            a.flush();
            return null;
        });
        in.await(20);
        assertThat(in.seqs).containsExactlyElementsOf(range(0, 20));
        assertThat(in.errors).isEmpty();
        assertThat(onLoop(a.scheduler(), a::directDeferred)).as("sent by the channel").isEqualTo(7);
        assertThat(onLoop(a.scheduler(), a::directDatagrams)).isEqualTo(13);
        assertThat(calls.get()).as("3 sent, EAGAIN, EINTR retried, the second batch").isEqualTo(4);
        assertThat(a.sendErrors()).isZero();
    }

    @Test
    void aPacketWithoutANativeAddressGoesThroughTheChannelInItsTurn() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        Recorder in = new Recorder();
        UdpTransport b = receiver(lo, in);
        UdpTransport a = sender(lo, false, null, new Recorder());
        onLoop(a.scheduler(), () -> {
            a.send(packet(a, 0, 200), b.localAddress());
            ByteBuf heap = io.netty.buffer.Unpooled.buffer(200);
            fill(heap, 1, 200);
            a.send(heap, b.localAddress());
            a.send(packet(a, 2, 200), b.localAddress());
            a.flush();
            return null;
        });
        in.await(3);
        assertThat(in.seqs).containsExactly(0, 1, 2);
        assertThat(onLoop(a.scheduler(), a::directDatagrams)).as("0 direct; 1 by the channel, 2 behind it").isEqualTo(1);
    }

    @Test
    void directSendNeedsEpoll() {
        assertThatThrownBy(() -> UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(UdpTransport.Io.NIO).directSend(true).bind())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("directSend(true) needs io(Io.EPOLL)")
                .hasMessageContaining("NIO");
        UdpTransport off = open(UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0)
                .io(UdpTransport.Io.EPOLL).directSend(false).bind());
        assertThat(off.directSend()).isFalse();
    }
}
