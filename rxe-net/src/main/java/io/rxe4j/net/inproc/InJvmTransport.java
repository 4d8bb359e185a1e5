package io.rxe4j.net.inproc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One endpoint of an {@link InJvmFabric}; created by {@link InJvmFabric#newTransport}.
 *
 * <p>{@link #send} only queues the packet on this endpoint (nothing crosses the fabric before
 * {@link #flush()}, exactly as a UDP transport may hold packets until flushed); {@link #flush()}
 * hands the queued packets, in order, to their destinations' loops. Both must be called on this
 * endpoint's {@link #scheduler()} loop: the queue is not synchronised. Received packets are
 * delivered on this endpoint's loop to the {@link PacketReceiver} given to {@link #start} and
 * released after it returns; an exception thrown by the receiver (other than a {@link
 * VirtualMachineError}) is caught, counted in {@link #receiveErrors()} and logged at debug level.
 *
 * <p>{@link #localAddress()}, {@link #scheduler()}, {@link #allocator()}, {@link #start}, {@link
 * #close()} and the counters are thread-safe.
 */
public final class InJvmTransport implements Transport {

    private static final Logger log = LoggerFactory.getLogger(InJvmTransport.class);


    private final InJvmFabric fabric;
    private final InetSocketAddress localAddress;
    private final Scheduler scheduler;
    private final DefaultEventLoop ownLoop;
    private final ByteBufAllocator allocator;
    /** Sent, not yet flushed: (packet, peer) pairs, loop only. No per-packet allocation once grown. */
    private final ArrayDeque<Object> pending = new ArrayDeque<>();
    /** Delivered to this endpoint, not yet handed to the receiver: (packet, sender) pairs. */
    private final ArrayDeque<Object> inbox = new ArrayDeque<>();
    /** The loop's copy of {@link #inbox} being drained, loop only. */
    private final ArrayDeque<Object> draining = new ArrayDeque<>();
    /** Guarded by {@link #inbox}: a drain task is queued on the loop. */
    private boolean drainScheduled;
    private final Runnable drainTask = this::drainInbox;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder receiveErrors = new LongAdder();
    private final LongAdder received = new LongAdder();
    private final LongAdder sent = new LongAdder();
    private final LongAdder sendErrors = new LongAdder();
    private volatile PacketReceiver receiver;
    /** The lanes of this endpoint's multi-loop transport (this one included), or null; set once before use. */
    volatile InJvmTransport[] group;
    /** This endpoint's index in {@link #group} (0 without one). */
    int laneIndex;

    InJvmTransport(
            InJvmFabric fabric,
            InetSocketAddress localAddress,
            Scheduler scheduler,
            DefaultEventLoop ownLoop,
            ByteBufAllocator allocator) {
        this.fabric = fabric;
        this.localAddress = localAddress;
        this.scheduler = scheduler;
        this.ownLoop = ownLoop;
        this.allocator = allocator;
    }

    /** @return this endpoint's address on the fabric (the concrete port if 0 was asked for). */
    @Override
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    /**
     * @return this endpoint's loop: its own {@link io.rxe4j.net.NettyScheduler} over a {@link
     *     DefaultEventLoop}, or the fabric's shared scheduler
     */
    @Override
    public Scheduler scheduler() {
        return scheduler;
    }

    /** @return the fabric's allocator (by default {@link ByteBufAllocator#DEFAULT}, pooled). */
    @Override
    public ByteBufAllocator allocator() {
        return allocator;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Always {@code true}, so {@link PacketReceiver#onWritable()} is never called. There is no
     * socket buffer to fill: {@link #send} only queues on this endpoint until its own {@link
     * #flush()}, which hands every queued packet to its destination at once, and each
     * destination's inbox is drained by the destination's own loop. What can be queued is bounded
     * by the device, which limits its own output (for example the requester's window of
     * unacknowledged PSNs per QP).
     */
    @Override
    public boolean isWritable() {
        return true;
    }

    /** @return the fabric this endpoint belongs to. */
    public InJvmFabric fabric() {
        return fabric;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Packets that arrive before this call are dropped and counted in {@link
     * InJvmFabric#droppedNotStarted()}. Thread-safe.
     *
     * @throws IllegalStateException if already started, or closed
     * @throws NullPointerException if {@code receiver} is {@code null}
     */
    @Override
    public synchronized void start(PacketReceiver receiver) {
        Objects.requireNonNull(receiver, "receiver");
        if (closed.get()) {
            throw new IllegalStateException("transport closed: " + localAddress);
        }
        if (this.receiver != null) {
            throw new IllegalStateException("transport already started: " + localAddress);
        }
        this.receiver = receiver;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Queues the packet until {@link #flush()}. After {@link #close()} the packet is released
     * and dropped silently.
     *
     * @throws IllegalStateException if not {@linkplain #start started} (the packet is released
     *     first)
     * @throws NullPointerException if an argument is {@code null} (a non-null packet is released
     *     first)
     */
    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        Objects.requireNonNull(packet, "packet");
        if (peer == null) {
            packet.release();
            throw new NullPointerException("peer");
        }
        if (receiver == null) {
            packet.release();
            throw new IllegalStateException("send before start on " + localAddress);
        }
        if (closed.get()) {
            packet.release();
            return;
        }
        pending.add(packet);
        pending.add(peer);
        sent.increment();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Hands every queued packet, in order, to the fabric, which passes it to the destination's
     * loop or drops it (see {@link InJvmFabric}). If the fabric's {@link
     * InJvmFabric.PacketFilter} throws, the exception propagates after the packet concerned is
     * released; later packets stay queued.
     */
    @Override
    public void flush() {
        Object packet;
        int mtu = fabric.linkMtu();
        while ((packet = pending.poll()) != null) {
            InetSocketAddress peer = (InetSocketAddress) pending.poll();
            ByteBuf p = (ByteBuf) packet;
            if (mtu > 0 && p.readableBytes() + (peer.getAddress() instanceof java.net.Inet6Address ? 48 : 28) > mtu) {
                refuse(p, peer, mtu);
                continue;
            }
            fabric.deliver(this, p, peer);
        }
    }

    /** A packet larger than the fabric's link MTU: refused as the kernel refuses it (EMSGSIZE), then released. */
    private void refuse(ByteBuf packet, InetSocketAddress peer, int mtu) {
        sendErrors.increment();
        try {
            PacketReceiver r = receiver;
            if (r != null && !closed.get()) {
                r.onSendFailed(packet, peer, new io.rxe4j.verbs.spi.DatagramTooLargeException("Message too long: "
                        + packet.readableBytes() + "-byte UDP payload over a link of MTU " + mtu, null));
            }
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            receiveErrors.increment();
            log.debug("{}: receiver threw in onSendFailed", localAddress, e);
        } finally {
            packet.release();
        }
    }

    /**
     * {@inheritDoc}
     *
     * @return the fabric's {@link InJvmFabric.Builder#linkMtu(int)}, or -1 when it has no limit
     */
    @Override
    public int linkMtu() {
        int mtu = fabric.linkMtu();
        return mtu > 0 ? mtu : -1;
    }

    /** @return packets refused at {@link #flush()} because they exceeded the fabric's link MTU */
    public long sendErrors() {
        return sendErrors.sum();
    }

    /**
     * Queues a packet for this endpoint's receiver (any thread). One drain task per batch is put on
     * the loop, so a burst costs no allocation per packet; order is FIFO.
     *
     * @return false if this endpoint is closed (the caller releases and counts the packet); true if
     *     the packet was queued, or released and counted here because the loop rejected the drain task
     */
    boolean enqueue(ByteBuf packet, InetSocketAddress sender) {
        boolean schedule;
        synchronized (inbox) {
            if (closed.get()) { // close() released the inbox; nothing may wait in it for a loop that may never run
                return false;
            }
            inbox.add(packet);
            inbox.add(sender);
            schedule = !drainScheduled;
            drainScheduled = true;
        }
        if (schedule) {
            try {
                scheduler.execute(drainTask);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // the loop is gone: every packet in the inbox is orphaned, this one included (others may
                // have been added after it meanwhile, and a concurrent close() may have released them all
                // already); each is released and counted exactly once, here or by close()
                synchronized (inbox) {
                    drainScheduled = false;
                    releaseInbox();
                }
                return true;
            }
        }
        return true;
    }

    /** Releases and counts ({@link InJvmFabric#droppedNoEndpoint()}) every packet in the inbox; holding its lock. */
    private void releaseInbox() {
        Object p;
        while ((p = inbox.poll()) != null) {
            ((ByteBuf) p).release();
            inbox.poll();
            fabric.countNoEndpoint();
        }
    }

    private void drainInbox() {
        synchronized (inbox) {
            Object p;
            while ((p = inbox.poll()) != null) {
                draining.add(p);
            }
            drainScheduled = false;
        }
        Object packet;
        boolean any = false;
        while ((packet = draining.poll()) != null) {
            any |= deliver((ByteBuf) packet, (InetSocketAddress) draining.poll(), false);
        }
        if (any) {
            readComplete();
        }
    }

    /**
     * {@inheritDoc}
     *
     * @return {@code true}: after each drained batch, and after each packet delivered alone (with a
     *     latency or a link model)
     */
    @Override
    public boolean signalsReadComplete() {
        return true;
    }

    private void readComplete() {
        PacketReceiver r = receiver;
        if (r == null || closed.get()) {
            return;
        }
        try {
            r.onReadComplete();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            receiveErrors.increment();
            log.debug("{}: receiver threw at the end of a batch", localAddress, e);
        }
    }

    /** Per-destination state of the fabric's link model; sender's loop only. */
    static final class LinkState {
        /** When the link is free again, on the scheduler's clock (nanoseconds). */
        long nextFree;
    }

    private final java.util.HashMap<InetSocketAddress, LinkState> links = new java.util.HashMap<>();

    /** @return the link towards {@code to} (created on first use). Sender's loop only. */
    LinkState link(InetSocketAddress to) {
        LinkState l = links.get(to);
        if (l == null) {
            l = new LinkState();
            links.put(to, l);
        }
        return l;
    }

    /** Runs on this endpoint's loop: passes one packet to the receiver, then releases it. */
    void receive(ByteBuf packet, InetSocketAddress sender) {
        receive(packet, sender, false);
    }

    /**
     * Runs on this endpoint's loop: passes one packet to the receiver (with its CE mark), then
     * releases it.
     */
    void receive(ByteBuf packet, InetSocketAddress sender, boolean ce) {
        if (deliver(packet, sender, ce)) {
            readComplete();
        }
    }

    /** Passes one packet to the receiver, then releases it. @return whether the receiver got it */
    private boolean deliver(ByteBuf packet, InetSocketAddress sender, boolean ce) {
        try {
            PacketReceiver r = receiver;
            if (closed.get()) {
                fabric.countNoEndpoint();
                return false;
            }
            if (r == null) {
                fabric.countNotStarted();
                return false;
            }
            fabric.countDelivered();
            received.increment();
            try {
                if (ce) {
                    r.onPacket(packet, sender, localAddress, true);
                } else {
                    r.onPacket(packet, sender, localAddress);
                }
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                receiveErrors.increment();
                log.debug("{}: receiver threw on a packet from {}", localAddress, sender, e);
            }
            return true;
        } finally {
            packet.release();
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Unregisters the address from the fabric (it can be reused at once), releases the packets
     * delivered to this endpoint and not yet handed to its receiver (counted in {@link
     * InJvmFabric#droppedNoEndpoint()}) and those still queued by {@link #send} and, if the endpoint has its own loop, shuts that loop down
     * gracefully: tasks already queued on it still run, and packets that reach this endpoint from
     * now on are dropped and counted in {@link InJvmFabric#droppedNoEndpoint()}. Waits up to 5
     * seconds for the own loop to terminate unless called on that loop. Thread-safe; idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        fabric.unregister(this);
        // packets delivered to this endpoint and not yet drained: released here, on any thread, so that
        // none waits for a drain task that a stopped loop (a test's VirtualScheduler) never runs
        synchronized (inbox) {
            releaseInbox();
        }
        Runnable drain = () -> {
            Object o;
            while ((o = pending.poll()) != null) {
                ((ByteBuf) o).release();
                pending.poll();
            }
        };
        if (scheduler.inLoop()) {
            drain.run();
        } else {
            try {
                // dropped by a VirtualScheduler that shuts down before running it: drained then, when the
                // loop is gone just as in the rejection below
                scheduler.execute(new io.rxe4j.net.sim.VirtualScheduler.Droppable() {
                    @Override
                    public void run() {
                        drain.run();
                    }

                    @Override
                    public void onDropped() {
                        drain.run();
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                drain.run(); // loop gone: nobody else touches the queue any more
            }
        }
        if (ownLoop != null) {
            var terminated = ownLoop.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            if (!ownLoop.inEventLoop()) {
                terminated.awaitUninterruptibly(5, TimeUnit.SECONDS);
            }
        }
    }

    /** @return whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    /** @return the number of exceptions thrown by the receiver (each caught and logged). */
    public long receiveErrors() {
        return receiveErrors.sum();
    }

    /** @return the number of packets handed to this endpoint's receiver. */
    public long packetsReceived() {
        return received.sum();
    }

    /** @return the number of packets accepted by {@link #send} (before any drop in the fabric). */
    public long packetsSent() {
        return sent.sum();
    }

    /** @return the number of packets queued by {@link #send} and not yet flushed. Loop only. */
    public int pendingPackets() {
        return pending.size() / 2;
    }

    @Override
    public String toString() {
        return "InJvmTransport[" + localAddress + (closed.get() ? ", closed" : "") + "]";
    }
}
