package io.rxe4j.jcstress;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The responder's placement steps, made callable from jcstress actors with the real rxe-verbs code:
 * {@link #placeWrite} is {@code Responder.executeWrite}'s copy ({@link MemoryCopy#fromBuf}, plain
 * stores) and {@link #placeAtomicWrite} is {@code Responder.executeAtomicWrite}'s store (the 8
 * wire bytes decoded as the responder does, then {@link RxeMr#setLongRelease}).
 *
 * <p>Packets are modelled as the responder sees them: a {@link ByteBuf} whose payload starts after
 * the BTH (12 bytes) and RETH (16 bytes), so {@code payloadIndex == 28}.
 */
final class Placement {
    private Placement() {}

    /** BTH + RETH: where the payload of a WRITE FIRST/ONLY or an ATOMIC WRITE starts. */
    static final int PAYLOAD_INDEX = 12 + 16;
    /** RDMA WRITE payload placed before the flag: 256 bytes spans four cache lines. */
    static final int PAYLOAD_LEN = 256;
    /** The MR: payload at offset 0, the 8-byte ATOMIC WRITE flag right after it (8-aligned). */
    static final long MR_LEN = PAYLOAD_LEN + 8;
    /** The ATOMIC WRITE flag value (non-zero in both halves). */
    static final long FLAG = 0x0123_4567_89AB_CDEFL;

    private static final RxePd PD = new RxePd(1);
    private static final int KEY = 0x100 | 1;
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC;
    /** As Responder: host order is little-endian on x86/ARM; wire order is big-endian. */
    private static final boolean NATIVE_LE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /** The WRITE payload byte i: never 0 (the old, freshly registered content). */
    static byte payloadByte(int i) {
        return (byte) (i % 255 + 1);
    }

    private static byte[] writePacketBytes() {
        byte[] pkt = new byte[PAYLOAD_INDEX + PAYLOAD_LEN];
        for (int i = 0; i < PAYLOAD_LEN; i++) {
            pkt[PAYLOAD_INDEX + i] = payloadByte(i);
        }
        return pkt;
    }

    private static final byte[] WRITE_PACKET = writePacketBytes();

    /**
     * A new registered MR over fresh native memory (zeroed, 8-aligned). The memory is GC-managed
     * ({@link Arena#ofAuto()}, accessible from any thread like {@code Arena.ofShared()}): jcstress
     * makes millions of states, and a shared arena per state would never be freed.
     */
    static RxeMr newMr(long bytes) {
        MemorySegment seg = Arena.ofAuto().allocate(bytes, 8);
        return new RxeMr(PD, seg, null, ACCESS, KEY);
    }

    /** Kinds of packet buffer, one per {@link MemoryCopy#fromBuf} branch. */
    enum Kind {
        /** heap buffer: {@code MemorySegment.copy} from the array. */
        HEAP,
        /** direct buffer (what a Netty datagram channel delivers): copy from its single NIO buffer. */
        DIRECT,
        /** composite of two buffers: the byte-by-byte loop. */
        COMPOSITE
    }

    // One packet per thread and kind: the payload never changes, and direct/composite buffers are
    // not allocated per state (they would be freed only by release()).
    private static final ThreadLocal<ByteBuf> DIRECT_PACKET = ThreadLocal.withInitial(() -> {
        ByteBuf b = Unpooled.directBuffer(WRITE_PACKET.length);
        b.writeBytes(WRITE_PACKET);
        return b;
    });
    private static final ThreadLocal<ByteBuf> COMPOSITE_PACKET = ThreadLocal.withInitial(() -> {
        int split = PAYLOAD_INDEX + PAYLOAD_LEN / 2 + 3; // payload split across components
        CompositeByteBuf c = Unpooled.compositeBuffer(2);
        c.addComponent(true, Unpooled.wrappedBuffer(WRITE_PACKET, 0, split));
        c.addComponent(true, Unpooled.wrappedBuffer(WRITE_PACKET, split, WRITE_PACKET.length - split));
        return c;
    });

    /** The RDMA WRITE packet (header + payload) as a buffer of the given kind. */
    static ByteBuf writePacket(Kind kind) {
        return switch (kind) {
            case HEAP -> Unpooled.wrappedBuffer(WRITE_PACKET);
            case DIRECT -> DIRECT_PACKET.get();
            case COMPOSITE -> COMPOSITE_PACKET.get();
        };
    }

    /** The ATOMIC WRITE packet setting the flag (read-only, shared). */
    static final ByteBuf FLAG_PACKET = atomicWritePacket(FLAG);

    /** The ATOMIC WRITE packet carrying {@code value} in its 8 wire (big-endian) payload bytes. */
    static ByteBuf atomicWritePacket(long value) {
        ByteBuf b = Unpooled.buffer(PAYLOAD_INDEX + 8);
        b.writerIndex(PAYLOAD_INDEX);
        b.writeLong(NATIVE_LE ? Long.reverseBytes(value) : value); // memory bytes as sent on the wire
        return b;
    }

    /** Responder.executeWrite's placement of {@code PAYLOAD_LEN} bytes at {@code va}. */
    static void placeWrite(RxeMr mr, long va, ByteBuf pkt) {
        MemoryCopy.fromBuf(pkt, PAYLOAD_INDEX, mr.segment(), mr.offset(va), PAYLOAD_LEN);
    }

    /** Responder.executeAtomicWrite's store of the packet's 8 bytes at {@code va}. */
    static void placeAtomicWrite(RxeMr mr, long va, ByteBuf pkt) {
        long raw = pkt.getLong(PAYLOAD_INDEX); // the 8 wire bytes, big-endian read
        mr.setLongRelease(va, NATIVE_LE ? Long.reverseBytes(raw) : raw); // stored byte for byte
    }

    /**
     * The negative control's broken variant of {@link #placeAtomicWrite}: the same 8 bytes stored
     * with a plain store instead of the release store, so nothing orders the earlier payload stores
     * before it.
     */
    static void placeAtomicWritePlain(RxeMr mr, long va, ByteBuf pkt) {
        long raw = pkt.getLong(PAYLOAD_INDEX);
        mr.segment().set(ValueLayout.JAVA_LONG, mr.offset(va), NATIVE_LE ? Long.reverseBytes(raw) : raw);
    }

    /** {@link #payloadState}: no payload byte is new. */
    static final int OLD = 0;
    /** {@link #payloadState}: some but not all payload bytes are new. */
    static final int PARTIAL = 1;
    /** {@link #payloadState}: every payload byte is new. */
    static final int COMPLETE = 2;
    /** {@link #payloadState}: some byte holds neither the old (0) nor the new value. */
    static final int GARBAGE = -1;

    /**
     * Reads the payload with plain loads, byte by byte.
     *
     * @return {@link #OLD}, {@link #PARTIAL}, {@link #COMPLETE} or {@link #GARBAGE}
     */
    static int payloadState(RxeMr mr, long va) {
        MemorySegment seg = mr.segment();
        long off = mr.offset(va);
        int seen = 0;
        for (int i = 0; i < PAYLOAD_LEN; i++) {
            byte b = seg.get(ValueLayout.JAVA_BYTE, off + i);
            if (b == payloadByte(i)) {
                seen++;
            } else if (b != 0) {
                return GARBAGE;
            }
        }
        return seen == 0 ? OLD : seen == PAYLOAD_LEN ? COMPLETE : PARTIAL;
    }

    /** Maps the flag word read by the reader: 0 = not set, 1 = FLAG, -1 = anything else (torn). */
    static int flagState(long flag) {
        return flag == 0 ? 0 : flag == FLAG ? 1 : -1;
    }
}
