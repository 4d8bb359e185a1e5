package io.rxe4j.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A transport made of several single-loop transports, its lanes ({@link Transport#lanes()}), all
 * with the same local address: a device opened on it runs one event loop per lane and spreads its
 * QPs over them. Created by {@code UdpTransport.Builder.loops(n)} (one {@code SO_REUSEPORT} socket
 * per loop) and {@code InJvmFabric.newTransport(address, loops)}.
 *
 * <p>The device drives the lanes directly; {@link #start}, {@link #send} and {@link #flush} of this
 * object throw {@link IllegalStateException}. {@link #close()} closes every lane. Thread-safe.
 *
 * @param <T> the lanes' type
 */
public final class MultiLoopTransport<T extends Transport> implements Transport {
    private final List<T> lanes;
    private final InetSocketAddress address;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Runnable afterClose;

    /**
     * @param lanes at least two single-loop transports with the same local address; this object
     *     owns and closes them
     * @throws IllegalArgumentException if there are fewer than two lanes, more than 64, a lane is
     *     itself multi-loop, or the addresses differ (the message names the lane)
     */
    public MultiLoopTransport(List<T> lanes) {
        this(lanes, null);
    }

    /**
     * @param lanes as {@link #MultiLoopTransport(List)}
     * @param afterClose run once after every lane is closed (e.g. shutting down the lanes' event
     *     loop group), or null
     */
    public MultiLoopTransport(List<T> lanes, Runnable afterClose) {
        Objects.requireNonNull(lanes, "lanes");
        this.afterClose = afterClose;
        if (lanes.size() < 2 || lanes.size() > 64) {
            throw new IllegalArgumentException("a multi-loop transport needs 2..64 lanes, got " + lanes.size());
        }
        this.lanes = List.copyOf(lanes);
        this.address = this.lanes.get(0).localAddress();
        for (int i = 0; i < this.lanes.size(); i++) {
            T t = this.lanes.get(i);
            if (t.lanes().size() != 1 || !t.localAddress().equals(address)) {
                throw new IllegalArgumentException("lane " + i + " (" + t + ") must be single-loop and bound to " + address);
            }
        }
    }

    @Override
    public List<T> lanes() {
        return lanes;
    }

    @Override
    public InetSocketAddress localAddress() {
        return address;
    }

    /** @return the first lane's scheduler */
    @Override
    public Scheduler scheduler() {
        return lanes.get(0).scheduler();
    }

    /** @return the first lane's allocator */
    @Override
    public ByteBufAllocator allocator() {
        return lanes.get(0).allocator();
    }

    /** @throws IllegalStateException always: a device starts each lane */
    @Override
    public void start(PacketReceiver receiver) {
        throw new IllegalStateException(this + " is multi-loop: start each of its lanes()");
    }

    /** @throws IllegalStateException always (the packet is released first): send on a lane */
    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        if (packet != null) {
            packet.release();
        }
        throw new IllegalStateException(this + " is multi-loop: send on one of its lanes()");
    }

    /** @throws IllegalStateException always: flush a lane */
    @Override
    public void flush() {
        throw new IllegalStateException(this + " is multi-loop: flush one of its lanes()");
    }

    /** @return the first lane's hint (each lane has its own buffers, so the device asks each lane) */
    @Override
    public long inFlightBudgetHint() {
        return lanes.get(0).inFlightBudgetHint();
    }

    /** @return the first lane's (every lane is bound to the same address, so to the same interface) */
    @Override
    public int linkMtu() {
        return lanes.get(0).linkMtu();
    }

    /** @return whether every lane signals the end of its read batches */
    @Override
    public boolean signalsReadComplete() {
        for (T t : lanes) {
            if (!t.signalsReadComplete()) {
                return false;
            }
        }
        return true;
    }

    /** @return the first lane's (namespace-wide counts: the lanes would report the same) */
    @Override
    public long receiveBufferErrors() {
        return lanes.get(0).receiveBufferErrors();
    }

    /** @return the first lane's (namespace-wide counts: the lanes would report the same) */
    @Override
    public long receiveChecksumErrors() {
        return lanes.get(0).receiveChecksumErrors();
    }

    /** @return the sum over the lanes */
    @Override
    public long receiveQueueDrops() {
        long sum = 0;
        for (T t : lanes) {
            sum += t.receiveQueueDrops();
        }
        return sum;
    }

    /** Closes every lane, last first. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        RuntimeException first = null;
        for (int i = lanes.size() - 1; i >= 0; i--) {
            try {
                lanes.get(i).close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (afterClose != null) {
            try {
                afterClose.run();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "MultiLoopTransport[" + address + ", " + lanes.size() + " loops: " + lanes.get(0) + ", ...]";
    }
}
