package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Test fixture of the engine tests: a transport and scheduler in one that runs every task inline,
 * keeps every packet the device sends (in {@link #sent}, released by {@link #close()}), stops the
 * clock at 0 (timers never fire), and is writable for {@link #writableFor} more sends.
 */
final class InlineLoop implements Transport, Scheduler {
    final InetSocketAddress local;
    final List<ByteBuf> sent = new ArrayList<>();
    /** How many more sends the transport reports itself writable for. */
    long writableFor = Long.MAX_VALUE;
    /** The device, once it has started the transport. */
    PacketReceiver receiver;

    InlineLoop(InetSocketAddress local) {
        this.local = local;
    }

    @Override public InetSocketAddress localAddress() { return local; }
    @Override public Scheduler scheduler() { return this; }
    @Override public ByteBufAllocator allocator() { return UnpooledByteBufAllocator.DEFAULT; }
    @Override public void start(PacketReceiver r) { receiver = r; }

    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        sent.add(packet);
        writableFor--;
    }

    @Override public boolean isWritable() { return writableFor > 0; }
    @Override public void flush() { }

    /** Releases and forgets what was sent. */
    void releaseSent() {
        sent.forEach(ByteBuf::release);
        sent.clear();
    }

    @Override public void close() { releaseSent(); }
    @Override public long nanoTime() { return 0; }
    @Override public boolean inLoop() { return true; }
    @Override public void execute(Runnable task) { task.run(); }
    @Override public Cancellable schedule(Runnable task, long delayNanos) { return () -> { }; }
}
