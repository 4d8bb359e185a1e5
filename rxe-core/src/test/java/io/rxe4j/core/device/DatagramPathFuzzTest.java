package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Deth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The UD and UC receive paths under hostile input (issue 22 item 6): a device with one UD QP and
 * one UC QP in RTS, receives posted into an MR between canaries, a read-only MR and an MR of another
 * PD; then packets with UD/UC (and other) opcodes, PSNs near and far from the expected one, fuzzed
 * Q_Keys, RETHs aimed at every MR, at two memory windows (type 1, and type 2B of the UC QP) and
 * beyond, some datagrams to the device's GSI QP (QP1) with its Q_Key or another, fuzzed lengths, pads
 * and senders, most with a correct ICRC. After every packet: no exception escaped ({@code
 * drop_internal_error} 0), no byte outside the writable MR changed, and the three QPs are still in RTS (nothing a peer sends moves a UC or UD QP to
 * ERR, {@code verbs-surface-facts.md} §3.4 rule 7). Afterwards both still serve valid traffic.
 *
 * <p>{@link #seededInputs} runs 20 seeds × 400 packets in every build; {@link #datagramPath} is the
 * Jazzer target for the same code ({@code docs/fuzzing.md}).
 */
class DatagramPathFuzzTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final InetSocketAddress STRANGER = new InetSocketAddress("10.0.0.3", 4791);
    private static final int QKEY = 0x11111111;
    private static final int PEER_QPN = 0x77;
    private static final int RQ_PSN = 0x500;
    private static final int CANARY = 128;
    private static final int RW_LEN = 4096;
    private static final int RO_LEN = 512;
    private static final long RW_AT = CANARY;
    private static final long RO_AT = RW_AT + RW_LEN + CANARY;
    private static final long OTHER_AT = RO_AT + RO_LEN + CANARY;
    private static final long SEGMENT_LEN = OTHER_AT + RO_LEN + CANARY;
    private static final Opcode[] OPCODES = Arrays.stream(Opcode.values())
            .filter(o -> o.transport() == Opcode.Transport.UD || o.transport() == Opcode.Transport.UC).toArray(Opcode[]::new);

    /** One input's source of choices: a seeded generator or Jazzer's data. */
    private interface Choices {
        int nextInt(int from, int toInclusive);

        byte nextByte();
    }

    private final Icrc icrc = new Icrc();
    private RxeDevice dev;
    private RxeQp ud;
    private RxeQp uc;
    private RxeCq cq;
    private RxeMr rw;
    private io.rxe4j.core.memory.RxeMw window1;
    private io.rxe4j.core.memory.RxeMw window2;
    private RxeMr ro;
    private RxeMr other;
    private MemorySegment segment;
    private byte[] guard;

    @Test
    void seededInputs() {
        for (long seed = 1; seed <= 20; seed++) {
            SplittableRandom r = new SplittableRandom(seed);
            run(new Choices() {
                @Override
                public int nextInt(int from, int toInclusive) {
                    if (toInclusive == Integer.MAX_VALUE) {
                        return from == Integer.MIN_VALUE ? r.nextInt() : r.nextInt(from, toInclusive);
                    }
                    return r.nextInt(from, toInclusive + 1);
                }

                @Override
                public byte nextByte() {
                    return (byte) r.nextInt(256);
                }
            }, 400, "seed " + seed);
        }
    }

    @FuzzTest(maxDuration = "5m")
    void datagramPath(FuzzedDataProvider data) {
        run(new Choices() {
            @Override
            public int nextInt(int from, int toInclusive) {
                return data.remainingBytes() == 0 ? from : data.consumeInt(from, toInclusive);
            }

            @Override
            public byte nextByte() {
                return data.remainingBytes() == 0 ? 0 : data.consumeByte();
            }
        }, 200, "jazzer input");
    }

    private void run(Choices c, int packets, String what) {
        try (Arena arena = Arena.ofConfined()) {
            setUp(arena);
            try {
                for (int i = 0; i < packets; i++) {
                    if (c.nextInt(0, 15) == 0) {
                        postRecvs(c.nextInt(1, 3));
                    }
                    ByteBuf b = packet(c);
                    InetSocketAddress sender = c.nextInt(0, 9) == 0 ? STRANGER : PEER;
                    try {
                        assertThatCode(() -> dev.onPacket(b, sender, LOCAL)).as("%s, packet %d", what, i)
                                .doesNotThrowAnyException();
                    } finally {
                        b.release();
                    }
                    assertThat(dev.counters().drops(DropReason.INTERNAL_ERROR)).as("%s, packet %d", what, i).isZero();
                    assertGuardIntact(what + ", packet " + i);
                    assertThat(ud.state()).as("%s: UD QP", what).isEqualTo(QpState.RTS);
                    assertThat(uc.state()).as("%s: UC QP", what).isEqualTo(QpState.RTS);
                    assertThat(dev.gsiQp().state()).as("%s: GSI QP", what).isEqualTo(QpState.RTS);
                }
                drain();
                stillServesValidTraffic(what);
            } finally {
                dev.close();
            }
        }
    }

    private void setUp(Arena arena) {
        dev = new RxeDevice(new FakeTransport(LOCAL), DeviceConfig.defaults().withSeed(7));
        RxePd pd = dev.allocPd();
        RxePd pd2 = dev.allocPd();
        cq = dev.createCq(4096);
        ud = dev.createQp(pd, cq, cq, new QpCaps(4, 64, 2, 2, 0), false, QpType.UD);
        uc = dev.createQp(pd, cq, cq, new QpCaps(4, 64, 2, 2, 0), false, QpType.UC);
        segment = arena.allocate(SEGMENT_LEN, 64);
        for (long i = 0; i < SEGMENT_LEN; i++) {
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) (0x5A ^ (i * 17)));
        }
        guard = segment.toArray(ValueLayout.JAVA_BYTE);
        rw = dev.registerMr(pd, segment.asSlice(RW_AT, RW_LEN), null, Access.LOCAL_WRITE | Access.REMOTE_WRITE
                | Access.MW_BIND);
        ro = dev.registerMr(pd, segment.asSlice(RO_AT, RO_LEN), null, Access.REMOTE_READ);
        other = dev.registerMr(pd2, segment.asSlice(OTHER_AT, RO_LEN), null, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        ud.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(QKEY));
        ud.modify(new QpAttr().state(QpState.RTR));
        ud.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        uc.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        uc.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(PEER_QPN).rqPsn(RQ_PSN));
        uc.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        postRecvs(8);
        // a type 2B window of the UC QP and a type 1 window over rw: rkeys a UC WRITE may name
        window2 = dev.mrs().windows().allocate(pd, io.rxe4j.core.memory.RxeMw.Type.TYPE_2B);
        window2.bind(window2.rkey(), 0x33, rw, rw.lkey(), rw.iova() + 1024, 2048, Access.REMOTE_WRITE, pd, uc.qpn());
        window1 = dev.mrs().windows().allocate(pd, io.rxe4j.core.memory.RxeMw.Type.TYPE_1);
        window1.bind(window1.rkey(), 0x44, rw, rw.lkey(), rw.iova(), RW_LEN, Access.REMOTE_WRITE, pd, uc.qpn());
    }

    private void postRecvs(int n) {
        for (int i = 0; i < n; i++) {
            RecvWr wr = new RecvWr().set(i, new Sge(rw.iova() + 1024L * (i % 2), 1024, rw.lkey()));
            ud.tryPostRecv(wr);
            uc.tryPostRecv(new RecvWr().set(100 + i, new Sge(rw.iova() + 2048 + 1024L * (i % 2), 1024, rw.lkey())));
        }
    }

    /** @return one packet chosen by {@code c} (owned by the caller) */
    private ByteBuf packet(Choices c) {
        Opcode op = c.nextInt(0, 20) == 0 ? Opcode.values()[c.nextInt(0, Opcode.values().length - 1)]
                : OPCODES[c.nextInt(0, OPCODES.length - 1)];
        boolean toUd = op.transport() == Opcode.Transport.UD ? c.nextInt(0, 9) != 0 : c.nextInt(0, 9) == 0;
        RxeQp target = toUd ? ud : uc;
        // half the packets have the lengths a sender would give them (path MTU 256), so that they get past
        // the length checks to the R_Key, range and placement code
        boolean wellFormed = c.nextInt(0, 1) == 0;
        int payload;
        if (!op.hasPayload()) {
            payload = 0;
        } else if (wellFormed) {
            payload = op.isLast() ? c.nextInt(op.isFirst() ? 0 : 1, 256) : 256;
        } else {
            payload = c.nextInt(0, c.nextInt(0, 3) == 0 ? 1100 : 300);
        }
        int pad = -payload & 3;
        if (c.nextInt(0, 30) == 0) {
            pad = c.nextInt(0, 3);
        }
        int hdr = op.headerLength();
        int len = hdr + payload + pad + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        for (int i = hdr; i < len - Icrc.LENGTH; i++) {
            b.setByte(i, c.nextByte());
        }
        int psn = switch (c.nextInt(0, 3)) {
            case 0 -> RQ_PSN;
            case 1 -> (RQ_PSN + c.nextInt(-4, 40)) & Bth.MASK_24;
            default -> c.nextInt(0, Bth.MASK_24);
        };
        int pick = c.nextInt(0, 20);
        // some to the GSI QP (QP1), with its Q_Key or another
        int destQp = pick == 0 ? c.nextInt(0, Bth.MASK_24) : pick == 1 ? 1 : target.qpn();
        Bth.write(b, 0, op.code(), c.nextInt(0, 1) == 0, pad, c.nextInt(0, 30) == 0 ? 0x1234 : Bth.DEFAULT_PKEY, destQp,
                false, psn);
        if (op.has(Header.DETH)) {
            Deth.write(b, op.offset(Header.DETH), c.nextInt(0, 4) == 0 ? c.nextInt(Integer.MIN_VALUE, Integer.MAX_VALUE)
                    : destQp == 1 ? io.rxe4j.verbs.provider.GsiOps.QKEY : QKEY, c.nextInt(0, Bth.MASK_24));
        }
        if (op.has(Header.RETH)) {
            long base = switch (c.nextInt(0, 4)) {
                case 0 -> rw.iova();
                case 1 -> ro.iova();
                case 2 -> other.iova();
                case 3 -> rw.iova() + RW_LEN - c.nextInt(0, 64);
                default -> c.nextInt(Integer.MIN_VALUE, Integer.MAX_VALUE);
            };
            int rkey = switch (c.nextInt(0, 6)) {
                case 0 -> ro.rkey();
                case 1 -> other.rkey();
                case 2 -> c.nextInt(Integer.MIN_VALUE, Integer.MAX_VALUE);
                case 3 -> window1.rkey();
                case 4 -> window2.rkey();
                case 5 -> window2.rkey() ^ 0x80;
                default -> rw.rkey();
            };
            long dma = wellFormed ? (op.isLast() ? payload : payload + c.nextInt(1, 1024))
                    : c.nextInt(0, 5) == 0 ? c.nextInt(0, Integer.MAX_VALUE) & 0xFFFFFFFFL : c.nextInt(0, 2048);
            Reth.write(b, op.offset(Header.RETH), base + c.nextInt(0, 256), rkey, dma);
        }
        if (op.has(Header.IMM_DT)) {
            ImmDt.write(b, op.offset(Header.IMM_DT), c.nextInt(Integer.MIN_VALUE, Integer.MAX_VALUE));
        }
        if (c.nextInt(0, 25) != 0) {
            icrc.write(b, 0, len, PEER, LOCAL);
        }
        return b;
    }

    private void assertGuardIntact(String what) {
        byte[] now = segment.toArray(ValueLayout.JAVA_BYTE);
        for (int i = 0; i < now.length; i++) {
            if (i >= RW_AT && i < RW_AT + RW_LEN) {
                continue;
            }
            if (now[i] != guard[i]) {
                throw new AssertionError(what + ": byte " + i + " outside the writable MR changed");
            }
        }
    }

    private void drain() {
        WorkCompletion[] wc = {new WorkCompletion()};
        while (cq.poll(wc, 1) == 1) {
            assertThat(wc[0].status).as("a completion caused by a peer's packet").isEqualTo(WcStatus.SUCCESS);
        }
    }

    /** A valid UD datagram and a valid UC WRITE_ONLY after the input are taken. */
    private void stillServesValidTraffic(String what) {
        postRecvs(1);
        int payload = 16;
        int len = Opcode.UD_SEND_ONLY.headerLength() + payload + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        Bth.write(b, 0, Opcode.UD_SEND_ONLY.code(), false, 0, Bth.DEFAULT_PKEY, ud.qpn(), false, 0);
        Deth.write(b, Opcode.UD_SEND_ONLY.offset(Header.DETH), QKEY, 0x42);
        icrc.write(b, 0, len, STRANGER, LOCAL);
        deliverOnce(b, STRANGER);
        WorkCompletion[] wc = {new WorkCompletion()};
        boolean udDone = false;
        while (cq.poll(wc, 1) == 1) {
            udDone |= wc[0].qpNum == ud.qpn() && wc[0].srcQp == 0x42 && wc[0].status == WcStatus.SUCCESS;
        }
        assertThat(udDone).as("%s: a valid datagram completes afterwards", what).isTrue();
        // UC: a WRITE ONLY that starts a message resynchronises whatever came before (§3.3 rule 2)
        int wlen = Opcode.UC_RDMA_WRITE_ONLY.headerLength() + 8 + Icrc.LENGTH;
        ByteBuf w = Unpooled.buffer(wlen, wlen);
        w.writerIndex(wlen);
        Bth.write(w, 0, Opcode.UC_RDMA_WRITE_ONLY.code(), false, 0, Bth.DEFAULT_PKEY, uc.qpn(), false, 0x123456);
        Reth.write(w, Opcode.UC_RDMA_WRITE_ONLY.offset(Header.RETH), rw.iova() + 4000, rw.rkey(), 8);
        w.setLong(Opcode.UC_RDMA_WRITE_ONLY.headerLength(), 0x0102030405060708L);
        icrc.write(w, 0, wlen, PEER, LOCAL);
        deliverOnce(w, PEER);
        assertThat(segment.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), RW_AT + 4000))
                .as("%s: a valid UC WRITE lands afterwards", what).isEqualTo(0x0102030405060708L);
    }

    private void deliverOnce(ByteBuf b, InetSocketAddress sender) {
        try {
            dev.onPacket(b, sender, LOCAL);
        } finally {
            b.release();
        }
    }
}
