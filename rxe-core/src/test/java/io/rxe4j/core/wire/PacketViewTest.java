package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link PacketView#parse}: the right {@link DropReason} for each malformed packet, and never a throw. */
class PacketViewTest {
    private static final int AT = 6;

    /**
     * A packet of {@code op} at {@link #AT}: BTH with {@code pad}, then {@code afterHeaders} bytes
     * (payload + pad), then 4 ICRC bytes (not valid; parse does not check it).
     *
     * @return the buffer; the packet length is {@code op.headerLength() + afterHeaders + 4}
     */
    private static ByteBuf packet(Opcode op, int pad, int afterHeaders) {
        int len = op.headerLength() + afterHeaders + Icrc.LENGTH;
        ByteBuf b = Unpooled.wrappedBuffer(new byte[AT + len + 8]);
        Bth.write(b, AT, op.code(), false, pad, 0xFFFF, 0x11, false, 7);
        return b;
    }

    private static int len(Opcode op, int afterHeaders) {
        return op.headerLength() + afterHeaders + Icrc.LENGTH;
    }

    private static void assertDropped(PacketView v) {
        assertThat(v.opcode()).as("no opcode after a failed parse").isNull();
        assertThat(v.payloadLength()).isZero();
    }

    // ---------------------------------------------------------------- malformed

    @Test
    void shorterThanBthPlusIcrc() {
        PacketView v = new PacketView();
        ByteBuf b = packet(Opcode.RC_SEND_ONLY, 0, 0);
        for (int len = -1; len < Bth.LENGTH + Icrc.LENGTH; len++) {
            assertThat(v.parse(b, AT, len)).as("length %d", len).isEqualTo(DropReason.TOO_SHORT);
            assertDropped(v);
        }
        assertThat(v.parse(b, AT, 16)).isNull();
        // 16 bytes of a buffer that holds nothing else
        assertThat(v.parse(Unpooled.wrappedBuffer(new byte[15]), 0, 15)).isEqualTo(DropReason.TOO_SHORT);
        assertThat(v.parse(Unpooled.EMPTY_BUFFER, 0, 0)).isEqualTo(DropReason.TOO_SHORT);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 7, 8, 15})
    void badTVer(int tver) {
        PacketView v = new PacketView();
        ByteBuf b = packet(Opcode.RC_ACKNOWLEDGE, 0, 0);
        b.setByte(AT + 1, tver);
        assertThat(v.parse(b, AT, len(Opcode.RC_ACKNOWLEDGE, 0))).isEqualTo(DropReason.BAD_TVER);
        assertDropped(v);
        b.setByte(AT + 1, 0x80 | 0x40 | tver); // SE and M do not hide it
        assertThat(v.parse(b, AT, len(Opcode.RC_ACKNOWLEDGE, 0))).isEqualTo(DropReason.BAD_TVER);
    }

    @ParameterizedTest
    @ValueSource(ints = {0x15, 0x18, 0x1E, 0x40, 0x5C, 0x82, 0xE8, 0xFF})
    void unknownOpcode(int code) {
        PacketView v = new PacketView();
        ByteBuf b = packet(Opcode.RC_SEND_ONLY, 0, 64);
        Bth.setOpcode(b, AT, code);
        assertThat(v.parse(b, AT, len(Opcode.RC_SEND_ONLY, 64))).isEqualTo(DropReason.UNKNOWN_OPCODE);
        assertDropped(v);
    }

    @ParameterizedTest
    @EnumSource(Opcode.class)
    void headersLongerThanThePacket(Opcode op) {
        PacketView v = new PacketView();
        ByteBuf b = packet(op, 0, 0);
        for (int len = Bth.LENGTH + Icrc.LENGTH; len < op.headerLength() + Icrc.LENGTH; len++) {
            assertThat(v.parse(b, AT, len)).as("%s in %d bytes", op, len).isEqualTo(DropReason.TOO_SHORT);
            assertDropped(v);
        }
        if (op.hasTidList()) {
            // a TID list holds at least one 4-byte entry (TidWireGoldenTest covers the TID list rules)
            assertThat(v.parse(b, AT, op.headerLength() + Icrc.LENGTH)).as("%s with just its headers", op)
                    .isEqualTo(DropReason.TOO_SHORT);
            assertThat(v.parse(packet(op, 0, 4), AT, len(op, 4))).as("%s with one TID entry", op).isNull();
        } else {
            assertThat(v.parse(b, AT, op.headerLength() + Icrc.LENGTH)).as("%s with just its headers", op).isNull();
        }
    }

    @Test
    void padCountOnAnOpcodeWithoutPayload() {
        PacketView v = new PacketView();
        for (Opcode op : Opcode.values()) {
            if (op.hasPayload()) {
                continue;
            }
            for (int pad = 1; pad < 4; pad++) {
                ByteBuf b = packet(op, pad, 0);
                assertThat(v.parse(b, AT, len(op, 0))).as("%s PadCnt %d", op, pad).isEqualTo(DropReason.BAD_PAD);
                assertDropped(v);
                ByteBuf withRoom = packet(op, pad, 4);
                assertThat(v.parse(withRoom, AT, len(op, 4))).as("%s PadCnt %d, 4 bytes after headers", op, pad)
                        .isEqualTo(DropReason.BAD_PAD);
            }
        }
    }

    @Test
    void padLargerThanThePayloadArea() {
        PacketView v = new PacketView();
        for (Opcode op : new Opcode[] {Opcode.RC_SEND_ONLY, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_READ_RESPONSE_ONLY,
            Opcode.UD_SEND_ONLY}) {
            for (int pad = 1; pad < 4; pad++) {
                ByteBuf b = packet(op, pad, 0);
                assertThat(v.parse(b, AT, len(op, 0))).as("%s PadCnt %d, no payload bytes", op, pad)
                        .isEqualTo(DropReason.BAD_PAD);
                assertDropped(v);
            }
        }
    }

    @Test
    void payloadPlusPadNotAMultipleOfFour() {
        PacketView v = new PacketView();
        Opcode op = Opcode.RC_SEND_ONLY;
        for (int after = 1; after < 40; after++) {
            if ((after & 3) == 0) {
                continue;
            }
            for (int pad = 0; pad < 4; pad++) {
                ByteBuf b = packet(op, pad, after);
                assertThat(v.parse(b, AT, len(op, after))).as("%d bytes after headers, PadCnt %d", after, pad)
                        .isEqualTo(DropReason.BAD_PAD);
                assertDropped(v);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4, 8, 100})
    void trailingBytesOnAnOpcodeWithoutPayload(int extra) {
        PacketView v = new PacketView();
        for (Opcode op : Opcode.values()) {
            if (op.hasPayload()) {
                continue;
            }
            ByteBuf b = packet(op, 0, extra);
            // the lengths do not add up; PacketView reports it as TOO_SHORT (see DropReason)
            assertThat(v.parse(b, AT, len(op, extra))).as("%s + %d bytes", op, extra).isEqualTo(DropReason.TOO_SHORT);
            assertDropped(v);
        }
    }

    @Test
    void aFailedParseClearsThePreviousPacket() {
        PacketView v = new PacketView();
        ByteBuf good = packet(Opcode.RC_SEND_ONLY, 0, 8);
        assertThat(v.parse(good, AT, len(Opcode.RC_SEND_ONLY, 8))).isNull();
        assertThat(v.opcode()).isEqualTo(Opcode.RC_SEND_ONLY);
        assertThat(v.payloadLength()).isEqualTo(8);
        ByteBuf bad = packet(Opcode.RC_SEND_ONLY, 0, 8);
        bad.setByte(AT + 1, 1);
        assertThat(v.parse(bad, AT, len(Opcode.RC_SEND_ONLY, 8))).isEqualTo(DropReason.BAD_TVER);
        assertThat(v.opcode()).isNull();
        assertThat(v.payloadLength()).isZero();
        assertThat(v.buf()).isSameAs(bad);
    }

    // ---------------------------------------------------------------- well formed

    @ParameterizedTest
    @EnumSource(Opcode.class)
    void wellFormedPacketsGivePayloadIndexAndLength(Opcode op) {
        PacketView v = new PacketView();
        int[] payloads = !op.hasPayload() ? new int[] {0}
                : op.hasTidList() ? new int[] {4, 8, 12, 128, 252, 256} // 1..64 entries
                : new int[] {0, 1, 2, 3, 4, 5, 8, 255, 256, 1023, 4096};
        for (int payload : payloads) {
            int pad = -payload & 3;
            ByteBuf b = packet(op, pad, payload + pad);
            int len = len(op, payload + pad);
            assertThat(v.parse(b, AT, len)).as("%s payload %d", op, payload).isNull();
            assertThat(v.opcode()).isEqualTo(op);
            assertThat(v.buf()).isSameAs(b);
            assertThat(v.bthIndex()).isEqualTo(AT);
            assertThat(v.length()).isEqualTo(len);
            assertThat(v.payloadIndex()).isEqualTo(AT + op.headerLength());
            assertThat(v.payloadLength()).isEqualTo(payload);
            assertThat(v.padCount()).isEqualTo(pad);
            assertThat(v.payloadIndex() + v.payloadLength() + v.padCount() + Icrc.LENGTH).isEqualTo(AT + len);
            assertThat(v.psn()).isEqualTo(7);
            assertThat(v.destQp()).isEqualTo(0x11);
            assertThat(v.pkey()).isEqualTo(0xFFFF);
            assertThat(v.ackReq()).isFalse();
            assertThat(v.solicited()).isFalse();
            assertThat(v.index(Header.BTH)).isEqualTo(AT);
            for (Header h : op.headers()) {
                assertThat(v.index(h)).isEqualTo(AT + op.offset(h));
            }
        }
    }

    @Test
    void aPayloadMayEndInPadThatIsNotNeededByTheLength() {
        // 4 bytes after the headers with PadCnt 3 is a 1-byte payload; PadCnt 0 a 4-byte one
        PacketView v = new PacketView();
        for (int pad = 0; pad < 4; pad++) {
            ByteBuf b = packet(Opcode.RC_SEND_LAST, pad, 4);
            assertThat(v.parse(b, AT, len(Opcode.RC_SEND_LAST, 4))).isNull();
            assertThat(v.payloadLength()).isEqualTo(4 - pad);
        }
    }

    @Test
    void flushAndAtomicAckHeaderIndices() {
        PacketView v = new PacketView();
        ByteBuf f = packet(Opcode.RC_FLUSH, 0, 0);
        assertThat(v.parse(f, AT, len(Opcode.RC_FLUSH, 0))).isNull();
        assertThat(v.index(Header.FETH)).isEqualTo(AT + 12);
        assertThat(v.index(Header.RETH)).isEqualTo(AT + 16);
        assertThat(v.payloadIndex()).isEqualTo(AT + 32);
        ByteBuf a = packet(Opcode.RC_ATOMIC_ACKNOWLEDGE, 0, 0);
        assertThat(v.parse(a, AT, len(Opcode.RC_ATOMIC_ACKNOWLEDGE, 0))).isNull();
        assertThat(v.index(Header.AETH)).isEqualTo(AT + 12);
        assertThat(v.index(Header.ATOMIC_ACK_ETH)).isEqualTo(AT + 16);
    }

    @Test
    void indexOfAnAbsentHeaderThrows() {
        PacketView v = new PacketView();
        ByteBuf b = packet(Opcode.RC_ACKNOWLEDGE, 0, 0);
        assertThat(v.parse(b, AT, len(Opcode.RC_ACKNOWLEDGE, 0))).isNull();
        assertThatIllegalStateException().isThrownBy(() -> v.index(Header.RETH)).withMessageContaining("RETH");
    }

    @Test
    void bthAccessorsSeeTheFlags() {
        PacketView v = new PacketView();
        ByteBuf b = packet(Opcode.RC_SEND_ONLY, 0, 0);
        Bth.write(b, AT, Opcode.RC_SEND_ONLY.code(), true, 0, 0x7FFF, 0xABCDEF, true, 0xFFFFFF);
        assertThat(v.parse(b, AT, len(Opcode.RC_SEND_ONLY, 0))).isNull();
        assertThat(v.solicited()).isTrue();
        assertThat(v.ackReq()).isTrue();
        assertThat(v.pkey()).isEqualTo(0x7FFF);
        assertThat(v.destQp()).isEqualTo(0xABCDEF);
        assertThat(v.psn()).isEqualTo(0xFFFFFF);
    }

    // ---------------------------------------------------------------- fuzz

    @Test
    void randomBytesNeverThrow() {
        SplittableRandom r = new SplittableRandom(0x52_58_45_34L); // "RXE4"
        Opcode[] known = Opcode.values();
        PacketView v = new PacketView();
        int[] outcomes = new int[DropReason.values().length + 1];
        for (int i = 0; i < 100_000; i++) {
            int len = r.nextInt(301);
            int lead = r.nextInt(4);
            byte[] bytes = new byte[lead + len];
            r.nextBytes(bytes);
            ByteBuf b = Unpooled.wrappedBuffer(bytes);
            if (len >= 2 && (i & 1) == 0) {
                // half of the buffers get a known opcode and TVer 0, to reach the length and pad checks
                b.setByte(lead, known[r.nextInt(known.length)].code());
                b.setByte(lead + 1, b.getByte(lead + 1) & 0xF0);
            }
            DropReason[] result = new DropReason[1];
            assertThatCode(() -> result[0] = v.parse(b, lead, len)).as("buffer %d", i).doesNotThrowAnyException();
            if (result[0] == null) {
                Opcode op = v.opcode();
                assertThat(op).isNotNull();
                assertThat(v.payloadLength()).isBetween(0, len);
                assertThat(v.payloadIndex() + v.payloadLength() + v.padCount() + Icrc.LENGTH).isEqualTo(lead + len);
                assertThat(op.hasPayload() || (v.payloadLength() == 0 && v.padCount() == 0)).isTrue();
                outcomes[outcomes.length - 1]++;
            } else {
                assertThat(v.opcode()).isNull();
                outcomes[result[0].ordinal()]++;
            }
        }
        // the loop reached every structural verdict
        assertThat(outcomes[outcomes.length - 1]).as("well formed").isPositive();
        for (DropReason d : new DropReason[] {DropReason.TOO_SHORT, DropReason.BAD_TVER, DropReason.UNKNOWN_OPCODE,
            DropReason.BAD_PAD}) {
            assertThat(outcomes[d.ordinal()]).as("%s", d).isPositive();
        }
    }
}
