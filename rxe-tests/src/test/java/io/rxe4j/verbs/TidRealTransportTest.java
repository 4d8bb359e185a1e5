package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.udp.UdpTransport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * TID RDMA READ and WRITE of 256 KiB … 64 MiB between two devices on real transports and event
 * loops (UDP on loopback; the in-JVM fabric), negotiated through OPFN, every byte checked; the TID
 * counters show that the transfers went as TID RDMA ({@code docs/tid-rdma.md}).
 */
class TidRealTransportTest {
    private static final int[] SIZES = {256 << 10, 1 << 20, 8 << 20, 64 << 20};
    private static final int MAX = 64 << 20;

    @Test
    void udpLoopback() throws Exception {
        InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        run(() -> UdpTransport.bind(lo), () -> UdpTransport.bind(lo));
    }

    @Test
    void inJvmFabric() {
        InJvmFabric fabric = new InJvmFabric();
        run(() -> fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)),
                () -> fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
    }

    private static void run(Supplier<Transport> ta, Supplier<Transport> tb) {
        DeviceConfig tid = DeviceConfig.defaults().withTidRdma();
        RdmaDevice da = RdmaDevice.open(ta.get(), tid);
        RdmaDevice db = RdmaDevice.open(tb.get(), tid);
        try (RcPair p = new RcPair(da, db, 2L * MAX, RcPair.ALL_REMOTE, RcPair.ALL_REMOTE, Mtu.MTU_4096)) {
            // OPFN runs on the first packets
            post(p, new SendWr().set(0, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()), WcOpcode.RDMA_WRITE, 8);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while ((p.a.qp.tidRdma() == null || p.b.qp.tidRdma() == null) && System.nanoTime() < deadline) {
                p.a.cq.await(1_000_000L);
            }
            assertThat(p.a.qp.tidRdma()).as("negotiated").isNotNull();
            MemorySegment a = p.a.mr.segment();
            MemorySegment b = p.b.mr.segment();
            SplittableRandom r = new SplittableRandom(64);
            for (long i = 0; i < MAX; i += 8) {
                a.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
            }
            long segsW = 0;
            long segsR = 0;
            for (int size : SIZES) {
                // WRITE a[0..size) -> b[0..size), READ it back into a[MAX..MAX+size)
                post(p, new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                        new Sge(p.a.mr.addr(), size, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()),
                        WcOpcode.RDMA_WRITE, size);
                assertThat(b.asSlice(0, size).mismatch(a.asSlice(0, size))).as("WRITE %d", size).isEqualTo(-1);
                post(p, new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                        new Sge(p.a.mr.addr() + MAX, size, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()),
                        WcOpcode.RDMA_READ, size);
                assertThat(a.asSlice(MAX, size).mismatch(a.asSlice(0, size))).as("READ %d", size).isEqualTo(-1);
                segsW += size / (256 << 10);
                segsR += size / (256 << 10);
                assertThat(da.counter("tid_write_segments_acked")).isEqualTo(segsW);
                assertThat(da.counter("tid_read_segments_done")).isEqualTo(segsR);
                a.asSlice(MAX, size).fill((byte) 0);
            }
            assertThat(da.counter("tid_write_requests_sent")).isEqualTo(SIZES.length);
            assertThat(da.counter("tid_read_requests")).isEqualTo(SIZES.length);
        }
    }

    private static void post(RcPair p, SendWr wr, WcOpcode op, long len) {
        p.a.qp.postSend(wr);
        WorkCompletion wc = p.a.next();
        assertThat(wc.status).as("%s: %s", wc, p.a.qp.errorReason()).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.opcode).isEqualTo(op);
        assertThat(wc.byteLen).isEqualTo((int) len);
    }
}
