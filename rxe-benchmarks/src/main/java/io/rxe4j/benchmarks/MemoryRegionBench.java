package io.rxe4j.benchmarks;

import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * MR access checks ({@link RxeMr#allows}: validity, rights, unsigned range) and the
 * responder's atomics on MR memory (single-threaded, uncontended).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
public class MemoryRegionBench {
    private Arena arena;
    private RxeMr mr;
    private long va;
    private long word;
    private long counter;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(1 << 16, 4096);
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        mr = new RxeMr(new RxePd(1), seg, null, access, 0x100 | 0x42);
        va = mr.iova();
        word = va + 4096;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** An allowed 4 KiB REMOTE_WRITE range check (moving offset). */
    @Benchmark
    public boolean allows() {
        counter = (counter + 64) & 0x7FFF;
        return mr.allows(va + counter, 4096, Access.REMOTE_WRITE);
    }

    /** A range check that fails (crosses the MR end). */
    @Benchmark
    public boolean allowsOutOfRange() {
        counter = (counter + 64) & 0x7FFF;
        return mr.allows(va + (1 << 16) - 64 + (counter & 63), 4096, Access.REMOTE_WRITE);
    }

    /** CMP_SWAP on an 8-byte word. */
    @Benchmark
    public long compareAndExchange() {
        long old = mr.getLongVolatile(word);
        return mr.compareAndExchange(word, old, old + 1);
    }

    /** FETCH_ADD. */
    @Benchmark
    public long getAndAdd() {
        return mr.getAndAdd(word, 3);
    }

    /** Masked FETCH_ADD with four 16-bit fields (a CAS loop). */
    @Benchmark
    public long maskedFetchAndAdd() {
        return mr.maskedFetchAndAdd(word, 0x0001_0001_0001_0001L, 0x8000_8000_8000_8000L);
    }

    /** ATOMIC WRITE: a release store. */
    @Benchmark
    public void setLongRelease() {
        mr.setLongRelease(word, ++counter);
    }
}
