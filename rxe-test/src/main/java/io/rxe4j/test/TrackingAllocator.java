package io.rxe4j.test;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.buffer.UnpooledHeapByteBuf;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An unpooled allocator that counts the buffers it made and that are not released yet: a buffer
 * still counted after the devices closed is one the engine or the test never released (Netty's own
 * leak detector reports only after a garbage collection, and not as a test failure).
 */
final class TrackingAllocator extends AbstractByteBufAllocator {
    private final AtomicLong live = new AtomicLong();
    private final AtomicLong allocated = new AtomicLong();

    TrackingAllocator() {
        super(false);
    }

    /** @return buffers allocated and not yet released */
    long live() {
        return live.get();
    }

    /** @return buffers allocated in all */
    long allocated() {
        return allocated.get();
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        count();
        return new UnpooledHeapByteBuf(this, initialCapacity, maxCapacity) {
            @Override
            protected void deallocate() {
                super.deallocate();
                live.decrementAndGet();
            }
        };
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        count();
        return new UnpooledDirectByteBuf(this, initialCapacity, maxCapacity) {
            @Override
            protected void deallocate() {
                super.deallocate();
                live.decrementAndGet();
            }
        };
    }

    private void count() {
        live.incrementAndGet();
        allocated.incrementAndGet();
    }

    @Override
    public boolean isDirectBufferPooled() {
        return false;
    }

    /** For {@link ByteBufAllocator} callers that compare allocators. */
    @Override
    public String toString() {
        return "TrackingAllocator{live=" + live.get() + ", allocated=" + allocated.get() + '}';
    }
}
