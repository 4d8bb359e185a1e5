package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.net.inproc.InJvmFabric;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

class ExtendedOpsSmokeTest {
    static final int ALL = RcPair.ALL_REMOTE | Access.FLUSH_GLOBAL;

    @Test
    void maskedAtomicsAtomicWriteAndFlush() {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice da = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice db = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        try (RcPair p = new RcPair(da, db, 4096, ALL, ALL, Mtu.MTU_1024)) {
            var remote = p.b.mr.segment();
            var local = p.a.mr.segment();
            long rva = p.b.mr.addr();
            remote.set(ValueLayout.JAVA_LONG, 0, 0x1111_2222_3333_4444L);
            // masked CAS: compare only the low 16 bits (0x4444), swap only the high 16 bits
            SendWr wr = new SendWr().set(1, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(rva, p.b.mr.rkey())
                    .atomic(0x4444L, 0xAAAA_0000_0000_0000L).masks(0xFFFFL, 0xFFFF_0000_0000_0000L);
            p.a.qp.postSend(wr);
            WorkCompletion wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.MASKED_COMP_SWAP);
            assertThat(local.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0x1111_2222_3333_4444L);
            assertThat(remote.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0xAAAA_2222_3333_4444L);
            // masked FAA on four 16-bit fields: each field adds 0xFFFF + 1 and wraps on its own
            remote.set(ValueLayout.JAVA_LONG, 8, 0xFFFF_FFFF_FFFF_FFFFL);
            wr = new SendWr().set(2, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(rva + 8, p.b.mr.rkey())
                    .atomic(0x0001_0001_0001_0001L, 0).masks(0x8000_8000_8000_8000L, 0);
            p.a.qp.postSend(wr);
            wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.MASKED_FETCH_ADD);
            assertThat(local.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0xFFFF_FFFF_FFFF_FFFFL);
            assertThat(remote.get(ValueLayout.JAVA_LONG, 8)).isZero();
            // ATOMIC WRITE
            wr = new SendWr().set(3, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(rva + 16, p.b.mr.rkey());
            wr.atomicWriteValue = 0x0102_0304_0506_0708L;
            p.a.qp.postSend(wr);
            wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.ATOMIC_WRITE);
            assertThat(wc.byteLen).isEqualTo(8);
            assertThat(remote.get(ValueLayout.JAVA_LONG, 16)).isEqualTo(0x0102_0304_0506_0708L);
            // FLUSH global, range and whole MR
            for (int level : new int[] {Flush.RANGE, Flush.MR}) {
                wr = new SendWr().set(4, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(rva, p.b.mr.rkey())
                        .flush(Flush.GLOBAL, level, 64);
                p.a.qp.postSend(wr);
                wc = p.a.next();
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode).isEqualTo(WcOpcode.FLUSH);
                assertThat(wc.byteLen).isEqualTo(64);
            }
            // FLUSH persistent on ordinary memory: the MR lacks FLUSH_PERSISTENT → REM_ACCESS_ERR? QP lacks it → 0x61
            wr = new SendWr().set(5, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(rva, p.b.mr.rkey())
                    .flush(Flush.PERSISTENT, Flush.RANGE, 64);
            p.a.qp.postSend(wr);
            wc = p.a.next();
            assertThat(wc.status).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        }
    }
}
