package io.rxe4j.core.rc;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.device.QpRunner;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.rc.Responder.State;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The responder state by state ({@code rxe_resp.c}'s states; {@code rxe-facts.md} §5.5–§5.7, §6.3,
 * §9.3): one request packet per test, scripted as a peer would send it, and the states it passed
 * through ({@link Responder#passed}) with what the responder answered. The checks run in rxe's
 * order, so each error state is reached only after the checks before it passed, and none after it
 * runs: an RNR leaves the QP up, class C errors NAK with the packet's PSN and move it to ERR.
 */
class ResponderStateTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final int PEER_QPN = 0x77;
    private static final int RQ_PSN = 0xFFFFFE; // the expected PSN crosses the 24-bit wrap
    private static final int MIN_RNR_TIMER = 3;

    /** Writes the extended headers (and payload) of a request after its BTH. */
    private interface Body {
        void write(ByteBuf b, Opcode op);
    }

    private final Icrc icrc = new Icrc();
    private final Arena arena = Arena.ofShared();
    private InlineLoop net;
    private RxeDevice dev;
    private RxeQp qp;
    private RxeMr mr;
    private MemorySegment seg;

    @BeforeEach
    void setUp() {
        net = new InlineLoop(LOCAL);
        dev = new RxeDevice(net, DeviceConfig.defaults().withAdaptiveRecovery(false)); // rdma_rxe's states, state by state
        RxePd pd = dev.allocPd();
        RxeCq cq = dev.createCq(64);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 16, 2, 2, 0), false);
        seg = arena.allocate(4096, 4096);
        mr = dev.registerMr(pd, seg, null,
                Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC);
        // the QP grants READ and WRITE, not ATOMIC: CHK_OP_VALID refuses atomics
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(Access.REMOTE_READ | Access.REMOTE_WRITE));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(PEER_QPN).rqPsn(RQ_PSN)
                .maxDestRdAtomic(4).minRnrTimer(MIN_RNR_TIMER));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(4));
    }

    @AfterEach
    void tearDown() {
        net.releaseSent();
        dev.close();
        arena.close();
    }

    /** Delivers one request (ICRC computed) and forgets what the device sent before it. */
    private void request(Opcode op, int psn, int payload, Body body) {
        int pad = -payload & 3;
        int total = op.headerLength() + payload + pad + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(total, total);
        Bth.write(b, 0, op.code(), false, pad, Bth.DEFAULT_PKEY, qp.qpn(), true, psn);
        b.writerIndex(total);
        body.write(b, op);
        icrc.write(b, 0, total, PEER, LOCAL);
        net.releaseSent();
        net.receiver.onPacket(b, PEER, LOCAL);
        b.release();
    }

    private void read(int psn, long va, long len) {
        request(Opcode.RC_RDMA_READ_REQUEST, psn, 0,
                (b, op) -> Reth.write(b, op.offset(Header.RETH), va, mr.rkey(), len));
    }

    private void atomicWrite(int psn, long va, long value) {
        request(Opcode.RC_ATOMIC_WRITE, psn, 8, (b, op) -> {
            Reth.write(b, op.offset(Header.RETH), va, mr.rkey(), 8);
            b.setLong(op.headerLength(), value);
        });
    }

    /** @return the states the last request passed through */
    private Set<State> path() {
        Set<State> out = EnumSet.noneOf(State.class);
        for (State s : State.values()) {
            if (QpRunner.of(qp).rc.responder.passed(s)) {
                out.add(s);
            }
        }
        return out;
    }

    /** @return "OPCODE@psn" of each packet sent, with the AETH syndrome of an ACKNOWLEDGE */
    private List<String> answers() {
        List<String> out = new ArrayList<>();
        for (ByteBuf b : net.sent) {
            Opcode op = Opcode.of(Bth.opcode(b, 0));
            String s = op.name() + "@" + Integer.toHexString(Bth.psn(b, 0));
            if (op == Opcode.RC_ACKNOWLEDGE) {
                s += ":0x" + Integer.toHexString(Aeth.syndrome(b, op.offset(Header.AETH)));
            }
            out.add(s);
        }
        return out;
    }

    @Test
    void aReadPassesEveryCheckThenReadReply() {
        read(RQ_PSN, mr.iova(), 512);

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.CHK_LENGTH, State.CHK_RKEY, State.EXECUTE, State.READ_REPLY);
        assertThat(answers()).containsExactly("RC_RDMA_READ_RESPONSE_FIRST@fffffe",
                "RC_RDMA_READ_RESPONSE_LAST@ffffff");
        assertThat(QpRunner.of(qp).rc.responder.expectedPsn()).isEqualTo(Psn.add(RQ_PSN, 2));
    }

    @Test
    void aRequestAheadIsOutOfSequenceAndNakedOncePerGap() {
        read(Psn.add(RQ_PSN, 2), mr.iova(), 8);
        assertThat(path()).containsExactly(State.CHK_PSN, State.ERR_PSN_OUT_OF_SEQ);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_PSN_SEQ_ERROR));

        read(Psn.add(RQ_PSN, 3), mr.iova(), 8);
        assertThat(path()).containsExactly(State.CHK_PSN, State.ERR_PSN_OUT_OF_SEQ);
        assertThat(answers()).as("one NAK per gap").isEmpty();
        assertThat(qp.counters().get(Counter.OUT_OF_SEQ_REQUEST)).isEqualTo(2);
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void aRequestBehindIsADuplicateAndNotCheckedAgain() {
        read(RQ_PSN, mr.iova(), 8);
        read(RQ_PSN, mr.iova(), 8);

        assertThat(path()).containsExactly(State.CHK_PSN, State.DUPLICATE_REQUEST);
        assertThat(answers()).containsExactly("RC_RDMA_READ_RESPONSE_ONLY@fffffe");
        assertThat(qp.counters().get(Counter.DUPLICATE_REQUEST)).isEqualTo(1);
    }

    @Test
    void aMiddlePacketOutsideAMessageIsMissingOpcodeFirst() {
        request(Opcode.RC_RDMA_WRITE_MIDDLE, RQ_PSN, 256, (b, op) -> { });

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.ERR_MISSING_OPCODE_FIRST);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_INVALID_REQUEST));
        assertThat(qp.state()).isEqualTo(QpState.ERR);
    }

    @Test
    void aWriteFirstFollowedByAReadIsMissingOpcodeLast() {
        request(Opcode.RC_RDMA_WRITE_FIRST, RQ_PSN, 256,
                (b, op) -> Reth.write(b, op.offset(Header.RETH), mr.iova(), mr.rkey(), 1024));
        assertThat(path()).contains(State.EXECUTE, State.COMPLETE, State.ACKNOWLEDGE);

        read(Psn.add(RQ_PSN, 1), mr.iova(), 8);

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.ERR_MISSING_OPCODE_LAST);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@ffffff:0x" + Integer.toHexString(Aeth.NAK_INVALID_REQUEST));
    }

    @Test
    void anAtomicOnAQpWithoutRemoteAtomicIsUnsupported() {
        request(Opcode.RC_FETCH_ADD, RQ_PSN, 0,
                (b, op) -> AtomicEth.write(b, op.offset(Header.ATOMIC_ETH), mr.iova(), mr.rkey(), 1, 0));

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.ERR_UNSUPPORTED_OPCODE);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_INVALID_REQUEST));
        assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).as("memory untouched").isZero();
    }

    @Test
    void aSendWithoutAReceiveWqeIsRnrAndTheQpStaysUp() {
        request(Opcode.RC_SEND_ONLY, RQ_PSN, 16, (b, op) -> { });

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.ERR_RNR);
        assertThat(answers()).containsExactly(
                "RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.TYPE_RNR_NAK | MIN_RNR_TIMER));
        assertThat(qp.state()).isEqualTo(QpState.RTS);
        assertThat(QpRunner.of(qp).rc.responder.expectedPsn()).as("not accepted").isEqualTo(RQ_PSN);
    }

    @Test
    void aWriteOnlyLongerThanThePathMtuFailsChkLength() {
        request(Opcode.RC_RDMA_WRITE_ONLY, RQ_PSN, 260,
                (b, op) -> Reth.write(b, op.offset(Header.RETH), mr.iova(), mr.rkey(), 260));

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.CHK_LENGTH, State.ERR_LENGTH);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_INVALID_REQUEST));
    }

    @Test
    void aReadBeyondTheMrIsAnRkeyViolation() {
        read(RQ_PSN, mr.iova() + 4000, 512);

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.CHK_LENGTH, State.CHK_RKEY, State.ERR_RKEY_VIOLATION);
        assertThat(answers()).containsExactly(
                "RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_REMOTE_ACCESS_ERROR));
        assertThat(qp.state()).isEqualTo(QpState.ERR);
    }

    @Test
    void aMisalignedAtomicWriteFailsAfterItsRkeyAndTouchesNothing() {
        atomicWrite(RQ_PSN, mr.iova() + 4, 0x1122334455667788L);

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.CHK_LENGTH, State.CHK_RKEY, State.ERR_MISALIGNED_ATOMIC);
        assertThat(answers()).containsExactly("RC_ACKNOWLEDGE@fffffe:0x" + Integer.toHexString(Aeth.NAK_INVALID_REQUEST));
        assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isZero();
        assertThat(seg.get(ValueLayout.JAVA_LONG, 8)).isZero();
    }

    @Test
    void anAtomicWriteIsStoredThenAcknowledgedByAnEmptyReadResponse() {
        atomicWrite(RQ_PSN, mr.iova() + 8, 0x1122334455667788L);

        assertThat(path()).containsExactly(State.CHK_PSN, State.CHK_OP_SEQ, State.CHK_OP_VALID,
                State.CHK_RESOURCE, State.CHK_LENGTH, State.CHK_RKEY, State.EXECUTE, State.ATOMIC_WRITE_REPLY,
                State.ACKNOWLEDGE);
        assertThat(answers()).containsExactly("RC_RDMA_READ_RESPONSE_ONLY@fffffe");
        // stored byte for byte: the wire's big-endian bytes in memory order
        assertThat(seg.get(ValueLayout.JAVA_BYTE, 8)).isEqualTo((byte) 0x11);
        assertThat(seg.get(ValueLayout.JAVA_BYTE, 15)).isEqualTo((byte) 0x88);
        assertThat(QpRunner.of(qp).rc.responder.expectedPsn()).isEqualTo(RQ_PSN + 1);
    }
}
