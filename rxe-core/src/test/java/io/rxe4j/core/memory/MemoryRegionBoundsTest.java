package io.rxe4j.core.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.core.device.FakeTransport;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MemoryRegionBoundsTest {
    private static final RxePd PD = new RxePd(1);
    private static final int RW = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    // ------------------------------------------------------------------ contains / allows

    @Test
    void containsOrdinaryRegion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096, 8);
            RxeMr mr = new RxeMr(PD, seg, null, RW, 0x1AB);
            long iova = mr.iova();
            long len = mr.length();
            assertThat(len).isEqualTo(4096);
            assertThat(mr.contains(iova, len)).as("exact fit").isTrue();
            assertThat(mr.contains(iova, 0)).isTrue();
            assertThat(mr.contains(iova + len, 0)).as("zero bytes at the end").isTrue();
            assertThat(mr.contains(iova + len - 1, 1)).as("last byte").isTrue();
            assertThat(mr.contains(iova, len + 1)).as("one byte past").isFalse();
            assertThat(mr.contains(iova + 1, len)).as("one byte past, shifted").isFalse();
            assertThat(mr.contains(iova + len, 1)).isFalse();
            assertThat(mr.contains(iova - 1, 1)).as("va below iova").isFalse();
            assertThat(mr.contains(iova - 1, 2)).as("va below iova, ending inside").isFalse();
            assertThat(mr.contains(iova, -1)).as("negative len").isFalse();
            assertThat(mr.contains(iova, Long.MIN_VALUE)).isFalse();
            assertThat(mr.contains(iova, Long.MAX_VALUE)).as("huge len").isFalse();
            assertThat(mr.contains(iova + 8, Long.MAX_VALUE)).isFalse();
            assertThat(mr.contains(iova + len - 1, Long.MAX_VALUE)).isFalse();
            assertThat(mr.contains(-1L, 1)).as("va = 2^64-1").isFalse();
            assertThat(mr.contains(-1L, 0)).isFalse();
            assertThat(mr.contains(Long.MIN_VALUE, 1)).isFalse();
            assertThat(mr.contains(0, 1)).isFalse();
            // allows: range AND rights AND validity
            assertThat(mr.allows(iova, len, Access.REMOTE_WRITE)).isTrue();
            assertThat(mr.allows(iova, len, Access.REMOTE_WRITE | Access.REMOTE_READ)).isTrue();
            assertThat(mr.allows(iova, len, Access.REMOTE_ATOMIC)).as("right not granted").isFalse();
            assertThat(mr.allows(iova, len + 1, Access.REMOTE_WRITE)).isFalse();
            assertThat(mr.allows(iova - 1, 1, Access.REMOTE_WRITE)).isFalse();
            assertThat(mr.allows(iova, -5, 0)).isFalse();
            assertThat(mr.allows(iova, Long.MAX_VALUE, 0)).isFalse();
            mr.invalidate();
            assertThat(mr.allows(iova, 1, 0)).as("deregistered").isFalse();
        }
    }

    /** A region whose last byte is at 2^64 − 1: no {@code va + len} may wrap to pass the check. */
    @Test
    void containsNearTopOfAddressSpace() {
        long top = 0xFFFF_FFFF_FFFF_F000L; // 4 KiB below 2^64
        MemorySegment seg = MemorySegment.ofAddress(top).reinterpret(4096);
        RxeMr mr = new RxeMr(PD, seg, null, RW, 0x1AB);
        assertThat(mr.iova()).isEqualTo(top);
        assertThat(mr.contains(top, 4096)).isTrue();
        assertThat(mr.contains(top + 4095, 1)).as("byte 2^64-1").isTrue();
        assertThat(mr.contains(-1L, 1)).isTrue();
        assertThat(mr.contains(-1L, 2)).as("would wrap past 2^64").isFalse();
        assertThat(mr.contains(top, 4097)).isFalse();
        assertThat(mr.contains(top + 4096, 1)).as("va wrapped to 0").isFalse();
        assertThat(mr.contains(0, 1)).isFalse();
        assertThat(mr.contains(0, 0)).isFalse();
        assertThat(mr.contains(top + 1, Long.MAX_VALUE)).isFalse();
        assertThat(mr.contains(top - 1, 1)).isFalse();
        assertThat(mr.contains(Long.MAX_VALUE, 1)).as("va far below iova (unsigned)").isFalse();
        assertThat(mr.contains(Long.MIN_VALUE, 4096)).isFalse();
        assertThat(mr.contains(top, -1)).isFalse();
        // (l = 0 would name va 2^64, which wraps to 0 and is refused)
        for (long l = 1; l <= 4096; l++) {
            assertThat(mr.contains(top + 4096 - l, l)).isTrue();
            assertThat(mr.contains(top + 4096 - l, l + 1)).isFalse();
        }
    }

    /** A huge region (length near 2^63) at a low address. */
    @Test
    void containsHugeRegion() {
        MemorySegment seg = MemorySegment.ofAddress(0x1000).reinterpret(Long.MAX_VALUE - 0x1000);
        RxeMr mr = new RxeMr(PD, seg, null, RW, 0x1AB);
        long end = mr.iova() + mr.length(); // = Long.MAX_VALUE
        assertThat(mr.contains(0x1000, mr.length())).isTrue();
        assertThat(mr.contains(0x1000, Long.MAX_VALUE)).isFalse();
        assertThat(mr.contains(end - 1, 1)).isTrue();
        assertThat(mr.contains(end, 1)).isFalse();
        assertThat(mr.contains(end - 1, Long.MAX_VALUE)).isFalse();
        assertThat(mr.contains(-1L, 1)).isFalse();
        assertThat(mr.contains(0xFFF, 1)).isFalse();
    }

    @Test
    void constructorRejectsHeapSegment() {
        assertThatThrownBy(() -> new RxeMr(PD, MemorySegment.ofArray(new byte[16]), null, RW, 0x100))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("native");
    }

    // ------------------------------------------------------------------ MrTable

    private static RxeMr mr(MemorySegment seg, int key) {
        return new RxeMr(PD, seg, null, RW, key);
    }

    @Test
    void keysAreIndexShiftedWithKey8AndZeroIsNeverValid() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64, 8);
            MrTable t = new MrTable(16, 42);
            List<RxeMr> l = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                l.add(t.register(k -> mr(seg, k)));
            }
            Set<Integer> indices = new HashSet<>();
            for (RxeMr m : l) {
                int index = m.lkey() >>> 8;
                assertThat(index).isBetween(1, 16);
                assertThat(indices.add(index)).isTrue();
                assertThat(m.lkey()).isEqualTo(index << 8 | (m.lkey() & 0xFF));
                assertThat(m.rkey()).isEqualTo(m.lkey());
                assertThat(m.lkey()).isNotZero();
                assertThat(t.lookup(m.lkey())).isSameAs(m);
                // a key with the right index but another key8 is not found
                assertThat(t.lookup(index << 8 | ((m.lkey() + 1) & 0xFF))).isNull();
            }
            assertThat(t.size()).isEqualTo(16);
            for (int k8 = 0; k8 < 256; k8++) {
                assertThat(t.lookup(k8)).as("index 0, key8 %d", k8).isNull();
            }
            assertThat(t.lookup(17 << 8)).as("index beyond capacity").isNull();
            assertThat(t.lookup(-1)).isNull();
            assertThat(t.lookup(Integer.MIN_VALUE)).isNull();
        }
    }

    @Test
    void reRegistrationAtSameIndexGetsDifferentKey8AndStaleKeyFails() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64, 8);
            MrTable t = new MrTable(1, 7); // one slot: every registration reuses index 1
            int previous = -1;
            Set<Integer> seenKey8 = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                RxeMr m = t.register(k -> mr(seg, k));
                assertThat(m.lkey() >>> 8).isEqualTo(1);
                if (previous != -1) {
                    assertThat(m.lkey()).as("registration %d", i).isNotEqualTo(previous);
                    assertThat(t.lookup(previous)).as("stale key of the previous MR").isNull();
                }
                seenKey8.add(m.lkey() & 0xFF);
                assertThat(t.lookup(m.lkey())).isSameAs(m);
                t.unregister(m);
                assertThat(t.lookup(m.lkey())).as("lookup after unregister").isNull();
                assertThat(m.isValid()).isFalse();
                assertThat(t.size()).isZero();
                previous = m.lkey();
            }
            assertThat(seenKey8.size()).as("key8 is spread over the byte").isGreaterThan(200);
        }
    }

    @Test
    void sameSeedSameKeys() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64, 8);
            MrTable a = new MrTable(8, 99);
            MrTable b = new MrTable(8, 99);
            for (int i = 0; i < 8; i++) {
                assertThat(a.register(k -> mr(seg, k)).lkey()).isEqualTo(b.register(k -> mr(seg, k)).lkey());
            }
        }
    }

    /**
     * rxe-facts §6.4: the 8-bit part of a key is random; with the default configuration every
     * device draws its own (it used to be the constant seed 0x5EED, so every device in every run
     * handed out the same keys). A configured seed makes them reproducible.
     */
    @Test
    void defaultKeysDifferFromDeviceToDeviceAndASeedMakesThemReproducible() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096, 8);
            java.util.Set<Integer> firstKeys = new java.util.HashSet<>();
            for (int d = 0; d < 8; d++) {
                firstKeys.add(firstKey(DeviceConfig.defaults(), seg));
            }
            assertThat(firstKeys).as("8 devices with default settings, 8 first keys").hasSizeGreaterThan(1);
            assertThat(firstKey(DeviceConfig.defaults().withSeed(5), seg))
                    .isEqualTo(firstKey(DeviceConfig.defaults().withSeed(5), seg));
        }
    }

    private static int firstKey(DeviceConfig config, MemorySegment seg) {
        RxeDevice dev = new RxeDevice(new FakeTransport(new InetSocketAddress("10.0.0.1", 4791)), config);
        try {
            return dev.registerMr(dev.allocPd(), seg, null, Access.LOCAL_WRITE).lkey();
        } finally {
            dev.close();
        }
    }

    @Test
    void capacityExhaustionThrowsAndFreedSlotIsReused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64, 8);
            MrTable t = new MrTable(3, 1);
            RxeMr m1 = t.register(k -> mr(seg, k));
            RxeMr m2 = t.register(k -> mr(seg, k));
            t.register(k -> mr(seg, k));
            assertThatThrownBy(() -> t.register(k -> mr(seg, k)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("full");
            t.unregister(m2);
            RxeMr m4 = t.register(k -> mr(seg, k));
            assertThat(m4.lkey() >>> 8).isEqualTo(m2.lkey() >>> 8);
            assertThat(m4.lkey()).isNotEqualTo(m2.lkey());
            assertThat(t.lookup(m2.lkey())).isNull();
            assertThat(t.lookup(m4.lkey())).isSameAs(m4);
            assertThatThrownBy(() -> t.register(k -> mr(seg, k))).isInstanceOf(IllegalStateException.class);
            // unregistering twice, or an MR already replaced, changes nothing
            t.unregister(m2);
            assertThat(t.size()).isEqualTo(3);
            assertThat(t.lookup(m1.lkey())).isSameAs(m1);
        }
    }

    @Test
    void capacityOutOfRangeRejected() {
        assertThatThrownBy(() -> new MrTable(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new MrTable((1 << 19) + 1, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    // ------------------------------------------------------------------ atomics

    @Test
    void atomicsReturnOldValuesConfined() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(32, 8);
            RxeMr mr = new RxeMr(PD, seg, null, RW | Access.REMOTE_ATOMIC, 0x1AB);
            long va = mr.iova();
            assertThat(mr.compareAndExchange(va, 0, 5)).isEqualTo(0);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(5);
            assertThat(mr.compareAndExchange(va, 0, 7)).as("failed compare returns current").isEqualTo(5);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(5);
            assertThat(mr.compareAndExchange(va, 5, -1)).isEqualTo(5);
            assertThat(mr.getLongVolatile(va)).isEqualTo(-1);
            assertThat(mr.getAndAdd(va + 8, 3)).isEqualTo(0);
            assertThat(mr.getAndAdd(va + 8, 4)).isEqualTo(3);
            assertThat(mr.getAndAdd(va + 8, -7)).isEqualTo(7);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(0);
            // wrap-around of the 64-bit add
            seg.set(ValueLayout.JAVA_LONG, 16, Long.MAX_VALUE);
            assertThat(mr.getAndAdd(va + 16, 1)).isEqualTo(Long.MAX_VALUE);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 16)).isEqualTo(Long.MIN_VALUE);
            mr.setLongRelease(va + 24, 0x1122334455667788L);
            assertThat(mr.getLongVolatile(va + 24)).isEqualTo(0x1122334455667788L);
        }
    }

    @Test
    void atomicsAreAtomicAcrossThreadsShared() throws InterruptedException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(16, 8);
            RxeMr mr = new RxeMr(PD, seg, null, RW | Access.REMOTE_ATOMIC, 0x1AB);
            long va = mr.iova();
            int threads = 4;
            int perThread = 20_000;
            AtomicLong casWins = new AtomicLong();
            Thread[] ts = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                ts[i] = new Thread(() -> {
                    for (int j = 0; j < perThread; j++) {
                        mr.getAndAdd(va, 1);
                        long cur = mr.getLongVolatile(va + 8);
                        if (mr.compareAndExchange(va + 8, cur, cur + 1) == cur) {
                            casWins.incrementAndGet();
                        }
                    }
                });
                ts[i].start();
            }
            for (Thread t : ts) {
                t.join();
            }
            assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo((long) threads * perThread);
            assertThat(seg.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(casWins.get());
        }
    }

    // ------------------------------------------------------------------ RxeDevice.registerMr

    @Test
    void deviceRegisterMrValidation() {
        RxeDevice dev = new RxeDevice(new FakeTransport(new InetSocketAddress("10.0.0.1", 4791)),
                DeviceConfig.defaults());
        try (Arena arena = Arena.ofConfined()) {
            RxePd pd = dev.allocPd();
            MemorySegment seg = arena.allocate(4096, 8);
            int before = dev.mrs().size(); // the device's own: its GSI QP's receive buffers
            assertThatThrownBy(() -> dev.registerMr(pd, MemorySegment.ofArray(new byte[64]), null, Access.LOCAL_WRITE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("native");
            assertThatThrownBy(() -> dev.registerMr(pd, seg, null, Access.REMOTE_WRITE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("LOCAL_WRITE");
            assertThatThrownBy(() -> dev.registerMr(pd, seg, null, Access.REMOTE_ATOMIC | Access.REMOTE_READ))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("LOCAL_WRITE");
            assertThatThrownBy(() -> dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.FLUSH_PERSISTENT))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("FLUSH_PERSISTENT");
            assertThatThrownBy(() -> dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.ZERO_BASED))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(before).as("QP1's buffers").isEqualTo(1);
            assertThat(dev.mrs().size()).as("no failed registration consumed a key").isEqualTo(before);
            // the accepted cases
            RxeMr ok = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            assertThat(dev.mrs().lookup(ok.lkey())).isSameAs(ok);
            RxeMr ro = dev.registerMr(pd, seg, null, Access.REMOTE_READ);
            RxeMr fg = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.FLUSH_GLOBAL);
            assertThat(ro.lkey()).isNotEqualTo(ok.lkey());
            assertThat(fg.access() & Access.FLUSH_GLOBAL).isNotZero();
            dev.deregisterMr(ok);
            assertThat(dev.mrs().lookup(ok.lkey())).isNull();
            assertThat(ok.allows(ok.iova(), 1, 0)).isFalse();
        } finally {
            dev.close();
        }
    }
}
