package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Golden packets for the eight TID RDMA opcodes 0xE0–0xE7 ({@code tid-opfn-facts.md} §3.1–§3.5,
 * §6.8; {@code extensions.md} §5). Each packet is built from its fields with {@link Bth},
 * {@link Kdeth}, {@link TidHeader}, {@link TidEntry} and {@link Icrc#write}, and compared byte for
 * byte with a hex string written by hand from the sheet's layout tables (BTH big-endian, kdeth0 and
 * kdeth1 little-endian, extension fields big-endian, TID entries little-endian). The ICRCs were
 * computed outside this code base (zlib CRC-32 over the masked IPv4/UDP/BTH pseudo-header, the
 * recipe of {@code rxe-facts.md} §3) and are cross-checked here with {@link IcrcReference}.
 *
 * <p>Cast: requester verbs QP 0x22 (KDETH QP 0x800005), responder verbs QP 0x11 (KDETH QP
 * 0x800003). WRITE data destination = responder, flow 3 → tid_flow_qp 0x801803; READ data
 * destination = requester, flow 31 → tid_flow_qp 0x80F805. Flow generation 0x123 (WRITE) and
 * 0x1FFE (READ), J_KEY 32 (§9.7).
 */
class TidWireGoldenTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int AT = 3;
    private static final byte SENTINEL = 0x5A;
    private static final InetSocketAddress SRC = new InetSocketAddress("10.0.0.1", 49152);
    private static final InetSocketAddress DST = new InetSocketAddress("10.0.0.2", 4791);
    private static final int JKEY = 32;
    private static final int KDETH_QP_REQUESTER = 0x800005;
    private static final int KDETH_QP_RESPONDER = 0x800003;
    private static final int WRITE_FLOW_QP = 0x80_1803;
    private static final int READ_FLOW_QP = 0x80_F805;
    private static final int QP_REQUESTER = 0x22;
    private static final int QP_RESPONDER = 0x11;

    /** A golden packet: the expected UDP payload (BTH … ICRC) and the builder that must produce it. */
    record Golden(Opcode op, String expectedHex, ToIntFunction<ByteBuf> build, int payloadLength) {
        byte[] expected() {
            return HEX.parseHex(expectedHex.replaceAll("[\\s|]", ""));
        }

        @Override
        public String toString() {
            return op.name();
        }
    }

    // ------------------------------------------------------------------------------------ goldens
    // Layout reminders (block offsets from BTH + 12): 0 kdeth0 (LE), 4 kdeth1 (LE), 8.. per opcode,
    // 32 verbs_qp. "|" separates BTH | KDETH block | payload + pad | ICRC.

    static final Golden WRITE_REQ = new Golden(Opcode.TID_RDMA_WRITE_REQ,
            // BTH: E0, flags 0, P_Key FFFF, DestQP 0x800003, AckReq + verbs PSN 0x000100
            "e000ffff 00800003 80000100 |"
            // kdeth0 = KVER 1 only = 0x40000000 (LE); kdeth1 = J_KEY 0x20, HCRC 0 (LE)
            + "00000040 20000000"
            // RETH: VA 0x00007F0012340000, R_Key 0x1234, length 512 KiB; reserved @24, @28; verbs_qp 0x11
            + " 00007f0012340000 00001234 00080000 00000000 00000000 00000011 |"
            + "48acbd0e",
            b -> {
                Opcode op = Opcode.TID_RDMA_WRITE_REQ;
                int k = bth(b, op, 0, KDETH_QP_RESPONDER, true, 0x100);
                TidHeader.clear(b, k);
                Kdeth.writeControl(b, k, JKEY);
                TidHeader.writeReth(b, k, 0x0000_7F00_1234_0000L, 0x1234, 512 * 1024);
                TidHeader.setVerbsQp(b, k, QP_RESPONDER);
                return op.headerLength() + Icrc.LENGTH;
            }, 0);

    static final Golden WRITE_RESP = new Golden(Opcode.TID_RDMA_WRITE_RESP,
            // BTH: E1, DestQP = requester's KDETH QP 0x800005, PSN 0x100 (one verbs PSN per segment)
            "e100ffff 00800005 00000100 |"
            + "00000040 20000000"
            // AETH ACK 0x1F, MSN 7; reserved 12..23; tid_flow_psn = 0x123 << 11 | 0x45; tid_flow_qp; verbs_qp 0x22
            + " 1f000007 000000000000000000000000 00091845 00801803 00000022 |"
            // TID list: IDX 5 CTRL 1 LEN 64 = 0x01500040, IDX 0x3FF CTRL 3 LEN 0x7FF = 0xFFF007FF (LE)
            + "40005001 ff07f0ff |"
            + "f901c077",
            b -> {
                Opcode op = Opcode.TID_RDMA_WRITE_RESP;
                int k = bth(b, op, 0, KDETH_QP_REQUESTER, false, 0x100);
                Kdeth.writeControl(b, k, JKEY);
                TidHeader.writeAeth(b, k, Aeth.ACK_UNLIMITED, 7);
                TidHeader.setTidFlowPsn(b, k, FlowPsn.of(0x123, 0x45));
                TidHeader.setTidFlowQp(b, k, TidHeader.flowQpn(KDETH_QP_RESPONDER, 3));
                TidHeader.setVerbsQp(b, k, QP_REQUESTER);
                TidHeader.zeroReserved(b, k, op); // fields first, then the reserved bytes
                int list = k + Kdeth.LENGTH;
                TidEntry.write(b, list, 0, TidEntry.encode(5, TidEntry.CTRL_EVEN, 64));
                TidEntry.write(b, list, 1, TidEntry.encode(0x3FF, TidEntry.CTRL_PAIR, 0x7FF));
                return op.headerLength() + 8 + Icrc.LENGTH;
            }, 8);

    static final Golden WRITE_DATA = new Golden(Opcode.TID_RDMA_WRITE_DATA,
            // BTH: E2, PadCnt 2 (byte 1 = 0x20), DestQP = tid_flow_qp 0x801803, flow PSN 0x091845
            "e220ffff 00801803 00091845 |"
            // kdeth0: KVER 1, SH 1, INTR 0, TIDCTRL 1, TID 5, OM 1, OFFSET 3 = 0x64058003 -> LE 03 80 05 64
            + "03800564 20000000"
            // reserved 8..31, verbs_qp 0x11
            + " 000000000000000000000000 000000000000000000000000 00000011 |"
            // 6 payload bytes + 2 pad bytes
            + "a1a2a3a4a5a6 0000 |"
            + "39b89b98",
            b -> {
                Opcode op = Opcode.TID_RDMA_WRITE_DATA;
                int k = bth(b, op, 2, WRITE_FLOW_QP, false, FlowPsn.of(0x123, 0x45));
                TidHeader.clear(b, k);
                Kdeth.writeKdeth0(b, k, 3, true, 5, Kdeth.TIDCTRL_EVEN, false, true);
                Kdeth.writeKdeth1(b, k, JKEY);
                TidHeader.setVerbsQp(b, k, QP_RESPONDER);
                int p = k + Kdeth.LENGTH;
                b.setBytes(p, HEX.parseHex("a1a2a3a4a5a6"));
                b.setZero(p + 6, 2);
                return op.headerLength() + 8 + Icrc.LENGTH;
            }, 6);

    static final Golden WRITE_DATA_LAST = new Golden(Opcode.TID_RDMA_WRITE_DATA_LAST,
            // BTH: E3, DestQP 0x801803, AckReq (last packet of a segment) + flow PSN 0x091846
            "e300ffff 00801803 80091846 |"
            // kdeth0: KVER 1, SH 0, INTR 1, TIDCTRL 2, TID 0x3FF, OM 1, OFFSET 0x7FFF = 0x5BFFFFFF (LE)
            // kdeth1: J_KEY 0xBEEF (all 16 bits), HCRC 0 -> 0x0000BEEF (LE)
            + "ffffff5b efbe0000"
            + " 000000000000000000000000 000000000000000000000000 00000011 |"
            + "deadbeef |"
            + "0fe224c1",
            b -> {
                Opcode op = Opcode.TID_RDMA_WRITE_DATA_LAST;
                int k = bth(b, op, 0, WRITE_FLOW_QP, true, FlowPsn.of(0x123, 0x46));
                Kdeth.writeKdeth0(b, k, 0x7FFF, true, 0x3FF, Kdeth.TIDCTRL_ODD, true, false);
                Kdeth.writeKdeth1(b, k, 0xBEEF);
                TidHeader.setVerbsQp(b, k, QP_RESPONDER);
                TidHeader.zeroReserved(b, k, op);
                b.setInt(k + Kdeth.LENGTH, 0xDEADBEEF);
                return op.headerLength() + 4 + Icrc.LENGTH;
            }, 4);

    static final Golden READ_REQ = new Golden(Opcode.TID_RDMA_READ_REQ,
            // BTH: E4, DestQP = responder's KDETH QP, AckReq + verbs PSN 0x200
            "e400ffff 00800003 80000200 |"
            + "00000040 20000000"
            // RETH: VA 0x00007F0012380000, R_Key 0xCAFEF00D, length 256 KiB;
            // tid_flow_psn = 0x1FFE << 11 | 0 = 0xFFF000; tid_flow_qp = 0x800005 | 31 << 11; verbs_qp 0x11
            + " 00007f0012380000 cafef00d 00040000 00fff000 0080f805 00000011 |"
            // one TID entry: IDX 0x155, CTRL 2, LEN 64 = 0x55600040 (LE)
            + "40006055 |"
            + "a5d5f9bc",
            b -> {
                Opcode op = Opcode.TID_RDMA_READ_REQ;
                int k = bth(b, op, 0, KDETH_QP_RESPONDER, true, 0x200);
                TidHeader.clear(b, k);
                Kdeth.writeControl(b, k, JKEY);
                TidHeader.writeReth(b, k, 0x0000_7F00_1238_0000L, 0xCAFEF00D, 256 * 1024);
                TidHeader.setTidFlowPsn(b, k, FlowPsn.of(0x1FFE, 0));
                TidHeader.setTidFlowQp(b, k, TidHeader.flowQpn(TidHeader.kdethQpn(5), 31));
                TidHeader.setVerbsQp(b, k, QP_RESPONDER);
                TidEntry.write(b, k + Kdeth.LENGTH, 0, TidEntry.encode(0x155, TidEntry.CTRL_ODD, 64));
                return op.headerLength() + 4 + Icrc.LENGTH;
            }, 4);

    static final Golden READ_RESP = new Golden(Opcode.TID_RDMA_READ_RESP,
            // BTH: E5, PadCnt 1 (0x10), DestQP = tid_flow_qp 0x80F805, flow PSN 0xFFF000
            "e510ffff 0080f805 00fff000 |"
            // kdeth0: KVER 1, SH 1, TIDCTRL 3, TID 0x155, OM 1, OFFSET 0x40 (4096 / 64) = 0x6D558040 (LE)
            + "4080556d 20000000"
            // AETH ACK MSN 1; reserved 12..27; verbs_psn 0x201; verbs_qp 0x22
            + " 1f000001 00000000000000000000000000000000 00000201 00000022 |"
            + "112233 00 |"
            + "d40cecb7",
            b -> {
                Opcode op = Opcode.TID_RDMA_READ_RESP;
                int k = bth(b, op, 1, READ_FLOW_QP, false, FlowPsn.of(0x1FFE, 0));
                TidHeader.clear(b, k);
                Kdeth.writeKdeth0(b, k, 4096 / Kdeth.OM_LARGE_UNIT, true, 0x155, Kdeth.TIDCTRL_PAIR, false, true);
                Kdeth.writeKdeth1(b, k, JKEY);
                TidHeader.writeAeth(b, k, Aeth.ACK_UNLIMITED, 1);
                TidHeader.setVerbsPsn(b, k, 0x201);
                TidHeader.setVerbsQp(b, k, QP_REQUESTER);
                int p = k + Kdeth.LENGTH;
                b.setMedium(p, 0x112233);
                b.setByte(p + 3, 0);
                return op.headerLength() + 4 + Icrc.LENGTH;
            }, 3);

    static final Golden RESYNC = new Golden(Opcode.TID_RDMA_RESYNC,
            // BTH: E6, DestQP 0x800003, AckReq + PSN (0x124 << 11) - 1 = 0x091FFF (sequence 0x7FF of gen 0x123)
            "e600ffff 00800003 80091fff |"
            + "00000040 20000000"
            + " 000000000000000000000000 000000000000000000000000 00000011 |"
            + "7f1a3090",
            b -> {
                Opcode op = Opcode.TID_RDMA_RESYNC;
                int k = bth(b, op, 0, KDETH_QP_RESPONDER, true, FlowPsn.resyncPsn(0x123));
                TidHeader.clear(b, k);
                Kdeth.writeControl(b, k, JKEY);
                TidHeader.setVerbsQp(b, k, QP_RESPONDER);
                return op.headerLength() + Icrc.LENGTH;
            }, 0);

    static final Golden ACK = new Golden(Opcode.TID_RDMA_ACK,
            // BTH: E7, DestQP = requester's KDETH QP, PSN = the RESYNC PSN it answers
            "e700ffff 00800005 00091fff |"
            + "00000040 20000000"
            // AETH ACK MSN 8; reserved 12..19; tid_flow_psn @20 = last good flow PSN 0x091850;
            // verbs_psn @24 = 0x101; tid_flow_qp @28 = 0x801803; verbs_qp @32 = 0x22
            + " 1f000008 0000000000000000 00091850 00000101 00801803 00000022 |"
            + "75cc2409",
            b -> {
                Opcode op = Opcode.TID_RDMA_ACK;
                int k = bth(b, op, 0, KDETH_QP_REQUESTER, false, FlowPsn.resyncPsn(0x123));
                Kdeth.writeControl(b, k, JKEY);
                TidHeader.writeAeth(b, k, Aeth.ACK_UNLIMITED, 8);
                TidHeader.setAckTidFlowPsn(b, k, FlowPsn.of(0x123, 0x50));
                TidHeader.setAckVerbsPsn(b, k, 0x101);
                TidHeader.setTidFlowQp(b, k, WRITE_FLOW_QP);
                TidHeader.setVerbsQp(b, k, QP_REQUESTER);
                TidHeader.zeroReserved(b, k, op);
                return op.headerLength() + Icrc.LENGTH;
            }, 0);

    static List<Golden> goldens() {
        return List.of(WRITE_REQ, WRITE_RESP, WRITE_DATA, WRITE_DATA_LAST, READ_REQ, READ_RESP, RESYNC, ACK);
    }

    /** Writes the BTH (P_Key 0xFFFF, SE 0) at {@link #AT}; returns the absolute index of the KDETH block. */
    private static int bth(ByteBuf b, Opcode op, int pad, int destQp, boolean ackReq, int psn) {
        Bth.write(b, AT, op.code(), false, pad, Bth.DEFAULT_PKEY, destQp, ackReq, psn);
        return AT + Bth.LENGTH;
    }

    /** A buffer full of {@link #SENTINEL}, so that a byte the builder forgets shows up. */
    private static ByteBuf sentinelBuffer(int capacity) {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[capacity]);
        for (int i = 0; i < capacity; i++) {
            b.setByte(i, SENTINEL);
        }
        return b;
    }

    /** Builds {@code g} at {@link #AT}, writes its ICRC and returns the buffer; the length goes to {@code len[0]}. */
    private static ByteBuf build(Golden g, int[] len) {
        ByteBuf b = sentinelBuffer(AT + 400);
        len[0] = g.build().applyAsInt(b);
        new Icrc().write(b, AT, len[0], SRC, DST);
        return b;
    }

    private static byte[] bytes(ByteBuf b, int from, int len) {
        byte[] r = new byte[len];
        b.getBytes(from, r);
        return r;
    }

    // ------------------------------------------------------------------------------------ golden bytes

    @ParameterizedTest
    @MethodSource("goldens")
    void builtPacketIsByteForByteTheGolden(Golden g) {
        int[] len = new int[1];
        ByteBuf b = build(g, len);
        byte[] expected = g.expected();
        assertThat(len[0]).as("%s length", g).isEqualTo(expected.length);
        assertThat(HEX.formatHex(bytes(b, AT, len[0]))).as("%s bytes", g).isEqualTo(HEX.formatHex(expected));
        for (int i = 0; i < AT; i++) {
            assertThat(b.getByte(i)).as("byte before the packet").isEqualTo(SENTINEL);
        }
        for (int i = AT + len[0]; i < b.capacity(); i++) {
            assertThat(b.getByte(i)).as("byte %d after the packet", i).isEqualTo(SENTINEL);
        }
    }

    @ParameterizedTest
    @MethodSource("goldens")
    void goldenIcrcMatchesTheIndependentReference(Golden g) {
        byte[] expected = g.expected();
        // rxe4j's IPv4 header (extensions.md §1): IHL 5, DF, ID 0, protocol 17; TOS/TTL/checksum are masked
        int total = 20 + 8 + expected.length;
        byte[] ip = HEX.parseHex(String.format("4500%04x00004000401100000a0000010a000002", total));
        assertThat(IcrcReference.compute(ip, SRC.getPort(), DST.getPort(), expected, false))
                .isEqualTo(IcrcReference.carried(expected));
        assertThat(new Icrc().check(Unpooled.wrappedBuffer(expected), 0, expected.length, SRC, DST)).isTrue();
        // the ICRC covers the KDETH block: flipping any bit of it is caught
        for (int i = Bth.LENGTH; i < Bth.LENGTH + Kdeth.LENGTH; i++) {
            byte[] bad = expected.clone();
            bad[i] ^= 0x01;
            assertThat(new Icrc().check(Unpooled.wrappedBuffer(bad), 0, bad.length, SRC, DST)).as("byte %d", i).isFalse();
        }
    }

    @ParameterizedTest
    @MethodSource("goldens")
    void parseAcceptsTheGoldenWithTheRightOffsets(Golden g) {
        byte[] expected = g.expected();
        ByteBuf b = Unpooled.wrappedBuffer(new byte[AT + expected.length + 5]);
        b.setBytes(AT, expected);
        PacketView v = new PacketView();
        assertThat(v.parse(b, AT, expected.length)).as("%s", g).isNull();
        assertThat(v.opcode()).isEqualTo(g.op());
        assertThat(v.opcode().transport()).isEqualTo(Opcode.Transport.TID);
        assertThat(v.index(Header.BTH)).isEqualTo(AT);
        assertThat(v.index(Header.KDETH)).isEqualTo(AT + 12);
        assertThat(v.payloadIndex()).isEqualTo(AT + 48);
        assertThat(v.payloadLength()).isEqualTo(g.payloadLength());
        assertThat(v.payloadIndex() + v.payloadLength() + v.padCount() + Icrc.LENGTH).isEqualTo(AT + expected.length);
        assertThat(TidHeader.reservedAreZero(b, v.index(Header.KDETH), g.op())).isTrue();
        assertThat(Kdeth.kver(b, v.index(Header.KDETH))).isEqualTo(Kdeth.KVER);
        assertThat(Kdeth.hcrc(b, v.index(Header.KDETH))).isZero();
        assertThat(TidHeader.isKdethQpn(v.destQp())).as("BTH DestQP is a KDETH QPN").isTrue();
    }

    // ------------------------------------------------------------------------------------ read back

    /** Parses the golden bytes (not the builder's output) and returns the view. */
    private static PacketView parsed(Golden g) {
        byte[] expected = g.expected();
        ByteBuf b = Unpooled.wrappedBuffer(expected);
        PacketView v = new PacketView();
        assertThat(v.parse(b, 0, expected.length)).isNull();
        return v;
    }

    @Test
    void writeReqFields() {
        PacketView v = parsed(WRITE_REQ);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.destQp()).isEqualTo(KDETH_QP_RESPONDER);
        assertThat(v.ackReq()).isTrue();
        assertThat(v.psn()).isEqualTo(0x100);
        assertThat(Kdeth.kdeth0(b, k)).isEqualTo(0x4000_0000);
        assertThat(Kdeth.jkey(b, k)).isEqualTo(JKEY);
        assertThat(TidHeader.va(b, k)).isEqualTo(0x0000_7F00_1234_0000L);
        assertThat(Reth.va(b, TidHeader.rethIndex(k))).isEqualTo(0x0000_7F00_1234_0000L);
        assertThat(TidHeader.rkey(b, k)).isEqualTo(0x1234);
        assertThat(TidHeader.dmaLength(b, k)).isEqualTo(512 * 1024);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_RESPONDER);
    }

    @Test
    void writeRespFields() {
        PacketView v = parsed(WRITE_RESP);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.destQp()).isEqualTo(KDETH_QP_REQUESTER);
        assertThat(TidHeader.syndrome(b, k)).isEqualTo(Aeth.ACK_UNLIMITED);
        assertThat(Aeth.msn(b, TidHeader.aethIndex(k))).isEqualTo(7);
        assertThat(TidHeader.msn(b, k)).isEqualTo(7);
        int flowPsn = TidHeader.tidFlowPsn(b, k);
        assertThat(FlowPsn.generation(flowPsn)).isEqualTo(0x123);
        assertThat(FlowPsn.sequence(flowPsn)).isEqualTo(0x45);
        assertThat(TidHeader.tidFlowQp(b, k)).isEqualTo(WRITE_FLOW_QP);
        assertThat(TidHeader.flowIndex(TidHeader.tidFlowQp(b, k))).isEqualTo(3);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_REQUESTER);
        int list = v.payloadIndex();
        assertThat(TidEntry.count(v.payloadLength())).isEqualTo(2);
        int e0 = TidEntry.read(b, list, 0);
        assertThat(e0).isEqualTo(0x0150_0040);
        assertThat(TidEntry.idx(e0)).isEqualTo(5);
        assertThat(TidEntry.ctrl(e0)).isEqualTo(TidEntry.CTRL_EVEN);
        assertThat(TidEntry.lengthPages(e0)).isEqualTo(64);
        assertThat(TidEntry.lengthBytes(e0)).isEqualTo(256 * 1024);
        int e1 = TidEntry.read(b, list, 1);
        assertThat(e1).isEqualTo(0xFFF0_07FF);
        assertThat(TidEntry.idx(e1)).isEqualTo(0x3FF);
        assertThat(TidEntry.ctrl(e1)).isEqualTo(TidEntry.CTRL_PAIR);
        assertThat(TidEntry.lengthPages(e1)).isEqualTo(0x7FF);
    }

    @Test
    void writeDataFields() {
        PacketView v = parsed(WRITE_DATA);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.destQp()).isEqualTo(WRITE_FLOW_QP);
        assertThat(v.psn()).isEqualTo(0x091845);
        assertThat(v.padCount()).isEqualTo(2);
        assertThat(Kdeth.kdeth0(b, k)).isEqualTo(0x6405_8003);
        assertThat(Kdeth.kver(b, k)).isEqualTo(1);
        assertThat(Kdeth.sh(b, k)).isTrue();
        assertThat(Kdeth.intr(b, k)).isFalse();
        assertThat(Kdeth.tidCtrl(b, k)).isEqualTo(Kdeth.TIDCTRL_EVEN);
        assertThat(Kdeth.tid(b, k)).isEqualTo(5);
        assertThat(Kdeth.om(b, k)).isTrue();
        assertThat(Kdeth.offset(b, k)).isEqualTo(3);
        assertThat(Kdeth.offsetBytes(b, k)).isEqualTo(192);
        assertThat(Kdeth.jkey(b, k)).isEqualTo(JKEY);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_RESPONDER);
        assertThat(HEX.formatHex(bytes(b, v.payloadIndex(), v.payloadLength()))).isEqualTo("a1a2a3a4a5a6");
    }

    @Test
    void writeDataLastFields() {
        PacketView v = parsed(WRITE_DATA_LAST);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.ackReq()).isTrue();
        assertThat(v.opcode().isLast()).isTrue();
        assertThat(Kdeth.kdeth0(b, k)).isEqualTo(0x5BFF_FFFF);
        assertThat(Kdeth.sh(b, k)).as("the last packet of a segment is not header-suppressed").isFalse();
        assertThat(Kdeth.intr(b, k)).isTrue();
        assertThat(Kdeth.tidCtrl(b, k)).isEqualTo(Kdeth.TIDCTRL_ODD);
        assertThat(Kdeth.tid(b, k)).isEqualTo(0x3FF);
        assertThat(Kdeth.om(b, k)).isTrue();
        assertThat(Kdeth.offset(b, k)).isEqualTo(0x7FFF);
        assertThat(Kdeth.kdeth1(b, k)).isEqualTo(0xBEEF);
        assertThat(Kdeth.jkey(b, k)).isEqualTo(0xBEEF);
        assertThat(Kdeth.hcrc(b, k)).isZero();
        assertThat(b.getInt(v.payloadIndex())).isEqualTo(0xDEADBEEF);
    }

    @Test
    void readReqFields() {
        PacketView v = parsed(READ_REQ);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.psn()).isEqualTo(0x200);
        assertThat(TidHeader.va(b, k)).isEqualTo(0x0000_7F00_1238_0000L);
        assertThat(TidHeader.rkey(b, k)).isEqualTo(0xCAFEF00D);
        assertThat(TidHeader.dmaLength(b, k)).isEqualTo(256 * 1024);
        assertThat(TidHeader.tidFlowPsn(b, k)).isEqualTo(0xFFF000);
        assertThat(FlowPsn.generation(TidHeader.tidFlowPsn(b, k))).isEqualTo(0x1FFE);
        assertThat(TidHeader.tidFlowQp(b, k)).isEqualTo(READ_FLOW_QP);
        assertThat(TidHeader.flowIndex(TidHeader.tidFlowQp(b, k))).isEqualTo(31);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_RESPONDER);
        assertThat(v.payloadLength()).isEqualTo(TidEntry.LENGTH);
        int e = TidEntry.read(b, v.payloadIndex(), 0);
        assertThat(e).isEqualTo(0x5560_0040);
        assertThat(TidEntry.idx(e)).isEqualTo(0x155);
        assertThat(TidEntry.ctrl(e)).isEqualTo(TidEntry.CTRL_ODD);
        assertThat(TidEntry.lengthPages(e)).isEqualTo(64);
    }

    @Test
    void readRespFields() {
        PacketView v = parsed(READ_RESP);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.opcode().isResponse()).isTrue();
        assertThat(v.destQp()).isEqualTo(READ_FLOW_QP);
        assertThat(v.psn()).isEqualTo(FlowPsn.of(0x1FFE, 0));
        assertThat(v.padCount()).isEqualTo(1);
        assertThat(Kdeth.kdeth0(b, k)).isEqualTo(0x6D55_8040);
        assertThat(Kdeth.tidCtrl(b, k)).isEqualTo(Kdeth.TIDCTRL_PAIR);
        assertThat(Kdeth.tid(b, k)).isEqualTo(0x155);
        assertThat(Kdeth.offsetBytes(b, k)).isEqualTo(4096);
        assertThat(TidHeader.syndrome(b, k)).isEqualTo(Aeth.ACK_UNLIMITED);
        assertThat(TidHeader.msn(b, k)).isEqualTo(1);
        assertThat(TidHeader.verbsPsn(b, k)).isEqualTo(0x201);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_REQUESTER);
        assertThat(b.getMedium(v.payloadIndex())).isEqualTo(0x112233);
        assertThat(v.payloadLength()).isEqualTo(3);
    }

    @Test
    void resyncFields() {
        PacketView v = parsed(RESYNC);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.opcode().isRequest()).isTrue();
        assertThat(v.ackReq()).isTrue();
        assertThat(FlowPsn.isResync(v.psn())).isTrue();
        assertThat(FlowPsn.generation(v.psn())).isEqualTo(0x123);
        assertThat(FlowPsn.resyncGeneration(v.psn())).isEqualTo(0x124);
        assertThat(Kdeth.kdeth0(b, k)).isEqualTo(0x4000_0000);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_RESPONDER);
    }

    @Test
    void ackFields() {
        PacketView v = parsed(ACK);
        ByteBuf b = v.buf();
        int k = v.index(Header.KDETH);
        assertThat(v.opcode().isResponse()).isTrue();
        assertThat(FlowPsn.isResync(v.psn())).as("the ACK to a RESYNC carries the RESYNC PSN").isTrue();
        assertThat(TidHeader.syndrome(b, k)).isEqualTo(Aeth.ACK_UNLIMITED);
        assertThat(TidHeader.msn(b, k)).isEqualTo(8);
        assertThat(TidHeader.ackTidFlowPsn(b, k)).isEqualTo(0x091850);
        assertThat(TidHeader.ackVerbsPsn(b, k)).isEqualTo(0x101);
        assertThat(TidHeader.tidFlowQp(b, k)).isEqualTo(WRITE_FLOW_QP);
        assertThat(TidHeader.verbsQp(b, k)).isEqualTo(QP_REQUESTER);
    }

    // ------------------------------------------------------------------------------------ malformed

    /** A TID packet of {@code op} with {@code afterHeaders} bytes after the KDETH block (ICRC not valid). */
    private static ByteBuf packet(Opcode op, int pad, int afterHeaders) {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[AT + op.headerLength() + afterHeaders + Icrc.LENGTH + 8]);
        Bth.write(b, AT, op.code(), false, pad, Bth.DEFAULT_PKEY, KDETH_QP_RESPONDER, false, 0);
        Kdeth.writeControl(b, AT + Bth.LENGTH, JKEY);
        return b;
    }

    private static int len(Opcode op, int afterHeaders) {
        return op.headerLength() + afterHeaders + Icrc.LENGTH;
    }

    @ParameterizedTest
    @EnumSource(value = Opcode.class, names = "TID_RDMA_.*", mode = EnumSource.Mode.MATCH_ALL)
    void shorterThanBthPlusKdethBlockIsTooShort(Opcode op) {
        PacketView v = new PacketView();
        ByteBuf b = packet(op, 0, 0);
        for (int len = 0; len < 48 + Icrc.LENGTH; len++) {
            assertThat(v.parse(b, AT, len)).as("%s in %d bytes", op, len).isEqualTo(DropReason.TOO_SHORT);
            assertThat(v.opcode()).isNull();
        }
        // 36 bytes of BTH + KDETH + ICRC only: a BTH-only opcode would fit, a TID opcode does not
        assertThat(v.parse(b, AT, 12 + 8 + Icrc.LENGTH)).isEqualTo(DropReason.TOO_SHORT);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 65, 66, 100})
    void tidListOfZeroOrMoreThan64EntriesIsRejected(int entries) {
        PacketView v = new PacketView();
        for (Opcode op : new Opcode[] {Opcode.TID_RDMA_READ_REQ, Opcode.TID_RDMA_WRITE_RESP}) {
            int bytes = entries * TidEntry.LENGTH;
            assertThat(v.parse(packet(op, 0, bytes), AT, len(op, bytes))).as("%s with %d entries", op, entries)
                    .isEqualTo(DropReason.TOO_SHORT);
            assertThat(v.opcode()).isNull();
            assertThat(v.payloadLength()).isZero();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 32, 63, 64})
    void tidListOfOneTo64EntriesIsAccepted(int entries) {
        PacketView v = new PacketView();
        for (Opcode op : new Opcode[] {Opcode.TID_RDMA_READ_REQ, Opcode.TID_RDMA_WRITE_RESP}) {
            int bytes = entries * TidEntry.LENGTH;
            assertThat(v.parse(packet(op, 0, bytes), AT, len(op, bytes))).as("%s with %d entries", op, entries).isNull();
            assertThat(v.payloadLength()).isEqualTo(bytes);
            assertThat(TidEntry.count(v.payloadLength())).isEqualTo(entries);
        }
    }

    @Test
    void tidListNotAMultipleOfFourIsRejected() {
        PacketView v = new PacketView();
        for (Opcode op : new Opcode[] {Opcode.TID_RDMA_READ_REQ, Opcode.TID_RDMA_WRITE_RESP}) {
            for (int payload = 1; payload <= 260; payload++) {
                if ((payload & 3) == 0) {
                    continue;
                }
                // padded the usual way (payload + pad a multiple of 4): the pad itself is refused
                int pad = -payload & 3;
                assertThat(v.parse(packet(op, pad, payload + pad), AT, len(op, payload + pad)))
                        .as("%s %d-byte list with PadCnt %d", op, payload, pad).isEqualTo(DropReason.BAD_PAD);
                // unpadded: the bytes after the headers are not a multiple of 4
                assertThat(v.parse(packet(op, 0, payload), AT, len(op, payload)))
                        .as("%s %d-byte list, no pad", op, payload).isEqualTo(DropReason.BAD_PAD);
                assertThat(v.opcode()).isNull();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Opcode.class, names = {"TID_RDMA_WRITE_REQ", "TID_RDMA_RESYNC", "TID_RDMA_ACK"})
    void padOrBytesWhereNoPayloadMayBeAreRejected(Opcode op) {
        PacketView v = new PacketView();
        assertThat(v.parse(packet(op, 0, 0), AT, len(op, 0))).isNull();
        for (int pad = 1; pad < 4; pad++) {
            assertThat(v.parse(packet(op, pad, 0), AT, len(op, 0))).as("%s PadCnt %d", op, pad)
                    .isEqualTo(DropReason.BAD_PAD);
            assertThat(v.parse(packet(op, pad, 4), AT, len(op, 4))).as("%s PadCnt %d + 4 bytes", op, pad)
                    .isEqualTo(DropReason.BAD_PAD);
        }
        for (int extra : new int[] {1, 4, 8, 36}) {
            assertThat(v.parse(packet(op, 0, extra), AT, len(op, extra))).as("%s + %d bytes", op, extra)
                    .isEqualTo(DropReason.TOO_SHORT);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Opcode.class, names = {"TID_RDMA_WRITE_DATA", "TID_RDMA_WRITE_DATA_LAST", "TID_RDMA_READ_RESP"})
    void dataOpcodesTakeAnyPaddedPayload(Opcode op) {
        PacketView v = new PacketView();
        for (int payload : new int[] {1, 2, 3, 4, 5, 255, 256, 1000, 4096}) {
            int pad = -payload & 3;
            assertThat(v.parse(packet(op, pad, payload + pad), AT, len(op, payload + pad))).as("%s %d", op, payload)
                    .isNull();
            assertThat(v.payloadLength()).isEqualTo(payload);
        }
        assertThat(v.parse(packet(op, 1, 4), AT, len(op, 4))).isNull(); // 3 bytes + 1 pad
        assertThat(v.parse(packet(op, 0, 5), AT, len(op, 5))).isEqualTo(DropReason.BAD_PAD);
    }

    // ------------------------------------------------------------------------------------ flyweights

    private static final int GUARD_AT = 7;
    private static final byte GUARD = (byte) 0xC3;

    private static ByteBuf guarded() {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[GUARD_AT + Kdeth.LENGTH + 5]);
        for (int i = 0; i < b.capacity(); i++) {
            b.setByte(i, GUARD);
        }
        b.setIndex(1, 2);
        return b;
    }

    private static void assertGuards(ByteBuf b) {
        for (int i = 0; i < GUARD_AT; i++) {
            assertThat(b.getByte(i)).as("byte %d before the block", i).isEqualTo(GUARD);
        }
        for (int i = GUARD_AT + Kdeth.LENGTH; i < b.capacity(); i++) {
            assertThat(b.getByte(i)).as("byte %d after the block", i).isEqualTo(GUARD);
        }
        assertThat(b.readerIndex()).isEqualTo(1);
        assertThat(b.writerIndex()).isEqualTo(2);
    }

    @Test
    void kdeth0RoundTripsEveryFieldCombination() {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        for (int offset : new int[] {0, 1, 3, 0x40, 0x4000, 0x7FFF}) {
            for (boolean om : new boolean[] {false, true}) {
                for (int tid : new int[] {0, 1, 5, 0x155, 0x200, 0x3FF}) {
                    for (int tidCtrl = 0; tidCtrl < 4; tidCtrl++) {
                        for (boolean intr : new boolean[] {false, true}) {
                            for (boolean sh : new boolean[] {false, true}) {
                                Kdeth.writeKdeth0(b, k, offset, om, tid, tidCtrl, intr, sh);
                                assertThat(Kdeth.offset(b, k)).isEqualTo(offset);
                                assertThat(Kdeth.om(b, k)).isEqualTo(om);
                                assertThat(Kdeth.tid(b, k)).isEqualTo(tid);
                                assertThat(Kdeth.tidCtrl(b, k)).isEqualTo(tidCtrl);
                                assertThat(Kdeth.intr(b, k)).isEqualTo(intr);
                                assertThat(Kdeth.sh(b, k)).isEqualTo(sh);
                                assertThat(Kdeth.kver(b, k)).isEqualTo(Kdeth.KVER);
                                assertThat(Kdeth.kdeth0(b, k))
                                        .isEqualTo(Kdeth.encodeKdeth0(offset, om, tid, tidCtrl, intr, sh));
                                // the bytes are the little-endian image of the word the sheet describes
                                int word = 1 << 30 | (sh ? 1 << 29 : 0) | (intr ? 1 << 28 : 0) | tidCtrl << 26 | tid << 16
                                        | (om ? 1 << 15 : 0) | offset;
                                assertThat(b.getByte(k)).isEqualTo((byte) word);
                                assertThat(b.getByte(k + 3)).isEqualTo((byte) (word >>> 24));
                                assertThat(b.getInt(k)).isEqualTo(Integer.reverseBytes(word));
                            }
                        }
                    }
                }
            }
        }
        assertGuards(b);
    }

    @Test
    void kdeth0FieldsAreMaskedToTheirWidth() {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        Kdeth.writeKdeth0(b, k, 0x8000 | 5, false, 0x400 | 7, 4 | 2, false, false);
        assertThat(Kdeth.offset(b, k)).isEqualTo(5);
        assertThat(Kdeth.om(b, k)).as("OFFSET does not spill into OM").isFalse();
        assertThat(Kdeth.tid(b, k)).isEqualTo(7);
        assertThat(Kdeth.tidCtrl(b, k)).as("TID does not spill into TIDCTRL").isEqualTo(2);
        assertThat(Kdeth.intr(b, k)).as("TIDCTRL does not spill into INTR").isFalse();
        assertThat(Kdeth.kver(b, k)).isEqualTo(1);
        assertGuards(b);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 0x20, 0xFF, 0x100, 0xBEEF, 0xFFFF})
    void kdeth1RoundTripsTheJKeyWithHcrcZero(int jkey) {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        b.setIntLE(k + 4, -1);
        Kdeth.writeKdeth1(b, k, jkey);
        assertThat(Kdeth.jkey(b, k)).isEqualTo(jkey);
        assertThat(Kdeth.hcrc(b, k)).isZero();
        assertThat(b.getUnsignedShortLE(k + 4)).isEqualTo(jkey);
        assertThat(b.getShort(k + 6)).isZero();
        Kdeth.writeKdeth1(b, k, 0x1_0000 | jkey);
        assertThat(Kdeth.jkey(b, k)).as("masked to 16 bits").isEqualTo(jkey);
        assertThat(Kdeth.hcrc(b, k)).isZero();
        b.setIntLE(k + 4, 0xABCD_0000 | jkey);
        assertThat(Kdeth.hcrc(b, k)).isEqualTo(0xABCD);
        assertThat(Kdeth.jkey(b, k)).isEqualTo(jkey);
        assertGuards(b);
    }

    @Test
    void writeControlSetsOnlyKverAndTheJKey() {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        b.setLong(k, -1L);
        Kdeth.writeControl(b, k, JKEY);
        assertThat(HEX.formatHex(bytes(b, k, 8))).isEqualTo("0000004020000000");
        assertThat(Kdeth.offset(b, k)).isZero();
        assertThat(Kdeth.om(b, k)).isFalse();
        assertThat(Kdeth.sh(b, k)).isFalse();
        assertGuards(b);
    }

    @Test
    void kdethConstantsMatchTheSheet() {
        assertThat(Kdeth.LENGTH).isEqualTo(36);
        assertThat(Header.KDETH.length()).isEqualTo(36);
        assertThat(Kdeth.KVER).isEqualTo(1);
        assertThat(Kdeth.OM_LARGE).isEqualTo(1);
        assertThat(Kdeth.OM_LARGE_UNIT).isEqualTo(64).isEqualTo(1 << Kdeth.OM_LARGE_SHIFT);
        assertThat(Kdeth.JKEY_DRIVER_MASK).isEqualTo(0xFF);
        assertThat(TidHeader.RETH_OFFSET).isEqualTo(8);
        assertThat(TidHeader.AETH_OFFSET).isEqualTo(8);
        assertThat(TidHeader.TID_FLOW_PSN_OFFSET).isEqualTo(24);
        assertThat(TidHeader.TID_FLOW_QP_OFFSET).isEqualTo(28);
        assertThat(TidHeader.VERBS_PSN_OFFSET).isEqualTo(28);
        assertThat(TidHeader.ACK_TID_FLOW_PSN_OFFSET).isEqualTo(20);
        assertThat(TidHeader.ACK_VERBS_PSN_OFFSET).isEqualTo(24);
        assertThat(TidHeader.VERBS_QP_OFFSET).isEqualTo(32).isEqualTo(Kdeth.LENGTH - 4);
    }

    /** A setter/getter pair of one 32-bit big-endian extension field. */
    record Field(String name, int offset, Setter set, Getter get) {
        @Override
        public String toString() {
            return name;
        }
    }

    interface Setter {
        void set(ByteBuf b, int at, int v);
    }

    interface Getter {
        int get(ByteBuf b, int at);
    }

    static List<Field> fields() {
        return List.of(
                new Field("tid_flow_psn", 24, TidHeader::setTidFlowPsn, TidHeader::tidFlowPsn),
                new Field("tid_flow_qp", 28, TidHeader::setTidFlowQp, TidHeader::tidFlowQp),
                new Field("READ_RESP verbs_psn", 28, TidHeader::setVerbsPsn, TidHeader::verbsPsn),
                new Field("ACK tid_flow_psn", 20, TidHeader::setAckTidFlowPsn, TidHeader::ackTidFlowPsn),
                new Field("ACK verbs_psn", 24, TidHeader::setAckVerbsPsn, TidHeader::ackVerbsPsn));
    }

    @ParameterizedTest
    @MethodSource("fields")
    void extensionFieldsRoundTripBigEndianInTheirFourBytes(Field f) {
        for (int value : new int[] {0, 1, 0x7FF, 0xFFFFFF, 0x80_1803, 0x12345678, 0x80000000, -1}) {
            ByteBuf b = guarded();
            b.setZero(GUARD_AT, Kdeth.LENGTH);
            f.set().set(b, GUARD_AT, value);
            assertThat(f.get().get(b, GUARD_AT)).isEqualTo(value);
            assertThat(b.getInt(GUARD_AT + f.offset())).as("big-endian at %d", f.offset()).isEqualTo(value);
            byte[] all = bytes(b, GUARD_AT, Kdeth.LENGTH);
            Arrays.fill(all, f.offset(), f.offset() + 4, (byte) 0);
            assertThat(all).as("nothing else written").containsOnly(0);
            assertGuards(b);
        }
    }

    @Test
    void verbsQpIs24BitsAtOffset32() {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        for (int qpn : new int[] {0, 1, 0x11, 0x7FFFFF, 0xFFFFFF}) {
            TidHeader.setVerbsQp(b, k, qpn);
            assertThat(TidHeader.verbsQp(b, k)).isEqualTo(qpn);
            assertThat(b.getInt(k + 32)).isEqualTo(qpn);
        }
        TidHeader.setVerbsQp(b, k, 0xAB_123456);
        assertThat(b.getInt(k + 32)).as("top byte written as 0").isEqualTo(0x123456);
        b.setInt(k + 32, 0xAB_123456);
        assertThat(TidHeader.verbsQp(b, k)).as("top byte ignored").isEqualTo(0x123456);
        assertGuards(b);
    }

    @Test
    void rethAndAethShortcutsAreTheStandardLayoutsAtOffset8() {
        ByteBuf b = guarded();
        int k = GUARD_AT;
        TidHeader.writeReth(b, k, 0x0123_4567_89AB_CDEFL, 0xCAFEF00D, 0xFFFF_FFFFL);
        assertThat(HEX.formatHex(bytes(b, k + 8, 16))).isEqualTo("0123456789abcdefcafef00dffffffff");
        assertThat(TidHeader.va(b, k)).isEqualTo(0x0123_4567_89AB_CDEFL);
        assertThat(TidHeader.rkey(b, k)).isEqualTo(0xCAFEF00D);
        assertThat(TidHeader.dmaLength(b, k)).isEqualTo(0xFFFF_FFFFL);
        assertThat(TidHeader.rethIndex(k)).isEqualTo(k + 8);
        TidHeader.writeAeth(b, k, Aeth.NAK_PSN_SEQ_ERROR, 0xABCDEF);
        assertThat(HEX.formatHex(bytes(b, k + 8, 4))).isEqualTo("60abcdef");
        assertThat(TidHeader.syndrome(b, k)).isEqualTo(Aeth.NAK_PSN_SEQ_ERROR);
        assertThat(TidHeader.msn(b, k)).isEqualTo(0xABCDEF);
        assertThat(TidHeader.aethIndex(k)).isEqualTo(k + 8);
        assertGuards(b);
    }

    @Test
    void reservedRangesFollowTheLayoutTable() {
        // tid-opfn-facts.md §3.4, transcribed: [from, to) of the reserved bytes of each layout
        record R(Opcode op, int from, int to) {}
        for (R r : List.of(new R(Opcode.TID_RDMA_READ_REQ, 32, 32), new R(Opcode.TID_RDMA_READ_RESP, 12, 28),
                new R(Opcode.TID_RDMA_WRITE_REQ, 24, 32), new R(Opcode.TID_RDMA_WRITE_RESP, 12, 24),
                new R(Opcode.TID_RDMA_WRITE_DATA, 8, 32), new R(Opcode.TID_RDMA_WRITE_DATA_LAST, 8, 32),
                new R(Opcode.TID_RDMA_RESYNC, 8, 32), new R(Opcode.TID_RDMA_ACK, 12, 20))) {
            assertThat(TidHeader.reservedFrom(r.op())).as("%s", r.op()).isEqualTo(r.from());
            assertThat(TidHeader.reservedTo(r.op())).as("%s", r.op()).isEqualTo(r.to());
            ByteBuf b = guarded();
            b.setZero(GUARD_AT, Kdeth.LENGTH);
            for (int i = 0; i < Kdeth.LENGTH; i++) {
                b.setByte(GUARD_AT + i, 0xEE);
            }
            assertThat(TidHeader.reservedAreZero(b, GUARD_AT, r.op())).isEqualTo(r.from() == r.to());
            TidHeader.zeroReserved(b, GUARD_AT, r.op());
            assertThat(TidHeader.reservedAreZero(b, GUARD_AT, r.op())).isTrue();
            for (int i = 0; i < Kdeth.LENGTH; i++) {
                boolean reserved = i >= r.from() && i < r.to();
                assertThat(b.getByte(GUARD_AT + i)).as("%s byte %d", r.op(), i).isEqualTo(reserved ? (byte) 0 : (byte) 0xEE);
            }
            assertGuards(b);
            TidHeader.clear(b, GUARD_AT);
            assertThat(bytes(b, GUARD_AT, Kdeth.LENGTH)).containsOnly(0);
            assertGuards(b);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Opcode.class, names = {"RC_SEND_ONLY", "RC_ACKNOWLEDGE", "RC_MASKED_FETCH_ADD", "UD_SEND_ONLY"})
    void reservedHelpersRefuseNonTidOpcodes(Opcode op) {
        ByteBuf b = guarded();
        assertThatIllegalArgumentException().isThrownBy(() -> TidHeader.reservedFrom(op));
        assertThatIllegalArgumentException().isThrownBy(() -> TidHeader.zeroReserved(b, GUARD_AT, op));
        assertThatIllegalArgumentException().isThrownBy(() -> TidHeader.reservedAreZero(b, GUARD_AT, op));
        assertGuards(b);
    }

    @Test
    void kdethQpns() {
        assertThat(TidHeader.kdethQpn(3)).isEqualTo(0x800003);
        assertThat(TidHeader.flowQpn(0x800003, 3)).isEqualTo(0x801803);
        assertThat(TidHeader.flowQpn(0x800005, 31)).isEqualTo(0x80F805);
        assertThat(TidHeader.flowQpn(0x800005, 32)).as("flow index masked to 5 bits").isEqualTo(0x800005);
        assertThat(TidHeader.flowIndex(0x801803)).isEqualTo(3);
        assertThat(TidHeader.flowIndex(0x800003)).isZero();
        assertThat(TidHeader.isKdethQpn(0x801803)).isTrue();
        assertThat(TidHeader.isKdethQpn(0x000011)).isFalse();
        assertThat(TidHeader.isKdethQpn(0x810003)).isFalse();
    }
}
