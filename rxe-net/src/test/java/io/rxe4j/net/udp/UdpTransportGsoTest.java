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
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** UDP GSO (and GRO) on the epoll path: packets arrive exactly as if sent one by one. */
class UdpTransportGsoTest {

    private static final long TIMEOUT_S = 30;

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private UdpTransport open(boolean gso, boolean gro) throws Exception {
        UdpTransport t = UdpTransport.builder(InetAddress.getByName("127.0.0.1"))
                .port(0)
                .io(UdpTransport.Io.EPOLL)
                .gso(gso)
                .gro(gro)
                .bind();
        toClose.add(t);
        return t;
    }

    private static void assumeGso() {
        assumeTrue(UdpTransport.isEpollAvailable(), "epoll unavailable");
        assumeTrue(UdpTransport.isGsoSupported(), "UDP GSO unsupported");
    }

    private static void onLoop(Scheduler s, Runnable r) throws Exception {
        CompletableFuture<Void> done = new CompletableFuture<>();
        s.execute(() -> {
            try {
                r.run();
                done.complete(null);
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        done.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Packet {@code seq} of {@code size} bytes: seq as an int, then a pattern derived from it. */
    private static void fill(ByteBuf b, int seq, int size) {
        b.writeInt(seq);
        for (int j = 4; j < size; j++) {
            b.writeByte(seq * 31 + j);
        }
    }

    /** Per sender: the sequence numbers and sizes received, checking each payload's pattern. */
    private static final class Checker implements PacketReceiver {
        final Map<InetSocketAddress, List<int[]>> bySender = new ConcurrentHashMap<>();
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch latch;

        Checker(int expected) {
            latch = new CountDownLatch(expected);
        }

        @Override
        public void onPacket(ByteBuf p, InetSocketAddress sender, InetSocketAddress recipient) {
            int size = p.readableBytes();
            int seq = p.getInt(p.readerIndex());
            for (int j = 4; j < size; j++) {
                if (p.getByte(p.readerIndex() + j) != (byte) (seq * 31 + j)) {
                    errors.add("seq " + seq + " corrupt at " + j);
                    break;
                }
            }
            bySender.computeIfAbsent(sender, k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(new int[] {seq, size});
            ByteBuf root = p.unwrap() == null ? p : p.unwrap();
            if (p.unwrap() != null && root == lastRoot) {
                sharedReads++; // several datagrams from one read buffer: coalesced by GRO
            }
            lastRoot = root;
            latch.countDown();
        }

        ByteBuf lastRoot;
        volatile int sharedReads;
    }

    private static List<Integer> burst() {
        List<Integer> sizes = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            sizes.add(1100);
        }
        sizes.add(300);
        // mixed: runs broken by larger, shorter and tiny packets
        int[] mixed = {1100, 1100, 1200, 1200, 1200, 64, 64, 1100, 4096, 4096, 4096, 4000, 4096, 28, 28, 28, 28};
        for (int s : mixed) {
            sizes.add(s);
        }
        for (int i = 0; i < 100; i++) { // longer than 64 segments and, at 1024 B, than 65 507 B
            sizes.add(1024);
        }
        for (int i = 0; i < 20; i++) { // 20 × 4000 B > 65 507 B
            sizes.add(4000);
        }
        return sizes;
    }

    @ParameterizedTest(name = "gro={0}")
    @ValueSource(booleans = {false, true})
    void burstArrivesIntactAndInOrderPerPeer(boolean gro) throws Exception {
        assumeGso();
        UdpTransport a = open(true, gro);
        UdpTransport b = open(true, gro);
        UdpTransport c = open(true, gro);
        assertThat(a.gso()).isTrue();
        assertThat(a.gro()).isEqualTo(gro);
        List<Integer> sizes = burst();
        int n = sizes.size();
        Checker ca = new Checker(n);
        Checker cb = new Checker(2 * n);
        Checker cc = new Checker(n);
        a.start(ca);
        b.start(cb);
        c.start(cc);

        // a sends to b and c, interleaved in chunks of 7; b sends to a; c sends to b. One flush each.
        onLoop(a.scheduler(), () -> {
            int ib = 0;
            int ic = 0;
            while (ib < n || ic < n) {
                for (int k = 0; k < 7 && ib < n; k++, ib++) {
                    ByteBuf p = a.allocator().directBuffer(sizes.get(ib));
                    fill(p, ib, sizes.get(ib));
                    a.send(p, b.localAddress());
                }
                for (int k = 0; k < 5 && ic < n; k++, ic++) {
                    ByteBuf p = a.allocator().heapBuffer(sizes.get(ic)); // heap too
                    fill(p, ic, sizes.get(ic));
                    a.send(p, c.localAddress());
                }
            }
            a.flush();
        });
        for (UdpTransport[] pair : new UdpTransport[][] {{b, a}, {c, b}}) {
            UdpTransport from = pair[0];
            UdpTransport to = pair[1];
            onLoop(from.scheduler(), () -> {
                for (int i = 0; i < n; i++) {
                    ByteBuf p = from.allocator().directBuffer(sizes.get(i));
                    fill(p, i, sizes.get(i));
                    from.send(p, to.localAddress());
                    if (i % 50 == 49) {
                        from.flush(); // several flushes
                    }
                }
                from.flush();
            });
        }

        for (Checker ch : List.of(ca, cb, cc)) {
            assertThat(ch.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).as("all datagrams arrived").isTrue();
        }
        Thread.sleep(100); // nothing extra arrives
        for (UdpTransport t : List.of(a, b, c)) {
            onLoop(t.scheduler(), () -> {});
        }
        assertThat(ca.errors).isEmpty();
        assertThat(cb.errors).isEmpty();
        assertThat(cc.errors).isEmpty();
        assertInOrder(ca.bySender.get(b.localAddress()), sizes);
        assertInOrder(cb.bySender.get(a.localAddress()), sizes);
        assertInOrder(cb.bySender.get(c.localAddress()), sizes);
        assertInOrder(cc.bySender.get(a.localAddress()), sizes);
        assertThat(ca.bySender).hasSize(1);
        assertThat(cb.bySender).hasSize(2);
        assertThat(cc.bySender).hasSize(1);
        assertThat(a.packetsReceived()).isEqualTo(n);
        assertThat(b.packetsReceived()).isEqualTo(2L * n);
        assertThat(a.packetsSent()).isEqualTo(2L * n);
        // GSO was really used: most packets went inside segmented sends
        assertThat(a.gsoSends()).isPositive();
        assertThat(b.gsoSegments()).isGreaterThan(n / 2);
        assertThat(a.channelErrors() + b.channelErrors() + c.channelErrors()).isZero();
        if (gro) {
            // a GSO send over loopback reaches a UDP_GRO socket as one coalesced read, which Netty
            // splits into slices of one buffer (without GRO, recvmsg passes the buffer itself)
            assertThat(cb.sharedReads).as("datagrams delivered from coalesced GRO reads").isPositive();
        }
    }

    private static void assertInOrder(List<int[]> got, List<Integer> sizes) {
        assertThat(got).hasSize(sizes.size());
        for (int i = 0; i < sizes.size(); i++) {
            assertThat(got.get(i)[0]).as("seq at %d", i).isEqualTo(i);
            assertThat(got.get(i)[1]).as("size of %d", i).isEqualTo(sizes.get(i));
        }
    }

    @Test
    void gsoNeedsEpoll() throws Exception {
        UdpTransport.Builder nio = UdpTransport.builder(InetAddress.getByName("127.0.0.1")).port(0)
                .io(UdpTransport.Io.NIO).gso(true);
        assertThatThrownBy(nio::bind).isInstanceOf(IllegalStateException.class).hasMessageContaining("EPOLL");
        UdpTransport.Builder nioGro = UdpTransport.builder(InetAddress.getByName("127.0.0.1")).port(0)
                .io(UdpTransport.Io.NIO).gro(true);
        assertThatThrownBy(nioGro::bind).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void closeReleasesUnflushedPackets() throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(false, false);
        a.start((p, s, r) -> {});
        List<ByteBuf> sent = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < 3; i++) {
                ByteBuf p = a.allocator().directBuffer(100);
                fill(p, i, 100);
                sent.add(p);
                a.send(p, b.localAddress());
            }
        });
        assertThat(sent).allMatch(p -> p.refCnt() == 1);
        a.close();
        assertThat(sent).allMatch(p -> p.refCnt() == 0);
    }

    @Test
    void flushedRunReleasesOriginals() throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(false, false);
        Checker cb = new Checker(3);
        a.start((p, s, r) -> {});
        b.start(cb);
        List<ByteBuf> sent = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < 3; i++) {
                ByteBuf p = a.allocator().directBuffer(100);
                fill(p, i, 100);
                sent.add(p);
                a.send(p, b.localAddress());
            }
            a.flush();
        });
        assertThat(cb.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        assertThat(sent).allMatch(p -> p.refCnt() == 0);
        assertThat(a.gsoSends()).isEqualTo(1);
        assertThat(a.gsoSegments()).isEqualTo(3);
    }
}
