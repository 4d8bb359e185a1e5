package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.PacketView;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Wire conformance: every RC operation is performed once through the verbs API, every packet the
 * two devices send is captured ({@link RecordingTransport}), and its headers are decoded at the
 * byte offsets given by {@code rxe-facts.md} §1–§2 and §4.2 — not through the engine's own
 * opcode table — and checked: opcode, SE, M, PadCnt and zero pad bytes, TVer, P_Key 0xFFFF,
 * DestQP, AckReq (set on the last packet of each request only), the PSN sequence (24-bit wrap
 * included), RETH on FIRST/ONLY only with the whole message length, ImmDt, AtomicETH fields,
 * AETH syndrome 0x1F and MSN on responses, AtomicAckETH, NAK and RNR-NAK syndromes, the ICRC.
 *
 * <p>Transport independent; it runs over the loss-free networks of {@link ConformanceFixture}:
 * {@link InJvmWireFormatTest}, {@link UdpWireFormatTest} (NIO), {@link UdpEpollWireFormatTest},
 * {@link UdpGsoGroWireFormatTest}, {@link FaultInjectingWireFormatTest} (no fault) and {@link
 * VirtualTimeWireFormatTest}. Not with loss: it checks the exact packets of each operation; the
 * only repeats it accepts are a tail-loss probe's on real time and the responses to it ({@link
 * #sent}).
 */
abstract class WireFormatSuite extends ConformanceFixture {
    /** Opcode values (rxe-facts §1.1). */
    static final int SEND_FIRST = 0x00, SEND_MIDDLE = 0x01, SEND_LAST = 0x02, SEND_LAST_IMM = 0x03,
            SEND_ONLY = 0x04, SEND_ONLY_IMM = 0x05, WRITE_FIRST = 0x06, WRITE_MIDDLE = 0x07, WRITE_LAST = 0x08,
            WRITE_LAST_IMM = 0x09, WRITE_ONLY = 0x0A, WRITE_ONLY_IMM = 0x0B, READ_REQUEST = 0x0C,
            READ_RESP_FIRST = 0x0D, READ_RESP_MIDDLE = 0x0E, READ_RESP_LAST = 0x0F, READ_RESP_ONLY = 0x10,
            ACK = 0x11, ATOMIC_ACK = 0x12, COMPARE_SWAP = 0x13, FETCH_ADD = 0x14, FLUSH = 0x1C, ATOMIC_WRITE = 0x1D,
            MASKED_COMPARE_SWAP = 0xF0, MASKED_FETCH_ADD = 0xF1;

    /** Header bytes from the BTH start, per opcode (rxe-facts §1.2 "hdr bytes"). */
    static final Map<Integer, Integer> HDR = Map.ofEntries(
            Map.entry(SEND_FIRST, 12), Map.entry(SEND_MIDDLE, 12), Map.entry(SEND_LAST, 12),
            Map.entry(SEND_LAST_IMM, 16), Map.entry(SEND_ONLY, 12), Map.entry(SEND_ONLY_IMM, 16),
            Map.entry(WRITE_FIRST, 28), Map.entry(WRITE_MIDDLE, 12), Map.entry(WRITE_LAST, 12),
            Map.entry(WRITE_LAST_IMM, 16), Map.entry(WRITE_ONLY, 28), Map.entry(WRITE_ONLY_IMM, 32),
            Map.entry(READ_REQUEST, 28), Map.entry(READ_RESP_FIRST, 16), Map.entry(READ_RESP_MIDDLE, 12),
            Map.entry(READ_RESP_LAST, 16), Map.entry(READ_RESP_ONLY, 16), Map.entry(ACK, 16),
            Map.entry(ATOMIC_ACK, 24), Map.entry(COMPARE_SWAP, 40), Map.entry(FETCH_ADD, 40),
            // rxe-facts §7.2, §7.3; extensions.md §2
            Map.entry(FLUSH, 32), Map.entry(ATOMIC_WRITE, 28), Map.entry(MASKED_COMPARE_SWAP, 56),
            Map.entry(MASKED_FETCH_ADD, 40));

    /** The requester's first PSN: three below the 24-bit wrap, so every test crosses it. */
    static final int PSN_A = 0xFF_FFFD;
    static final int PSN_B = 0x00_0100;

    /** One captured packet with its fields decoded at fact-sheet offsets. */
    record Pkt(byte[] raw, InetSocketAddress from, InetSocketAddress to) {
        ByteBuf buf() {
            return Unpooled.wrappedBuffer(raw);
        }

        int u8(int off) {
            return raw[off] & 0xFF;
        }

        int be16(int off) {
            return (u8(off) << 8) | u8(off + 1);
        }

        int be24(int off) {
            return (u8(off) << 16) | (u8(off + 1) << 8) | u8(off + 2);
        }

        int be32(int off) {
            return (u8(off) << 24) | (u8(off + 1) << 16) | (u8(off + 2) << 8) | u8(off + 3);
        }

        long be64(int off) {
            return ((long) be32(off) << 32) | (be32(off + 4) & 0xFFFF_FFFFL);
        }

        int opcode() { return u8(0); }
        boolean se() { return (u8(1) & 0x80) != 0; }
        boolean migReq() { return (u8(1) & 0x40) != 0; }
        int pad() { return (u8(1) >> 4) & 3; }
        int tver() { return u8(1) & 0x0F; }
        int pkey() { return be16(2); }
        int resv8a() { return u8(4); }
        int destQp() { return be24(5); }
        boolean ackReq() { return (u8(8) & 0x80) != 0; }
        int resv7() { return u8(8) & 0x7F; }
        int psn() { return be24(9); }
        int hdr() { return HDR.get(opcode()); }
        int payloadLen() { return raw.length - hdr() - pad() - 4; }

        byte[] payload() {
            byte[] p = new byte[payloadLen()];
            System.arraycopy(raw, hdr(), p, 0, p.length);
            return p;
        }

        // RETH right after the BTH (byte 12) on every opcode that carries one here
        long rethVa() { return be64(12); }
        int rethRkey() { return be32(20); }
        long rethLen() { return be32(24) & 0xFFFF_FFFFL; }

        // AETH at byte 12 on ACK / READ_RESP_{FIRST,LAST,ONLY} / ATOMIC_ACK
        int syndrome() { return u8(12); }
        int msn() { return be24(13); }

        /** ImmDt: last 4 header bytes of the *_IMM opcodes (after RETH on WRITE_ONLY_IMM). */
        int imm() { return be32(hdr() - 4); }

        @Override
        public String toString() {
            return String.format("Pkt{op=0x%02x psn=0x%06x ack=%b len=%d}", opcode(), psn(), ackReq(), raw.length);
        }
    }

    Pair pair;

    /** Connects at MTU 256 with PSNs across the wrap, and starts capturing both directions. */
    Pair start() {
        return start(new Cfg());
    }

    Pair start(Cfg cfg) {
        cfg.mtu(Mtu.MTU_256).psnA(PSN_A).psnB(PSN_B);
        // a local ACK timeout of ~4 s: rxe mode never retransmits here; adaptive recovery's RTT
        // timers may, and sent() leaves those repeats out
        cfg.timeout(20);
        pair = connect(cfg);
        recA.start();
        recB.start();
        return pair;
    }

    /**
     * @return the first transmissions of the packets of this test's QPs that {@code rec} sent, in
     *     order. Adaptive recovery's timers follow the measured RTT, not the QP's 4 s ACK timeout,
     *     so on a busy host a tail-loss probe or an RTT timeout's go-back-N may repeat requests
     *     (same opcode and PSN) and the responder then answers the duplicates again; such repeats
     *     are legal RC (rxe-facts §6) and are left out of the list. On virtual time nothing
     *     delays an ACK, so there a repeat fails the test.
     */
    List<Pkt> sent(RecordingTransport rec, Side to) {
        List<Pkt> out = new ArrayList<>();
        for (RecordingTransport.Sent s : rec.stop()) {
            Pkt p = new Pkt(s.bytes(), s.from(), s.to());
            if (p.destQp() != to.qp.qpNum()) {
                continue;
            }
            Pkt first = out.stream().filter(q -> isRepeat(q, p)).findFirst().orElse(null);
            if (first == null) {
                out.add(p);
                continue;
            }
            assertThat(repeatsAllowed()).as("%s repeats %s on a timing-exact transport", p, first).isTrue();
        }
        return out;
    }

    /** Whether a recovery timer may fire before the ACK arrives (every transport on real time). */
    boolean repeatsAllowed() {
        return true;
    }

    static boolean isResponse(Pkt p) {
        return p.opcode() >= READ_RESP_FIRST && p.opcode() <= ATOMIC_ACK;
    }

    /**
     * A packet with an earlier one's opcode and PSN (and, for a response, AETH syndrome): a
     * request sent again by a probe or a go-back-N, or the responder's answer to such a duplicate
     * (whose MSN may be newer).
     */
    static boolean isRepeat(Pkt earlier, Pkt p) {
        if (earlier.opcode() != p.opcode() || earlier.psn() != p.psn()) {
            return false;
        }
        boolean aeth = p.opcode() == ACK || p.opcode() == ATOMIC_ACK || p.opcode() == READ_RESP_FIRST
                || p.opcode() == READ_RESP_LAST || p.opcode() == READ_RESP_ONLY;
        return !aeth || earlier.syndrome() == p.syndrome();
    }

    /** Checks that hold for every packet: structure, BTH invariants, padding, ICRC. */
    static void checkCommon(Pkt p, int destQp, boolean response) {
        assertThat(HDR).as("known RC opcode in %s", p).containsKey(p.opcode());
        PacketView v = new PacketView();
        assertThat(v.parse(p.buf(), 0, p.raw().length)).as("structure of %s", p).isNull();
        assertThat(p.tver()).as("TVer").isZero();
        assertThat(p.migReq()).as("MigReq").isFalse();
        assertThat(p.pkey()).as("P_Key").isEqualTo(0xFFFF);
        assertThat(p.resv8a()).as("FECN/BECN/resv6").isZero();
        assertThat(p.resv7()).as("resv7").isZero();
        assertThat(p.destQp()).as("DestQP").isEqualTo(destQp);
        assertThat(p.payloadLen()).as("payload length of %s", p).isGreaterThanOrEqualTo(0);
        assertThat(p.pad()).as("PadCnt of %s", p).isEqualTo(-p.payloadLen() & 3);
        for (int i = 0; i < p.pad(); i++) {
            assertThat(p.raw()[p.hdr() + p.payloadLen() + i]).as("pad byte").isZero();
        }
        assertThat(new Icrc().check(p.buf(), 0, p.raw().length, p.from(), p.to())).as("ICRC of %s", p).isTrue();
        if (response) {
            assertThat(p.ackReq()).as("AckReq on a response").isFalse();
            assertThat(p.se()).as("SE on a response").isFalse();
        }
    }

    static void checkRequests(List<Pkt> req, Side to) {
        for (Pkt p : req) {
            checkCommon(p, to.qp.qpNum(), false);
        }
    }

    static void checkResponses(List<Pkt> resp, Side to) {
        for (Pkt p : resp) {
            checkCommon(p, to.qp.qpNum(), true);
        }
    }

    static int psn(int base, int plus) {
        return (base + plus) & 0xFF_FFFF;
    }

    static List<Integer> opcodes(List<Pkt> l) {
        return l.stream().map(Pkt::opcode).toList();
    }

    void ok(WorkCompletion wc) {
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.SUCCESS);
    }

    // =====================================================================================

    @Test
    void sendOpcodesOnTheWire() {
        Pair p = start();
        Side a = p.a();
        Side b = p.b();
        for (int i = 0; i < 4; i++) {
            b.qp.postRecv(new RecvWr().set(i, b.sge(HALF + 4096L * i, 4096)));
        }
        // 1: 600 bytes, solicited: FIRST 256, MIDDLE 256, LAST 88
        a.qp.postSend(new SendWr().set(1, WrOpcode.SEND, SendFlags.SIGNALED | SendFlags.SOLICITED, a.sge(0, 600)));
        ok(a.nextSend());
        // 2: 13 bytes with immediate: ONLY_IMM, pad 3
        a.qp.postSend(new SendWr().set(2, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED, a.sge(0, 13)).imm(0xA1B2C3D4));
        ok(a.nextSend());
        // 3: 300 bytes with immediate: FIRST 256, LAST_IMM 44
        a.qp.postSend(new SendWr().set(3, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED, a.sge(0, 300)).imm(0x11223344));
        ok(a.nextSend());
        // 4: zero bytes: ONLY with no payload
        a.qp.postSend(new SendWr().set(4, WrOpcode.SEND, SendFlags.SIGNALED));
        ok(a.nextSend());
        for (int i = 0; i < 4; i++) {
            ok(b.nextRecv());
        }

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY_IMM, SEND_FIRST,
                SEND_LAST_IMM, SEND_ONLY);
        int[] len = {256, 256, 88, 13, 256, 44, 0};
        boolean[] last = {false, false, true, true, false, true, true};
        for (int i = 0; i < req.size(); i++) {
            Pkt q = req.get(i);
            assertThat(q.psn()).as("PSN of %s", q).isEqualTo(psn(PSN_A, i));
            assertThat(q.payloadLen()).as("payload of %s", q).isEqualTo(len[i]);
            assertThat(q.ackReq()).as("AckReq of %s", q).isEqualTo(last[i]);
            assertThat(q.se()).as("SE only on the last packet of the solicited SEND").isEqualTo(i == 2);
        }
        assertThat(req.get(3).imm()).isEqualTo(0xA1B2C3D4);
        assertThat(req.get(3).pad()).isEqualTo(3);
        assertThat(req.get(5).imm()).isEqualTo(0x11223344);
        assertThat(concatPayload(req.subList(0, 3))).isEqualTo(bytes(a.mem(), 0, 600));

        // one ACK per AckReq packet, PSN of that packet, syndrome 0x1F, MSN = messages completed
        assertThat(opcodes(resp)).containsExactly(ACK, ACK, ACK, ACK);
        int[] ackPsn = {psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 5), psn(PSN_A, 6)};
        for (int i = 0; i < resp.size(); i++) {
            Pkt r = resp.get(i);
            assertThat(r.psn()).as("PSN of %s", r).isEqualTo(ackPsn[i]);
            assertThat(r.syndrome()).isEqualTo(0x1F);
            assertThat(r.msn()).isEqualTo(i + 1);
            assertThat(r.payloadLen()).isZero();
        }
    }

    @Test
    void writeOpcodesOnTheWire() {
        Pair p = start();
        Side a = p.a();
        Side b = p.b();
        b.qp.postRecv(new RecvWr().set(1));
        b.qp.postRecv(new RecvWr().set(2));
        int rkey = b.mr.rkey();
        // 1: 521 bytes: FIRST (RETH, whole length), MIDDLE, LAST 9 bytes pad 3
        a.qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, a.sge(0, 521))
                .remote(b.va(1000), rkey));
        ok(a.nextSend());
        // 2: 7 bytes with immediate: ONLY_IMM with RETH then ImmDt, pad 1
        a.qp.postSend(new SendWr().set(2, WrOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED, a.sge(0, 7))
                .remote(b.va(3000), rkey).imm(0x0D0E0A0D));
        ok(a.nextSend());
        // 3: 400 bytes with immediate: FIRST (RETH), LAST_IMM 144 bytes
        a.qp.postSend(new SendWr().set(3, WrOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED, a.sge(0, 400))
                .remote(b.va(5000), rkey).imm(-2));
        ok(a.nextSend());
        // 4: zero bytes, rkey 0: ONLY with RETH length 0
        a.qp.postSend(new SendWr().set(4, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED).remote(0, 0));
        ok(a.nextSend());
        ok(b.nextRecv());
        ok(b.nextRecv());

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY_IMM, WRITE_FIRST,
                WRITE_LAST_IMM, WRITE_ONLY);
        int[] len = {256, 256, 9, 7, 256, 144, 0};
        int[] pad = {0, 0, 3, 1, 0, 0, 0};
        boolean[] last = {false, false, true, true, false, true, true};
        for (int i = 0; i < req.size(); i++) {
            Pkt q = req.get(i);
            assertThat(q.psn()).as("PSN of %s", q).isEqualTo(psn(PSN_A, i));
            assertThat(q.payloadLen()).as("payload of %s", q).isEqualTo(len[i]);
            assertThat(q.pad()).as("PadCnt of %s", q).isEqualTo(pad[i]);
            assertThat(q.ackReq()).as("AckReq of %s", q).isEqualTo(last[i]);
            assertThat(q.se()).isFalse();
        }
        // RETH only on FIRST/ONLY, carrying the whole message length (§4.2)
        assertThat(List.of(req.get(0).rethVa(), (long) req.get(0).rethRkey(), req.get(0).rethLen()))
                .containsExactly(b.va(1000), (long) rkey, 521L);
        assertThat(List.of(req.get(3).rethVa(), (long) req.get(3).rethRkey(), req.get(3).rethLen()))
                .containsExactly(b.va(3000), (long) rkey, 7L);
        assertThat(req.get(3).imm()).isEqualTo(0x0D0E0A0D);
        assertThat(List.of(req.get(4).rethVa(), (long) req.get(4).rethRkey(), req.get(4).rethLen()))
                .containsExactly(b.va(5000), (long) rkey, 400L);
        assertThat(req.get(5).imm()).isEqualTo(-2);
        assertThat(List.of(req.get(6).rethVa(), (long) req.get(6).rethRkey(), req.get(6).rethLen()))
                .containsExactly(0L, 0L, 0L);
        assertThat(concatPayload(req.subList(0, 3))).isEqualTo(bytes(a.mem(), 0, 521));

        assertThat(opcodes(resp)).containsExactly(ACK, ACK, ACK, ACK);
        int[] ackPsn = {psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 5), psn(PSN_A, 6)};
        for (int i = 0; i < resp.size(); i++) {
            assertThat(resp.get(i).psn()).isEqualTo(ackPsn[i]);
            assertThat(resp.get(i).syndrome()).isEqualTo(0x1F);
            assertThat(resp.get(i).msn()).isEqualTo(i + 1);
        }
    }

    @Test
    void readOnTheWire() {
        Pair p = start();
        Side a = p.a();
        Side b = p.b();
        int rkey = b.mr.rkey();
        // 1: 700 bytes = 3 response packets: the request uses 3 PSNs
        a.qp.postSend(new SendWr().set(1, WrOpcode.RDMA_READ, SendFlags.SIGNALED, a.sge(HALF, 700))
                .remote(b.va(100), rkey));
        ok(a.nextSend());
        // 2: 99 bytes = READ_RESPONSE_ONLY, pad 1
        a.qp.postSend(new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED, a.sge(HALF, 99))
                .remote(b.va(2000), rkey));
        ok(a.nextSend());
        // 3: zero bytes, rkey 0: ONLY with no payload
        a.qp.postSend(new SendWr().set(3, WrOpcode.RDMA_READ, SendFlags.SIGNALED).remote(0, 0));
        ok(a.nextSend());

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(READ_REQUEST, READ_REQUEST, READ_REQUEST);
        assertThat(req.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 0), psn(PSN_A, 3), psn(PSN_A, 4));
        assertThat(req).allSatisfy(q -> {
            assertThat(q.ackReq()).isTrue();
            assertThat(q.payloadLen()).isZero();
        });
        assertThat(List.of(req.get(0).rethVa(), (long) req.get(0).rethRkey(), req.get(0).rethLen()))
                .containsExactly(b.va(100), (long) rkey, 700L);
        assertThat(List.of(req.get(1).rethVa(), (long) req.get(1).rethRkey(), req.get(1).rethLen()))
                .containsExactly(b.va(2000), (long) rkey, 99L);
        assertThat(req.get(2).rethLen()).isZero();

        assertThat(opcodes(resp)).containsExactly(READ_RESP_FIRST, READ_RESP_MIDDLE, READ_RESP_LAST, READ_RESP_ONLY,
                READ_RESP_ONLY);
        assertThat(resp.stream().map(Pkt::psn).toList())
                .containsExactly(psn(PSN_A, 0), psn(PSN_A, 1), psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 4));
        assertThat(resp.stream().map(Pkt::payloadLen).toList()).containsExactly(256, 256, 188, 99, 0);
        assertThat(resp.get(3).pad()).isEqualTo(1);
        // AETH (0x1F + MSN) on FIRST, LAST and ONLY; MIDDLE has no AETH (12-byte header)
        for (int i : new int[] {0, 2, 3, 4}) {
            assertThat(resp.get(i).syndrome()).as("syndrome of %s", resp.get(i)).isEqualTo(0x1F);
        }
        assertThat(resp.get(0).msn()).isEqualTo(1);
        assertThat(resp.get(2).msn()).isEqualTo(1);
        assertThat(resp.get(3).msn()).isEqualTo(2);
        assertThat(resp.get(4).msn()).isEqualTo(3);
        assertThat(concatPayload(resp.subList(0, 3))).isEqualTo(bytes(b.mem(), 100, 700));
        assertThat(resp.get(3).payload()).isEqualTo(bytes(b.mem(), 2000, 99));
    }

    @Test
    void atomicsOnTheWire() {
        Pair p = start();
        Side a = p.a();
        Side b = p.b();
        int rkey = b.mr.rkey();
        b.word(64, 0x0102_0304_0506_0708L);
        a.qp.postSend(new SendWr().set(1, WrOpcode.ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED, a.sge(HALF, 8))
                .remote(b.va(64), rkey).atomic(0x0102_0304_0506_0708L, 0x1122_3344_5566_7788L));
        ok(a.nextSend());
        a.qp.postSend(new SendWr().set(2, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, a.sge(HALF, 8))
                .remote(b.va(64), rkey).atomic(0x10, 0x9999));
        ok(a.nextSend());

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(COMPARE_SWAP, FETCH_ADD);
        assertThat(req.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 0), psn(PSN_A, 1));
        assertThat(req).allSatisfy(q -> {
            assertThat(q.ackReq()).isTrue();
            assertThat(q.raw().length).as("BTH + AtomicETH + ICRC").isEqualTo(12 + 28 + 4);
        });
        // AtomicETH: VA(8) rkey(4) swap_or_add(8) compare(8) (§2.2)
        Pkt cas = req.get(0);
        assertThat(cas.be64(12)).isEqualTo(b.va(64));
        assertThat(cas.be32(20)).isEqualTo(rkey);
        assertThat(cas.be64(24)).as("swap").isEqualTo(0x1122_3344_5566_7788L);
        assertThat(cas.be64(32)).as("compare").isEqualTo(0x0102_0304_0506_0708L);
        Pkt faa = req.get(1);
        assertThat(faa.be64(12)).isEqualTo(b.va(64));
        assertThat(faa.be32(20)).isEqualTo(rkey);
        assertThat(faa.be64(24)).as("add").isEqualTo(0x10L);
        assertThat(faa.be64(32)).as("FetchAdd leaves compare 0").isZero();

        // ATOMIC_ACK: AETH (0x1F, MSN) then the original value, big-endian
        assertThat(opcodes(resp)).containsExactly(ATOMIC_ACK, ATOMIC_ACK);
        assertThat(resp.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 0), psn(PSN_A, 1));
        assertThat(resp.stream().map(Pkt::syndrome).toList()).containsOnly(0x1F);
        assertThat(resp.stream().map(Pkt::msn).toList()).containsExactly(1, 2);
        assertThat(resp.get(0).be64(16)).isEqualTo(0x0102_0304_0506_0708L);
        assertThat(resp.get(1).be64(16)).isEqualTo(0x1122_3344_5566_7788L);
        assertThat(b.word(64)).isEqualTo(0x1122_3344_5566_7798L);
    }

    /** The rxe4j masked atomics (extensions.md §2), ATOMIC WRITE and FLUSH (rxe-facts §7.2, §7.3) on the wire. */
    @Test
    void extendedOpsOnTheWire() {
        Pair p = start(new Cfg().qpAccessB(ALL | Access.FLUSH_GLOBAL).mrAccess(ALL | Access.FLUSH_GLOBAL));
        Side a = p.a();
        Side b = p.b();
        int rkey = b.mr.rkey();
        b.word(64, 0x0102_0304_0506_0708L);
        a.qp.postSend(new SendWr().set(1, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED, a.sge(HALF, 8))
                .remote(b.va(64), rkey).atomic(0x1111_1111_1111_0708L, 0xAAAA_BBBB_CCCC_DDDDL)
                .masks(0x0000_0000_0000_FFFFL, 0xFFFF_0000_0000_0000L));
        ok(a.nextSend());
        a.qp.postSend(new SendWr().set(2, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                a.sge(HALF + 8, 8)).remote(b.va(64), rkey).atomic(0x0001_0001_0001_0001L, 0x9999)
                .masks(0x8000_8000_8000_8000L, 0x5555));
        ok(a.nextSend());
        long v = 0x1122_3344_5566_7788L;
        SendWr aw = new SendWr().set(3, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(b.va(128), rkey);
        aw.atomicWriteValue = v;
        a.qp.postSend(aw);
        ok(a.nextSend());
        a.qp.postSend(new SendWr().set(4, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(b.va(256), rkey)
                .flush(Flush.GLOBAL, Flush.MR, 0x1234));
        ok(a.nextSend());
        a.qp.postSend(new SendWr().set(5, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(b.va(512), rkey)
                .flush(Flush.GLOBAL, Flush.RANGE, 100));
        ok(a.nextSend());

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(MASKED_COMPARE_SWAP, MASKED_FETCH_ADD, ATOMIC_WRITE, FLUSH, FLUSH);
        assertThat(req.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 0), psn(PSN_A, 1),
                psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 4));
        assertThat(req).allSatisfy(q -> {
            assertThat(q.ackReq()).as("AckReq on %s", q).isTrue();
            assertThat(q.pad()).as("PadCnt on %s", q).isZero();
            assertThat(q.se()).isFalse();
        });

        // 0xF0: BTH + MaskedCmpSwapETH (44 bytes): VA, rkey, swap, compare, swap_mask, compare_mask
        Pkt mcs = req.get(0);
        assertThat(mcs.raw().length).as("BTH + 44 + ICRC").isEqualTo(12 + 44 + 4);
        assertThat(mcs.be64(12)).as("VA").isEqualTo(b.va(64));
        assertThat(mcs.be32(20)).as("rkey").isEqualTo(rkey);
        assertThat(mcs.be64(24)).as("swap").isEqualTo(0xAAAA_BBBB_CCCC_DDDDL);
        assertThat(mcs.be64(32)).as("compare").isEqualTo(0x1111_1111_1111_0708L);
        assertThat(mcs.be64(40)).as("swap_mask").isEqualTo(0xFFFF_0000_0000_0000L);
        assertThat(mcs.be64(48)).as("compare_mask").isEqualTo(0x0000_0000_0000_FFFFL);
        // 0xF1: BTH + AtomicETH layout: VA, rkey, add, field boundary
        Pkt mfa = req.get(1);
        assertThat(mfa.raw().length).as("BTH + 28 + ICRC").isEqualTo(12 + 28 + 4);
        assertThat(mfa.be64(12)).isEqualTo(b.va(64));
        assertThat(mfa.be32(20)).isEqualTo(rkey);
        assertThat(mfa.be64(24)).as("add").isEqualTo(0x0001_0001_0001_0001L);
        assertThat(mfa.be64(32)).as("field boundary").isEqualTo(0x8000_8000_8000_8000L);
        // 0x1D: RETH (length 8) + 8 raw payload bytes: the value's bytes in host memory order
        Pkt awp = req.get(2);
        assertThat(awp.raw().length).as("BTH + RETH + 8 + ICRC").isEqualTo(12 + 16 + 8 + 4);
        assertThat(awp.rethVa()).isEqualTo(b.va(128));
        assertThat(awp.rethRkey()).isEqualTo(rkey);
        assertThat(awp.rethLen()).isEqualTo(8);
        byte[] nativeBytes = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder()).putLong(v).array();
        assertThat(awp.payload()).as("raw payload, no byte swap").isEqualTo(nativeBytes);
        assertThat(b.word(128)).isEqualTo(v);
        // 0x1C: FETH (byte 3 = SEL << 4 | PLT) then RETH, no payload
        Pkt fl = req.get(3);
        assertThat(fl.raw().length).as("BTH + FETH + RETH + ICRC").isEqualTo(12 + 4 + 16 + 4);
        assertThat(fl.u8(12)).isZero();
        assertThat(fl.u8(13)).isZero();
        assertThat(fl.u8(14)).isZero();
        assertThat(fl.u8(15)).as("SEL MR, PLT global").isEqualTo(Flush.MR << 4 | Flush.GLOBAL);
        assertThat(fl.be64(16)).as("RETH VA").isEqualTo(b.va(256));
        assertThat(fl.be32(24)).as("RETH rkey").isEqualTo(rkey);
        assertThat(fl.be32(28) & 0xFFFF_FFFFL).as("RETH length").isEqualTo(0x1234);
        Pkt fr = req.get(4);
        assertThat(fr.u8(15)).as("SEL range, PLT global").isEqualTo(Flush.RANGE << 4 | Flush.GLOBAL);
        assertThat(fr.be64(16)).isEqualTo(b.va(512));
        assertThat(fr.be32(28)).isEqualTo(100);

        // responses: ATOMIC_ACK with the original for both masked atomics; zero-length READ_RESPONSE_ONLY
        assertThat(opcodes(resp)).containsExactly(ATOMIC_ACK, ATOMIC_ACK, READ_RESP_ONLY, READ_RESP_ONLY,
                READ_RESP_ONLY);
        assertThat(resp.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 0), psn(PSN_A, 1),
                psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 4));
        assertThat(resp.stream().map(Pkt::syndrome).toList()).containsOnly(0x1F);
        assertThat(resp.stream().map(Pkt::msn).toList()).containsExactly(1, 2, 3, 4, 5);
        assertThat(resp.get(0).raw().length).isEqualTo(12 + 4 + 8 + 4);
        assertThat(resp.get(0).be64(16)).as("original before the masked CAS").isEqualTo(0x0102_0304_0506_0708L);
        assertThat(resp.get(1).be64(16)).as("original before the masked FAA").isEqualTo(0xAAAA_0304_0506_0708L);
        assertThat(b.word(64)).isEqualTo(0xAAAB_0305_0507_0709L);
        for (Pkt r : resp.subList(2, 5)) {
            assertThat(r.raw().length).as("BTH + AETH + ICRC, no payload").isEqualTo(12 + 4 + 4);
            assertThat(r.payloadLen()).isZero();
            assertThat(r.pad()).isZero();
        }
        assertThat(a.word(HALF)).isEqualTo(0x0102_0304_0506_0708L);
        assertThat(a.word(HALF + 8)).isEqualTo(0xAAAA_0304_0506_0708L);
    }

    @Test
    void mixedOperationsKeepOnePsnSequence() {
        Pair p = start();
        Side a = p.a();
        Side b = p.b();
        b.qp.postRecv(new RecvWr().set(1, b.sge(HALF, 4096)));
        // posted back to back, unsignaled except the last: one PSN stream, READ taking 2
        a.qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, 0, a.sge(0, 300)).remote(b.va(0), b.mr.rkey()));
        a.qp.postSend(new SendWr().set(2, WrOpcode.RDMA_READ, 0, a.sge(HALF, 400)).remote(b.va(0), b.mr.rkey()));
        a.qp.postSend(new SendWr().set(3, WrOpcode.ATOMIC_FETCH_AND_ADD, 0, a.sge(HALF + 1024, 8))
                .remote(b.va(4096), b.mr.rkey()).atomic(1, 0));
        a.qp.postSend(new SendWr().set(4, WrOpcode.SEND, SendFlags.SIGNALED, a.sge(0, 10)));
        WorkCompletion wc = a.nextSend();
        assertThat(wc.wrId).isEqualTo(4);
        ok(wc);
        ok(b.nextRecv());

        List<Pkt> req = sent(recA, b);
        List<Pkt> resp = sent(recB, a);
        checkRequests(req, b);
        checkResponses(resp, a);
        assertThat(opcodes(req)).containsExactly(WRITE_FIRST, WRITE_LAST, READ_REQUEST, FETCH_ADD, SEND_ONLY);
        assertThat(req.stream().map(Pkt::psn).toList())
                .containsExactly(psn(PSN_A, 0), psn(PSN_A, 1), psn(PSN_A, 2), psn(PSN_A, 4), psn(PSN_A, 5));
        assertThat(req.stream().map(Pkt::ackReq).toList()).containsExactly(false, true, true, true, true);
        // responses in request order; the MSN counts completed messages
        assertThat(opcodes(resp)).containsExactly(ACK, READ_RESP_FIRST, READ_RESP_LAST, ATOMIC_ACK, ACK);
        assertThat(resp.stream().map(Pkt::psn).toList())
                .containsExactly(psn(PSN_A, 1), psn(PSN_A, 2), psn(PSN_A, 3), psn(PSN_A, 4), psn(PSN_A, 5));
        assertThat(List.of(resp.get(0).msn(), resp.get(1).msn(), resp.get(2).msn(), resp.get(3).msn(),
                resp.get(4).msn())).containsExactly(1, 2, 2, 3, 4);
    }

    @Test
    void ackReqEvery8thPacketOfALongMessage() {
        // rxe_req.c asks every 65th packet (rxe-facts §5.2); rxe4j keeps at most 64 packets unacknowledged
        // (extensions §6), so it asks on every 8th packet and on the last one (Requester.ACK_REQ_INTERVAL)
        Pair p = start();
        int npkts = 70;
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, npkts * 256))
                .remote(p.b().va(0), p.b().mr.rkey()));
        ok(p.a().nextSend());
        List<Pkt> req = sent(recA, p.b());
        List<Pkt> resp = sent(recB, p.a());
        checkRequests(req, p.b());
        checkResponses(resp, p.a());
        assertThat(req).hasSize(npkts);
        List<Integer> acked = new ArrayList<>();
        for (int i = 0; i < npkts; i++) {
            assertThat(req.get(i).psn()).isEqualTo(psn(PSN_A, i));
            assertThat(req.get(i).opcode()).isEqualTo(i == 0 ? WRITE_FIRST : i == npkts - 1 ? WRITE_LAST : WRITE_MIDDLE);
            if (req.get(i).ackReq()) {
                acked.add(i);
            }
        }
        if (repeatsAllowed()) {
            // real time: a stall of the host may fire a retransmit timer, and a path that was silent
            // for it restarts from a one-segment window, whose packets also ask for ACKs; what holds
            // then is the bound: no 8 packets in a row without AckReq, and the last one with it
            for (int i = 0, run = 0; i < npkts; i++) {
                run = acked.contains(i) ? 0 : run + 1;
                assertThat(run).as("packets since the last AckReq at %d: %s", i, acked).isLessThan(8);
            }
            assertThat(acked).contains(npkts - 1);
            return;
        }
        assertThat(acked).containsExactly(7, 15, 23, 31, 39, 47, 55, 63, npkts - 1);
        // the mid-message ACKs carry the MSN of the messages completed so far: 0
        assertThat(opcodes(resp)).containsExactly(ACK, ACK, ACK, ACK, ACK, ACK, ACK, ACK, ACK);
        assertThat(resp.stream().map(Pkt::psn).toList()).containsExactly(psn(PSN_A, 7), psn(PSN_A, 15),
                psn(PSN_A, 23), psn(PSN_A, 31), psn(PSN_A, 39), psn(PSN_A, 47), psn(PSN_A, 55), psn(PSN_A, 63),
                psn(PSN_A, npkts - 1));
        assertThat(resp.stream().map(Pkt::msn).toList()).containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 1);
    }

    @Test
    void naksOnTheWire() {
        // remote access error: NAK 0x62 with the request's PSN
        Pair p = start();
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, 16))
                .remote(p.b().va(0), p.b().mr.rkey() ^ 1));
        assertThat(p.a().nextSend().status).isEqualTo(WcStatus.REM_ACCESS_ERR);
        List<Pkt> resp = sent(recB, p.a());
        checkResponses(resp, p.a());
        assertThat(opcodes(resp)).containsExactly(ACK);
        assertThat(resp.get(0).syndrome()).isEqualTo(0x62);
        assertThat(resp.get(0).psn()).isEqualTo(PSN_A);
        assertThat(resp.get(0).msn()).isZero();

        // invalid request (QP lacks REMOTE_READ): NAK 0x61
        p = start(new Cfg().qpAccessB(Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        p.a().qp.postSend(new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 16))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertThat(p.a().nextSend().status).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        resp = sent(recB, p.a());
        checkResponses(resp, p.a());
        assertThat(opcodes(resp)).containsExactly(ACK);
        assertThat(resp.get(0).syndrome()).isEqualTo(0x61);
        assertThat(resp.get(0).psn()).isEqualTo(PSN_A);

        // RNR NAK: 0x20 | the responder's min_rnr_timer, PSN of the SEND, rnr_retry 0
        p = start(new Cfg().rnrRetry(0).minRnrTimer(5));
        p.a().qp.postSend(new SendWr().set(3, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, 16)));
        assertThat(p.a().nextSend().status).isEqualTo(WcStatus.RNR_RETRY_EXC_ERR);
        resp = sent(recB, p.a());
        checkResponses(resp, p.a());
        assertThat(opcodes(resp)).containsExactly(ACK);
        assertThat(resp.get(0).syndrome()).isEqualTo(0x20 | 5);
        assertThat(resp.get(0).psn()).isEqualTo(PSN_A);
    }

    static byte[] concatPayload(List<Pkt> l) {
        return VerbsConformanceSuite.concat(l.stream().map(Pkt::payload).toArray(byte[][]::new));
    }
}
