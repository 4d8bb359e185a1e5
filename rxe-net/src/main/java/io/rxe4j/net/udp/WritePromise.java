package io.rxe4j.net.udp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * The promise of one datagram write of a {@link UdpTransport}, reused from write to write: it holds
 * a reference to the packet (or GSO buffer) until Netty completes the write, then tells the
 * transport (a failure with the packet, so that the engine learns which datagram was refused,
 * {@code PacketReceiver.onSendFailed}), releases the packet and goes back to its pool. So a
 * datagram costs no promise object and no listener notification ({@code DefaultChannelPromise}'s
 * lock and listener list), only the {@code DatagramPacket} envelope Netty's API needs.
 *
 * <p>It supports exactly what Netty's write path uses: {@link #isDone()} (false while a write holds
 * it), {@link #channel()}, {@link #setUncancellable()}, {@link #trySuccess()} and {@link
 * #tryFailure}, each completing it once. Adding a listener, waiting and {@code get} throw {@link
 * UnsupportedOperationException}; removing a listener does nothing and {@link #cancel} returns
 * false: the transport never hands the promise to anyone but the channel. Event loop only; a
 * completion off the loop (Netty completes writes made on the loop there) would still report and
 * release the packet, but not recycle the promise.
 */
final class WritePromise implements ChannelPromise {
    /** Promises kept for reuse per transport at most: a full write queue of small datagrams. */
    static final int POOL_LIMIT = 4096;

    /** What the transport does when a write completes; called once per write, on the loop. */
    interface Completion {
        /**
         * @param cause null when the write succeeded
         */
        void completed(ByteBuf packet, int segmentSize, InetSocketAddress peer, Throwable cause);
    }

    /** The promises of one transport not in use; event loop only. */
    static final class Pool {
        private final Channel channel;
        private final Completion completion;
        private final ArrayDeque<WritePromise> free = new ArrayDeque<>();
        private long created;

        Pool(Channel channel, Completion completion) {
            this.channel = channel;
            this.completion = completion;
        }

        /** @return a promise armed for one write of {@code packet} (whose reference it takes over) */
        WritePromise acquire(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
            WritePromise p = free.pollLast();
            if (p == null) {
                p = new WritePromise(this);
                created++;
            }
            p.arm(packet, segmentSize, peer);
            return p;
        }

        /** @return promises created so far (a bound on the garbage the pool ever made) */
        long created() {
            return created;
        }

        void recycle(WritePromise p) {
            if (free.size() < POOL_LIMIT && channel.eventLoop().inEventLoop()) {
                free.addLast(p);
            }
        }
    }

    private final Pool pool;
    private ByteBuf packet;
    private int segmentSize;
    private InetSocketAddress peer;
    /** A write holds the promise and has not completed it. */
    private boolean armed;
    private Throwable cause;

    private WritePromise(Pool pool) {
        this.pool = pool;
    }

    private void arm(ByteBuf packet, int segmentSize, InetSocketAddress peer) {
        this.packet = packet;
        this.segmentSize = segmentSize;
        this.peer = peer;
        this.cause = null;
        this.armed = true;
    }

    /** Completes the write once: tells the transport, releases the packet, recycles the promise. */
    private boolean complete(Throwable failure) {
        if (!armed) {
            return false;
        }
        armed = false;
        cause = failure;
        ByteBuf p = packet;
        packet = null;
        InetSocketAddress to = peer;
        peer = null;
        try {
            pool.completion.completed(p, segmentSize, to, failure);
        } finally {
            p.release();
            pool.recycle(this);
        }
        return true;
    }

    @Override
    public Channel channel() {
        return pool.channel;
    }

    @Override
    public boolean trySuccess() {
        return complete(null);
    }

    @Override
    public boolean trySuccess(Void result) {
        return complete(null);
    }

    @Override
    public ChannelPromise setSuccess() {
        if (!complete(null)) {
            throw new IllegalStateException("write promise completed already");
        }
        return this;
    }

    @Override
    public ChannelPromise setSuccess(Void result) {
        return setSuccess();
    }

    @Override
    public boolean tryFailure(Throwable failure) {
        return complete(failure == null ? new NullPointerException("cause") : failure);
    }

    @Override
    public ChannelPromise setFailure(Throwable failure) {
        if (!tryFailure(failure)) {
            throw new IllegalStateException("write promise completed already", failure);
        }
        return this;
    }

    @Override
    public boolean setUncancellable() {
        return true;
    }

    @Override
    public boolean isVoid() {
        return false;
    }

    @Override
    public ChannelPromise unvoid() {
        return this;
    }

    @Override
    public boolean isSuccess() {
        return !armed && cause == null;
    }

    @Override
    public boolean isCancellable() {
        return false;
    }

    @Override
    public Throwable cause() {
        return armed ? null : cause;
    }

    @Override
    public boolean isDone() {
        return !armed;
    }

    @Override
    public boolean isCancelled() {
        return false;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        return false;
    }

    @Override
    public Void getNow() {
        return null;
    }

    private static UnsupportedOperationException unsupported(String what) {
        return new UnsupportedOperationException(what + " on a UdpTransport write promise (only the channel completes it)");
    }

    @Override
    public ChannelPromise addListener(GenericFutureListener<? extends Future<? super Void>> listener) {
        throw unsupported("addListener");
    }

    @Override
    @SafeVarargs
    public final ChannelPromise addListeners(GenericFutureListener<? extends Future<? super Void>>... listeners) {
        throw unsupported("addListeners");
    }

    @Override
    public ChannelPromise removeListener(GenericFutureListener<? extends Future<? super Void>> listener) {
        return this;
    }

    @Override
    @SafeVarargs
    public final ChannelPromise removeListeners(GenericFutureListener<? extends Future<? super Void>>... listeners) {
        return this;
    }

    @Override
    public ChannelPromise sync() {
        throw unsupported("sync");
    }

    @Override
    public ChannelPromise syncUninterruptibly() {
        throw unsupported("syncUninterruptibly");
    }

    @Override
    public ChannelPromise await() {
        throw unsupported("await");
    }

    @Override
    public ChannelPromise awaitUninterruptibly() {
        throw unsupported("awaitUninterruptibly");
    }

    @Override
    public boolean await(long timeout, TimeUnit unit) {
        throw unsupported("await");
    }

    @Override
    public boolean await(long timeoutMillis) {
        throw unsupported("await");
    }

    @Override
    public boolean awaitUninterruptibly(long timeout, TimeUnit unit) {
        throw unsupported("awaitUninterruptibly");
    }

    @Override
    public boolean awaitUninterruptibly(long timeoutMillis) {
        throw unsupported("awaitUninterruptibly");
    }

    @Override
    public Void get() {
        throw unsupported("get");
    }

    @Override
    public Void get(long timeout, TimeUnit unit) {
        throw unsupported("get");
    }

    @Override
    public String toString() {
        return "WritePromise{" + (armed ? "pending" : cause == null ? "done" : "failed: " + cause) + '}';
    }
}
