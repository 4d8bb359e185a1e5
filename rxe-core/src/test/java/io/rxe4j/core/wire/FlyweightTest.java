package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Round trips of every header field through the flyweights ({@code rxe-facts.md} §2,
 * {@code extensions.md} §1–§2), with edge values, exact wire bytes, and no writes outside the
 * header.
 */
class FlyweightTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int AT = 5;
    private static final byte GUARD = (byte) 0xC3;

    private static final int[] U24 = {0, 1, 0x7FFFFF, 0x800000, 0xFFFFFE, 0xFFFFFF};
    private static final int[] U32 = {0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345678};
    private static final long[] U64 = {0L, 1L, Long.MAX_VALUE, Long.MIN_VALUE, -1L, 0x0123456789ABCDEFL};

    /** A buffer with {@code len} header bytes at {@link #AT}, surrounded by guard bytes. */
    private static ByteBuf guarded(int len) {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[AT + len + 4]);
        for (int i = 0; i < b.capacity(); i++) {
            b.setByte(i, GUARD);
        }
        b.setIndex(1, 2);
        return b;
    }

    private static void assertGuards(ByteBuf b, int len) {
        for (int i = 0; i < AT; i++) {
            assertThat(b.getByte(i)).as("byte %d before the header", i).isEqualTo(GUARD);
        }
        for (int i = AT + len; i < b.capacity(); i++) {
            assertThat(b.getByte(i)).as("byte %d after the header", i).isEqualTo(GUARD);
        }
        assertThat(b.readerIndex()).as("absolute access leaves readerIndex").isEqualTo(1);
        assertThat(b.writerIndex()).as("absolute access leaves writerIndex").isEqualTo(2);
    }

    private static String hex(ByteBuf b, int len) {
        byte[] r = new byte[len];
        b.getBytes(AT, r);
        return HEX.formatHex(r);
    }

    // ---------------------------------------------------------------- BTH

    @Test
    void bthRoundTripsEveryFieldCombination() {
        ByteBuf b = guarded(Bth.LENGTH);
        for (int opcode : new int[] {0x00, 0x04, 0x11, 0x1C, 0x64, 0x80, 0xF1, 0xFF}) {
            for (boolean se : new boolean[] {false, true}) {
                for (int pad = 0; pad < 4; pad++) {
                    for (int pkey : new int[] {0, 0x7FFF, 0x8000, 0xFFFF}) {
                        for (int qp : U24) {
                            for (boolean ackReq : new boolean[] {false, true}) {
                                for (int psn : U24) {
                                    Bth.write(b, AT, opcode, se, pad, pkey, qp, ackReq, psn);
                                    assertThat(Bth.opcode(b, AT)).isEqualTo(opcode);
                                    assertThat(Bth.se(b, AT)).isEqualTo(se);
                                    assertThat(Bth.migReq(b, AT)).isFalse();
                                    assertThat(Bth.padCount(b, AT)).isEqualTo(pad);
                                    assertThat(Bth.tver(b, AT)).isZero();
                                    assertThat(Bth.pkey(b, AT)).isEqualTo(pkey);
                                    assertThat(Bth.fecn(b, AT)).isFalse();
                                    assertThat(Bth.becn(b, AT)).isFalse();
                                    assertThat(Bth.destQp(b, AT)).isEqualTo(qp);
                                    assertThat(Bth.ackReq(b, AT)).isEqualTo(ackReq);
                                    assertThat(Bth.psn(b, AT)).isEqualTo(psn);
                                    assertThat(Bth.resv7(b, AT)).isZero();
                                }
                            }
                        }
                    }
                }
            }
        }
        assertGuards(b, Bth.LENGTH);
    }

    @Test
    void bthWireBytes() {
        ByteBuf b = guarded(Bth.LENGTH);
        // vector 4 of icrc.md: SEND_ONLY, PadCnt 3, P_Key FFFF, QP 0x12, AckReq, PSN 0x123456
        Bth.write(b, AT, 0x04, false, 3, 0xFFFF, 0x12, true, 0x123456);
        assertThat(hex(b, 12)).isEqualTo("0430ffff0000001280123456");
        Bth.write(b, AT, 0xFF, true, 1, 0x1234, 0xABCDEF, false, 0xFEDCBA);
        assertThat(hex(b, 12)).isEqualTo("ff901234" + "00abcdef" + "00fedcba");
        assertGuards(b, Bth.LENGTH);
    }

    @Test
    void bthAckReqAndPsnDoNotLeakIntoEachOther() {
        ByteBuf b = guarded(Bth.LENGTH);
        Bth.write(b, AT, 0x04, false, 0, 0xFFFF, 1, false, 0xFFFFFFFF); // PSN with garbage above bit 23
        assertThat(Bth.ackReq(b, AT)).as("upper PSN bits must not set AckReq").isFalse();
        assertThat(Bth.psn(b, AT)).isEqualTo(0xFFFFFF);
        assertThat(Bth.resv7(b, AT)).isZero();
        Bth.write(b, AT, 0x04, false, 0, 0xFFFF, 1, true, 0);
        assertThat(Bth.psn(b, AT)).as("AckReq must not show in the PSN").isZero();
        assertThat(hex(b, 12).substring(16)).isEqualTo("80000000");

        Bth.setPsn(b, AT, 0xFFFFFF);
        assertThat(Bth.ackReq(b, AT)).as("setPsn keeps AckReq").isTrue();
        assertThat(Bth.psn(b, AT)).isEqualTo(0xFFFFFF);
        Bth.setPsn(b, AT, 0x1000005);
        assertThat(Bth.psn(b, AT)).as("setPsn masks to 24 bits").isEqualTo(5);
        assertThat(Bth.ackReq(b, AT)).isTrue();
        Bth.setAckReq(b, AT, false);
        assertThat(Bth.ackReq(b, AT)).isFalse();
        assertThat(Bth.psn(b, AT)).as("setAckReq keeps the PSN").isEqualTo(5);
        Bth.setAckReq(b, AT, true);
        assertThat(Bth.psn(b, AT)).isEqualTo(5);
        assertThat(hex(b, 12).substring(16)).isEqualTo("80000005");
        assertGuards(b, Bth.LENGTH);
    }

    @Test
    void bthDestQpIsMaskedTo24BitsAndLeavesFecnBecnClear() {
        ByteBuf b = guarded(Bth.LENGTH);
        Bth.write(b, AT, 0x04, false, 0, 0xFFFF, 0xFFFFFFFF, false, 0);
        assertThat(Bth.destQp(b, AT)).isEqualTo(0xFFFFFF);
        assertThat(Bth.fecn(b, AT)).isFalse();
        assertThat(Bth.becn(b, AT)).isFalse();
        assertThat(hex(b, 12).substring(8, 16)).isEqualTo("00ffffff");
        assertGuards(b, Bth.LENGTH);
    }

    @Test
    void bthPadCountIsMaskedToTwoBitsAndNeverTouchesSeOrTver() {
        ByteBuf b = guarded(Bth.LENGTH);
        for (int pad : new int[] {4, 7, -1, 0x13}) {
            Bth.write(b, AT, 0x04, false, pad, 0xFFFF, 1, false, 0);
            assertThat(Bth.padCount(b, AT)).isEqualTo(pad & 3);
            assertThat(Bth.se(b, AT)).isFalse();
            assertThat(Bth.migReq(b, AT)).isFalse();
            assertThat(Bth.tver(b, AT)).isZero();
        }
        assertGuards(b, Bth.LENGTH);
    }

    @Test
    void bthReadsFlagBitsItDoesNotWrite() {
        ByteBuf b = guarded(Bth.LENGTH);
        Bth.write(b, AT, 0x0C, false, 0, 0xFFFF, 0x123456, false, 0x654321);
        b.setByte(AT + 1, 0xFF); // SE, M, PadCnt 3, TVer 15
        b.setByte(AT + Bth.RESV8A_OFFSET, 0xC0); // FECN, BECN
        b.setByte(AT + Bth.PSN_WORD_OFFSET, 0x7F); // resv7 all ones, AckReq clear
        assertThat(Bth.se(b, AT)).isTrue();
        assertThat(Bth.migReq(b, AT)).isTrue();
        assertThat(Bth.padCount(b, AT)).isEqualTo(3);
        assertThat(Bth.tver(b, AT)).isEqualTo(15);
        assertThat(Bth.fecn(b, AT)).isTrue();
        assertThat(Bth.becn(b, AT)).isTrue();
        assertThat(Bth.destQp(b, AT)).as("FECN/BECN do not leak into DestQP").isEqualTo(0x123456);
        assertThat(Bth.resv7(b, AT)).isEqualTo(0x7F);
        assertThat(Bth.ackReq(b, AT)).isFalse();
        assertThat(Bth.psn(b, AT)).isEqualTo(0x654321);
        b.setByte(AT + 1, 0x40);
        assertThat(Bth.se(b, AT)).isFalse();
        assertThat(Bth.migReq(b, AT)).isTrue();
        b.setByte(AT + Bth.RESV8A_OFFSET, 0x80);
        assertThat(Bth.fecn(b, AT)).isTrue();
        assertThat(Bth.becn(b, AT)).isFalse();
        b.setByte(AT + Bth.RESV8A_OFFSET, 0x40);
        assertThat(Bth.fecn(b, AT)).isFalse();
        assertThat(Bth.becn(b, AT)).isTrue();
        Bth.setOpcode(b, AT, 0x11);
        assertThat(Bth.opcode(b, AT)).isEqualTo(0x11);
        assertThat(Bth.destQp(b, AT)).isEqualTo(0x123456);
    }

    @Test
    void bthConstants() {
        assertThat(Bth.LENGTH).isEqualTo(12);
        assertThat(Bth.DEFAULT_PKEY).isEqualTo(0xFFFF);
        assertThat(Bth.MASK_24).isEqualTo(0xFFFFFF);
    }

    // ---------------------------------------------------------------- RETH

    @Test
    void rethRoundTripsIncludingUnsigned32BitLength() {
        ByteBuf b = guarded(Reth.LENGTH);
        long[] lengths = {0L, 1L, 8L, 0x7FFFFFFFL, 0x80000000L, 0xFFFFFFFEL, 0xFFFFFFFFL};
        for (long va : U64) {
            for (int rkey : U32) {
                for (long len : lengths) {
                    Reth.write(b, AT, va, rkey, len);
                    assertThat(Reth.va(b, AT)).isEqualTo(va);
                    assertThat(Reth.rkey(b, AT)).isEqualTo(rkey);
                    assertThat(Reth.dmaLength(b, AT)).as("length %d read back unsigned", len).isEqualTo(len);
                }
            }
        }
        Reth.write(b, AT, 0x0000561592D75810L, 0x590, 0xFFFFFFFFL);
        assertThat(hex(b, 16)).isEqualTo("0000561592d7581000000590ffffffff");
        assertGuards(b, Reth.LENGTH);
    }

    // ---------------------------------------------------------------- AETH

    @Test
    void aethRoundTripsSyndromeAndMsn() {
        ByteBuf b = guarded(Aeth.LENGTH);
        for (int syndrome = 0; syndrome < 256; syndrome++) {
            for (int msn : U24) {
                Aeth.write(b, AT, syndrome, msn);
                assertThat(Aeth.syndrome(b, AT)).isEqualTo(syndrome);
                assertThat(Aeth.msn(b, AT)).isEqualTo(msn);
            }
        }
        Aeth.write(b, AT, Aeth.ACK_UNLIMITED, -1); // MSN with garbage above bit 23
        assertThat(Aeth.syndrome(b, AT)).as("MSN must not leak into the syndrome").isEqualTo(0x1F);
        assertThat(Aeth.msn(b, AT)).isEqualTo(0xFFFFFF);
        Aeth.write(b, AT, 0x1F, 1);
        assertThat(hex(b, 4)).isEqualTo("1f000001");
        assertGuards(b, Aeth.LENGTH);
    }

    @Test
    void aethSyndromeTypes() {
        assertThat(Aeth.type(0x1F)).isEqualTo(Aeth.TYPE_ACK);
        assertThat(Aeth.type(0x00)).isEqualTo(Aeth.TYPE_ACK);
        assertThat(Aeth.type(0x20)).isEqualTo(Aeth.TYPE_RNR_NAK);
        assertThat(Aeth.type(0x3F)).isEqualTo(Aeth.TYPE_RNR_NAK);
        assertThat(Aeth.type(0x40)).isEqualTo(0x40);
        for (int nak : new int[] {Aeth.NAK_PSN_SEQ_ERROR, Aeth.NAK_INVALID_REQUEST, Aeth.NAK_REMOTE_ACCESS_ERROR,
            Aeth.NAK_REMOTE_OP_ERROR}) {
            assertThat(Aeth.type(nak)).isEqualTo(Aeth.TYPE_NAK);
        }
        assertThat(new int[] {Aeth.NAK_PSN_SEQ_ERROR, Aeth.NAK_INVALID_REQUEST, Aeth.NAK_REMOTE_ACCESS_ERROR,
            Aeth.NAK_REMOTE_OP_ERROR}).containsExactly(0x60, 0x61, 0x62, 0x63);
    }

    // ---------------------------------------------------------------- atomics

    @Test
    void atomicEthRoundTripsAndLayout() {
        ByteBuf b = guarded(AtomicEth.LENGTH);
        for (long va : U64) {
            for (int rkey : U32) {
                for (long x : U64) {
                    AtomicEth.write(b, AT, va, rkey, x, ~x);
                    assertThat(AtomicEth.va(b, AT)).isEqualTo(va);
                    assertThat(AtomicEth.rkey(b, AT)).isEqualTo(rkey);
                    assertThat(AtomicEth.swapAdd(b, AT)).isEqualTo(x);
                    assertThat(AtomicEth.compare(b, AT)).isEqualTo(~x);
                }
            }
        }
        AtomicEth.write(b, AT, 0x1122334455667788L, 0x99AABBCC, 0x0102030405060708L, 0x1112131415161718L);
        assertThat(hex(b, 28)).isEqualTo("1122334455667788" + "99aabbcc" + "0102030405060708" + "1112131415161718");
        assertThat(AtomicEth.LENGTH).isEqualTo(28);
        assertGuards(b, AtomicEth.LENGTH);
    }

    @Test
    void atomicAckEthRoundTrips() {
        ByteBuf b = guarded(AtomicAckEth.LENGTH);
        for (long v : U64) {
            AtomicAckEth.write(b, AT, v);
            assertThat(AtomicAckEth.originalData(b, AT)).isEqualTo(v);
        }
        AtomicAckEth.write(b, AT, 0x0102030405060708L);
        assertThat(hex(b, 8)).isEqualTo("0102030405060708");
        assertGuards(b, AtomicAckEth.LENGTH);
    }

    @Test
    void maskedCmpSwapEthRoundTripsAndLayout() {
        ByteBuf b = guarded(MaskedCmpSwapEth.LENGTH);
        for (long x : U64) {
            for (int rkey : U32) {
                MaskedCmpSwapEth.write(b, AT, x, rkey, ~x, x ^ 0x5555, x + 1, x - 1);
                assertThat(MaskedCmpSwapEth.va(b, AT)).isEqualTo(x);
                assertThat(MaskedCmpSwapEth.rkey(b, AT)).isEqualTo(rkey);
                assertThat(MaskedCmpSwapEth.swap(b, AT)).isEqualTo(~x);
                assertThat(MaskedCmpSwapEth.compare(b, AT)).isEqualTo(x ^ 0x5555);
                assertThat(MaskedCmpSwapEth.swapMask(b, AT)).isEqualTo(x + 1);
                assertThat(MaskedCmpSwapEth.compareMask(b, AT)).isEqualTo(x - 1);
            }
        }
        // extensions.md §2: VA (8) · R_Key (4) · swap (8) · compare (8) · swap_mask (8) · compare_mask (8)
        MaskedCmpSwapEth.write(b, AT, 0x1111111111111111L, 0x22222222, 0x3333333333333333L, 0x4444444444444444L,
                0x5555555555555555L, 0x6666666666666666L);
        assertThat(hex(b, 44)).isEqualTo("1111111111111111" + "22222222" + "3333333333333333" + "4444444444444444"
                + "5555555555555555" + "6666666666666666");
        assertThat(MaskedCmpSwapEth.LENGTH).isEqualTo(44);
        assertGuards(b, MaskedCmpSwapEth.LENGTH);
    }

    // ---------------------------------------------------------------- small headers

    @Test
    void immDtIsCarriedOpaquelyBigEndian() {
        ByteBuf b = guarded(ImmDt.LENGTH);
        for (int v : U32) {
            ImmDt.write(b, AT, v);
            assertThat(ImmDt.imm(b, AT)).isEqualTo(v);
        }
        ImmDt.write(b, AT, 0x01020304);
        assertThat(hex(b, 4)).isEqualTo("01020304");
        assertGuards(b, ImmDt.LENGTH);
    }

    @Test
    void iethRoundTrips() {
        ByteBuf b = guarded(Ieth.LENGTH);
        for (int v : U32) {
            Ieth.write(b, AT, v);
            assertThat(Ieth.rkey(b, AT)).isEqualTo(v);
        }
        Ieth.write(b, AT, 0xCAFEBABE);
        assertThat(hex(b, 4)).isEqualTo("cafebabe");
        assertGuards(b, Ieth.LENGTH);
    }

    @Test
    void dethRoundTripsWithReservedByteZero() {
        ByteBuf b = guarded(Deth.LENGTH);
        for (int qkey : U32) {
            for (int qp : U24) {
                Deth.write(b, AT, qkey, qp);
                assertThat(Deth.qkey(b, AT)).isEqualTo(qkey);
                assertThat(Deth.srcQp(b, AT)).isEqualTo(qp);
                assertThat(b.getByte(AT + 4)).as("reserved byte").isZero();
            }
        }
        Deth.write(b, AT, 0x80010000, 0xFFFFFFFF); // GSI Q_Key; source QP masked to 24 bits
        assertThat(hex(b, 8)).isEqualTo("8001000000ffffff");
        b.setByte(AT + 4, 0xFF);
        assertThat(Deth.srcQp(b, AT)).as("reserved byte does not leak into the QPN").isEqualTo(0xFFFFFF);
        b.setByte(AT + 4, 0);
        assertGuards(b, Deth.LENGTH);
    }

    @Test
    void fethEncodesSelInBits5to4AndPltInBits3to0() {
        ByteBuf b = guarded(Feth.LENGTH);
        Feth.write(b, AT, Feth.SEL_MR, Feth.PLT_GLOBAL);
        assertThat(hex(b, 4)).as("SEL=1 PLT=1").isEqualTo("00000011");
        Feth.write(b, AT, Feth.SEL_RANGE, Feth.PLT_GLOBAL);
        assertThat(hex(b, 4)).isEqualTo("00000001");
        Feth.write(b, AT, Feth.SEL_RANGE, Feth.PLT_GLOBAL | Feth.PLT_PERSISTENT);
        assertThat(hex(b, 4)).isEqualTo("00000003");
        Feth.write(b, AT, 3, 15);
        assertThat(hex(b, 4)).isEqualTo("0000003f");
        for (int sel = 0; sel < 4; sel++) {
            for (int plt = 0; plt < 16; plt++) {
                Feth.write(b, AT, sel, plt);
                assertThat(Feth.selectivity(b, AT)).isEqualTo(sel);
                assertThat(Feth.placementType(b, AT)).isEqualTo(plt);
                assertThat(b.getInt(AT) & ~0x3F).as("reserved bits 31..6").isZero();
            }
        }
        Feth.write(b, AT, 0xFF, 0xFF); // out of range values are masked, never spill into reserved bits
        assertThat(hex(b, 4)).isEqualTo("0000003f");
        b.setInt(AT, 0xFFFFFFC0 | 0x12); // reserved bits set on the wire are ignored on read
        assertThat(Feth.selectivity(b, AT)).isEqualTo(1);
        assertThat(Feth.placementType(b, AT)).isEqualTo(2);
        assertThat(new int[] {Feth.PLT_GLOBAL, Feth.PLT_PERSISTENT, Feth.SEL_RANGE, Feth.SEL_MR})
                .containsExactly(1, 2, 0, 1);
        assertGuards(b, Feth.LENGTH);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 7, 100})
    void flyweightsWorkAtAnyAbsoluteIndexOfADirectBuffer(int at) {
        ByteBuf b = Unpooled.directBuffer(at + 64);
        try {
            Bth.write(b, at, 0x0A, true, 2, 0x7FFF, 0xABCDEF, true, 0x123456);
            Reth.write(b, at + 12, -2L, -3, 0xFFFFFFFFL);
            assertThat(Bth.opcode(b, at)).isEqualTo(0x0A);
            assertThat(Bth.se(b, at)).isTrue();
            assertThat(Bth.padCount(b, at)).isEqualTo(2);
            assertThat(Bth.pkey(b, at)).isEqualTo(0x7FFF);
            assertThat(Bth.destQp(b, at)).isEqualTo(0xABCDEF);
            assertThat(Bth.ackReq(b, at)).isTrue();
            assertThat(Bth.psn(b, at)).isEqualTo(0x123456);
            assertThat(Reth.va(b, at + 12)).isEqualTo(-2L);
            assertThat(Reth.rkey(b, at + 12)).isEqualTo(-3);
            assertThat(Reth.dmaLength(b, at + 12)).isEqualTo(0xFFFFFFFFL);
            assertThat(b.readerIndex()).isZero();
            assertThat(b.writerIndex()).isZero();
        } finally {
            b.release();
        }
    }
}
