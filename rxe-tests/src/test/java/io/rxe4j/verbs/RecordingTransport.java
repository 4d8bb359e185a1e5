package io.rxe4j.verbs;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A {@link Transport} that forwards everything to another one and, while {@link #recording} is
 * on, keeps a copy of every packet the device sends (BTH through ICRC, exactly as handed to the
 * network). Works over any transport, so wire checks run over the in-JVM fabric and real UDP
 * alike.
 */
final class RecordingTransport implements Transport {
    /** One packet as sent: its bytes, the sending device's address and the peer it went to. */
    record Sent(byte[] bytes, InetSocketAddress from, InetSocketAddress to) {}

    private final Transport delegate;
    private final ConcurrentLinkedQueue<Sent> sent = new ConcurrentLinkedQueue<>();
    private volatile boolean recording;

    RecordingTransport(Transport delegate) {
        this.delegate = delegate;
    }

    /** Clears what was recorded and starts recording. */
    void start() {
        sent.clear();
        recording = true;
    }

    /** Stops recording. @return the packets recorded, in the order they were sent */
    List<Sent> stop() {
        recording = false;
        return new ArrayList<>(sent);
    }

    @Override
    public InetSocketAddress localAddress() {
        return delegate.localAddress();
    }

    @Override
    public Scheduler scheduler() {
        return delegate.scheduler();
    }

    @Override
    public ByteBufAllocator allocator() {
        return delegate.allocator();
    }

    @Override
    public void start(PacketReceiver receiver) {
        delegate.start(receiver);
    }

    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        if (recording) {
            byte[] copy = new byte[packet.readableBytes()];
            packet.getBytes(packet.readerIndex(), copy);
            sent.add(new Sent(copy, delegate.localAddress(), peer));
        }
        delegate.send(packet, peer);
    }

    @Override
    public void flush() {
        delegate.flush();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
