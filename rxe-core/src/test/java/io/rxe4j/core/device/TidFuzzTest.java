package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.TidRdmaParams;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Kdeth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.core.wire.TidEntry;
import io.rxe4j.core.wire.TidHeader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Hostile TID RDMA traffic against a QP that negotiated TID RDMA: random TID opcodes with a valid
 * ICRC, the QP's verbs_qp and mostly the right J_KEY, random KDETH, flow PSNs, RETHs (some naming
 * the QP's MR) and TID lists. The engine must never throw (no {@code drop_internal_error}), never
 * break the TID WRITE ring's invariants (asserted inside the engine, {@code -ea}), and never write
 * outside the MR it registered for remote access.
 */
class TidFuzzTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final int RQ_PSN = 0x1000;
    private static final long MR_BYTES = 2L << 20;

    private final Icrc icrc = new Icrc();
    private RxeDevice dev;
    private RxeQp qp;
    private RxeMr mr;
    private MemorySegment guard;
    private int nextPsn;

    @BeforeEach
    void setUp() {
        dev = new RxeDevice(new FakeTransport(LOCAL), DeviceConfig.defaults().withSeed(5).withTidRdma());
        RxePd pd = dev.allocPd();
        RxeCq cq = dev.createCq(4096);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 16, 2, 2, 0), true);
        Arena arena = Arena.ofShared();
        MemorySegment all = arena.allocate(MR_BYTES + 8192, 4096);
        guard = all;
        mr = dev.registerMr(pd, all.asSlice(4096, MR_BYTES), arena,
                Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        bringUp();
    }

    @AfterEach
    void tearDown() {
        dev.close();
    }

    private void bringUp() {
        if (qp.state() != QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.RESET));
        }
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_4096).destQpNum(0x77).rqPsn(RQ_PSN)
                .maxDestRdAtomic(4).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x2000).maxRdAtomic(4));
        // the peer's OPFN request (BTH bit 24 set): this QP takes the peer's TID parameters
        int len = Opcode.RC_COMPARE_SWAP.headerLength() + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len).writerIndex(len);
        Bth.write(b, 0, Opcode.RC_COMPARE_SWAP.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), true, RQ_PSN);
        Bth.setExtended(b, 0);
        AtomicEth.write(b, Bth.LENGTH, -1L, 0, 0, TidRdmaParams.defaults(0, 14).encode());
        deliver(b);
        assertThat(qp.tidRdmaRemote()).as("negotiated").isNotNull();
        nextPsn = RQ_PSN + 1;
    }

    private void deliver(ByteBuf b) {
        icrc.write(b, 0, b.writerIndex(), PEER, LOCAL);
        try {
            dev.onPacket(b, PEER, LOCAL);
        } finally {
            b.release();
        }
    }

    @Test
    void randomTidPacketsNeverThrowNorWriteOutsideTheMr() {
        SplittableRandom r = new SplittableRandom(0x71D);
        Opcode[] tid = {Opcode.TID_RDMA_WRITE_REQ, Opcode.TID_RDMA_WRITE_RESP, Opcode.TID_RDMA_WRITE_DATA,
            Opcode.TID_RDMA_WRITE_DATA_LAST, Opcode.TID_RDMA_READ_REQ, Opcode.TID_RDMA_READ_RESP,
            Opcode.TID_RDMA_RESYNC, Opcode.TID_RDMA_ACK};
        int n = 30_000;
        for (int i = 0; i < n; i++) {
            Opcode op = tid[r.nextInt(tid.length)];
            int payload = switch (op) {
                case TID_RDMA_WRITE_RESP, TID_RDMA_READ_REQ -> 4 * r.nextInt(1, 65);
                case TID_RDMA_WRITE_DATA, TID_RDMA_WRITE_DATA_LAST, TID_RDMA_READ_RESP -> 4 * r.nextInt(1, 1025);
                default -> 0;
            };
            int len = op.headerLength() + payload + Icrc.LENGTH;
            ByteBuf b = Unpooled.buffer(len, len).writerIndex(len);
            for (int j = 0; j < len; j++) {
                b.setByte(j, r.nextInt(256));
            }
            int psn = switch (r.nextInt(3)) {
                case 0 -> nextPsn;
                case 1 -> nextPsn - r.nextInt(1, 5);
                default -> r.nextInt(1 << 24);
            };
            Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, 0x800000 | r.nextInt(1 << 16), r.nextBoolean(),
                    psn);
            int at = op.offset(Header.KDETH);
            TidHeader.setVerbsQp(b, at, qp.qpn());
            if (r.nextInt(10) > 0) {
                Kdeth.writeKdeth1(b, at, 32);
            }
            if (r.nextBoolean()) {
                Kdeth.writeKdeth0(b, at, r.nextInt(1 << 15), true, r.nextInt(8), 1, false, r.nextBoolean());
            }
            if (op == Opcode.TID_RDMA_WRITE_REQ || op == Opcode.TID_RDMA_READ_REQ) {
                long off = 4096L * r.nextInt(0, (int) (MR_BYTES / 4096) + 4) - (r.nextInt(8) == 0 ? 4096 : 0);
                long dma = 4096L * r.nextInt(0, 200) + (r.nextInt(8) == 0 ? r.nextInt(4096) : 0);
                Reth.write(b, TidHeader.rethIndex(at), mr.iova() + off, r.nextBoolean() ? mr.rkey() : r.nextInt(),
                        dma);
            }
            if (payload > 0 && (op == Opcode.TID_RDMA_WRITE_RESP || op == Opcode.TID_RDMA_READ_REQ)) {
                for (int e = 0; e < payload / 4; e++) {
                    TidEntry.write(b, op.headerLength(), e, TidEntry.encode(r.nextInt(8), 1, r.nextInt(0, 70)));
                }
            }
            if (op == Opcode.TID_RDMA_WRITE_REQ && psn == nextPsn) {
                nextPsn += 1;
            }
            deliver(b);
            if (qp.state() == QpState.ERR) {
                bringUp();
            }
        }
        java.util.Map<String, Long> c = dev.counterSnapshot();
        assertThat(c.get("tid_resyncs_rcvd") + c.get("tid_flow_gen_errors") + c.get("duplicate_request"))
                .as("the fuzz reached the TID engine: %s", c).isPositive();
        assertThat(dev.counters().drops(DropReason.INTERNAL_ERROR)).as("engine exceptions").isZero();
        assertThat(qp.counters().drops(DropReason.INTERNAL_ERROR)).isZero();
        // the 4 KiB on either side of the MR were never written
        assertThat(guard.asSlice(0, 4096).mismatch(MemorySegment.ofArray(new byte[4096]))).isEqualTo(-1);
        assertThat(guard.asSlice(4096 + MR_BYTES, 4096).mismatch(MemorySegment.ofArray(new byte[4096])))
                .isEqualTo(-1);
    }
}
