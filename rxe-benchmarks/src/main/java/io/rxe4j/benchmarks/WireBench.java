package io.rxe4j.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Reth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
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
 * Packet codec: build an RDMA WRITE FIRST (BTH + RETH) or MIDDLE (BTH) packet with the wire
 * flyweights, copy its payload out of off-heap MR memory and write the ICRC (the requester's
 * per-packet work, {@code Requester.sendSendOrWrite} + {@code RxeDevice.transmit}); and the
 * receive side's structure parse plus ICRC check ({@code RxeDevice.receive}). Buffers are
 * direct buffers of {@code ByteBufAllocator.DEFAULT}, as the transports hand out, on a Netty
 * thread ({@link EventLoopThreadExecutor}); {@link #encodeIcrcAllocRelease} also takes and
 * releases one per packet, as the requester does.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", EventLoopThreadExecutor.OPT_EXECUTOR,
    EventLoopThreadExecutor.OPT_CLASS})
public class WireBench {
    private static final InetSocketAddress SRC = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress DST = new InetSocketAddress("10.0.0.2", 4791);

    /** Payload bytes per packet (a path MTU). */
    @Param({"256", "1024", "4096"})
    public int payload;

    /** FIRST (BTH + RETH) or MIDDLE (BTH only). */
    @Param({"RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_MIDDLE"})
    public String opcode;

    private final Icrc icrc = new Icrc();
    private final PacketView view = new PacketView();
    private Arena arena;
    private MemorySegment mr;
    private Opcode op;
    private int total;
    private ByteBuf tx;
    private ByteBuf rx;
    private int psn;

    @Setup(Level.Trial)
    public void setUp() {
        ForkChecks.requireEventLoopThread();
        arena = Arena.ofShared();
        mr = arena.allocate(payload, 4096);
        for (int i = 0; i < payload; i++) {
            mr.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
        }
        op = Opcode.valueOf(opcode);
        total = op.headerLength() + payload + Icrc.LENGTH;
        tx = ByteBufAllocator.DEFAULT.directBuffer(total, total);
        rx = ByteBufAllocator.DEFAULT.directBuffer(total, total);
        encode(rx);
        if (view.parse(rx, 0, total) != null || !icrc.check(rx, 0, total, SRC, DST)) {
            throw new IllegalStateException("the built packet does not parse");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tx.release();
        rx.release();
        arena.close();
    }

    private int encode(ByteBuf b) {
        psn = (psn + 1) & Bth.MASK_24;
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, 0x11, false, psn);
        int hdr = op.headerLength();
        if (op == Opcode.RC_RDMA_WRITE_FIRST) {
            Reth.write(b, Bth.LENGTH, mr.address(), 0x1234, 1L << 20);
        }
        MemoryCopy.toBuf(mr, 0, b, hdr, payload);
        b.writerIndex(total);
        icrc.write(b, 0, total, SRC, DST);
        return b.getIntLE(total - Icrc.LENGTH);
    }

    /** Headers + payload copy from the MR + ICRC into a reused pooled direct buffer. */
    @Benchmark
    public int encodeIcrc() {
        return encode(tx);
    }

    /** As {@link #encodeIcrc}, taking a pooled direct buffer and releasing it per packet. */
    @Benchmark
    public int encodeIcrcAllocRelease() {
        ByteBuf b = ByteBufAllocator.DEFAULT.directBuffer(total, total);
        try {
            return encode(b);
        } finally {
            b.release();
        }
    }

    /** {@link PacketView#parse} + {@link Icrc#check} of a prebuilt packet. */
    @Benchmark
    public int decodeIcrcCheck() {
        DropReason r = view.parse(rx, 0, total);
        if (r != null || !icrc.check(rx, 0, total, SRC, DST)) {
            throw new IllegalStateException("bad packet: " + r);
        }
        return view.psn() + view.payloadLength();
    }
}
