package io.rxe4j.core.device;

import io.rxe4j.verbs.Counter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link RxeDevice#onPacket} never throws and counts every malformed or misaddressed packet as a drop. */
class OnPacketFuzzTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final InetSocketAddress STRANGER = new InetSocketAddress("10.0.0.3", 4791);
    private static final int PEER_QPN = 0x77;
    private static final int RQ_PSN = 0x1000;

    private final Icrc icrc = new Icrc();
    private FakeTransport transport;
    private RxeDevice dev;
    private RxeQp qp;

    @BeforeEach
    void setUp() {
        transport = new FakeTransport(LOCAL);
        dev = new RxeDevice(transport, DeviceConfig.defaults().withSeed(3));
        RxePd pd = dev.allocPd();
        RxeCq cq = dev.createCq(1024);
        qp = dev.createQp(pd, cq, cq, new QpCaps(16, 16, 2, 2, 64), true);
        bringUp();
    }

    private void bringUp() {
        if (qp.state() != QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.RESET));
        }
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(PEER_QPN)
                .rqPsn(RQ_PSN).maxDestRdAtomic(4).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x2000)
                .maxRdAtomic(4));
    }

    @AfterEach
    void tearDown() {
        dev.close();
    }

    private long totalDrops() {
        long s = 0;
        for (DropReason r : DropReason.values()) {
            s += dev.counters().drops(r);
        }
        return s;
    }

    private ByteBuf ack(int psn) {
        int len = Bth.LENGTH + Aeth.LENGTH + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        Bth.write(b, 0, Opcode.RC_ACKNOWLEDGE.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), false, psn);
        Aeth.write(b, Bth.LENGTH, Aeth.ACK_UNLIMITED, 0);
        icrc.write(b, 0, len, PEER, LOCAL);
        return b;
    }

    private ByteBuf sendOnly(int psn, int payload) {
        int pad = -payload & 3;
        int len = Bth.LENGTH + payload + pad + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        Bth.write(b, 0, Opcode.RC_SEND_ONLY.code(), false, pad, Bth.DEFAULT_PKEY, qp.qpn(), true, psn);
        for (int i = 0; i < payload; i++) {
            b.setByte(Bth.LENGTH + i, i);
        }
        icrc.write(b, 0, len, PEER, LOCAL);
        return b;
    }

    private void deliver(ByteBuf b, InetSocketAddress sender) {
        try {
            assertThatCode(() -> dev.onPacket(b, sender, LOCAL)).doesNotThrowAnyException();
        } finally {
            b.release();
        }
    }

    /** Delivers a packet that must be dropped: exactly one drop counted (of {@code reason}, if given). */
    private void expectDrop(ByteBuf b, InetSocketAddress sender, DropReason reason, String what) {
        long before = totalDrops();
        long reasonBefore = reason == null ? 0 : dev.counters().drops(reason);
        deliver(b, sender);
        assertThat(totalDrops() - before).as(what).isEqualTo(1);
        if (reason != null) {
            assertThat(dev.counters().drops(reason) - reasonBefore).as(what).isEqualTo(1);
        }
    }

    @Test
    void validPacketsAreNotDropped() {
        deliver(ack(0x1FFF), PEER);
        deliver(sendOnly(RQ_PSN, 16), PEER); // no receive WQE: RNR NAK, not a drop
        assertThat(totalDrops()).isZero();
        assertThat(dev.counters().get(Counter.RCVD_PKTS)).isEqualTo(2);
        assertThat(dev.counterSnapshot().get("send_rnr_err")).isEqualTo(1L);
        assertThat(transport.sent).isEqualTo(1);
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void hundredThousandMalformedPacketsAreAllCountedAsDrops() {
        SplittableRandom r = new SplittableRandom(0xF022);
        int n = 100_000;
        for (int i = 0; i < n; i++) {
            int kind = r.nextInt(7);
            boolean useAck = r.nextBoolean();
            ByteBuf b = useAck ? ack(r.nextInt(1 << 24)) : sendOnly(RQ_PSN, r.nextInt(0, 300));
            int len = b.writerIndex();
            switch (kind) {
                case 0 -> { // pure random bytes
                    b.release();
                    int l = r.nextInt(0, 201);
                    byte[] bytes = new byte[l];
                    r.nextBytes(bytes);
                    expectDrop(Unpooled.wrappedBuffer(bytes), PEER, null, "random #" + i);
                }
                case 1 -> { // one flipped byte (not the ICRC-masked resv8a byte 4)
                    int pos;
                    do {
                        pos = r.nextInt(len);
                    } while (pos == Bth.DEST_QP_WORD_OFFSET);
                    b.setByte(pos, b.getByte(pos) ^ r.nextInt(1, 256));
                    expectDrop(b, PEER, null, "flip at " + pos + " #" + i);
                }
                case 2 -> { // wrong QPN, ICRC recomputed
                    int qpn;
                    do {
                        qpn = r.nextInt(1 << 24);
                    } while (qpn == qp.qpn());
                    b.setMedium(Bth.DEST_QP_WORD_OFFSET + 1, qpn);
                    icrc.write(b, 0, len, PEER, LOCAL);
                    expectDrop(b, PEER, DropReason.NO_QP, "qpn " + qpn + " #" + i);
                }
                case 3 -> { // bad P_Key, ICRC recomputed
                    int pkey;
                    do {
                        pkey = r.nextInt(1 << 16);
                    } while ((pkey & 0x7FFF) == 0x7FFF);
                    b.setShort(Bth.PKEY_OFFSET, pkey);
                    icrc.write(b, 0, len, PEER, LOCAL);
                    expectDrop(b, PEER, DropReason.BAD_PKEY, "pkey " + pkey + " #" + i);
                }
                case 4 -> { // truncated
                    int cut = r.nextInt(1, len + 1);
                    b.writerIndex(len - cut);
                    expectDrop(b, PEER, null, "truncated by " + cut + " #" + i);
                }
                case 5 -> { // valid bytes from another peer
                    icrc.write(b, 0, len, STRANGER, LOCAL);
                    expectDrop(b, STRANGER, DropReason.WRONG_PEER, "stranger #" + i);
                }
                default -> { // ICRC of another recipient
                    icrc.write(b, 0, len, PEER, STRANGER);
                    expectDrop(b, PEER, DropReason.BAD_ICRC, "icrc #" + i);
                }
            }
        }
        assertThat(dev.counters().get(Counter.RCVD_PKTS)).isEqualTo(n);
        assertThat(totalDrops()).isEqualTo(n);
        assertThat(dev.counters().drops(DropReason.INTERNAL_ERROR)).as("no unexpected exception").isZero();
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }

    /**
     * Well-formed-looking packets (valid ICRC, P_Key, QPN, sender) with random opcode, flags, PSN
     * and body reach the QP; none may make the engine throw.
     */
    @Test
    void structuredFuzzReachesTheQpWithoutUnexpectedErrors() {
        SplittableRandom r = new SplittableRandom(0x57F);
        int n = 50_000;
        java.util.List<String> failures = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            Opcode op = Opcode.values()[r.nextInt(Opcode.values().length)];
            int body = r.nextInt(0, 80);
            int len = Bth.LENGTH + body + Icrc.LENGTH;
            ByteBuf b = Unpooled.buffer(len, len);
            b.writerIndex(len);
            for (int j = 0; j < len; j++) {
                b.setByte(j, r.nextInt(256));
            }
            int psn = r.nextBoolean() ? RQ_PSN + r.nextInt(-2, 3) : r.nextInt(1 << 24);
            Bth.write(b, 0, op.code(), r.nextBoolean(), r.nextInt(4), Bth.DEFAULT_PKEY, qp.qpn(), r.nextBoolean(),
                    psn);
            icrc.write(b, 0, len, PEER, LOCAL);
            long otherBefore = dev.counters().drops(DropReason.INTERNAL_ERROR);
            QpState stateBefore = qp.state();
            b.retain();
            deliver(b, PEER);
            if (dev.counters().drops(DropReason.INTERNAL_ERROR) != otherBefore) {
                // an engine exception was swallowed: replay on the QP to report it
                String replay = reproduce(b);
                if (replay.startsWith("java") || replay.contains("Exception")) failures.add(op + " psn=0x" + Integer.toHexString(psn) + " body=" + body + " state=" + stateBefore
                        + ": " + replay);
            }
            b.release();
            if (qp.state() == QpState.ERR) {
                bringUp();
            }
        }
        assertThat(dev.counters().get(Counter.RCVD_PKTS)).isEqualTo(n);
        assertThat(failures).as("packets that made the engine throw").isEmpty();
    }

    /** Re-runs the QP handler directly to capture the exception {@link RxeDevice#onPacket} swallowed. */
    private String reproduce(ByteBuf b) {
        io.rxe4j.core.wire.PacketView v = new io.rxe4j.core.wire.PacketView();
        try {
            Object why = v.parse(b, 0, b.writerIndex());
            if (why != null) {
                return "parse: " + why;
            }
            if (!icrc.check(b, 0, b.writerIndex(), PEER, LOCAL)) {
                return "icrc mismatch";
            }
            if (v.opcode().isRequest()) {
                qp.onRequest(v);
            } else {
                qp.onResponse(v);
            }
            return "no exception on replay";
        } catch (RuntimeException e) {
            java.io.StringWriter w = new java.io.StringWriter();
            e.printStackTrace(new java.io.PrintWriter(w));
            return w.toString().lines().limit(6).reduce((x, y) -> x + " | " + y).orElse("");
        }
    }
}
