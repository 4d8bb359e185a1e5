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

    /**
     * Packets built in the slots of GSO trains ({@code packetBuffer}) arrive as if sent one by one:
     * intact, in order per peer, none twice and none of an abandoned slot, also when slots are
     * released unsent, asked for two at a time (sent in the order asked), interleaved with packets
     * of other buffers and spread over two peers; most of them really went in trains, and every
     * buffer is released afterwards.
     */
    @ParameterizedTest(name = "gro={0}")
    @ValueSource(booleans = {false, true})
    void packetsBuiltInTrainSlotsArriveIntactAndInOrder(boolean gro) throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(true, gro);
        UdpTransport c = open(true, gro);
        List<Integer> sizes = burst();
        int n = sizes.size();
        Checker cb = new Checker(n);
        Checker cc = new Checker(n);
        a.start((p, s, r) -> {});
        b.start(cb);
        c.start(cc);
        List<ByteBuf> slots = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            int[] next = new int[2];
            InetSocketAddress[] to = {b.localAddress(), c.localAddress()};
            for (int step = 0; next[0] < n || next[1] < n; step++) {
                int d = (step / 9) % 2 == 0 && next[0] < n || next[1] >= n ? 0 : 1; // runs of 9 per peer
                int i = next[d];
                int size = sizes.get(i);
                if (i % 17 == 5) {
                    ByteBuf abandoned = a.packetBuffer(to[d], size); // built, then dropped unsent
                    fill(abandoned, -1, size);
                    slots.add(train(abandoned));
                    abandoned.release();
                }
                if (i % 13 == 7) {
                    ByteBuf p = a.allocator().directBuffer(size); // a packet of another buffer in between
                    fill(p, i, size);
                    a.send(p, to[d]);
                    next[d]++;
                } else if (i % 23 == 11 && i + 1 < n) {
                    ByteBuf x = a.packetBuffer(to[d], size); // two slots at once: sent in the order asked
                    ByteBuf y = a.packetBuffer(to[d], sizes.get(i + 1));
                    slots.add(train(x));
                    slots.add(train(y));
                    fill(x, i, size);
                    fill(y, i + 1, sizes.get(i + 1));
                    a.send(x, to[d]);
                    a.send(y, to[d]);
                    next[d] += 2;
                } else {
                    ByteBuf p = a.packetBuffer(to[d], size);
                    assertThat(p.writerIndex()).isZero();
                    assertThat(p.capacity()).isEqualTo(size);
                    assertThat(p.maxCapacity()).isEqualTo(size);
                    slots.add(train(p));
                    fill(p, i, size);
                    a.send(p, to[d]);
                    next[d]++;
                }
                if (step % 97 == 96) {
                    a.flush();
                }
            }
            a.flush();
        });
        for (Checker ch : List.of(cb, cc)) {
            assertThat(ch.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).as("all datagrams arrived").isTrue();
        }
        Thread.sleep(100); // nothing extra arrives (no abandoned slot, no packet twice)
        for (UdpTransport t : List.of(a, b, c)) {
            onLoop(t.scheduler(), () -> {});
        }
        assertThat(cb.errors).isEmpty();
        assertThat(cc.errors).isEmpty();
        assertInOrder(cb.bySender.get(a.localAddress()), sizes);
        assertInOrder(cc.bySender.get(a.localAddress()), sizes);
        assertThat(a.packetsSent()).isEqualTo(2L * n);
        assertThat(a.trainPackets()).as("packets sent from their train slot").isGreaterThan(n);
        assertThat(a.gsoSegments()).isGreaterThan(n);
        assertThat(a.channelErrors()).isZero();
        assertThat(slots).allMatch(t -> t.refCnt() <= 1, "no train buffer held but for reuse");
        a.close();
        assertThat(slots).allMatch(t -> t.refCnt() == 0, "every train buffer released at close");
    }

    /**
     * @return the train buffer a slot lies in: the end of its unwrap() chain (a slot's own reference
     *     count is its own, and the leak detector may wrap a sampled buffer and its slices)
     */
    private static ByteBuf train(ByteBuf slot) {
        assertThat(slot.unwrap()).as("a slot of a train").isNotNull();
        ByteBuf b = slot;
        while (b.unwrap() != null) {
            b = b.unwrap();
        }
        return b;
    }

    @Test
    void closeReleasesAnOpenTrain() throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(false, false);
        a.start((p, s, r) -> {});
        List<ByteBuf> slots = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < 3; i++) {
                ByteBuf p = a.packetBuffer(b.localAddress(), 100);
                fill(p, i, 100);
                slots.add(train(p));
                a.send(p, b.localAddress());
            }
        });
        assertThat(a.trainPackets()).isEqualTo(3);
        assertThat(slots).allMatch(t -> t == slots.get(0), "one train");
        assertThat(slots.get(0).refCnt()).as("the open train holds its buffer").isEqualTo(1);
        a.close();
        assertThat(slots.get(0).refCnt()).isZero();
    }

    @Test
    void withoutGsoPacketBufferIsAPlainBuffer() throws Exception {
        assumeTrue(UdpTransport.isEpollAvailable(), "epoll unavailable");
        UdpTransport a = open(false, false);
        UdpTransport b = open(false, false);
        Checker cb = new Checker(2);
        a.start((p, s, r) -> {});
        b.start(cb);
        onLoop(a.scheduler(), () -> {
            for (int i = 0; i < 2; i++) {
                ByteBuf p = a.packetBuffer(b.localAddress(), 200);
                ByteBuf root = p; // a leak detector may wrap it: its root is still a buffer of its own
                while (root.unwrap() != null) {
                    root = root.unwrap();
                }
                assertThat(root.capacity()).as("not a slot of a train").isEqualTo(200);
                assertThat(p.maxCapacity()).isEqualTo(200);
                fill(p, i, 200);
                a.send(p, b.localAddress());
            }
            a.flush();
        });
        assertThat(cb.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        assertThat(cb.errors).isEmpty();
        assertInOrder(cb.bySender.get(a.localAddress()), List.of(200, 200));
        assertThat(a.trainPackets()).isZero();
    }

    /** A train buffer the kernel has sent is used again: 50 trains in a row need a few buffers, not 50. */
    @Test
    void sentTrainsAreReused() throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(false, false);
        int perTrain = 15;
        int trains = 50;
        Checker cb = new Checker(perTrain * trains);
        a.start((p, s, r) -> {});
        b.start(cb);
        java.util.Set<ByteBuf> buffers = Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int k = 0; k < trains; k++) {
            int first = k * perTrain;
            onLoop(a.scheduler(), () -> {
                for (int i = first; i < first + perTrain; i++) {
                    ByteBuf p = a.packetBuffer(b.localAddress(), 4000);
                    buffers.add(train(p));
                    fill(p, i, 4000);
                    a.send(p, b.localAddress());
                }
                a.flush();
            });
            long want = (long) perTrain * trains - first - perTrain;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            while (cb.latch.getCount() > want && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertThat(cb.latch.getCount()).as("train %d arrived", k).isEqualTo(want);
        }
        assertThat(cb.errors).isEmpty();
        assertInOrder(cb.bySender.get(a.localAddress()), Collections.nCopies(perTrain * trains, 4000));
        assertThat(a.gsoSends()).isEqualTo(trains);
        assertThat(buffers).as("train buffers used for %d trains", trains).hasSizeLessThanOrEqualTo(4);
        CompletableFuture<Long> allocated = new CompletableFuture<>();
        a.scheduler().execute(() -> allocated.complete(a.trainsAllocated()));
        assertThat(allocated.get(TIMEOUT_S, TimeUnit.SECONDS)).as("train buffers allocated for %d trains", trains)
                .isBetween(1L, 4L);
        a.close();
        assertThat(buffers).allMatch(t -> t.refCnt() == 0, "released at close");
    }

    /**
     * A train that closes with one packet sends a copy of its own size (the train is free at once for
     * the next), and however many trains are queued unflushed, at most SPARE_TRAINS train buffers
     * exist: beyond them packets get buffers of their own, coalesced at flush; all arrive in order.
     */
    @Test
    void lonePacketsAndQueuedTrainsStayBounded() throws Exception {
        assumeGso();
        UdpTransport a = open(true, false);
        UdpTransport b = open(false, false);
        UdpTransport c = open(false, false);
        int n = 2 * UdpTransport.SPARE_TRAINS * 3; // trains of 3 (b) between lone packets (c)
        int lone = 2 * UdpTransport.SPARE_TRAINS;
        Checker cb = new Checker(n);
        Checker cc = new Checker(lone);
        a.start((p, s, r) -> {});
        b.start(cb);
        c.start(cc);
        List<ByteBuf> loneTrains = new ArrayList<>();
        onLoop(a.scheduler(), () -> {
            for (int k = 0; k < lone; k++) {
                for (int i = 3 * k; i < 3 * k + 3; i++) {
                    ByteBuf p = a.packetBuffer(b.localAddress(), 1000);
                    fill(p, i, 1000);
                    a.send(p, b.localAddress());
                }
                ByteBuf q = a.packetBuffer(c.localAddress(), 500); // a train of one: closed by the next packet
                if (q.unwrap() != null) {
                    loneTrains.add(train(q));
                }
                fill(q, k, 500);
                a.send(q, c.localAddress());
            }
            // nothing flushed yet: every train of b is queued
            assertThat(a.trainsAllocated()).isLessThanOrEqualTo(UdpTransport.SPARE_TRAINS);
            a.flush();
        });
        assertThat(cb.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        assertThat(cc.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        assertThat(cb.errors).isEmpty();
        assertThat(cc.errors).isEmpty();
        assertInOrder(cb.bySender.get(a.localAddress()), Collections.nCopies(n, 1000));
        assertInOrder(cc.bySender.get(a.localAddress()), Collections.nCopies(lone, 500));
        assertThat(a.trainPackets()).as("packets built in train slots").isPositive().isLessThan(n + lone);
        a.close();
        assertThat(loneTrains).allMatch(t -> t.refCnt() == 0, "released at close");
    }

    /**
     * With the leak detector tracking every buffer (it wraps a sampled buffer and each of its slices),
     * slots still commit to their train: the trains of the test JVM's SIMPLE level are sampled at
     * random, so this makes that case deterministic.
     */
    @Test
    void slotsOfALeakTrackedTrainStillCommit() throws Exception {
        assumeGso();
        io.netty.util.ResourceLeakDetector.Level was = io.netty.util.ResourceLeakDetector.getLevel();
        io.netty.util.ResourceLeakDetector.setLevel(io.netty.util.ResourceLeakDetector.Level.PARANOID);
        try {
            UdpTransport a = open(true, false);
            UdpTransport b = open(false, false);
            Checker cb = new Checker(6);
            a.start((p, s, r) -> {});
            b.start(cb);
            onLoop(a.scheduler(), () -> {
                for (int i = 0; i < 6; i++) {
                    ByteBuf p = a.packetBuffer(b.localAddress(), 100);
                    fill(p, i, 100);
                    a.send(p, b.localAddress());
                }
                a.flush();
            });
            assertThat(cb.latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
            assertThat(cb.errors).isEmpty();
            assertInOrder(cb.bySender.get(a.localAddress()), Collections.nCopies(6, 100));
            assertThat(a.trainPackets()).as("packets committed to their train").isEqualTo(6);
            assertThat(a.gsoSends()).isEqualTo(1);
        } finally {
            io.netty.util.ResourceLeakDetector.setLevel(was);
        }
    }
}
