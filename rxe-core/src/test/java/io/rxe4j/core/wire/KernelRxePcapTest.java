package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.testing.Pcap;
import io.rxe4j.testing.SharedDir;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Real {@code rdma_rxe} traffic (Linux 6.12, {@code shared/pcaps/kernel-rxe/}): every RoCEv2
 * packet of every capture parses, carries a valid ICRC (computed with the packet's real IPv4 ID;
 * FLUSH only with the rxe FLUSH variant), decodes to the values summarised in {@code INDEX.md},
 * and re-encodes with the flyweights to the identical bytes.
 */
class KernelRxePcapTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int ROCE_PORT = 4791;
    private static final String SERVER = "10.99.0.11";
    private static final String CLIENT = "10.99.0.12";

    /** One direction of one capture, from INDEX.md "Per-capture summary". */
    record Direction(String src, String dst, int destQp, int firstPsn, int lastPsn, int sport, int packets) {}

    /**
     * @param pmtu path MTU of the run (rc_pingpong -m / perftest -m, else rxe's active MTU 1024)
     * @param flushQuirk packets whose ICRC matches only with the rxe FLUSH variant
     */
    record Summary(int packets, int flushQuirk, int pmtu, Map<Opcode, Integer> opcodes, List<Direction> directions) {}

    /** Hard-coded from {@code shared/pcaps/kernel-rxe/INDEX.md}. */
    static final Map<String, Summary> EXPECTED = new LinkedHashMap<>();

    static {
        EXPECTED.put("ib_atomic_fadd.pcap", new Summary(10, 0, 1024,
                counts(Opcode.RC_FETCH_ADD, 5, Opcode.RC_ATOMIC_ACKNOWLEDGE, 5),
                List.of(new Direction(CLIENT, SERVER, 0x00001a, 0xb6393d, 0xb63941, 49828, 5),
                        new Direction(SERVER, CLIENT, 0x00001a, 0xb6393d, 0xb63941, 49828, 5))));
        EXPECTED.put("ib_read_bw.pcap", new Summary(20, 0, 256,
                counts(Opcode.RC_RDMA_READ_REQUEST, 5, Opcode.RC_RDMA_READ_RESPONSE_FIRST, 5,
                        Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, 5, Opcode.RC_RDMA_READ_RESPONSE_LAST, 5),
                List.of(new Direction(CLIENT, SERVER, 0x000018, 0x2f21ee, 0x2f21fa, 49728, 5),
                        new Direction(SERVER, CLIENT, 0x000018, 0x2f21ee, 0x2f21fc, 49728, 15))));
        EXPECTED.put("ib_write_bw.pcap", new Summary(20, 0, 256,
                counts(Opcode.RC_RDMA_WRITE_FIRST, 5, Opcode.RC_RDMA_WRITE_MIDDLE, 5,
                        Opcode.RC_RDMA_WRITE_LAST, 5, Opcode.RC_ACKNOWLEDGE, 5),
                List.of(new Direction(CLIENT, SERVER, 0x000017, 0xcddf28, 0xcddf36, 49681, 15),
                        new Direction(SERVER, CLIENT, 0x000017, 0xcddf2a, 0xcddf36, 49681, 5))));
        EXPECTED.put("rc_pingpong.pcap", new Summary(8, 0, 1024,
                counts(Opcode.RC_SEND_ONLY, 4, Opcode.RC_ACKNOWLEDGE, 4),
                List.of(new Direction(CLIENT, SERVER, 0x000012, 0x85c296, 0x93a50d, 49494, 4),
                        new Direction(SERVER, CLIENT, 0x000013, 0x85c296, 0x93a50d, 49494, 4))));
        EXPECTED.put("rc_pingpong_mtu256.pcap", new Summary(16, 0, 256,
                counts(Opcode.RC_SEND_FIRST, 4, Opcode.RC_SEND_MIDDLE, 4, Opcode.RC_SEND_LAST, 4,
                        Opcode.RC_ACKNOWLEDGE, 4),
                List.of(new Direction(CLIENT, SERVER, 0x000011, 0x8b14e7, 0x8a43cb, 49492, 8),
                        new Direction(SERVER, CLIENT, 0x000014, 0x8b14e9, 0x8a43cb, 49492, 8))));
        EXPECTED.put("rxe_ops_awrite_flush.pcap", new Summary(8, 2, 1024,
                counts(Opcode.RC_ATOMIC_WRITE, 1, Opcode.RC_RDMA_READ_RESPONSE_ONLY, 4, Opcode.RC_FLUSH, 2,
                        Opcode.RC_RDMA_READ_REQUEST, 1),
                List.of(new Direction(CLIENT, SERVER, 0x000015, 0x88b545, 0x88b548, 49740, 4),
                        new Direction(SERVER, CLIENT, 0x00001c, 0x88b545, 0x88b548, 49740, 4))));
    }

    private static Path folder() {
        assumeTrue(SharedDir.present(), SharedDir.MISSING);
        Path dir = SharedDir.resolve("pcaps/kernel-rxe");
        assumeTrue(Files.isDirectory(dir), "no kernel captures at " + dir + "; skipping");
        return dir;
    }

    private static List<Path> captures(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".pcap")).sorted().toList();
        }
    }

    @Test
    void everyCaptureOfTheIndexIsPresent() throws IOException {
        Path dir = folder();
        List<String> names = captures(dir).stream().map(p -> p.getFileName().toString()).toList();
        assertThat(names).containsAll(EXPECTED.keySet());
    }

    @TestFactory
    Stream<DynamicTest> everyCapture() throws IOException {
        Path dir = folder();
        return captures(dir).stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> verify(p)));
    }

    private static void verify(Path file) throws IOException {
        String name = file.getFileName().toString();
        List<Pcap.UdpPacket> packets = Pcap.readUdp(file, ROCE_PORT);
        assertThat(packets).as("%s: RoCEv2 packets", name).isNotEmpty();

        Icrc standard = new Icrc();
        Icrc compat = new Icrc().rxeFlushCompat(true);
        PacketView view = new PacketView();
        Map<Opcode, Integer> opcodes = new EnumMap<>(Opcode.class);
        Map<String, DirectionStats> directions = new LinkedHashMap<>();
        int flushQuirk = 0;
        Summary expected = EXPECTED.get(name);

        for (Pcap.UdpPacket pkt : packets) {
            String what = name + " " + pkt;
            byte[] udp = pkt.udpPayload();
            int at = 3;
            ByteBuf b = Unpooled.wrappedBuffer(new byte[at + udp.length + 5]);
            b.setBytes(at, udp);
            InetSocketAddress src = pkt.srcSocket();
            InetSocketAddress dst = pkt.dstSocket();
            int ipv4Id = pkt.ipv4Id();

            // -- structure
            assertThat(view.parse(b, at, udp.length)).as("%s: PacketView.parse", what).isNull();
            Opcode op = view.opcode();
            assertThat(Bth.tver(b, at)).isZero();
            assertThat(Bth.pkey(b, at)).as(what).isEqualTo(Bth.DEFAULT_PKEY);
            assertThat(view.payloadIndex()).isEqualTo(at + op.headerLength());
            assertThat(view.payloadIndex() + view.payloadLength() + view.padCount() + Icrc.LENGTH)
                    .isEqualTo(at + udp.length);

            // -- the IPv4 header rdma_rxe sent is the one Icrc rebuilds, except for its ID
            if (pkt.ipVersion() == 4) {
                assertThat(pkt.ipHeader().length).as("%s: IHL 5", what).isEqualTo(20);
                assertThat(pkt.dontFragment()).as("%s: DF", what).isTrue();
                assertThat(pkt.ipHeader()[7]).as("%s: fragment offset", what).isZero();
            }

            // -- ICRC
            int carried = b.getIntLE(at + udp.length - Icrc.LENGTH);
            boolean isFlush = op == Opcode.RC_FLUSH;
            assertThat(IcrcReference.compute(pkt.ipHeader(), pkt.srcPort(), pkt.dstPort(), udp, isFlush))
                    .as("%s: independent reference over the real IP header", what).isEqualTo(carried);
            assertThat(standard.check(b, at, udp.length, src, dst, ipv4Id))
                    .as("%s: standard ICRC with IPv4 ID 0x%04x", what, ipv4Id).isEqualTo(!isFlush);
            assertThat(compat.check(b, at, udp.length, src, dst, ipv4Id))
                    .as("%s: ICRC with the rxe FLUSH variant", what).isTrue();
            if (ipv4Id != 0) {
                assertThat(compat.check(b, at, udp.length, src, dst))
                        .as("%s: the IPv4 ID is covered, so assuming ID 0 must fail", what).isFalse();
            }
            if (isFlush) {
                flushQuirk++;
            }

            // -- re-encode from the decoded fields and compare byte for byte
            byte[] again = reencode(b, at, udp.length, op, view.payloadLength(), compat, src, dst, ipv4Id);
            assertThat(HEX.formatHex(again)).as("%s: re-encoded", what).isEqualTo(HEX.formatHex(udp));

            // -- payload length rule against the run's path MTU
            if (expected != null) {
                assertPayloadRule(what, op, view.payloadLength(), expected.pmtu());
            }

            opcodes.merge(op, 1, Integer::sum);
            directions.computeIfAbsent(pkt.srcIp().getHostAddress() + ">" + pkt.dstIp().getHostAddress(),
                    k -> new DirectionStats(pkt.srcIp().getHostAddress(), pkt.dstIp().getHostAddress()))
                    .add(Bth.destQp(b, at), Bth.psn(b, at), pkt.srcPort(), pkt.dstPort());
        }

        if (expected == null) {
            return; // a capture INDEX.md does not summarise: structure, ICRC and re-encoding only
        }
        assertThat(packets).as("%s: RoCEv2 packets", name).hasSize(expected.packets());
        assertThat(flushQuirk).as("%s: packets valid only with the rxe FLUSH quirk", name)
                .isEqualTo(expected.flushQuirk());
        assertThat(opcodes).as("%s: opcodes", name).isEqualTo(expected.opcodes());
        List<Direction> seen = new ArrayList<>();
        for (DirectionStats d : directions.values()) {
            assertThat(d.destQps).as("%s %s: one dest QPN per direction", name, d.src).hasSize(1);
            assertThat(d.dports).as("%s %s: destination port", name, d.src).containsOnly(ROCE_PORT);
            assertThat(d.sports).as("%s %s: one source port", name, d.src).hasSize(1);
            seen.add(new Direction(d.src, d.dst, d.destQps.getFirst(), d.firstPsn, d.lastPsn, d.sports.getFirst(),
                    d.packets));
        }
        assertThat(seen).as("%s: per-direction summary", name).containsExactlyInAnyOrderElementsOf(expected.directions());
    }

    /** Builds the packet again from what the flyweights read out of {@code in}. */
    private static byte[] reencode(ByteBuf in, int at, int length, Opcode op, int payloadLength, Icrc icrc,
            InetSocketAddress src, InetSocketAddress dst, int ipv4Id) {
        // the fields Bth.write cannot express must be zero in what rdma_rxe sent
        assertThat(Bth.migReq(in, at)).isFalse();
        assertThat(Bth.fecn(in, at)).isFalse();
        assertThat(Bth.becn(in, at)).isFalse();
        assertThat(Bth.resv7(in, at)).isZero();
        int outAt = 11;
        ByteBuf out = Unpooled.wrappedBuffer(new byte[outAt + length]);
        for (int i = 0; i < out.capacity(); i++) {
            out.setByte(i, 0x5A); // so that any byte the encoder forgets shows up
        }
        Bth.write(out, outAt, Bth.opcode(in, at), Bth.se(in, at), Bth.padCount(in, at), Bth.pkey(in, at),
                Bth.destQp(in, at), Bth.ackReq(in, at), Bth.psn(in, at));
        for (Header h : op.headers()) {
            int i = at + op.offset(h);
            int o = outAt + op.offset(h);
            switch (h) {
                case BTH -> throw new AssertionError("BTH is not an extended header");
                case RETH -> Reth.write(out, o, Reth.va(in, i), Reth.rkey(in, i), Reth.dmaLength(in, i));
                case AETH -> Aeth.write(out, o, Aeth.syndrome(in, i), Aeth.msn(in, i));
                case ATOMIC_ETH -> AtomicEth.write(out, o, AtomicEth.va(in, i), AtomicEth.rkey(in, i),
                        AtomicEth.swapAdd(in, i), AtomicEth.compare(in, i));
                case ATOMIC_ACK_ETH -> AtomicAckEth.write(out, o, AtomicAckEth.originalData(in, i));
                case IMM_DT -> ImmDt.write(out, o, ImmDt.imm(in, i));
                case IETH -> Ieth.write(out, o, Ieth.rkey(in, i));
                case DETH -> Deth.write(out, o, Deth.qkey(in, i), Deth.srcQp(in, i));
                case FETH -> Feth.write(out, o, Feth.selectivity(in, i), Feth.placementType(in, i));
                case MASKED_CMP_SWAP_ETH -> MaskedCmpSwapEth.write(out, o, MaskedCmpSwapEth.va(in, i),
                        MaskedCmpSwapEth.rkey(in, i), MaskedCmpSwapEth.swap(in, i), MaskedCmpSwapEth.compare(in, i),
                        MaskedCmpSwapEth.swapMask(in, i), MaskedCmpSwapEth.compareMask(in, i));
            }
        }
        int p = op.headerLength();
        out.setBytes(outAt + p, in, at + p, payloadLength);
        out.setZero(outAt + p + payloadLength, Bth.padCount(in, at));
        // rdma_rxe sends a changing IPv4 ID; rxe4j's own packets go out with ID 0 (Icrc.write)
        int icrcValue = icrc.compute(out, outAt, length, src, dst, ipv4Id);
        out.setIntLE(outAt + length - Icrc.LENGTH, icrcValue);
        byte[] r = new byte[length];
        out.getBytes(outAt, r);
        return r;
    }

    private static void assertPayloadRule(String what, Opcode op, int len, int pmtu) {
        switch (op.payload()) {
            case NONE -> assertThat(len).as("%s: no payload", what).isZero();
            case PMTU -> assertThat(len).as("%s: FIRST/MIDDLE carry the PMTU", what).isEqualTo(pmtu);
            case NON_EMPTY -> assertThat(len).as("%s: LAST carries 1..PMTU", what).isBetween(1, pmtu);
            case ANY -> assertThat(len).as("%s: ONLY carries 0..PMTU", what).isBetween(0, pmtu);
            case EIGHT -> assertThat(len).as("%s: ATOMIC WRITE carries 8 bytes", what).isEqualTo(8);
        }
    }

    // ---------------------------------------------------------------- field values of one capture

    @Test
    void atomicWriteFlushAndReadFieldsAsRdmaRxeSentThem() throws IOException {
        Path file = folder().resolve("rxe_ops_awrite_flush.pcap");
        assumeTrue(Files.isRegularFile(file), "missing " + file);
        List<Pcap.UdpPacket> packets = Pcap.readUdp(file, ROCE_PORT);
        assertThat(packets).hasSize(8);
        PacketView v = new PacketView();
        long va = -1;
        int rkey = 0;
        byte[] written = HEX.parseHex("0123456789abcdef");
        for (int n = 0; n < packets.size(); n++) {
            ByteBuf b = Unpooled.wrappedBuffer(packets.get(n).udpPayload());
            assertThat(v.parse(b, 0, b.capacity())).isNull();
            switch (n) {
                case 0 -> {
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_ATOMIC_WRITE);
                    assertThat(v.ackReq()).isTrue();
                    int r = v.index(Header.RETH);
                    va = Reth.va(b, r);
                    rkey = Reth.rkey(b, r);
                    assertThat(Reth.dmaLength(b, r)).isEqualTo(8);
                    assertThat(v.payloadLength()).isEqualTo(8);
                    assertThat(HEX.formatHex(b.array(), v.payloadIndex(), v.payloadIndex() + 8))
                            .isEqualTo(HEX.formatHex(written));
                }
                case 2 -> { // flush: global visibility of a 4096-byte range
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_FLUSH);
                    assertThat(v.ackReq()).isTrue();
                    int f = v.index(Header.FETH);
                    assertThat(b.getInt(f)).isEqualTo(0x00000001);
                    assertThat(Feth.selectivity(b, f)).isEqualTo(Feth.SEL_RANGE);
                    assertThat(Feth.placementType(b, f)).isEqualTo(Feth.PLT_GLOBAL);
                    assertThat(v.index(Header.RETH)).isEqualTo(f + Feth.LENGTH);
                    assertThat(Reth.va(b, v.index(Header.RETH))).isEqualTo(va & ~0xFFFL);
                    assertThat(Reth.rkey(b, v.index(Header.RETH))).isEqualTo(rkey);
                    assertThat(Reth.dmaLength(b, v.index(Header.RETH))).isEqualTo(4096);
                }
                case 4 -> { // flushmr: the whole MR, global visibility: FETH 00 00 00 11
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_FLUSH);
                    int f = v.index(Header.FETH);
                    assertThat(HEX.formatHex(b.array(), f, f + 4)).isEqualTo("00000011");
                    assertThat(Feth.selectivity(b, f)).isEqualTo(Feth.SEL_MR);
                    assertThat(Feth.placementType(b, f)).isEqualTo(Feth.PLT_GLOBAL);
                    assertThat(Reth.dmaLength(b, v.index(Header.RETH))).isZero();
                }
                case 6 -> {
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_RDMA_READ_REQUEST);
                    assertThat(Reth.va(b, v.index(Header.RETH))).isEqualTo(va);
                    assertThat(Reth.dmaLength(b, v.index(Header.RETH))).isEqualTo(8);
                }
                case 7 -> { // the 8 bytes written atomically read back
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_RDMA_READ_RESPONSE_ONLY);
                    assertThat(v.payloadLength()).isEqualTo(8);
                    assertThat(HEX.formatHex(b.array(), v.payloadIndex(), v.payloadIndex() + 8))
                            .isEqualTo(HEX.formatHex(written));
                }
                default -> { // 1, 3, 5: zero-length READ RESPONSE ONLY acknowledging the request before
                    assertThat(v.opcode()).isEqualTo(Opcode.RC_RDMA_READ_RESPONSE_ONLY);
                    assertThat(v.payloadLength()).isZero();
                    assertThat(Aeth.syndrome(b, v.index(Header.AETH))).isEqualTo(Aeth.ACK_UNLIMITED);
                    assertThat(v.psn()).isEqualTo(Bth.psn(Unpooled.wrappedBuffer(packets.get(n - 1).udpPayload()), 0));
                }
            }
        }
    }

    @Test
    void atomicAckCarriesAethAt12AndOriginalValueAt16() throws IOException {
        Path file = folder().resolve("ib_atomic_fadd.pcap");
        assumeTrue(Files.isRegularFile(file), "missing " + file);
        PacketView v = new PacketView();
        int msn = 0;
        for (Pcap.UdpPacket pkt : Pcap.readUdp(file, ROCE_PORT)) {
            ByteBuf b = Unpooled.wrappedBuffer(pkt.udpPayload());
            assertThat(v.parse(b, 0, b.capacity())).isNull();
            if (v.opcode() == Opcode.RC_FETCH_ADD) {
                int a = v.index(Header.ATOMIC_ETH);
                assertThat(a).isEqualTo(12);
                assertThat(AtomicEth.va(b, a) & 7).as("8-byte aligned").isZero();
                assertThat(AtomicEth.swapAdd(b, a)).as("add value of ib_atomic_bw").isEqualTo(1);
                assertThat(AtomicEth.compare(b, a)).as("rxe leaves compare 0 for FETCH_ADD").isZero();
            } else {
                assertThat(v.opcode()).isEqualTo(Opcode.RC_ATOMIC_ACKNOWLEDGE);
                assertThat(v.index(Header.AETH)).isEqualTo(12);
                assertThat(v.index(Header.ATOMIC_ACK_ETH)).isEqualTo(16);
                assertThat(Aeth.syndrome(b, 12)).isEqualTo(Aeth.ACK_UNLIMITED);
                assertThat(Aeth.msn(b, 12)).as("MSN counts the atomics").isEqualTo(++msn);
            }
        }
        assertThat(msn).isEqualTo(5);
    }

    // ---------------------------------------------------------------- helpers

    private static final class DirectionStats {
        final String src;
        final String dst;
        final List<Integer> destQps = new ArrayList<>();
        final List<Integer> sports = new ArrayList<>();
        final List<Integer> dports = new ArrayList<>();
        int firstPsn = -1;
        int lastPsn;
        int packets;

        DirectionStats(String src, String dst) {
            this.src = src;
            this.dst = dst;
        }

        void add(int destQp, int psn, int sport, int dport) {
            if (!destQps.contains(destQp)) {
                destQps.add(destQp);
            }
            if (!sports.contains(sport)) {
                sports.add(sport);
            }
            if (!dports.contains(dport)) {
                dports.add(dport);
            }
            if (packets == 0) {
                firstPsn = psn;
            }
            lastPsn = psn;
            packets++;
        }
    }

    private static Map<Opcode, Integer> counts(Object... opAndCount) {
        Map<Opcode, Integer> m = new EnumMap<>(Opcode.class);
        for (int i = 0; i < opAndCount.length; i += 2) {
            m.put((Opcode) opAndCount[i], (Integer) opAndCount[i + 1]);
        }
        return m;
    }
}
