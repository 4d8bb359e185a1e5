package io.rxe4j.net.inproc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.net.NettyScheduler;
import io.rxe4j.net.sim.VirtualScheduler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class InJvmFabricTest {

    private static final long TIMEOUT_S = 30;
    private static final InetSocketAddress A = addr("10.0.0.1", 4791);
    private static final InetSocketAddress B = addr("10.0.0.2", 4791);
    private static final InetSocketAddress C = addr("10.0.0.3", 4791);

    private final List<InJvmFabric> fabrics = new ArrayList<>();

    private static InetSocketAddress addr(String ip, int port) {
        try {
            return new InetSocketAddress(InetAddress.getByName(ip), port);
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private InJvmFabric track(InJvmFabric f) {
        fabrics.add(f);
        return f;
    }

    @AfterEach
    void closeAll() {
        fabrics.forEach(InJvmFabric::closeAll);
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    /** A receiver that records (payload, sender, recipient, inLoop) strings. */
    private static final class Recorder implements PacketReceiver {
        final List<String> packets = Collections.synchronizedList(new ArrayList<>());
        final List<ByteBuf> buffers = Collections.synchronizedList(new ArrayList<>());
        final Scheduler loop;
        final CountDownLatch latch;
        volatile boolean allInLoop = true;

        Recorder(Scheduler loop, int expected) {
            this.loop = loop;
            this.latch = new CountDownLatch(expected);
        }

        @Override
        public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
            if (!loop.inLoop()) {
                allInLoop = false;
            }
            buffers.add(packet);
            packets.add(packet.toString(StandardCharsets.US_ASCII) + " " + sender + "->" + recipient);
            latch.countDown();
        }

        void await() throws InterruptedException {
            assertThat(latch.await(TIMEOUT_S, TimeUnit.SECONDS)).as("packets arrived").isTrue();
        }
    }

    /** Runs {@code r} on {@code s}'s loop and waits for it. */
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

    @Test
    void deliversOnTheDestinationLoopWithAddressesAndReleasesAfterwards() throws Exception {
        InJvmFabric fabric = track(new InJvmFabric());
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        assertThat(a.scheduler()).isInstanceOf(NettyScheduler.class);
        assertThat(a.scheduler()).isNotSameAs(b.scheduler());
        Recorder ra = new Recorder(a.scheduler(), 1);
        Recorder rb = new Recorder(b.scheduler(), 1);
        a.start(ra);
        b.start(rb);

        ByteBuf ping = text("ping");
        onLoop(a.scheduler(), () -> {
            a.send(ping, B);
            a.flush();
        });
        rb.await();
        onLoop(b.scheduler(), () -> {
            b.send(text("pong"), A);
            b.flush();
        });
        ra.await();
        onLoop(b.scheduler(), () -> {}); // the release in b's loop happened before this

        assertThat(rb.packets).containsExactly("ping " + A + "->" + B);
        assertThat(ra.packets).containsExactly("pong " + B + "->" + A);
        assertThat(ra.allInLoop).isTrue();
        assertThat(rb.allInLoop).isTrue();
        assertThat(ping.refCnt()).isZero();
        assertThat(rb.buffers.get(0)).isSameAs(ping);
        assertThat(fabric.delivered()).isEqualTo(2);
        assertThat(a.packetsSent()).isEqualTo(1);
        assertThat(b.packetsReceived()).isEqualTo(1);
    }

    @Test
    void packetsBetweenOnePairArriveInFifoOrder() throws Exception {
        InJvmFabric fabric = track(new InJvmFabric());
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        int n = 2_000;
        List<Integer> got = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch latch = new CountDownLatch(n);
        a.start((p, s, r) -> {});
        b.start((p, s, r) -> {
            got.add(p.readInt());
            latch.countDown();
        });

        // several sends per flush, and several flushes, from a's loop
        for (int batch = 0; batch < n / 100; batch++) {
            int base = batch * 100;
            a.scheduler().execute(() -> {
                for (int i = 0; i < 100; i++) {
                    a.send(a.allocator().buffer(4).writeInt(base + i), B);
                    if (i % 7 == 0) {
                        a.flush();
                    }
                }
                a.flush();
            });
        }

        assertThat(latch.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            expected.add(i);
        }
        assertThat(got).containsExactlyElementsOf(expected);
    }

    @Test
    void nothingCrossesBeforeFlush() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        Recorder rb = new Recorder(vs, 1);
        a.start((p, s, r) -> {});
        b.start(rb);

        a.send(text("x"), B);
        vs.runUntilIdle();
        assertThat(rb.packets).isEmpty();
        assertThat(a.pendingPackets()).isEqualTo(1);

        a.flush();
        vs.runUntilIdle();
        assertThat(rb.packets).containsExactly("x " + A + "->" + B);
        assertThat(a.pendingPackets()).isZero();
    }

    @Test
    void packetToAnUnknownAddressIsCountedAndReleased() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        a.start((p, s, r) -> {});

        ByteBuf lost = text("lost");
        a.send(lost, C);
        a.flush();
        vs.runUntilIdle();

        assertThat(fabric.droppedNoEndpoint()).isEqualTo(1);
        assertThat(lost.refCnt()).isZero();
    }

    @Test
    void duplicateAddressIsRejectedNamingIt() {
        InJvmFabric fabric = track(InJvmFabric.withScheduler(new VirtualScheduler()));
        fabric.newTransport(A);
        assertThatThrownBy(() -> fabric.newTransport(A))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(A.toString());
        // same IP, other port is fine
        assertThat(fabric.newTransport(addr("10.0.0.1", 4792)).localAddress().getPort()).isEqualTo(4792);
    }

    @Test
    void closingUnregistersTheAddress() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        a.start((p, s, r) -> {});
        b.start((p, s, r) -> {});

        ByteBuf queued = text("queued at close");
        b.send(queued, A);
        b.close();
        b.close(); // idempotent
        assertThat(b.isClosed()).isTrue();
        assertThat(queued.refCnt()).isZero();
        assertThat(fabric.endpoint(B)).isNull();

        ByteBuf late = text("late");
        a.send(late, B);
        a.flush();
        vs.runUntilIdle();
        assertThat(fabric.droppedNoEndpoint()).isEqualTo(1);
        assertThat(late.refCnt()).isZero();

        // the address can be reused
        InJvmTransport b2 = fabric.newTransport(B);
        assertThat(fabric.endpoint(B)).isSameAs(b2);
    }

    @Test
    void packetInFlightToAnEndpointClosedMeanwhileIsDropped() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        Recorder rb = new Recorder(vs, 1);
        a.start((p, s, r) -> {});
        b.start(rb);

        ByteBuf p = text("in flight");
        a.send(p, B);
        a.flush(); // queued on the loop, not yet delivered
        b.close();
        vs.runUntilIdle();

        assertThat(rb.packets).isEmpty();
        assertThat(fabric.droppedNoEndpoint()).isEqualTo(1);
        assertThat(p.refCnt()).isZero();
    }

    @Test
    void closeReleasesPacketsWaitingInTheInboxEvenIfTheLoopNeverRunsAgain() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        Recorder rb = new Recorder(vs, 2);
        a.start((p, s, r) -> {});
        b.start(rb);

        ByteBuf p1 = text("one");
        ByteBuf p2 = text("two");
        a.send(p1, B);
        a.send(p2, B);
        a.flush(); // both in b's inbox, its drain task queued on the loop
        b.close();
        assertThat(p1.refCnt()).as("released by close, not by a drain task").isZero();
        assertThat(p2.refCnt()).isZero();
        assertThat(fabric.droppedNoEndpoint()).isEqualTo(2);
        vs.shutdown(); // the drain task is dropped: nothing was waiting for it
        assertThat(rb.packets).isEmpty();
    }

    @Test
    void packetsToAnEndpointWhoseLoopIsGoneAreReleasedAndCountedOnce() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        a.start((p, s, r) -> {});
        b.start(new Recorder(vs, 1));
        ByteBuf p1 = text("one");
        ByteBuf p2 = text("two");
        a.send(p1, B);
        a.send(p2, B);
        vs.shutdown(); // b's drain task is refused: each packet released once (a second release would throw)
        a.flush();
        assertThat(p1.refCnt()).isZero();
        assertThat(p2.refCnt()).isZero();
        assertThat(fabric.droppedNoEndpoint()).isEqualTo(2);
    }

    @Test
    void packetsOnTheWireWhenTheSchedulerShutsDownAreReleased() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.builder().sharedScheduler(vs).latencyNanos(20_000).build());
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        Recorder rb = new Recorder(vs, 1);
        a.start((p, s, r) -> {});
        b.start(rb);
        ByteBuf p1 = text("on the wire");
        ByteBuf p2 = text("still queued at the sender");
        a.send(p1, B);
        a.flush(); // p1: a delivery 20 us from now
        a.send(p2, B);
        a.close(); // p2: released by a drain task on the loop
        vs.shutdown(); // both tasks dropped, neither run
        assertThat(rb.packets).isEmpty();
        assertThat(p1.refCnt()).as("the delivery's packet").isZero();
        assertThat(p2.refCnt()).as("the sender's queue").isZero();
        assertThat(fabric.droppedNoEndpoint()).isEqualTo(1);
    }

    @Test
    void packetToAnEndpointNotYetStartedIsDropped() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        fabric.newTransport(B);
        a.start((p, s, r) -> {});

        ByteBuf p = text("early");
        a.send(p, B);
        a.flush();
        vs.runUntilIdle();

        assertThat(fabric.droppedNotStarted()).isEqualTo(1);
        assertThat(p.refCnt()).isZero();
    }

    @Test
    void sendBeforeStartThrowsAndReleases() {
        InJvmFabric fabric = track(InJvmFabric.withScheduler(new VirtualScheduler()));
        InJvmTransport a = fabric.newTransport(A);
        ByteBuf p = text("too early");
        assertThatThrownBy(() -> a.send(p, B)).isInstanceOf(IllegalStateException.class);
        assertThat(p.refCnt()).isZero();
    }

    @Test
    void startTwiceThrows() {
        InJvmFabric fabric = track(InJvmFabric.withScheduler(new VirtualScheduler()));
        InJvmTransport a = fabric.newTransport(A);
        a.start((p, s, r) -> {});
        assertThatThrownBy(() -> a.start((p, s, r) -> {})).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void receiverExceptionsAreCountedAndDoNotLeak() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        a.start((p, s, r) -> {});
        List<String> got = new ArrayList<>();
        b.start((p, s, r) -> {
            String t = p.toString(StandardCharsets.US_ASCII);
            if (t.equals("bad")) {
                throw new IllegalStateException("receiver failure (expected by the test)");
            }
            got.add(t);
        });

        ByteBuf bad = text("bad");
        a.send(bad, B);
        a.send(text("good"), B);
        a.flush();
        vs.runUntilIdle();

        assertThat(b.receiveErrors()).isEqualTo(1);
        assertThat(bad.refCnt()).isZero();
        assertThat(got).containsExactly("good");
    }

    @Test
    void sharedVirtualSchedulerRunsAllEndpointsDeterministically() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        InJvmTransport c = fabric.newTransport(C);
        assertThat(a.scheduler()).isSameAs(vs);
        assertThat(c.scheduler()).isSameAs(vs);
        assertThat(fabric.sharedScheduler()).isSameAs(vs);

        List<String> trace = new ArrayList<>();
        // b and c echo back to the sender with one more hop counted
        PacketReceiver echo = (p, s, r) -> {
            int hops = p.readInt();
            trace.add(r.getAddress().getHostAddress() + " got " + hops + " from " + s.getAddress().getHostAddress());
            InJvmTransport self = fabric.endpoint(r);
            self.send(self.allocator().buffer(4).writeInt(hops + 1), s);
            self.flush();
        };
        b.start(echo);
        c.start(echo);
        a.start((p, s, r) -> trace.add("a got " + p.readInt() + " from " + s.getAddress().getHostAddress()));

        a.send(a.allocator().buffer(4).writeInt(0), B);
        a.send(a.allocator().buffer(4).writeInt(10), C);
        a.flush();
        vs.runUntilIdle();

        assertThat(trace).containsExactly(
                "10.0.0.2 got 0 from 10.0.0.1",
                "10.0.0.3 got 10 from 10.0.0.1",
                "a got 1 from 10.0.0.2",
                "a got 11 from 10.0.0.3");
        assertThat(vs.nanoTime()).isZero();
    }

    @Test
    void latencyDelaysDeliveryInVirtualTimeAndKeepsFifo() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.builder().sharedScheduler(vs).latencyNanos(1_000).build());
        assertThat(fabric.latencyNanos()).isEqualTo(1_000);
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        a.start((p, s, r) -> {});
        List<String> got = new ArrayList<>();
        b.start((p, s, r) -> got.add(p.readInt() + "@" + vs.nanoTime()));

        for (int i = 0; i < 5; i++) {
            a.send(a.allocator().buffer(4).writeInt(i), B);
        }
        a.flush();
        vs.runFor(999);
        assertThat(got).isEmpty();
        vs.schedule(() -> {
            a.send(a.allocator().buffer(4).writeInt(5), B);
            a.flush();
        }, 1);
        vs.runUntilIdle();

        assertThat(got).containsExactly("0@1000", "1@1000", "2@1000", "3@1000", "4@1000", "5@2000");
    }

    @Test
    void filterCanDropPackets() {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = track(InJvmFabric.withScheduler(vs));
        InJvmTransport a = fabric.newTransport(A);
        InJvmTransport b = fabric.newTransport(B);
        a.start((p, s, r) -> {});
        List<Integer> got = new ArrayList<>();
        b.start((p, s, r) -> got.add(p.readInt()));
        // drop every odd packet, looking at the payload without consuming it
        fabric.setFilter((p, s, r) -> p.getInt(p.readerIndex()) % 2 == 0);

        List<ByteBuf> sent = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            ByteBuf p = a.allocator().buffer(4).writeInt(i);
            sent.add(p);
            a.send(p, B);
        }
        a.flush();
        vs.runUntilIdle();

        assertThat(got).containsExactly(0, 2, 4);
        assertThat(fabric.droppedByFilter()).isEqualTo(3);
        assertThat(sent).allMatch(p -> p.refCnt() == 0);

        fabric.setFilter(null);
        a.send(a.allocator().buffer(4).writeInt(7), B);
        a.flush();
        vs.runUntilIdle();
        assertThat(got).containsExactly(0, 2, 4, 7);
    }

    @Test
    void portZeroGetsAnEphemeralPort() {
        InJvmFabric fabric = track(InJvmFabric.withScheduler(new VirtualScheduler()));
        InJvmTransport t1 = fabric.newTransport(addr("10.0.0.1", 0));
        InJvmTransport t2 = fabric.newTransport(addr("10.0.0.1", 0));
        assertThat(t1.localAddress().getPort()).isGreaterThanOrEqualTo(InJvmFabric.FIRST_EPHEMERAL_PORT);
        assertThat(t2.localAddress().getPort()).isNotEqualTo(t1.localAddress().getPort());
        assertThat(fabric.endpoint(t1.localAddress())).isSameAs(t1);
    }

    @Test
    void unresolvedAddressIsRejected() {
        InJvmFabric fabric = track(InJvmFabric.withScheduler(new VirtualScheduler()));
        assertThatThrownBy(() -> fabric.newTransport(InetSocketAddress.createUnresolved("nowhere", 1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void ownLoopIsShutDownOnClose() throws Exception {
        InJvmFabric fabric = track(new InJvmFabric());
        InJvmTransport a = fabric.newTransport(A);
        NettyScheduler loop = (NettyScheduler) a.scheduler();
        a.close();
        assertThat(loop.eventLoop().isTerminated()).isTrue();
    }

    @Test
    void ownLoopRunsOnADaemonThread() throws Exception {
        InJvmFabric fabric = track(new InJvmFabric());
        InJvmTransport a = fabric.newTransport(A);
        CompletableFuture<Boolean> daemon = new CompletableFuture<>();
        a.scheduler().execute(() -> daemon.complete(Thread.currentThread().isDaemon()));
        assertThat(daemon.get(TIMEOUT_S, TimeUnit.SECONDS)).as("endpoint loop thread is a daemon").isTrue();
    }
}
