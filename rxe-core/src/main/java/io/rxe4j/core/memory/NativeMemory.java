package io.rxe4j.core.memory;

import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.slf4j.LoggerFactory;

/**
 * Allocation-free access to the native memory behind direct {@link ByteBuf}s, by address.
 *
 * <p>Netty hands out pooled direct packet buffers whose {@code internalNioBuffer} (and the
 * {@code getBytes(index, byte[])} of their chunk) create a {@link ByteBuffer} view per packet.
 * With native access enabled for this module ({@code --enable-native-access=ALL-UNNAMED} on the
 * class path, as every rxe4j launcher passes), the data path instead addresses the buffer's
 * memory through one segment spanning the address space ({@link #everything()}), and checksums it
 * through a reused {@link ByteBuffer} window ({@link Window}). Without native access (where the
 * restricted {@link MemorySegment#reinterpret(long)} would warn or fail) {@link #everything()} is
 * null and callers keep their buffer-view path.
 */
public final class NativeMemory {
    private static final MemorySegment EVERYTHING = init();

    private NativeMemory() {}

    private static MemorySegment init() {
        Module m = NativeMemory.class.getModule();
        if (!m.isNativeAccessEnabled()) {
            LoggerFactory.getLogger(NativeMemory.class).info("native access is not enabled for {}: packet"
                    + " payloads are copied through a ByteBuffer view per packet instead of by address (add"
                    + " --enable-native-access={} to the java command line)",
                    m.isNamed() ? "module " + m.getName() : "the class path",
                    m.isNamed() ? m.getName() + ",io.netty.common" : "ALL-UNNAMED");
            return null;
        }
        try {
            return MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * @return a segment of the whole address space (offset = native address), or null if native
     *     access is not enabled for rxe-core
     */
    public static MemorySegment everything() {
        return EVERYTHING;
    }

    /** @return whether {@code buf}'s bytes can be addressed through {@link #everything()} */
    public static boolean addressable(ByteBuf buf) {
        return EVERYTHING != null && buf.hasMemoryAddress();
    }

    /**
     * A reusable {@link ByteBuffer} view of a 1 GiB-aligned window of native memory, recreated only
     * when an address outside the current window is asked for (packet buffers come from a few
     * pooled chunks, so in steady state never). Only the asked range is ever read or written.
     * Not thread-safe: one per event loop (or per owner confined to one).
     */
    public static final class Window {
        private static final long SIZE = 1L << 30;
        private long base = -1;
        private ByteBuffer view;

        /**
         * Positions the window's buffer on {@code [address, address + len)}.
         *
         * @return the buffer (position/limit set), or null if the range crosses a window boundary
         *     or native access is unavailable (use another path then)
         */
        public ByteBuffer at(long address, int len) {
            if (EVERYTHING == null || address < 0) {
                return null;
            }
            long b = address & -SIZE;
            if (address + len > b + SIZE) {
                return null;
            }
            if (b != base) {
                view = EVERYTHING.asSlice(b, SIZE).asByteBuffer();
                base = b;
            }
            int pos = (int) (address - b);
            ByteBuffer v = view;
            v.limit(pos + len);
            v.position(pos);
            return v;
        }
    }
}
