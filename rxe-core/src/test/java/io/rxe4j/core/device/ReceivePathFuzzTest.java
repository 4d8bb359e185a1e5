package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
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
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Reth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.Arrays;
import org.slf4j.LoggerFactory;

/**
 * Jazzer fuzz test of the receive path (issue 4): decoder ({@code PacketView}, ICRC and the
 * filters of {@link RxeDevice#onPacket}), responder and completer of one RC QP in RTS.
 *
 * <p>Each input is a fresh device with one QP in RTS, some posted receives and sends (all chosen
 * by the input), and three MRs laid out in one native segment between canary bytes:
 * {@code [canary][rw][canary][ro][canary][other][canary]}. {@code rw} is the MR the QP may write
 * (same PD, every right); {@code ro} is of the same PD but grants only REMOTE_READ; {@code other}
 * grants everything but belongs to another PD; a type 1 and a type 2B memory window (of the QP) each
 * cover half of {@code rw}, and requests and SEND_WITH_INV's IETH name them, stale keys of them, or the
 * MRs' keys. Then the input becomes a sequence of packets
 * delivered through {@link RxeDevice#onPacket} as if from the QP's peer; see {@link #receivePath}.
 *
 * <p>Invariants checked after every packet: no exception escaped the engine (onPacket swallows
 * them into {@link DropReason#INTERNAL_ERROR}, which must stay 0; the swallowed exception is
 * captured from the device's debug log and reported); no byte outside {@code rw} changed (canaries,
 * {@code ro}, {@code other}). After the input: the QP is in RTS or ERR, and after a reset and
 * reconnect it still serves valid traffic (a WRITE_ONLY lands and is ACKed).
 *
 * <p>In a plain {@code mvn verify} this runs in Jazzer's regression mode over the inputs in
 * {@code src/test/resources/io/rxe4j/core/device/ReceivePathFuzzTestInputs/receivePath/} (plus an
 * empty input). Fuzzing: {@code docs/fuzzing.md}.
 */
class ReceivePathFuzzTest {
    private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress PEER = new InetSocketAddress("10.0.0.2", 4791);
    private static final int PEER_QPN = 0x77;
    private static final int RQ_PSN = 0x1000;
    private static final int SQ_PSN = 0x2000;
    private static final int PMTU = 256;
    private static final int CANARY = 128;
    private static final int RW_LEN = 1024;
    private static final int RO_LEN = 256;
    private static final int OTHER_LEN = 256;
    private static final long RW_AT = CANARY;
    private static final long RO_AT = RW_AT + RW_LEN + CANARY;
    private static final long OTHER_AT = RO_AT + RO_LEN + CANARY;
    private static final long SEGMENT_LEN = OTHER_AT + OTHER_LEN + CANARY;
    private static final int MAX_PACKETS = 64;
    private static final Opcode[] RC_OPCODES = Arrays.stream(Opcode.values())
            .filter(o -> o.transport() == Opcode.Transport.RC).toArray(Opcode[]::new);
    private static final WrOpcode[] SEND_OPCODES = {WrOpcode.RDMA_READ, WrOpcode.RDMA_WRITE, WrOpcode.SEND,
        WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP,
        WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_WRITE, WrOpcode.FLUSH};

    /** Captures the exception {@link RxeDevice#onPacket} swallowed (it logs it at DEBUG). */
    private static final class SwallowedErrors extends AppenderBase<ILoggingEvent> {
        volatile Throwable last;

        @Override
        protected void append(ILoggingEvent e) {
            if (e.getThrowableProxy() instanceof ThrowableProxy tp) {
                last = tp.getThrowable();
            }
        }
    }

    private static final SwallowedErrors SWALLOWED = new SwallowedErrors();

    static {
        Logger log = (Logger) LoggerFactory.getLogger(RxeDevice.class);
        log.setLevel(Level.DEBUG);
        log.setAdditive(false); // keep them out of the console; they are reported as failures
        SWALLOWED.start();
        log.addAppender(SWALLOWED);
    }

    private final Icrc icrc = new Icrc();
    private FakeTransport transport;
    private RxeDevice dev;
    private RxeQp qp;
    private MemorySegment segment;
    private RxeMr rw;
    private io.rxe4j.core.memory.RxeMw type1;
    private io.rxe4j.core.memory.RxeMw type2;
    private RxeMr ro;
    private RxeMr other;
    /** The segment outside {@code rw} as it must stay (a heap copy; the rw part is ignored). */
    private byte[] guard;
    /** The request PSN the test believes the responder expects next. */
    private int reqPsn;
    /** The response PSN the test believes the completer expects next. */
    private int respPsn;
    private int packetNo;
    private final StringBuilder trace = new StringBuilder();

    /**
     * The fuzz target. Input layout (via {@link FuzzedDataProvider}): receives to post, sends to
     * post, packet count; then per packet a mode: 0 raw bytes, 1 raw bytes with the BTH pointed at
     * the QP and a correct ICRC, 2–4 structured (valid BTH for the QP, fuzzed opcode/flags, PSN
     * near the expected one, fuzzed extended headers aimed at the MRs, payload, correct ICRC),
     * 5 post a receive, 6 post a send.
     */
    @FuzzTest(maxDuration = "5m")
    void receivePath(FuzzedDataProvider data) {
        SWALLOWED.last = null;
        trace.setLength(0);
        packetNo = 0;
        try (Arena arena = Arena.ofConfined()) {
            setUp(arena);
            try {
                int recvs = data.consumeInt(0, 4);
                for (int i = 0; i < recvs; i++) {
                    postRecv(data);
                }
                int sends = data.consumeInt(0, 3);
                for (int i = 0; i < sends; i++) {
                    postSend(data);
                }
                int packets = data.consumeInt(1, MAX_PACKETS);
                for (int i = 0; i < packets && data.remainingBytes() > 0; i++) {
                    int mode = data.consumeInt(0, 6);
                    switch (mode) {
                        case 0 -> deliver(rawPacket(data, false), -1);
                        case 1 -> deliver(rawPacket(data, true), -1);
                        case 5 -> postRecv(data);
                        case 6 -> postSend(data);
                        default -> structured(data);
                    }
                }
                assertThat(qp.state()).as("QP state after the input; %s", trace)
                        .isIn(QpState.RTS, QpState.ERR);
                servesValidTrafficAfterReset();
            } finally {
                dev.close();
                transport.captured.forEach(ByteBuf::release);
            }
        }
    }

    // ------------------------------------------------------------------ setup

    private void setUp(Arena arena) {
        transport = new FakeTransport(LOCAL);
        dev = new RxeDevice(transport, DeviceConfig.defaults().withSeed(4));
        RxePd pd = dev.allocPd();
        RxePd pd2 = dev.allocPd();
        RxeCq cq = dev.createCq(64);
        qp = dev.createQp(pd, cq, cq, new QpCaps(8, 8, 2, 2, 64), true);
        segment = arena.allocate(SEGMENT_LEN, 64);
        for (long i = 0; i < SEGMENT_LEN; i++) {
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) (0xA5 ^ (i * 31)));
        }
        guard = segment.toArray(ValueLayout.JAVA_BYTE);
        int all = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
                | Access.FLUSH_GLOBAL | Access.MW_BIND;
        rw = dev.registerMr(pd, segment.asSlice(RW_AT, RW_LEN), null, all);
        ro = dev.registerMr(pd, segment.asSlice(RO_AT, RO_LEN), null, Access.REMOTE_READ);
        other = dev.registerMr(pd2, segment.asSlice(OTHER_AT, OTHER_LEN), null, all);
        connect();
        // memory windows inside rw: rkeys the requests and SEND_WITH_INV's IETH may name (issue 22)
        int rwx = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        type1 = dev.mrs().windows().allocate(pd, io.rxe4j.core.memory.RxeMw.Type.TYPE_1);
        type1.bind(type1.rkey(), 0x11, rw, rw.lkey(), rw.iova(), RW_LEN / 2, rwx, pd, qp.qpn());
        type2 = dev.mrs().windows().allocate(pd, io.rxe4j.core.memory.RxeMw.Type.TYPE_2B);
        type2.bind(type2.rkey(), 0x22, rw, rw.lkey(), rw.iova() + RW_LEN / 2, RW_LEN / 2, rwx, pd, qp.qpn());
    }

    private void connect() {
        if (qp.state() != QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.RESET));
        }
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
                        | Access.FLUSH_GLOBAL));
        qp.modify(new QpAttr().state(QpState.RTR).av(PEER).pathMtu(Mtu.MTU_256).destQpNum(PEER_QPN)
                .rqPsn(RQ_PSN).maxDestRdAtomic(4).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(SQ_PSN)
                .maxRdAtomic(4));
        reqPsn = RQ_PSN;
        respPsn = SQ_PSN;
    }

    /** Posts a receive with 1–2 SGEs inside {@code rw}; skipped when the QP would refuse it. */
    private void postRecv(FuzzedDataProvider data) {
        int n = data.consumeInt(1, 2);
        Sge[] sges = new Sge[n];
        for (int i = 0; i < n; i++) {
            sges[i] = rwSge(data);
        }
        if (qp.state() == QpState.RESET) {
            return;
        }
        try {
            qp.postRecv(new RecvWr().set(1000 + packetNo, sges));
            trace.append("recv ");
        } catch (IllegalStateException full) {
            // receive queue full: fine
        }
    }

    /** Posts a send WR whose local SGE lies in {@code rw}: its responses then exercise the completer. */
    private void postSend(FuzzedDataProvider data) {
        WrOpcode op = data.pickValue(SEND_OPCODES);
        SendWr wr = new SendWr();
        long remote = vaChoice(data);
        int rkey = rkeyChoice(data);
        if (op == WrOpcode.ATOMIC_WRITE || op == WrOpcode.FLUSH) {
            wr.set(2000 + packetNo, op, 0);
            wr.atomicWriteValue = data.consumeLong();
            wr.flush(data.consumeInt(1, 3), data.consumeInt(0, 1), data.consumeInt(0, 2 * PMTU));
        } else if (op.isAtomic()) {
            long off = data.consumeInt(0, RW_LEN / 8 - 1) * 8L;
            wr.set(2000 + packetNo, op, 0, new Sge(rw.iova() + off, 8, rw.lkey()));
            wr.atomic(data.consumeLong(), data.consumeLong()).masks(data.consumeLong(), data.consumeLong());
            remote &= ~7L;
        } else {
            wr.set(2000 + packetNo, op, 0, rwSge(data));
        }
        wr.remote(remote, rkey);
        if (qp.state() != QpState.RTS) {
            return;
        }
        try {
            qp.postSend(wr);
            trace.append("send:").append(op).append(' ');
        } catch (IllegalStateException | IllegalArgumentException refused) {
            // send queue full, or a WR the verbs layer rejects: fine, nothing was posted
        }
    }

    private Sge rwSge(FuzzedDataProvider data) {
        int off = data.consumeInt(0, RW_LEN);
        int len = data.consumeInt(0, RW_LEN - off);
        return new Sge(rw.iova() + off, len, rw.lkey());
    }

    // ------------------------------------------------------------------ packets

    private ByteBuf rawPacket(FuzzedDataProvider data, boolean aimed) {
        byte[] bytes = data.consumeBytes(data.consumeInt(0, 400));
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        if (aimed && bytes.length >= Bth.LENGTH + Icrc.LENGTH) {
            b.setShort(Bth.PKEY_OFFSET, Bth.DEFAULT_PKEY);
            b.setMedium(Bth.DEST_QP_WORD_OFFSET + 1, qp.qpn());
            icrc.write(b, 0, bytes.length, PEER, LOCAL);
        }
        return b;
    }

    /** A packet that passes every receive filter, with fuzzed contents the QP must cope with. */
    private void structured(FuzzedDataProvider data) {
        Opcode op = data.pickValue(RC_OPCODES);
        boolean request = op.isRequest();
        int base = request ? reqPsn : respPsn;
        int delta = data.consumeBoolean() ? data.consumeInt(-3, 3) : data.consumeInt(-(1 << 23), (1 << 23) - 1);
        int psn = (base + delta) & Bth.MASK_24;
        int payload = 0;
        if (op.hasPayload()) {
            payload = switch (data.consumeInt(0, 3)) {
                case 0 -> PMTU;
                case 1 -> 8;
                default -> data.consumeInt(0, 2 * PMTU + 8);
            };
        }
        int pad = data.consumeInt(0, 7) == 0 ? data.consumeInt(0, 3) : -payload & 3;
        int hdr = op.headerLength();
        int len = hdr + payload + (-payload & 3) + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        Bth.write(b, 0, op.code(), data.consumeBoolean(), pad, Bth.DEFAULT_PKEY, qp.qpn(), data.consumeBoolean(),
                psn);
        long dma = -1;
        for (Header h : op.headers()) {
            int at = op.offset(h);
            switch (h) {
                case BTH -> { }
                case RETH -> {
                    dma = switch (data.consumeInt(0, 3)) {
                        case 0 -> payload;
                        case 1 -> data.consumeInt(0, RW_LEN + 16);
                        case 2 -> 8;
                        default -> Integer.toUnsignedLong(data.consumeInt());
                    };
                    Reth.write(b, at, vaChoice(data), rkeyChoice(data), dma);
                }
                case ATOMIC_ETH -> AtomicEth.write(b, at, vaChoice(data), rkeyChoice(data), data.consumeLong(),
                        data.consumeLong());
                case MASKED_CMP_SWAP_ETH -> MaskedCmpSwapEth.write(b, at, vaChoice(data), rkeyChoice(data),
                        data.consumeLong(), data.consumeLong(), data.consumeLong(), data.consumeLong());
                case AETH -> {
                    int syndrome = switch (data.consumeInt(0, 3)) {
                        case 0 -> Aeth.ACK_UNLIMITED;
                        case 1 -> Aeth.TYPE_RNR_NAK | data.consumeInt(0, 31);
                        case 2 -> data.consumeInt(Aeth.NAK_PSN_SEQ_ERROR, Aeth.NAK_REMOTE_OP_ERROR);
                        default -> data.consumeInt(0, 255);
                    };
                    Aeth.write(b, at, syndrome, data.consumeInt(0, Bth.MASK_24));
                }
                case ATOMIC_ACK_ETH -> AtomicAckEth.write(b, at, data.consumeLong());
                case FETH -> Feth.write(b, at, data.consumeInt(0, 2), data.consumeInt(0, 4));
                case IETH -> io.rxe4j.core.wire.Ieth.write(b, at, rkeyChoice(data));
                default -> b.setBytes(at, Arrays.copyOf(data.consumeBytes(h.length()), h.length()));
            }
        }
        byte[] body = Arrays.copyOf(data.consumeBytes(payload), payload);
        b.setBytes(hdr, body);
        icrc.write(b, 0, len, PEER, LOCAL);
        deliver(b, delta == 0 ? (request ? packetsOf(op, dma) : 1) : -1);
        if (delta == 0) {
            if (request) {
                reqPsn = (reqPsn + packetsOf(op, dma)) & Bth.MASK_24;
            } else {
                respPsn = (respPsn + 1) & Bth.MASK_24;
            }
        }
    }

    /** PSNs a request at the expected PSN consumes (a READ one per response packet). */
    private static int packetsOf(Opcode op, long dma) {
        return op == Opcode.RC_RDMA_READ_REQUEST && dma > 0 ? (int) Math.min(1 << 20, (dma + PMTU - 1) / PMTU) : 1;
    }

    /** A VA: in or near one of the MRs (fuzzer-chosen offset), or anywhere. */
    private long vaChoice(FuzzedDataProvider data) {
        return switch (data.consumeInt(0, 3)) {
            case 0 -> rw.iova() + data.consumeInt(-16, RW_LEN + 16);
            case 1 -> ro.iova() + data.consumeInt(-16, RO_LEN + 16);
            case 2 -> other.iova() + data.consumeInt(-16, OTHER_LEN + 16);
            default -> data.consumeLong();
        };
    }

    private int rkeyChoice(FuzzedDataProvider data) {
        return switch (data.consumeInt(0, 7)) {
            case 0 -> rw.rkey();
            case 1 -> ro.rkey();
            case 2 -> other.rkey();
            case 3 -> rw.rkey() ^ (1 << data.consumeInt(0, 31));
            case 4 -> type1.rkey();
            case 5 -> type2.rkey();
            case 6 -> type2.rkey() ^ 1; // a stale key of the window
            default -> data.consumeInt();
        };
    }

    /** Delivers one packet from the peer and checks the invariants. */
    private void deliver(ByteBuf b, int advance) {
        packetNo++;
        String hex = ByteBufUtil.hexDump(b, 0, Math.min(b.writerIndex(), 64));
        trace.append('#').append(packetNo).append(':').append(hex.length() >= 2 ? hex.substring(0, 2) : "--")
                .append(advance >= 0 ? "@psn " : " ");
        try {
            dev.onPacket(b, PEER, LOCAL);
        } finally {
            b.release();
        }
        checkInvariants("packet #" + packetNo + " (" + hex + (b.capacity() > 64 ? "…" : "") + ")");
    }

    private void checkInvariants(String what) {
        long internal = dev.counters().drops(DropReason.INTERNAL_ERROR);
        if (internal != 0) {
            throw new AssertionError("the engine threw on " + what + "; " + qp.debugState() + "; trace: " + trace,
                    SWALLOWED.last);
        }
        checkGuard(what);
    }

    /** Every byte of the segment outside {@code rw} is as written at setup. */
    private void checkGuard(String what) {
        byte[] now = segment.toArray(ValueLayout.JAVA_BYTE);
        for (int i = 0; i < now.length; i++) {
            if (i >= RW_AT && i < RW_AT + RW_LEN) {
                continue;
            }
            if (now[i] != guard[i]) {
                String where = i < RW_AT ? "canary before rw" : i < RO_AT ? "canary between rw and ro"
                        : i < RO_AT + RO_LEN ? "ro MR (REMOTE_READ only)" : i < OTHER_AT ? "canary between ro and other"
                        : i < OTHER_AT + OTHER_LEN ? "other-PD MR" : "canary after other";
                throw new AssertionError("write outside the writable MR after " + what + ": byte " + i + " ("
                        + where + ") changed; " + qp.debugState() + "; trace: " + trace);
            }
        }
    }

    // ------------------------------------------------------------------ liveness

    /**
     * The engine still serves valid traffic: the QP (in ERR or RTS, possibly in the middle of a
     * message or with a gap) is reset and reconnected, then a WRITE_ONLY at the expected PSN must
     * land in {@code rw} and be ACKed.
     */
    private void servesValidTrafficAfterReset() {
        connect();
        assertThat(qp.state()).isEqualTo(QpState.RTS);
        int off = 64;
        int n = 40;
        byte[] want = new byte[n];
        for (int i = 0; i < n; i++) {
            want[i] = (byte) (0x3C + 7 * i);
        }
        transport.captured.forEach(ByteBuf::release);
        transport.captured.clear();
        transport.capture = true;
        Opcode op = Opcode.RC_RDMA_WRITE_ONLY;
        int len = op.headerLength() + n + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        b.writerIndex(len);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.qpn(), true, RQ_PSN);
        Reth.write(b, op.offset(Header.RETH), rw.iova() + off, rw.rkey(), n);
        b.setBytes(op.headerLength(), want);
        icrc.write(b, 0, len, PEER, LOCAL);
        trace.append("| valid WRITE_ONLY ");
        deliver(b, 1);
        byte[] got = segment.asSlice(RW_AT + off, n).toArray(ValueLayout.JAVA_BYTE);
        assertThat(got).as("WRITE_ONLY payload after reconnect; %s; trace: %s", qp.debugState(), trace)
                .isEqualTo(want);
        assertThat(transport.captured).as("packets sent for the WRITE_ONLY; trace: %s", trace).hasSize(1);
        ByteBuf ack = transport.captured.get(0);
        assertThat(Bth.opcode(ack, 0)).isEqualTo(Opcode.RC_ACKNOWLEDGE.code());
        assertThat(Bth.psn(ack, 0)).isEqualTo(RQ_PSN);
        assertThat(Bth.destQp(ack, 0)).isEqualTo(PEER_QPN);
        assertThat(Aeth.type(Aeth.syndrome(ack, Bth.LENGTH))).as("AETH type").isEqualTo(Aeth.TYPE_ACK);
        assertThat(icrc.check(ack, 0, ack.writerIndex(), LOCAL, PEER)).as("ACK ICRC").isTrue();
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }
}
