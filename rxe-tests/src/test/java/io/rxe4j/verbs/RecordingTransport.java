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
    private final ConcurrentLinkedQueue<Sent> sent;
    private final java.util.concurrent.atomic.AtomicBoolean recording;
    /** For a multi-loop delegate: one recording lane per lane, sharing what is recorded. */
    private final List<RecordingTransport> lanes;

    RecordingTransport(Transport delegate) {
        this(delegate, new ConcurrentLinkedQueue<>(), new java.util.concurrent.atomic.AtomicBoolean());
    }

    private RecordingTransport(Transport delegate, ConcurrentLinkedQueue<Sent> sent,
            java.util.concurrent.atomic.AtomicBoolean recording) {
        this.delegate = delegate;
        this.sent = sent;
        this.recording = recording;
        List<? extends Transport> in = delegate.lanes();
        List<RecordingTransport> l = new ArrayList<>();
        if (in.size() > 1) {
            for (Transport t : in) {
                l.add(new RecordingTransport(t, sent, recording));
            }
        }
        this.lanes = l.isEmpty() ? null : List.copyOf(l);
    }

    @Override
    public List<? extends Transport> lanes() {
        return lanes == null ? List.of(this) : lanes;
    }

    /** Clears what was recorded and starts recording. */
    void start() {
        sent.clear();
        recording.set(true);
    }

    /** Stops recording. @return the packets recorded, in the order they were sent (per loop) */
    List<Sent> stop() {
        recording.set(false);
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
        if (recording.get()) {
            byte[] copy = new byte[packet.readableBytes()];
            packet.getBytes(packet.readerIndex(), copy);
            sent.add(new Sent(copy, delegate.localAddress(), peer));
        }
        delegate.send(packet, peer);
    }

    @Override
    public boolean signalsReadComplete() {
        return delegate.signalsReadComplete();
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
