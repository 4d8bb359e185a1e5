package io.rxe4j.core.rc;

import io.rxe4j.core.qp.RxeQp;

import io.rxe4j.verbs.Counter;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Duplicate READ requests at the responder ({@code rxe-facts.md} §5.5): a duplicate asking for the
 * same range or a subset of a recorded READ is answered again from memory, starting at its PSN;
 * one asking for anything outside the original (beyond its end, before its start, another rkey)
 * is not served at all.
 */
class DuplicateReadTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final int PEER_QPN = 0x77;
    private static final int RQ_PSN = 0xFFFFFE; // the 4 responses cross the 24-bit wrap

    private final Icrc icrc = new Icrc();
    private final Arena arena = Arena.ofShared();
    private InlineLoop net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeMr mr;

    @BeforeEach
    void setUp() {
        net = new InlineLoop(LOCAL);
        dev = new RxeDevice(net, DeviceConfig.defaults());
        RxePd pd = dev.allocPd();
        RxeCq cq = dev.createCq(64);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 16, 2, 2, 0), false);
        MemorySegment seg = arena.allocate(4096, 4096);
        for (int i = 0; i < 4096; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
        }
        mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE | Access.REMOTE_READ);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.REMOTE_READ));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(PEER_QPN).rqPsn(RQ_PSN)
                .maxDestRdAtomic(4).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(4));
    }

    @AfterEach
    void tearDown() {
        dev.close();
        arena.close();
    }

    private void readRequest(int psn, long va, int rkey, long len) {
        Opcode op = Opcode.RC_RDMA_READ_REQUEST;
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(total, total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), true, psn);
        Reth.write(b, Bth.LENGTH, va, rkey, len);
        b.writerIndex(total);
        icrc.write(b, 0, total, PEER, LOCAL);
        net.releaseSent(); // the fixture owns what the device sent
        net.receiver.onPacket(b, PEER, LOCAL);
        b.release();
    }

    /** @return (opcode, PSN, first payload byte offset in the MR) of each response */
    private List<String> responses() {
        List<String> out = new ArrayList<>();
        for (ByteBuf b : net.sent) {
            Opcode op = Opcode.of(Bth.opcode(b, 0));
            int payload = b.writerIndex() - op.headerLength() - Icrc.LENGTH - Bth.padCount(b, 0);
            String first = payload == 0 ? "-" : Integer.toString(indexOf(b.getByte(op.headerLength())));
            out.add(op.name().replace("RC_RDMA_READ_RESPONSE_", "") + "@" + Integer.toHexString(Bth.psn(b, 0))
                    + ":" + payload + ":" + first);
        }
        return out;
    }

    /** @return the first MR offset below 256 whose pattern byte equals {@code v} (the pattern is injective mod 256) */
    private static int indexOf(byte v) {
        for (int i = 0; i < 256; i++) {
            if ((byte) (i * 7 + 3) == v) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void theOriginalAndSubsetDuplicatesAreServedFromMemory() {
        readRequest(RQ_PSN, mr.iova(), mr.rkey(), 1024);
        assertThat(responses()).containsExactly("FIRST@fffffe:256:0", "MIDDLE@ffffff:256:0", "MIDDLE@0:256:0",
                "LAST@1:256:0");
        // the requester lost responses 2..4 and re-requests the tail at PSN + 1 (rxe-facts §5.4); it is
        // answered as a new response stream FIRST … LAST (extensions §6; rdma_rxe would continue with MIDDLE)
        readRequest(Psn.add(RQ_PSN, 1), mr.iova() + 256, mr.rkey(), 768);
        assertThat(responses()).containsExactly("FIRST@ffffff:256:0", "MIDDLE@0:256:0", "LAST@1:256:0");
        assertThat(qp.counters().get(Counter.DUPLICATE_REQUEST)).isEqualTo(1);
    }

    @Test
    void aDuplicateAskingForMoreThanTheOriginalIsNotServed() {
        readRequest(RQ_PSN, mr.iova(), mr.rkey(), 1024);
        long before = qp.counters().drops(DropReason.OTHER);
        readRequest(Psn.add(RQ_PSN, 1), mr.iova() + 256, mr.rkey(), 1024); // runs 256 bytes past the original
        assertThat(net.sent).as("nothing is sent for an out-of-range duplicate").isEmpty();
        readRequest(Psn.add(RQ_PSN, 1), mr.iova(), mr.rkey(), 1024 + 1); // longer than the original
        assertThat(net.sent).isEmpty();
        readRequest(RQ_PSN, mr.iova() + 2048, mr.rkey(), 256); // another range altogether
        assertThat(net.sent).isEmpty();
        readRequest(RQ_PSN, mr.iova(), mr.rkey() ^ 0x100, 1024); // another rkey
        assertThat(net.sent).isEmpty();
        assertThat(qp.counters().drops(DropReason.OTHER) - before).isEqualTo(4);
        assertThat(qp.state()).as("an unserved duplicate is dropped, not an error").isEqualTo(QpState.RTS);
    }
}
