package io.rxe4j.net.pcap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;

/**
 * A transport wrapper that writes every packet the device sends and receives to a pcap file
 * ({@link PcapWriter}), with the real addresses and ports, so that Wireshark or tshark decodes it
 * as RoCEv2 and its ICRCs check out. Works over any transport: UDP (the file shows what the socket
 * sent and got) and the in-JVM fabric (the file shows what a UDP socket would have carried).
 *
 * <pre>{@code
 * Transport t = new CapturingTransport(UdpTransport.bind(addr), Path.of("rxe.pcap"));
 * RdmaDevice dev = RdmaDevice.open(t);   // closing the device closes the file
 * }</pre>
 *
 * <p>Sent packets are written when handed to the wrapped transport (a packet the socket later
 * fails to send still appears), received ones before the device sees them; to capture the effect
 * of fault injection, wrap the {@code FaultInjectingTransport} (the capture then shows what the
 * device really sent and got) or be wrapped by it (the capture shows what left before the faults).
 * Timestamps come from the wall clock. The file is flushed at every {@link #flush()} of the device
 * loop, so it is readable while the device runs.
 */
public final class CapturingTransport implements Transport {
    private final Transport inner;
    private final PcapWriter writer;
    private final Clock clock;

    /**
     * @param inner the transport to wrap (owned: closed with this one)
     * @param file the pcap file, created or truncated
     * @throws java.io.UncheckedIOException if the file cannot be written
     */
    public CapturingTransport(Transport inner, Path file) {
        this(inner, new PcapWriter(file), Clock.systemUTC());
    }

    /** With an explicit writer and clock (tests). */
    public CapturingTransport(Transport inner, PcapWriter writer, Clock clock) {
        this.inner = inner;
        this.writer = writer;
        this.clock = clock;
    }

    /** @return the writer (e.g. for {@link PcapWriter#records()}) */
    public PcapWriter writer() {
        return writer;
    }

    private long micros() {
        Instant now = clock.instant();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
    }

    private volatile List<CapturingTransport> lanes;

    /**
     * {@inheritDoc}
     *
     * <p>For a multi-loop inner transport: one capturing lane per inner lane, all writing to this
     * capture's file (records from different loops interleave in the order they are written).
     * Closing this transport closes the inner one and the file.
     */
    @Override
    public List<? extends Transport> lanes() {
        List<? extends Transport> in = inner.lanes();
        if (in.size() == 1) {
            return List.of(this);
        }
        List<CapturingTransport> l = lanes;
        if (l == null) {
            synchronized (this) {
                l = lanes;
                if (l == null) {
                    List<CapturingTransport> c = new java.util.ArrayList<>();
                    for (Transport t : in) {
                        c.add(new CapturingTransport(t, writer, clock));
                    }
                    lanes = l = List.copyOf(c);
                }
            }
        }
        return l;
    }

    @Override
    public InetSocketAddress localAddress() {
        return inner.localAddress();
    }

    @Override
    public Scheduler scheduler() {
        return inner.scheduler();
    }

    @Override
    public ByteBufAllocator allocator() {
        return inner.allocator();
    }

    @Override
    public void start(PacketReceiver receiver) {
        inner.start(new PacketReceiver() {
            @Override
            public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
                writer.write(packet, sender, recipient != null ? recipient : localAddress(), false, micros());
                receiver.onPacket(packet, sender, recipient);
            }

            @Override
            public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient,
                    boolean ceMarked) {
                writer.write(packet, sender, recipient != null ? recipient : localAddress(), ceMarked, micros());
                receiver.onPacket(packet, sender, recipient, ceMarked);
            }

            @Override
            public void onWritable() {
                receiver.onWritable();
            }

            @Override
            public void onReadComplete() {
                receiver.onReadComplete();
            }

            @Override
            public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
                receiver.onSendFailed(packet, peer, cause); // the capture already holds it as sent
            }
        });
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public int linkMtu() {
        return inner.linkMtu();
    }

    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        writer.write(packet, localAddress(), peer, false, micros());
        inner.send(packet, peer);
    }

    @Override
    public boolean isWritable() {
        return inner.isWritable();
    }

    @Override
    public boolean signalsReadComplete() {
        return inner.signalsReadComplete();
    }

    @Override
    public long inFlightBudgetHint() {
        return inner.inFlightBudgetHint();
    }

    @Override
    public long receiveQueueDrops() {
        return inner.receiveQueueDrops();
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public long receiveBufferErrors() {
        return inner.receiveBufferErrors();
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public long receiveChecksumErrors() {
        return inner.receiveChecksumErrors();
    }

    @Override
    public void flush() {
        inner.flush();
        writer.flush();
    }

    /** Closes the wrapped transport, then the file. */
    @Override
    public void close() {
        try {
            inner.close();
        } finally {
            writer.close();
        }
    }

    @Override
    public String toString() {
        return "CapturingTransport{" + inner + '}';
    }
}
