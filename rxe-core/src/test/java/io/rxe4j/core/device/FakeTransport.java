package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;

/**
 * Test double: a {@link Transport} whose loop runs every task inline on the calling thread
 * ({@link Scheduler#inLoop()} always true) and whose timers never fire. Sent packets are counted
 * and released; with {@link #capture} on, a heap copy of each is kept in {@link #captured} first.
 */
public final class FakeTransport implements Transport {
    private final InetSocketAddress local;
    private final InlineScheduler scheduler = new InlineScheduler();
    private PacketReceiver receiver;
    /** Packets passed to {@link #send}. */
    public long sent;
    /** Calls of {@link #flush}. */
    public long flushes;
    /** Whether {@link #close} ran. */
    public boolean closed;
    /** Whether {@link #send} keeps a copy of each packet in {@link #captured}. */
    public boolean capture;
    /** Copies of the packets sent while {@link #capture} was on, in order (the test releases them). */
    public final java.util.List<ByteBuf> captured = new java.util.ArrayList<>();

    /** @param local the local address */
    public FakeTransport(InetSocketAddress local) {
        this.local = local;
    }

    /** A scheduler running tasks inline; timers are recorded but never run. */
    public static final class InlineScheduler implements Scheduler {
        /** Timers scheduled so far. */
        public int timers;

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
            timers++;
            return () -> { };
        }
    }

    /** @return the receiver given to {@link #start} */
    public PacketReceiver receiver() {
        return receiver;
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
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
        if (receiver != null) {
            throw new IllegalStateException("already started");
        }
        receiver = r;
    }

    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        sent++;
        if (capture) {
            captured.add(io.netty.buffer.Unpooled.copiedBuffer(packet));
        }
        packet.release();
    }

    @Override
    public void flush() {
        flushes++;
    }

    @Override
    public void close() {
        closed = true;
    }
}
