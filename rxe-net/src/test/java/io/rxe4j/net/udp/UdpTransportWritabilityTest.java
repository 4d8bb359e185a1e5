package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link UdpTransport#isWritable()} and {@link PacketReceiver#onWritable()}. A UDP send over
 * loopback never blocks (the kernel delivers or drops at once), so the socket itself cannot be
 * filled deterministically; these tests fill the channel's write buffer with packets written but
 * not yet flushed, which Netty counts against the same water marks, and, with GSO, the transport's
 * pending list.
 */
class UdpTransportWritabilityTest {

    private static final long TIMEOUT_S = 30;
    private static final int PACKET_BYTES = 1000;
    /** Two packets (plus Netty's per-entry overhead of about 100 bytes) fit, three do not. */
    private static final int LOW = 2000;
    private static final int HIGH = 2500;

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private UdpTransport open(UdpTransport.Builder b) {
        UdpTransport t = b.bind();
        toClose.add(t);
        return t;
    }

    private static UdpTransport.Builder builder(UdpTransport.Io io) throws Exception {
        if (io == UdpTransport.Io.EPOLL) {
            assumeTrue(UdpTransport.isEpollAvailable(), "epoll unavailable");
        }
        return UdpTransport.builder(InetAddress.getByName("127.0.0.1")).port(0).io(io);
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

    /** Counts onWritable calls; records whether one came from inside the sender's flush(). */
    private static final class WritableRecorder implements PacketReceiver {
        final CountDownLatch called = new CountDownLatch(1);
        final Scheduler loop;
        final boolean[] inFlush = new boolean[1]; // loop only
        volatile boolean calledInsideFlush;
        volatile boolean calledOffLoop;
        volatile boolean writableWhenCalled;
        final UdpTransport t;
        final boolean fail;

        WritableRecorder(UdpTransport t, boolean fail) {
            this.t = t;
            this.loop = t.scheduler();
            this.fail = fail;
        }

        @Override
        public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {}

        @Override
        public void onWritable() {
            calledInsideFlush |= inFlush[0];
            calledOffLoop |= !loop.inLoop();
            writableWhenCalled = t.isWritable();
            called.countDown();
            if (fail) {
                throw new IllegalStateException("onWritable failure (expected by the test)");
            }
        }
    }

    /** Sends three packets to {@code peer} without flushing; returns isWritable() before and after each. */
    private static List<Boolean> sendThree(UdpTransport t, InetSocketAddress peer) throws Exception {
        return onLoop(t.scheduler(), () -> {
            List<Boolean> states = new ArrayList<>();
            states.add(t.isWritable());
            for (int i = 0; i < 3; i++) {
                ByteBuf p = t.allocator().directBuffer(PACKET_BYTES);
                p.writeZero(PACKET_BYTES);
                t.send(p, peer);
                states.add(t.isWritable());
            }
            return states;
        });
    }

    private static void flush(UdpTransport t, WritableRecorder r) throws Exception {
        onLoop(t.scheduler(), () -> {
            r.inFlush[0] = true;
            try {
                t.flush();
            } finally {
                r.inFlush[0] = false;
            }
            return null;
        });
    }

    private void notWritableAboveHighUntilFlushed(UdpTransport a) throws Exception {
        UdpTransport b = open(builder(UdpTransport.Io.NIO));
        CountDownLatch received = new CountDownLatch(3);
        b.start((p, s, r) -> received.countDown());
        WritableRecorder rec = new WritableRecorder(a, false);
        a.start(rec);

        assertThat(sendThree(a, b.localAddress())).containsExactly(true, true, true, false);
        onLoop(a.scheduler(), () -> null); // any notification task would have run by now
        assertThat(a.writableNotifications()).as("no onWritable before the flush").isZero();
        assertThat(onLoop(a.scheduler(), a::isWritable)).isFalse();

        flush(a, rec);
        assertThat(rec.called.await(TIMEOUT_S, TimeUnit.SECONDS)).as("onWritable called").isTrue();
        assertThat(received.await(TIMEOUT_S, TimeUnit.SECONDS)).as("the packets arrived").isTrue();
        onLoop(a.scheduler(), () -> null);
        assertThat(rec.calledOffLoop).isFalse();
        assertThat(rec.calledInsideFlush).as("onWritable is a separate task, not inside flush()").isFalse();
        assertThat(rec.writableWhenCalled).isTrue();
        assertThat(onLoop(a.scheduler(), a::isWritable)).isTrue();
        assertThat(a.writableNotifications()).isEqualTo(1);
        assertThat(a.receiveErrors()).isZero();
        assertThat(a.channelErrors()).isZero();
    }

    @ParameterizedTest
    @EnumSource(UdpTransport.Io.class)
    void unflushedPacketsAboveTheHighWaterMarkMakeItNotWritableUntilFlushed(UdpTransport.Io io) throws Exception {
        notWritableAboveHighUntilFlushed(open(builder(io).writeBufferWaterMark(LOW, HIGH)));
    }

    /** With GSO the packets stay in the transport's own list until flush; they count too. */
    @Test
    void gsoPendingPacketsAboveTheHighWaterMarkMakeItNotWritable() throws Exception {
        assumeTrue(UdpTransport.isGsoSupported(), "UDP GSO unsupported");
        UdpTransport a = open(builder(UdpTransport.Io.EPOLL).gso(true).writeBufferWaterMark(LOW, HIGH));
        notWritableAboveHighUntilFlushed(a);
        assertThat(a.gsoSends()).as("the three packets went out as one GSO send").isEqualTo(1);
    }

    @Test
    void gsoPendingPacketsAtTheHighWaterMarkKeepItWritable() throws Exception {
        assumeTrue(UdpTransport.isGsoSupported(), "UDP GSO unsupported");
        // exactly 3 × 1000 bytes pending is not more than the mark; the channel holds nothing yet
        UdpTransport a = open(builder(UdpTransport.Io.EPOLL).gso(true).writeBufferWaterMark(0, 3 * PACKET_BYTES));
        UdpTransport b = open(builder(UdpTransport.Io.NIO));
        b.start((p, s, r) -> {});
        a.start((p, s, r) -> {});
        assertThat(sendThree(a, b.localAddress())).containsExactly(true, true, true, true);
    }

    @Test
    void anExceptionFromOnWritableIsCountedAndLogged() throws Exception {
        UdpTransport a = open(builder(UdpTransport.Io.NIO).writeBufferWaterMark(LOW, HIGH));
        UdpTransport b = open(builder(UdpTransport.Io.NIO));
        b.start((p, s, r) -> {});
        WritableRecorder rec = new WritableRecorder(a, true);
        a.start(rec);
        assertThat(sendThree(a, b.localAddress())).endsWith(false);
        flush(a, rec);
        assertThat(rec.called.await(TIMEOUT_S, TimeUnit.SECONDS)).isTrue();
        onLoop(a.scheduler(), () -> null); // the task that threw has finished
        assertThat(a.receiveErrors()).isEqualTo(1);
        assertThat(a.writableNotifications()).isEqualTo(1);
        assertThat(onLoop(a.scheduler(), a::isWritable)).isTrue();
    }

    @Test
    void notWritableOnceClosed() throws Exception {
        UdpTransport a = open(builder(UdpTransport.Io.NIO));
        a.start((p, s, r) -> {});
        assertThat(onLoop(a.scheduler(), a::isWritable)).isTrue();
        a.close();
        assertThat(a.isWritable()).isFalse();
    }
}
