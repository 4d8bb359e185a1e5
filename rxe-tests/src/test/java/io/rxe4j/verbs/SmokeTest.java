package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.inproc.InJvmFabric;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SmokeTest {
    @Test
    void writeReadSendAtomicsInJvm() {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice da = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice db = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        int size = 1 << 20;
        try (RcPair p = new RcPair(da, db, 2L * size + 4096, RcPair.ALL_REMOTE, RcPair.ALL_REMOTE, Mtu.MTU_1024)) {
            var src = p.a.mr.segment();
            SplittableRandom r = new SplittableRandom(1);
            for (int i = 0; i < size; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            }
            // WRITE 1 MiB a[0..] -> b[0..]
            SendWr wr = new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), size, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey());
            p.a.qp.postSend(wr);
            WorkCompletion wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            assertThat(p.b.mr.segment().asSlice(0, size).mismatch(src.asSlice(0, size))).isEqualTo(-1);
            // READ it back into a[size..]
            wr = new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr() + size, size, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey());
            p.a.qp.postSend(wr);
            wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.byteLen).isEqualTo(size);
            assertThat(src.asSlice(size, size).mismatch(src.asSlice(0, size))).isEqualTo(-1);
            // SEND with imm
            p.b.qp.postRecv(new RecvWr().set(7, new Sge(p.b.mr.addr() + size, 4096, p.b.mr.lkey())));
            wr = new SendWr().set(3, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 3000, p.a.mr.lkey())).imm(0xCAFE);
            p.a.qp.postSend(wr);
            assertThat(p.a.next().status).isEqualTo(WcStatus.SUCCESS);
            WorkCompletion rwc = p.b.next();
            assertThat(rwc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(rwc.opcode).isEqualTo(WcOpcode.RECV);
            assertThat(rwc.byteLen).isEqualTo(3000);
            assertThat(rwc.immData).isEqualTo(0xCAFE);
            // FAA x 100 on b[2*size]
            long counterVa = p.b.mr.addr() + 2L * size;
            for (int i = 0; i < 100; i++) {
                wr = new SendWr().set(100 + i, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                        new Sge(p.a.mr.addr() + 2L * size, 8, p.a.mr.lkey())).remote(counterVa, p.b.mr.rkey());
                wr.compareAdd = 3;
                p.a.qp.postSend(wr);
                wc = p.a.next();
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(src.get(ValueLayout.JAVA_LONG, 2L * size)).isEqualTo(3L * i);
            }
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 2L * size)).isEqualTo(300L);
        }
    }
}
