package io.rxe4j.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * ICRC cost by payload size, so that the cost per KiB can be derived: {@link Icrc#compute} of a
 * BTH-only packet (an RDMA WRITE MIDDLE) with {@code payload} bytes, in a pooled direct buffer
 * (what the device does twice per packet: the sender writes the ICRC, the receiver checks it;
 * {@code check} is {@code compute} plus one 4-byte compare). It covers the masked IPv4/UDP pseudo
 * header and BTH (52 bytes through {@code CRC32.update(byte[])}) plus the payload through {@code
 * CRC32.update(ByteBuffer)} over a reused native-memory window. {@link #crc32Payload} is the
 * baseline: {@code java.util.zip.CRC32} over the payload bytes alone, through a {@code ByteBuffer}
 * made once.
 *
 * <p>{@code payload=0} gives the fixed part per packet; the slope between 0 and 4096 the cost per
 * byte. 65536 is not a RoCE packet (payloads stop at a 4096-byte path MTU, and a UDP datagram at
 * 65507 bytes; the pseudo header's 16-bit lengths wrap), only the long-run CRC32 rate. Allocation-free.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
public class IcrcBench {
    private static final InetSocketAddress SRC = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress DST = new InetSocketAddress("10.0.0.2", 4791);

    /** Payload bytes after the BTH. */
    @Param({"0", "256", "1024", "2048", "4096", "65536"})
    public int payload;

    private final Icrc icrc = new Icrc();
    private final CRC32 crc = new CRC32();
    private ByteBuf buf;
    private ByteBuffer payloadView;
    private int total;

    @Setup(Level.Trial)
    public void setUp() {
        ForkChecks.requireNativeAccess();
        total = Bth.LENGTH + payload + Icrc.LENGTH;
        buf = ByteBufAllocator.DEFAULT.directBuffer(total, total);
        Bth.write(buf, 0, Opcode.RC_RDMA_WRITE_MIDDLE.code(), false, 0, Bth.DEFAULT_PKEY, 0x11, false, 1);
        for (int i = 0; i < payload; i++) {
            buf.setByte(Bth.LENGTH + i, i * 31 + 7);
        }
        buf.writerIndex(total);
        icrc.write(buf, 0, total, SRC, DST);
        if (!icrc.check(buf, 0, total, SRC, DST)) {
            throw new IllegalStateException("ICRC does not check");
        }
        payloadView = buf.nioBuffer(Bth.LENGTH, payload);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        buf.release();
    }

    /** {@link Icrc#compute} over pseudo header + BTH + payload. */
    @Benchmark
    public int icrcCompute() {
        return icrc.compute(buf, 0, total, SRC, DST);
    }

    /** Baseline: {@code CRC32.update(ByteBuffer)} over the payload only. */
    @Benchmark
    public long crc32Payload() {
        CRC32 c = crc;
        c.reset();
        c.update(payloadView.clear());
        return c.getValue();
    }
}
