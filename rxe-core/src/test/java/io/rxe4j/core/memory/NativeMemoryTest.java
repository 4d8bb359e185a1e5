package io.rxe4j.core.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The allocation-free direct-buffer paths ({@link NativeMemory}: copies by address, ICRC through a
 * reused window) give the same bytes and CRCs as the heap and buffer-view paths.
 */
class NativeMemoryTest {
    private static final InetSocketAddress A = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress B = new InetSocketAddress("10.0.0.2", 49152);
    private static final InetSocketAddress V6 = new InetSocketAddress("fe80::1", 4791);

    @Test
    void nativeAccessIsOnInTheseTests() {
        assertThat(NativeMemory.everything()).as("surefire runs with --enable-native-access").isNotNull();
        assertThat(NativeMemory.addressable(Unpooled.directBuffer(8))).isTrue();
        assertThat(NativeMemory.addressable(Unpooled.buffer(8))).isFalse();
    }

    @Test
    void icrcIsTheSameForHeapUnpooledAndPooledDirectBuffersInBothDirections() {
        SplittableRandom r = new SplittableRandom(7);
        Icrc reused = new Icrc();
        for (int round = 0; round < 200; round++) {
            int payload = r.nextInt(0, 1025) & ~3;
            Opcode op = Opcode.RC_RDMA_WRITE_MIDDLE;
            int total = op.headerLength() + payload + Icrc.LENGTH;
            ByteBuf heap = Unpooled.buffer(total, total);
            Bth.write(heap, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, r.nextInt(1 << 24), r.nextBoolean(),
                    r.nextInt(1 << 24));
            for (int i = Bth.LENGTH; i < total; i++) {
                heap.setByte(i, r.nextInt());
            }
            heap.writerIndex(total);
            ByteBuf direct = Unpooled.directBuffer(total, total).writeBytes(heap, 0, total);
            ByteBuf pooled = ByteBufAllocator.DEFAULT.directBuffer(total, total).writeBytes(heap, 0, total);
            try {
                // alternate directions and families through one instance, as a device does
                InetSocketAddress src = switch (round % 3) { case 0 -> A; case 1 -> B; default -> V6; };
                InetSocketAddress dst = round % 3 == 1 ? A : B;
                int expected = new Icrc().compute(heap, 0, total, src, dst);
                assertThat(reused.compute(direct, 0, total, src, dst)).isEqualTo(expected);
                assertThat(reused.compute(pooled, 0, total, src, dst)).isEqualTo(expected);
                assertThat(reused.compute(pooled, 0, total, dst, src)).isEqualTo(new Icrc().compute(heap, 0, total,
                        dst, src));
                assertThat(reused.compute(heap, 0, total, src, dst)).isEqualTo(expected);
            } finally {
                heap.release();
                direct.release();
                pooled.release();
            }
        }
    }

    @Test
    void copiesByAddressMoveTheSameBytesAndCheckBounds() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096);
            for (int i = 0; i < 4096; i++) {
                seg.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 5));
            }
            ByteBuf buf = ByteBufAllocator.DEFAULT.directBuffer(2048, 2048);
            try {
                MemoryCopy.toBuf(seg, 100, buf, 10, 1500);
                for (int i = 0; i < 1500; i++) {
                    assertThat(buf.getByte(10 + i)).isEqualTo((byte) ((100 + i) * 13 + 5));
                }
                MemorySegment back = arena.allocate(4096);
                MemoryCopy.fromBuf(buf, 10, back, 7, 1500);
                assertThat(back.asSlice(7, 1500).mismatch(seg.asSlice(100, 1500))).isEqualTo(-1);
                assertThatThrownBy(() -> MemoryCopy.toBuf(seg, 0, buf, 1000, 1049))
                        .isInstanceOf(IndexOutOfBoundsException.class);
                assertThatThrownBy(() -> MemoryCopy.fromBuf(buf, -1, back, 0, 4))
                        .isInstanceOf(IndexOutOfBoundsException.class);
            } finally {
                buf.release();
            }
        }
    }
}
