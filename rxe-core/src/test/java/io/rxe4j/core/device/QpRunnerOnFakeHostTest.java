package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.policy.PeerBudget;
import io.rxe4j.core.qp.QpHost;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.spi.Scheduler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One QP's engines ({@link QpRunner}) on a fake {@link QpHost} that records the packets it is given:
 * no device, no lane, no transport (redesign: "engine tests on a fake host"). A WRITE is segmented
 * by the path MTU into FIRST/MIDDLE/LAST with consecutive PSNs and AckReq on the last
 * ({@code rxe-facts.md} §4.2, §5.2); one ACK of the last PSN completes it (coalesced ACK, §5.2); a
 * second ACK of the same PSN is a duplicate response, dropped and counted (§5.3).
 */
class QpRunnerOnFakeHostTest {
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);

    /** The fake host: inline loop, clock at 0, every packet kept. */
    private static final class FakeHost implements QpHost, Scheduler {
        final List<ByteBuf> sent = new ArrayList<>();
        final MrTable mrs = new MrTable(16, 1);
        final List<String> errors = new ArrayList<>();

        @Override public ByteBuf allocPacket(int length) { return Unpooled.buffer(length, length); }
        @Override public void transmit(RxeQp qp, ByteBuf packet) { sent.add(packet); }
        @Override public void transmitTo(RxeQp qp, ByteBuf packet, InetSocketAddress peer) { sent.add(packet); }
        @Override public void flushTransport() { }
        @Override public boolean transportWritable() { return true; }
        @Override public void awaitWritable(RxeQp qp) { }
        @Override public void requestService(RxeQp qp) { }
        @Override public <T> T callOnLoop(Callable<T> task) {
            try {
                return task.call();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        @Override public Scheduler scheduler() { return this; }
        @Override public void internalError(RxeQp qp, String what, RuntimeException e) { throw e; }
        @Override public PeerBudget peerBudget(InetSocketAddress peer) { return null; }
        @Override public MrTable mrs() { return mrs; }
        @Override public DeviceConfig config() { return DeviceConfig.defaults(); }
        @Override public Mtu activeMtu() { return Mtu.MTU_4096; }
        @Override public void onQpError(RxeQp qp, String reason) { errors.add(reason); }
        @Override public long nanoTime() { return 0; }
        @Override public boolean inLoop() { return true; }
        @Override public void execute(Runnable task) { task.run(); }
        @Override public Cancellable schedule(Runnable task, long delayNanos) { return () -> { }; }
    }

    private final Arena arena = Arena.ofShared();
    private final PacketView view = new PacketView();
    private FakeHost host;
    private RxeCq cq;
    private RxeQp qp;
    private RxeMr mr;

    @BeforeEach
    void setUp() {
        host = new FakeHost();
        RxePd pd = new RxePd(1);
        cq = new RxeCq(1, 16);
        // TID RDMA off (the lane has no pool then either)
        qp = new RxeQp(host, 0x11, pd, cq, cq, new QpCaps(16, 16, 1, 1, 0), false, q -> new QpRunner(q, null));
        MemorySegment seg = arena.allocate(4096, 4096);
        mr = host.mrs.register(key -> new RxeMr(pd, seg, null, Access.LOCAL_WRITE, key, null));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_1024).destQpNum(0x77).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x100).maxRdAtomic(1));
    }

    @AfterEach
    void tearDown() {
        host.sent.forEach(ByteBuf::release);
        arena.close();
    }

    private void ack(int psn) {
        Opcode op = Opcode.RC_ACKNOWLEDGE;
        int total = op.headerLength() + 4; // the ICRC is not checked here: no device
        ByteBuf b = Unpooled.buffer(total, total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), false, psn);
        Aeth.write(b, op.offset(Header.AETH), 0x1F, 1);
        b.writerIndex(total);
        assertThat(view.parse(b, 0, total)).isNull();
        qp.onResponse(view);
        b.release();
    }

    @Test
    void aWriteIsSegmentedByThePathMtuAndOneAckOfItsLastPsnCompletesIt() {
        qp.postSend(new SendWr().rdmaWrite(7, 0x9000, 0x55, new Sge(mr.iova(), 2500, mr.lkey())).signaled());

        assertThat(host.sent).hasSize(3);
        int[] opcodes = new int[3];
        int[] psns = new int[3];
        for (int i = 0; i < 3; i++) {
            ByteBuf b = host.sent.get(i);
            opcodes[i] = b.getUnsignedByte(0);
            psns[i] = Bth.psn(b, 0);
            assertThat(Bth.destQp(b, 0)).isEqualTo(0x77);
        }
        assertThat(opcodes).containsExactly(Opcode.RC_RDMA_WRITE_FIRST.code(), Opcode.RC_RDMA_WRITE_MIDDLE.code(),
                Opcode.RC_RDMA_WRITE_LAST.code());
        assertThat(psns).containsExactly(0x100, 0x101, 0x102);
        assertThat(Bth.ackReq(host.sent.get(2), 0)).as("AckReq on the last packet").isTrue();
        assertThat(cq.size()).isZero();

        ack(0x102);
        WorkCompletion[] wc = {new WorkCompletion()};
        assertThat(cq.poll(wc, 1)).isEqualTo(1);
        assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc[0].opcode).isEqualTo(WcOpcode.RDMA_WRITE);
        assertThat(wc[0].wrId).isEqualTo(7);

        ack(0x102);
        assertThat(qp.counters().get(Counter.DUPLICATE_RESPONSE)).isEqualTo(1);
        assertThat(cq.poll(wc, 1)).isZero();
        assertThat(qp.state()).isEqualTo(QpState.RTS);
        assertThat(host.errors).isEmpty();
    }
}
