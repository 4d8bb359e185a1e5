package io.rxe4j.verbs.soak;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.Deque;

/** Debug aid: records every packet a device sends and receives (after faults) into a shared ring. */
final class TraceTransport implements Transport {
    private final Transport inner;
    private final Deque<String> trace;
    private final String name;

    TraceTransport(Transport inner, Deque<String> trace, String name) {
        this.inner = inner;
        this.trace = trace;
        this.name = name;
    }

    private void log(String dir, ByteBuf buf) {
        int at = buf.readerIndex();
        String s = String.format("%d %s %s op=%02x psn=%06x qp=%x len=%d aeth=%s", System.nanoTime() / 1000, name, dir,
                buf.getUnsignedByte(at), buf.getInt(at + 8) & 0xFFFFFF, buf.getInt(at + 4) & 0xFFFFFF,
                buf.readableBytes(), buf.readableBytes() >= 20 ? Integer.toHexString(buf.getUnsignedByte(at + 12)) : "-");
        synchronized (trace) {
            trace.addLast(s);
            if (trace.size() > 200000) {
                trace.removeFirst();
            }
        }
    }

    @Override public InetSocketAddress localAddress() { return inner.localAddress(); }
    @Override public Scheduler scheduler() { return inner.scheduler(); }
    @Override public ByteBufAllocator allocator() { return inner.allocator(); }
    @Override public void start(PacketReceiver r) {
        inner.start(new PacketReceiver() {
            @Override public void onPacket(ByteBuf p, InetSocketAddress s, InetSocketAddress d) { log("<-", p); r.onPacket(p, s, d); }
            @Override public void onWritable() { r.onWritable(); }
        });
    }
    @Override public void send(ByteBuf p, InetSocketAddress peer) { log("->", p); inner.send(p, peer); }
    @Override public boolean isWritable() { return inner.isWritable(); }
    @Override public void flush() { inner.flush(); }
    @Override public void close() { inner.close(); }
}
