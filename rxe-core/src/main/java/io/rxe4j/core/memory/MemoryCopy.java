package io.rxe4j.core.memory;

import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Copies between MR memory ({@link MemorySegment}) and packet buffers ({@link ByteBuf}). The
 * caller has already checked bounds and rights; these methods only move bytes.
 *
 * <p>Allocation-free for heap buffers and, with native access enabled, for direct buffers with a
 * memory address (copied by address through {@link NativeMemory#everything()}: a
 * {@code MemorySegment.ofBuffer(buf.internalNioBuffer(..))} wrapper would cost a fresh
 * {@code ByteBuffer} slice per pooled packet buffer, which escape analysis does not remove).
 */
public final class MemoryCopy {
    private MemoryCopy() {}

    /** Copies {@code len} bytes from {@code seg[off..]} into {@code buf[index..]} (absolute). */
    public static void toBuf(MemorySegment seg, long off, ByteBuf buf, int index, int len) {
        if (len == 0) {
            return;
        }
        if (buf.hasArray()) {
            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, off, buf.array(), buf.arrayOffset() + index, len);
        } else if (NativeMemory.addressable(buf)) {
            MemorySegment.copy(seg, off, NativeMemory.everything(), address(buf, index, len), len);
        } else if (buf.nioBufferCount() == 1) {
            MemorySegment.copy(seg, off, MemorySegment.ofBuffer(buf.internalNioBuffer(index, len)), 0, len);
        } else {
            for (int i = 0; i < len; i++) {
                buf.setByte(index + i, seg.get(ValueLayout.JAVA_BYTE, off + i));
            }
        }
    }

    /** Copies {@code len} bytes from {@code buf[index..]} (absolute) into {@code seg[off..]}. */
    public static void fromBuf(ByteBuf buf, int index, MemorySegment seg, long off, int len) {
        if (len == 0) {
            return;
        }
        if (buf.hasArray()) {
            MemorySegment.copy(buf.array(), buf.arrayOffset() + index, seg, ValueLayout.JAVA_BYTE, off, len);
        } else if (NativeMemory.addressable(buf)) {
            MemorySegment.copy(NativeMemory.everything(), address(buf, index, len), seg, off, len);
        } else if (buf.nioBufferCount() == 1) {
            MemorySegment.copy(MemorySegment.ofBuffer(buf.internalNioBuffer(index, len)), 0, seg, off, len);
        } else {
            for (int i = 0; i < len; i++) {
                seg.set(ValueLayout.JAVA_BYTE, off + i, buf.getByte(index + i));
            }
        }
    }

    /** @return the native address of {@code buf[index]}, after the bounds check the buffer-view path made */
    private static long address(ByteBuf buf, int index, int len) {
        if (index < 0 || len < 0 || index > buf.capacity() - len) {
            throw new IndexOutOfBoundsException("index " + index + ", length " + len + " outside capacity "
                    + buf.capacity());
        }
        return buf.memoryAddress() + index;
    }
}
