package io.rxe4j.net.fault;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link FaultInjectingTransport} passes writability through in both directions. */
class FaultInjectingTransportWritabilityTest {

    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);

    /** An inner transport whose writability the test sets, and whose receiver it can call. */
    private static final class Inner implements Transport {
        final Scheduler scheduler = new Scheduler() { // inline; no timers are used here
            @Override
            public long nanoTime() {
                return 0;
            }

            @Override
            public boolean inLoop() {
                return true;
            }

            @Override
            public void execute(Runnable task) {
                task.run();
            }

            @Override
            public Cancellable schedule(Runnable task, long delayNanos) {
                throw new UnsupportedOperationException("no timers in this test");
            }
        };
        boolean writable = true;
        int isWritableCalls;
        PacketReceiver receiver;

        @Override
        public InetSocketAddress localAddress() {
            return LOCAL;
        }

        @Override
        public Scheduler scheduler() {
            return scheduler;
        }

        @Override
        public ByteBufAllocator allocator() {
            return UnpooledByteBufAllocator.DEFAULT;
        }

        @Override
        public void start(PacketReceiver r) {
            receiver = r;
        }

        @Override
        public void send(ByteBuf packet, InetSocketAddress peer) {
            packet.release();
        }

        @Override
        public boolean isWritable() {
            isWritableCalls++;
            return writable;
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    /** Records what the fault transport hands to the device. */
    private static final class Downstream implements PacketReceiver {
        final List<String> packets = new ArrayList<>();
        int writable;

        @Override
        public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
            packets.add(packet.toString(StandardCharsets.US_ASCII));
        }

        @Override
        public void onWritable() {
            writable++;
        }
    }

    @Test
    void isWritableDelegatesToTheInnerTransport() {
        Inner inner = new Inner();
        FaultInjectingTransport fault = new FaultInjectingTransport(inner, 1, List.of());
        assertThat(fault.isWritable()).isTrue();
        inner.writable = false;
        assertThat(fault.isWritable()).isFalse();
        inner.writable = true;
        assertThat(fault.isWritable()).isTrue();
        assertThat(inner.isWritableCalls).isEqualTo(3);
    }

    @Test
    void onWritableOfTheInnerTransportReachesTheReceiver() {
        Inner inner = new Inner();
        FaultInjectingTransport fault = new FaultInjectingTransport(inner, 1, List.of());
        Downstream down = new Downstream();
        fault.start(down);

        inner.receiver.onWritable();
        inner.receiver.onWritable();
        assertThat(down.writable).isEqualTo(2);

        // packets still take the inbound path
        ByteBuf p = Unpooled.copiedBuffer("hello", StandardCharsets.US_ASCII);
        inner.receiver.onPacket(p, PEER, LOCAL);
        p.release();
        assertThat(down.packets).containsExactly("hello");
        assertThat(fault.passed(Direction.INBOUND)).isEqualTo(1);
    }
}
