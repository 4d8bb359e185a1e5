package io.rxe4j.core.wire;

import static io.rxe4j.core.wire.Header.AETH;
import static io.rxe4j.core.wire.Header.ATOMIC_ACK_ETH;
import static io.rxe4j.core.wire.Header.ATOMIC_ETH;
import static io.rxe4j.core.wire.Header.BTH;
import static io.rxe4j.core.wire.Header.DETH;
import static io.rxe4j.core.wire.Header.FETH;
import static io.rxe4j.core.wire.Header.IETH;
import static io.rxe4j.core.wire.Header.IMM_DT;
import static io.rxe4j.core.wire.Header.KDETH;
import static io.rxe4j.core.wire.Header.MASKED_CMP_SWAP_ETH;
import static io.rxe4j.core.wire.Header.RETH;
import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.wire.Opcode.Payload;
import io.rxe4j.core.wire.Opcode.Transport;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The opcode table against {@code rxe-facts.md} §1.1–§1.2 ("Header stack per opcode, exactly as
 * in rxe's {@code rxe_opcode[]} table"), {@code extensions.md} §2 (masked atomics) and
 * {@code tid-opfn-facts.md} §3.1–§3.4 (TID RDMA). The expected table below is transcribed from the
 * fact sheets, not derived from {@link Opcode}.
 */
class OpcodeTableTest {

    /**
     * One row of the fact sheet table.
     *
     * @param flags the "Flags" column: F, M, L, RWR, COMP, R (= "(response)"); TIDS = TID list payload
     */
    record Row(int code, String name, List<Header> headers, int hdrBytes, Payload payload, String flags) {
        Set<String> flagSet() {
            return Set.of(flags.split(","));
        }

        @Override
        public String toString() {
            return String.format("0x%02X %s", code, name);
        }
    }

    static final List<Row> FACT_SHEET = new ArrayList<>();

    static {
        // RC (rxe-facts.md §1.2)
        rc(0x00, "SEND_FIRST", List.of(), 12, Payload.PMTU, "F,RWR");
        rc(0x01, "SEND_MIDDLE", List.of(), 12, Payload.PMTU, "M");
        rc(0x02, "SEND_LAST", List.of(), 12, Payload.NON_EMPTY, "L,COMP");
        rc(0x03, "SEND_LAST_WITH_IMMEDIATE", List.of(IMM_DT), 16, Payload.NON_EMPTY, "L,COMP");
        rc(0x04, "SEND_ONLY", List.of(), 12, Payload.ANY, "F,L,RWR,COMP");
        rc(0x05, "SEND_ONLY_WITH_IMMEDIATE", List.of(IMM_DT), 16, Payload.ANY, "F,L,RWR,COMP");
        rc(0x06, "RDMA_WRITE_FIRST", List.of(RETH), 28, Payload.PMTU, "F");
        rc(0x07, "RDMA_WRITE_MIDDLE", List.of(), 12, Payload.PMTU, "M");
        rc(0x08, "RDMA_WRITE_LAST", List.of(), 12, Payload.NON_EMPTY, "L");
        rc(0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", List.of(IMM_DT), 16, Payload.NON_EMPTY, "L,RWR,COMP");
        rc(0x0A, "RDMA_WRITE_ONLY", List.of(RETH), 28, Payload.ANY, "F,L");
        rc(0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", List.of(RETH, IMM_DT), 32, Payload.ANY, "F,L,RWR,COMP");
        rc(0x0C, "RDMA_READ_REQUEST", List.of(RETH), 28, Payload.NONE, "F,L");
        rc(0x0D, "RDMA_READ_RESPONSE_FIRST", List.of(AETH), 16, Payload.PMTU, "F,R");
        rc(0x0E, "RDMA_READ_RESPONSE_MIDDLE", List.of(), 12, Payload.PMTU, "M,R");
        rc(0x0F, "RDMA_READ_RESPONSE_LAST", List.of(AETH), 16, Payload.NON_EMPTY, "L,R");
        rc(0x10, "RDMA_READ_RESPONSE_ONLY", List.of(AETH), 16, Payload.ANY, "F,L,R");
        rc(0x11, "ACKNOWLEDGE", List.of(AETH), 16, Payload.NONE, "F,L,R");
        rc(0x12, "ATOMIC_ACKNOWLEDGE", List.of(AETH, ATOMIC_ACK_ETH), 24, Payload.NONE, "F,L,R");
        rc(0x13, "COMPARE_SWAP", List.of(ATOMIC_ETH), 40, Payload.NONE, "F,L");
        rc(0x14, "FETCH_ADD", List.of(ATOMIC_ETH), 40, Payload.NONE, "F,L");
        rc(0x16, "SEND_LAST_WITH_INVALIDATE", List.of(IETH), 16, Payload.NON_EMPTY, "L,COMP");
        rc(0x17, "SEND_ONLY_WITH_INVALIDATE", List.of(IETH), 16, Payload.ANY, "F,L,RWR,COMP");
        rc(0x1C, "FLUSH", List.of(FETH, RETH), 32, Payload.NONE, "F,L");
        rc(0x1D, "ATOMIC_WRITE", List.of(RETH), 28, Payload.EIGHT, "F,L");
        // rxe4j masked atomics (extensions.md §2): 12 + 44 and 12 + 28
        rc(0xF0, "MASKED_COMPARE_SWAP", List.of(MASKED_CMP_SWAP_ETH), 56, Payload.NONE, "F,L");
        rc(0xF1, "MASKED_FETCH_ADD", List.of(ATOMIC_ETH), 40, Payload.NONE, "F,L");
        // rxe4j selective NAK (docs/wire.md): BTH + 4-byte ranges, a response
        rc(0xF2, "SELECTIVE_NAK", List.of(), 12, Payload.NON_EMPTY, "F,L,R");
        // UC 0x20..0x2B: "same layout as the RC equivalents"
        for (Row r : List.copyOf(FACT_SHEET)) {
            if (r.code() <= 0x0B) {
                FACT_SHEET.add(new Row(0x20 | r.code(), "UC_" + r.name().substring(3), r.headers(), r.hdrBytes(),
                        r.payload(), r.flags()));
            }
        }
        // UD
        FACT_SHEET.add(new Row(0x64, "UD_SEND_ONLY", List.of(DETH), 20, Payload.ANY, "F,L,RWR,COMP"));
        FACT_SHEET.add(new Row(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", List.of(DETH, IMM_DT), 24, Payload.ANY,
                "F,L,RWR,COMP"));
        // CNP 0x81 (rxe-facts §1.1; RoCEv2): BTH, then 16 reserved bytes (taken as payload), no flags
        FACT_SHEET.add(new Row(0x81, "CNP", List.of(), 12, Payload.ANY, ""));
        // TID RDMA 0xE0..0xE7 (tid-opfn-facts §3.1, §3.4): BTH + the 36-byte KDETH block = 48 bytes.
        // R = the "Direction" column says responder → requester; TIDS = the payload is a TID list
        // (1..64 entries, checked by PacketView on top of NON_EMPTY). Position flags are rxe4j's
        // choice (single-packet control messages F,L; WRITE_DATA_LAST is the last packet of the request).
        tid(0xE0, "WRITE_REQ", Payload.NONE, "F,L");
        tid(0xE1, "WRITE_RESP", Payload.NON_EMPTY, "F,L,R,TIDS");
        tid(0xE2, "WRITE_DATA", Payload.NON_EMPTY, "");
        tid(0xE3, "WRITE_DATA_LAST", Payload.NON_EMPTY, "L");
        tid(0xE4, "READ_REQ", Payload.NON_EMPTY, "F,L,TIDS");
        tid(0xE5, "READ_RESP", Payload.NON_EMPTY, "R");
        tid(0xE6, "RESYNC", Payload.NONE, "F,L");
        tid(0xE7, "ACK", Payload.NONE, "F,L,R");
    }

    private static void tid(int code, String name, Payload payload, String flags) {
        FACT_SHEET.add(new Row(code, "TID_RDMA_" + name, List.of(KDETH), 48, payload, flags));
    }

    private static void rc(int code, String name, List<Header> headers, int hdrBytes, Payload payload, String flags) {
        FACT_SHEET.add(new Row(code, "RC_" + name, headers, hdrBytes, payload, flags));
    }

    static List<Row> rows() {
        return FACT_SHEET;
    }

    @ParameterizedTest
    @MethodSource("rows")
    void matchesTheFactSheet(Row row) {
        Opcode op = Opcode.of(row.code());
        assertThat(op).as("%s is known", row).isNotNull();
        assertThat(op.name()).isEqualTo(row.name());
        assertThat(op.code()).isEqualTo(row.code());
        assertThat(op.headers()).as("%s header order", row).containsExactlyElementsOf(row.headers());
        assertThat(op.headerLength()).as("%s hdr bytes", row).isEqualTo(row.hdrBytes());
        assertThat(op.payload()).as("%s payload", row).isEqualTo(row.payload());
        assertThat(op.hasPayload()).isEqualTo(row.payload() != Payload.NONE);
        Set<String> f = row.flagSet();
        assertThat(op.isFirst()).as("%s F", row).isEqualTo(f.contains("F"));
        assertThat(op.isMiddle()).as("%s M", row).isEqualTo(f.contains("M"));
        assertThat(op.isLast()).as("%s L", row).isEqualTo(f.contains("L"));
        assertThat(op.isOnly()).as("%s F+L", row).isEqualTo(f.contains("F") && f.contains("L"));
        assertThat(op.consumesRecvWqe()).as("%s RWR", row).isEqualTo(f.contains("RWR"));
        assertThat(op.generatesRecvCompletion()).as("%s COMP", row).isEqualTo(f.contains("COMP"));
        assertThat(op.isResponse()).as("%s response", row).isEqualTo(f.contains("R"));
        assertThat(op.isRequest()).isEqualTo(!f.contains("R"));
        assertThat(op.hasImmediate()).isEqualTo(row.headers().contains(IMM_DT));
        assertThat(op.hasInvalidate()).isEqualTo(row.headers().contains(IETH));
        assertThat(op.hasTidList()).as("%s TID list", row).isEqualTo(f.contains("TIDS"));
        Transport transport = switch (row.code() & 0xE0) {
            case 0x20 -> Transport.UC;
            case 0x60 -> Transport.UD;
            case 0x80 -> Transport.CNP;
            // manufacturer-specific: TID RDMA group 0xE0..0xE7; rxe4j's masked atomics 0xF0/0xF1 are RC
            case 0xE0 -> (row.code() & 0xF8) == 0xE0 ? Transport.TID : Transport.RC;
            default -> Transport.RC;
        };
        assertThat(op.transport()).isEqualTo(transport);
    }

    @ParameterizedTest
    @MethodSource("rows")
    void headerOffsetsFollowTheOrderAndSizes(Row row) {
        Opcode op = Opcode.of(row.code());
        assertThat(op.offset(BTH)).isZero();
        assertThat(op.has(BTH)).isTrue();
        int at = Bth.LENGTH;
        for (Header h : row.headers()) {
            assertThat(op.offset(h)).as("%s offset of %s", row, h).isEqualTo(at);
            assertThat(op.has(h)).isTrue();
            at += h.length();
        }
        assertThat(at).isEqualTo(row.hdrBytes());
        Set<Header> present = EnumSet.of(BTH);
        present.addAll(row.headers());
        assertThat(op.headerSet()).isEqualTo(present);
        for (Header h : Header.values()) {
            if (!present.contains(h)) {
                assertThat(op.has(h)).as("%s has no %s", row, h).isFalse();
                assertThat(op.offset(h)).isEqualTo(-1);
            }
        }
    }

    @Test
    void theTableHasExactlyTheFactSheetOpcodes() {
        Map<Integer, String> expected = new LinkedHashMap<>();
        FACT_SHEET.forEach(r -> expected.put(r.code(), r.name()));
        Map<Integer, String> actual = new LinkedHashMap<>();
        for (Opcode op : Opcode.values()) {
            assertThat(actual.put(op.code(), op.name())).as("duplicate code 0x%02X", op.code()).isNull();
        }
        assertThat(actual).containsExactlyInAnyOrderEntriesOf(expected);
        for (int code = 0; code < 256; code++) {
            Opcode op = Opcode.of(code);
            if (expected.containsKey(code)) {
                assertThat(op).isNotNull();
                assertThat(op.code()).isEqualTo(code);
            } else {
                assertThat(op).as("0x%02X is unknown", code).isNull();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0x15, 0x18, 0x19, 0x1A, 0x1B, 0x1E, 0x1F, 0x2C, 0x40, 0x5C, 0x60, 0x66, 0x80, 0x82, 0xDF, 0xE8,
        0xEF, 0xF3, 0xFF})
    void unknownCodesGiveNull(int code) {
        assertThat(Opcode.of(code)).isNull();
    }

    @Test
    void atomicAcknowledgeHasAethAt12ThenAtomicAckEthAt16() {
        Opcode op = Opcode.RC_ATOMIC_ACKNOWLEDGE;
        assertThat(op.offset(AETH)).isEqualTo(12);
        assertThat(op.offset(ATOMIC_ACK_ETH)).isEqualTo(16);
        assertThat(op.headerLength()).isEqualTo(24);
    }

    @Test
    void flushHasFethAt12ThenRethAt16() {
        Opcode op = Opcode.RC_FLUSH;
        assertThat(op.offset(FETH)).isEqualTo(12);
        assertThat(op.offset(RETH)).isEqualTo(16);
        assertThat(op.headerLength()).isEqualTo(32);
        assertThat(op.hasPayload()).isFalse();
    }

    @Test
    void headerLengthsMatchTheFactSheet() {
        // "Header lengths: BTH 12, RETH 16, AETH 4, AtomicETH 28, AtomicAckETH 8, ImmDt 4, IETH 4,
        // DETH 8, FETH 4" (§1.2); MaskedCmpSwapETH 44 (extensions.md §2); "36 bytes of KDETH plus
        // extension" (tid-opfn-facts.md §3.1)
        Map<Header, Integer> expected = Map.ofEntries(Map.entry(BTH, 12), Map.entry(RETH, 16), Map.entry(AETH, 4),
                Map.entry(ATOMIC_ETH, 28), Map.entry(ATOMIC_ACK_ETH, 8), Map.entry(IMM_DT, 4), Map.entry(IETH, 4),
                Map.entry(DETH, 8), Map.entry(FETH, 4), Map.entry(MASKED_CMP_SWAP_ETH, 44), Map.entry(KDETH, 36));
        assertThat(Header.values()).hasSize(expected.size());
        for (Header h : Header.values()) {
            assertThat(h.length()).as("%s", h).isEqualTo(expected.get(h));
        }
    }

    @Test
    void transportIsTheTopThreeBitsOfTheStandardCodes() {
        for (Opcode op : Opcode.values()) {
            if (op.code() < 0xE0) {
                int base = switch (op.transport()) {
                    case RC -> 0x00;
                    case UC -> 0x20;
                    case UD -> 0x60;
                    case CNP -> 0x80;
                    case TID -> 0xE0; // never below 0xE0
                };
                assertThat(op.code() & 0xE0).as("%s", op).isEqualTo(base);
            }
        }
    }

    @Test
    void tidOpcodesAreExactlyTheGroup0xE0AndCarryTheKdethBlockAt12() {
        for (Opcode op : Opcode.values()) {
            boolean tid = op.code() >= 0xE0 && op.code() <= 0xE7;
            assertThat(op.transport() == Transport.TID).as("%s", op).isEqualTo(tid);
            assertThat(op.has(KDETH)).as("%s", op).isEqualTo(tid);
            if (tid) {
                assertThat(op.offset(KDETH)).isEqualTo(12);
                assertThat(op.headerLength()).isEqualTo(48);
                assertThat(op.consumesRecvWqe()).isFalse();
                assertThat(op.generatesRecvCompletion()).isFalse();
            }
        }
    }

    @Test
    void headersReturnsACopy() {
        Header[] h = Opcode.RC_FLUSH.headers();
        h[0] = DETH;
        assertThat(Opcode.RC_FLUSH.headers()).containsExactly(FETH, RETH);
        assertThat(Arrays.asList(Opcode.RC_SEND_ONLY.headers())).isEmpty();
    }

    @Test
    void ofUsesOnlyTheLowEightBits() {
        assertThat(Opcode.of(-1)).isNull(); // 0xFF
        assertThat(Opcode.of(0x100 | 0x11)).isEqualTo(Opcode.RC_ACKNOWLEDGE);
    }
}
