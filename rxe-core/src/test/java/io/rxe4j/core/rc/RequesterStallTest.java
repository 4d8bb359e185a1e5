package io.rxe4j.core.rc;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.device.QpRunner;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.policy.UnackedPackets;
import io.rxe4j.core.rc.Requester.Stall;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The requester's send gates by name ({@link Requester.Stall}; {@code rxe-facts.md} §4.2, §5.2,
 * {@code extensions.md} §6): each test posts what a gate must hold back and checks which stall
 * stopped the send loop and what went out before it. No peer answers, so nothing is acknowledged.
 */
class RequesterStallTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);

    private final Arena arena = Arena.ofShared();
    private InlineLoop net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeMr mr;

    @BeforeEach
    void setUp() {
        net = new InlineLoop(LOCAL);
        dev = new RxeDevice(net, DeviceConfig.defaults().withAdaptiveRecovery(false)); // rdma_rxe's states, state by state
        RxePd pd = dev.allocPd();
        RxeCq cq = dev.createCq(64);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 16, 1, 1, 0), false);
        MemorySegment seg = arena.allocate(64 * 1024, 4096);
        mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(0x77).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(3).rnrRetry(7).sqPsn(0).maxRdAtomic(1));
    }

    @AfterEach
    void tearDown() {
        dev.close();
        net.close();
        arena.close();
    }

    private SendWr write(long wrId, int len) {
        return new SendWr().rdmaWrite(wrId, 0x1000, 0x55, new Sge(mr.iova(), len, mr.lkey())).signaled();
    }

    private SendWr read(long wrId) {
        return new SendWr().rdmaRead(wrId, 0x1000, 0x55, new Sge(mr.iova(), 64, mr.lkey())).signaled();
    }

    /** @return the opcodes sent so far, and forgets them */
    private List<Opcode> drain() {
        List<Opcode> out = new ArrayList<>();
        for (ByteBuf b : net.sent) {
            out.add(Opcode.of(Bth.opcode(b, 0)));
            b.release();
        }
        net.sent.clear();
        return out;
    }

    @Test
    void everythingPostedGoesAndNoGateHolds() {
        qp.postSend(write(1, 256));

        assertThat(drain()).containsExactly(Opcode.RC_RDMA_WRITE_ONLY);
        assertThat(QpRunner.of(qp).rc.requester.lastStall()).isNull();
    }

    @Test
    void aSecondReadWaitsForTheOnlyMaxRdAtomicCredit() {
        qp.postSend(read(1));
        qp.postSend(read(2));

        assertThat(drain()).containsExactly(Opcode.RC_RDMA_READ_REQUEST);
        assertThat(QpRunner.of(qp).rc.requester.lastStall()).isEqualTo(Stall.CREDITS);
    }

    @Test
    void aFencedReadWaitsForTheReadBeforeItBeforeItWaitsForACredit() {
        qp.postSend(read(1));
        qp.postSend(read(2).fence());

        assertThat(drain()).containsExactly(Opcode.RC_RDMA_READ_REQUEST);
        assertThat(QpRunner.of(qp).rc.requester.lastStall()).as("the fence is checked before credits").isEqualTo(Stall.FENCE);
    }

    @Test
    void aLongWriteStopsAtTheOutputBound() {
        qp.postSend(write(1, (UnackedPackets.CAPACITY + 4) * 256));

        assertThat(drain()).hasSize(UnackedPackets.CAPACITY);
        assertThat(QpRunner.of(qp).rc.requester.lastStall()).isEqualTo(Stall.UNACKED_BOUND);
        assertThat(qp.counters().get(Counter.OUTPUT_STALLS)).isEqualTo(1);
    }

    @Test
    void aTransportThatIsNotWritableStopsTheLoopBeforeTheNextPacket() {
        net.writableFor = 3;
        qp.postSend(write(1, 8 * 256));

        assertThat(drain()).hasSize(3);
        assertThat(QpRunner.of(qp).rc.requester.lastStall()).isEqualTo(Stall.NOT_WRITABLE);
    }
}
