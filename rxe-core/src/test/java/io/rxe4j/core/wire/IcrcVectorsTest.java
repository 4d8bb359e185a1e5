package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.testing.SharedDir;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The ICRC vectors of {@code shared/vectors/icrc.md} (= {@code rxe-facts.md} §3.3): each packet is
 * rebuilt from its fields with the flyweights and {@link Icrc#write}, compared byte for byte, its
 * ICRC is checked, and every single-bit corruption is rejected.
 */
class IcrcVectorsTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int ROCE_PORT = 4791;
    /** BTH byte 4 (FECN, BECN, resv6) is masked to ones by the ICRC, so corrupting it goes unseen. */
    private static final int MASKED_BTH_BYTE = Bth.RESV8A_OFFSET;

    /** Writes the UDP payload (BTH … pad) at {@code at}; returns the length including the ICRC. */
    interface Encoder {
        int encode(ByteBuf b, int at);
    }

    record Vector(int number, String hex, String icrcWire, InetSocketAddress src, InetSocketAddress dst,
            Encoder encoder) {
        byte[] bytes() {
            return HEX.parseHex(hex);
        }

        int ipHeaderLength() {
            return ((bytes()[0] >> 4) & 0xF) == 4 ? 20 : 40;
        }

        /** @return the UDP payload part: BTH … ICRC */
        byte[] udpPayload() {
            byte[] all = bytes();
            return Arrays.copyOfRange(all, ipHeaderLength() + 8, all.length);
        }

        @Override
        public String toString() {
            return "vector " + number;
        }
    }

    static List<Vector> vectors() {
        return List.of(
                new Vector(3,
                        "4500003000004000401126bb0a0000020a000001c0a512b7001c00001100ffff00000011000001001f000001b277b9f9",
                        "b277b9f9", sock("10.0.0.2", 0xC0A5), sock("10.0.0.1", ROCE_PORT), (b, at) -> {
                            Opcode op = Opcode.RC_ACKNOWLEDGE;
                            Bth.write(b, at, op.code(), false, 0, 0xFFFF, 0x11, false, 0x100);
                            Aeth.write(b, at + op.offset(Header.AETH), 0x1F, 1);
                            return op.headerLength() + Icrc.LENGTH;
                        }),
                new Vector(4,
                        "6000000000201140fe800000000000000000000000000001fe800000000000000000000000000002"
                                + "d2b412b7002000000430ffff000000128012345668656c6c6f000000d3300c81",
                        "d3300c81", sock("fe80::1", 0xD2B4), sock("fe80::2", ROCE_PORT), (b, at) -> {
                            Opcode op = Opcode.RC_SEND_ONLY;
                            byte[] payload = "hello".getBytes(StandardCharsets.US_ASCII);
                            int pad = -payload.length & 3;
                            Bth.write(b, at, op.code(), false, pad, 0xFFFF, 0x12, true, 0x123456);
                            int p = at + op.headerLength();
                            b.setBytes(p, payload);
                            b.setZero(p + payload.length, pad);
                            return op.headerLength() + payload.length + pad + Icrc.LENGTH;
                        }),
                new Vector(5,
                        "4500004400004000401126a70a0000010a000002c0a512b7003000001d00ffff00000011800000050000"
                                + "00000000100000001234000000080102030405060708c9bf483c",
                        "c9bf483c", sock("10.0.0.1", 0xC0A5), sock("10.0.0.2", ROCE_PORT), (b, at) -> {
                            Opcode op = Opcode.RC_ATOMIC_WRITE;
                            Bth.write(b, at, op.code(), false, 0, 0xFFFF, 0x11, true, 5);
                            Reth.write(b, at + op.offset(Header.RETH), 0x1000, 0x1234, 8);
                            b.setBytes(at + op.headerLength(), new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
                            return op.headerLength() + 8 + Icrc.LENGTH;
                        }),
                new Vector(6,
                        "4500004000004000401126ab0a0000010a000002c0a512b7002c00001c00ffff00000011800000060000"
                                + "00110000000000000000000012340000000041b7ed7c",
                        "41b7ed7c", sock("10.0.0.1", 0xC0A5), sock("10.0.0.2", ROCE_PORT), (b, at) -> {
                            Opcode op = Opcode.RC_FLUSH;
                            Bth.write(b, at, op.code(), false, 0, 0xFFFF, 0x11, true, 6);
                            Feth.write(b, at + op.offset(Header.FETH), Feth.SEL_MR, Feth.PLT_GLOBAL);
                            Reth.write(b, at + op.offset(Header.RETH), 0, 0x1234, 0);
                            return op.headerLength() + Icrc.LENGTH;
                        }));
    }

    // ---------------------------------------------------------------- the vectors themselves

    @Test
    void vectorsMatchSharedIcrcMd() throws IOException {
        assumeTrue(SharedDir.present(), SharedDir.MISSING);
        String md = Files.readString(SharedDir.resolve("vectors/icrc.md"));
        Pattern row = Pattern.compile("(?m)^\\|\\s*(\\d+)\\s*\\|[^`\\n]*\\|\\s*`([0-9a-fA-F]+)`\\s*\\|\\s*([0-9a-fA-F ]+)\\|");
        Map<Integer, String> inFile = new TreeMap<>();
        Map<Integer, String> wireInFile = new TreeMap<>();
        Matcher m = row.matcher(md);
        while (m.find()) {
            inFile.put(Integer.parseInt(m.group(1)), m.group(2).toLowerCase());
            wireInFile.put(Integer.parseInt(m.group(1)), m.group(3).replace(" ", "").toLowerCase());
        }
        Map<Integer, String> here = vectors().stream().collect(Collectors.toMap(Vector::number, Vector::hex, (a, b) -> a, TreeMap::new));
        Map<Integer, String> wireHere = vectors().stream().collect(Collectors.toMap(Vector::number, Vector::icrcWire, (a, b) -> a, TreeMap::new));
        assertThat(inFile).as("vectors in icrc.md vs. the copies in this test").isEqualTo(here);
        assertThat(wireInFile).isEqualTo(wireHere);
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void ipAndUdpHeadersOfTheVectorMatchItsDescription(Vector v) {
        // TOS 0, TTL 64, ID 0, DF (or IPv6 TC 0, flow label 0, hop limit 64), UDP checksum 0
        byte[] payload = v.udpPayload();
        byte[] expected = concat(ipHeader(v.src().getAddress(), v.dst().getAddress(), 8 + payload.length),
                udpHeader(v.src().getPort(), v.dst().getPort(), payload.length));
        assertThat(HEX.formatHex(Arrays.copyOf(v.bytes(), expected.length))).isEqualTo(HEX.formatHex(expected));
        assertThat(HEX.formatHex(payload, payload.length - 4, payload.length)).isEqualTo(v.icrcWire());
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void rebuildsTheUdpPayloadByteForByte(Vector v) {
        for (Function<Integer, ByteBuf> alloc : allocators()) {
            int at = 7;
            ByteBuf b = alloc.apply(at + 200);
            try {
                fill(b, (byte) 0xA5); // every byte of the packet must be written by the encoder
                int len = v.encoder().encode(b, at);
                new Icrc().write(b, at, len, v.src(), v.dst());
                byte[] got = new byte[len];
                b.getBytes(at, got);
                assertThat(HEX.formatHex(got)).as("%s in %s", v, b.getClass().getSimpleName())
                        .isEqualTo(HEX.formatHex(v.udpPayload()));
                assertThat(b.getByte(at - 1)).as("byte before the packet untouched").isEqualTo((byte) 0xA5);
                assertThat(b.getByte(at + len)).as("byte after the packet untouched").isEqualTo((byte) 0xA5);
            } finally {
                b.release();
            }
        }
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void checkAcceptsTheGivenBytesInEveryBufferKind(Vector v) {
        byte[] payload = v.udpPayload();
        InetSocketAddress[] addrs = addressesFromHex(v);
        assertThat(addrs[0]).isEqualTo(v.src());
        assertThat(addrs[1]).isEqualTo(v.dst());
        int expected = IcrcReference.carried(payload);
        assertThat(IcrcReference.compute(Arrays.copyOf(v.bytes(), v.ipHeaderLength()), v.src().getPort(),
                v.dst().getPort(), payload, false)).as("independent reference CRC").isEqualTo(expected);
        Icrc icrc = new Icrc();
        for (ByteBuf b : packetBuffers(payload, 5)) {
            try {
                assertThat(icrc.check(b, 5, payload.length, v.src(), v.dst())).as("%s in %s", v, b).isTrue();
                assertThat(icrc.compute(b, 5, payload.length, v.src(), v.dst())).isEqualTo(expected);
                assertThat(icrc.check(b, 5, payload.length, v.src(), v.dst(), 0)).isTrue();
                assertThat(b.readerIndex()).as("absolute access only").isZero();
            } finally {
                b.release();
            }
        }
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void everySingleBitFlipOfTheUdpPayloadIsRejected(Vector v) {
        byte[] payload = v.udpPayload();
        Icrc icrc = new Icrc();
        ByteBuf b = Unpooled.wrappedBuffer(payload.clone());
        for (int bit = 0; bit < payload.length * 8; bit++) {
            int i = bit >> 3;
            b.setByte(i, payload[i] ^ (1 << (bit & 7)));
            boolean ok = icrc.check(b, 0, payload.length, v.src(), v.dst());
            if (i == MASKED_BTH_BYTE) {
                assertThat(ok).as("%s: BTH byte 4 (FECN/BECN/resv6) is masked out of the ICRC, bit %d", v, bit).isTrue();
            } else {
                assertThat(ok).as("%s: flipped bit %d (byte %d) must fail the ICRC", v, bit, i).isFalse();
            }
            b.setByte(i, payload[i]);
        }
        assertThat(icrc.check(b, 0, payload.length, v.src(), v.dst())).isTrue();
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void everySingleBitFlipOfTheAddressesAndPortsIsRejected(Vector v) throws UnknownHostException {
        byte[] payload = v.udpPayload();
        Icrc icrc = new Icrc();
        ByteBuf b = Unpooled.wrappedBuffer(payload);
        byte[] src = v.src().getAddress().getAddress();
        byte[] dst = v.dst().getAddress().getAddress();
        for (int bit = 0; bit < src.length * 8; bit++) {
            InetSocketAddress s = new InetSocketAddress(InetAddress.getByAddress(flip(src, bit)), v.src().getPort());
            assertThat(icrc.check(b, 0, payload.length, s, v.dst())).as("%s src bit %d", v, bit).isFalse();
            InetSocketAddress d = new InetSocketAddress(InetAddress.getByAddress(flip(dst, bit)), v.dst().getPort());
            assertThat(icrc.check(b, 0, payload.length, v.src(), d)).as("%s dst bit %d", v, bit).isFalse();
        }
        for (int bit = 0; bit < 16; bit++) {
            InetSocketAddress s = new InetSocketAddress(v.src().getAddress(), v.src().getPort() ^ (1 << bit));
            assertThat(icrc.check(b, 0, payload.length, s, v.dst())).as("%s sport bit %d", v, bit).isFalse();
            InetSocketAddress d = new InetSocketAddress(v.dst().getAddress(), v.dst().getPort() ^ (1 << bit));
            assertThat(icrc.check(b, 0, payload.length, v.src(), d)).as("%s dport bit %d", v, bit).isFalse();
            boolean ok = icrc.check(b, 0, payload.length, v.src(), v.dst(), 1 << bit);
            if (v.src().getAddress().getAddress().length == 4) {
                assertThat(ok).as("%s: IPv4 ID bit %d is covered by the ICRC", v, bit).isFalse();
            } else {
                assertThat(ok).as("%s: IPv6 has no IPv4 ID", v).isTrue();
            }
        }
        // and back to the true inputs, through the same (caching) calculator
        assertThat(icrc.check(b, 0, payload.length, v.src(), v.dst())).isTrue();
    }

    // ---------------------------------------------------------------- FLUSH variant

    @ParameterizedTest
    @MethodSource("vectors")
    void rxeFlushCompatChangesOnlyFlush(Vector v) {
        byte[] payload = v.udpPayload();
        ByteBuf b = Unpooled.wrappedBuffer(payload);
        Icrc compat = new Icrc().rxeFlushCompat(true);
        boolean isFlush = payload[0] == (byte) Opcode.RC_FLUSH.code();
        assertThat(compat.check(b, 0, payload.length, v.src(), v.dst()))
                .as("%s with the rxe FLUSH variant on", v).isEqualTo(!isFlush);
        assertThat(new Icrc().rxeFlushCompat(false).check(b, 0, payload.length, v.src(), v.dst())).isTrue();
        assertThat(compat.compute(b, 0, payload.length, v.src(), v.dst(), false))
                .isEqualTo(IcrcReference.carried(payload));
    }

    @Test
    void rxeFlushVariantIsTheStandardCrcContinuedOverBthFethRethUnmasked() {
        Vector v6 = vectors().get(3);
        byte[] payload = v6.udpPayload();
        ByteBuf b = heap(payload.length);
        int len = v6.encoder().encode(b, 0);
        Icrc compat = new Icrc().rxeFlushCompat(true);
        compat.write(b, 0, len, v6.src(), v6.dst());
        int expected = IcrcReference.compute(Arrays.copyOf(v6.bytes(), 20), v6.src().getPort(), v6.dst().getPort(),
                payload, true);
        assertThat(b.getIntLE(len - 4)).isEqualTo(expected).isNotEqualTo(IcrcReference.carried(payload));
        assertThat(compat.check(b, 0, len, v6.src(), v6.dst())).isTrue();
        assertThat(new Icrc().check(b, 0, len, v6.src(), v6.dst())).isFalse();
        assertThat(new Icrc().compute(b, 0, len, v6.src(), v6.dst(), true)).isEqualTo(expected);
    }

    // ---------------------------------------------------------------- algorithm details

    @Test
    void rxeSeedIsTheCrcStateAfterEightOnesBytes() {
        CRC32 crc = new CRC32();
        crc.update(new byte[] {-1, -1, -1, -1, -1, -1, -1, -1});
        // java.util.zip.CRC32 returns the inverted state; rxe starts crc32_le from 0xDEBB20E3
        assertThat(~(int) crc.getValue()).isEqualTo(0xDEBB20E3);
    }

    @Test
    void icrcIsWrittenLeastSignificantByteFirst() {
        Vector v3 = vectors().getFirst();
        ByteBuf b = heap(64);
        int len = v3.encoder().encode(b, 0);
        int value = new Icrc().compute(b, 0, len, v3.src(), v3.dst());
        assertThat(value).isEqualTo(0xF9B977B2);
        new Icrc().write(b, 0, len, v3.src(), v3.dst());
        assertThat(HEX.formatHex(b.array(), len - 4, len)).isEqualTo("b277b9f9");
    }

    @Test
    void tooShortForBthAndIcrcNeverChecks() {
        ByteBuf b = heap(64);
        Icrc icrc = new Icrc();
        for (int len = 0; len < Bth.LENGTH + Icrc.LENGTH; len++) {
            assertThat(icrc.check(b, 0, len, sock("10.0.0.1", 1), sock("10.0.0.2", ROCE_PORT))).isFalse();
        }
    }

    @Test
    void ipv4MappedIpv6SocketAddressesGiveTheIpv4Icrc() throws UnknownHostException {
        Vector v3 = vectors().getFirst();
        byte[] payload = v3.udpPayload();
        ByteBuf b = Unpooled.wrappedBuffer(payload);
        // what a dual-stack socket may report for an IPv4 peer
        InetSocketAddress src = new InetSocketAddress(
                java.net.Inet6Address.getByAddress(null, mapped(v3.src().getAddress()), -1), v3.src().getPort());
        InetSocketAddress dst = new InetSocketAddress(
                java.net.Inet6Address.getByAddress(null, mapped(v3.dst().getAddress()), -1), v3.dst().getPort());
        assertThat(new Icrc().check(b, 0, payload.length, src, dst)).isTrue();
        assertThat(new Icrc().check(b, 0, payload.length, src, v3.dst())).isTrue();
    }

    @Test
    void addressCacheIsNotPoisonedByAMixedFamilyCall() {
        // a call with one IPv4 and one IPv6 address must not change the result of later calls
        Vector v3 = vectors().getFirst();
        byte[] payload = v3.udpPayload();
        ByteBuf b = Unpooled.wrappedBuffer(payload);
        Icrc icrc = new Icrc();
        assertThat(icrc.check(b, 0, payload.length, v3.src(), v3.dst())).isTrue();
        icrc.compute(b, 0, payload.length, v3.src(), sock("fe80::2", ROCE_PORT));
        assertThat(icrc.check(b, 0, payload.length, v3.src(), v3.dst())).as("same src, IPv4 dst again").isTrue();
        icrc.compute(b, 0, payload.length, sock("fe80::1", 1), v3.dst());
        assertThat(icrc.check(b, 0, payload.length, v3.src(), v3.dst())).as("same dst, IPv4 src again").isTrue();
    }

    @ParameterizedTest
    @EnumSource(value = Opcode.class, names = {"RC_ACKNOWLEDGE", "RC_SEND_ONLY", "RC_FLUSH"})
    void icrcDoesNotDependOnWhereThePacketSitsInTheBuffer(Opcode op) {
        Icrc icrc = new Icrc().rxeFlushCompat(true);
        int len = op.headerLength() + (op.hasPayload() ? 8 : 0) + Icrc.LENGTH;
        Integer first = null;
        for (int at = 0; at < 9; at++) {
            ByteBuf b = heap(at + len + 3);
            Bth.write(b, at, op.code(), false, 0, 0xFFFF, 0x123, true, 42);
            for (int i = Bth.LENGTH; i < len - 4; i++) {
                b.setByte(at + i, i * 7);
            }
            int v = icrc.compute(b, at, len, sock("10.1.2.3", 49152), sock("10.1.2.4", ROCE_PORT));
            if (first == null) {
                first = v;
            }
            assertThat(v).as("at %d", at).isEqualTo(first);
        }
    }

    // ---------------------------------------------------------------- helpers

    static InetSocketAddress sock(String literal, int port) {
        try {
            return new InetSocketAddress(InetAddress.getByName(literal), port);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static InetSocketAddress[] addressesFromHex(Vector v) {
        byte[] all = v.bytes();
        int ipLen = v.ipHeaderLength();
        int alen = ipLen == 20 ? 4 : 16;
        int srcAt = ipLen == 20 ? 12 : 8;
        try {
            InetAddress s = InetAddress.getByAddress(Arrays.copyOfRange(all, srcAt, srcAt + alen));
            InetAddress d = InetAddress.getByAddress(Arrays.copyOfRange(all, srcAt + alen, srcAt + 2 * alen));
            int sport = ((all[ipLen] & 0xFF) << 8) | (all[ipLen + 1] & 0xFF);
            int dport = ((all[ipLen + 2] & 0xFF) << 8) | (all[ipLen + 3] & 0xFF);
            return new InetSocketAddress[] {new InetSocketAddress(s, sport), new InetSocketAddress(d, dport)};
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    /** IPv4 (TOS 0, ID 0, DF, TTL 64, real checksum) or IPv6 (TC 0, flow 0, hop limit 64) header. */
    static byte[] ipHeader(InetAddress src, InetAddress dst, int udpLength) {
        byte[] s = src.getAddress();
        byte[] d = dst.getAddress();
        if (s.length == 4) {
            int total = 20 + udpLength;
            byte[] h = {0x45, 0, (byte) (total >> 8), (byte) total, 0, 0, 0x40, 0, 64, 17, 0, 0,
                s[0], s[1], s[2], s[3], d[0], d[1], d[2], d[3]};
            int sum = 0;
            for (int i = 0; i < 20; i += 2) {
                sum += ((h[i] & 0xFF) << 8) | (h[i + 1] & 0xFF);
            }
            sum = (sum & 0xFFFF) + (sum >>> 16);
            sum = ~((sum & 0xFFFF) + (sum >>> 16));
            h[10] = (byte) (sum >> 8);
            h[11] = (byte) sum;
            return h;
        }
        byte[] h = new byte[40];
        h[0] = 0x60;
        h[4] = (byte) (udpLength >> 8);
        h[5] = (byte) udpLength;
        h[6] = 17;
        h[7] = 64;
        System.arraycopy(s, 0, h, 8, 16);
        System.arraycopy(d, 0, h, 24, 16);
        return h;
    }

    static byte[] udpHeader(int sport, int dport, int payloadLength) {
        int len = 8 + payloadLength;
        return new byte[] {(byte) (sport >> 8), (byte) sport, (byte) (dport >> 8), (byte) dport,
            (byte) (len >> 8), (byte) len, 0, 0};
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static byte[] flip(byte[] a, int bit) {
        byte[] r = a.clone();
        r[bit >> 3] ^= (byte) (1 << (bit & 7));
        return r;
    }

    private static byte[] mapped(InetAddress v4) {
        byte[] r = new byte[16];
        r[10] = (byte) 0xFF;
        r[11] = (byte) 0xFF;
        System.arraycopy(v4.getAddress(), 0, r, 12, 4);
        return r;
    }

    /** A heap buffer that is not leak-tracked (no release needed). */
    static ByteBuf heap(int capacity) {
        return Unpooled.wrappedBuffer(new byte[capacity]).clear();
    }

    private static void fill(ByteBuf b, byte value) {
        for (int i = 0; i < b.capacity(); i++) {
            b.setByte(i, value);
        }
    }

    /** Heap, direct and two-component composite buffers of {@code capacity} bytes. */
    private static List<Function<Integer, ByteBuf>> allocators() {
        return List.of(
                Unpooled::buffer,
                Unpooled::directBuffer,
                cap -> {
                    CompositeByteBuf c = Unpooled.compositeBuffer();
                    int half = cap / 2;
                    c.addComponent(true, Unpooled.buffer(half).writeZero(half));
                    c.addComponent(true, Unpooled.directBuffer(cap - half).writeZero(cap - half));
                    return c;
                });
    }

    /**
     * The packet at index {@code at} in: a heap buffer, a direct buffer, a composite buffer split
     * inside the BTH and again inside the payload, and a slice.
     */
    private static List<ByteBuf> packetBuffers(byte[] payload, int at) {
        byte[] withLead = new byte[at + payload.length];
        System.arraycopy(payload, 0, withLead, at, payload.length);
        ByteBuf heap = Unpooled.wrappedBuffer(withLead.clone());
        ByteBuf direct = Unpooled.directBuffer(withLead.length).writeBytes(withLead);
        CompositeByteBuf composite = Unpooled.compositeBuffer();
        int cut1 = at + 6;
        int cut2 = at + Math.min(payload.length - 2, 20);
        composite.addComponent(true, Unpooled.wrappedBuffer(Arrays.copyOfRange(withLead, 0, cut1)));
        composite.addComponent(true, Unpooled.directBuffer().writeBytes(withLead, cut1, cut2 - cut1));
        composite.addComponent(true, Unpooled.wrappedBuffer(Arrays.copyOfRange(withLead, cut2, withLead.length)));
        byte[] bigger = new byte[withLead.length + 11];
        System.arraycopy(withLead, 0, bigger, 11, withLead.length);
        ByteBuf slice = Unpooled.wrappedBuffer(bigger).slice(11, withLead.length);
        return List.of(heap, direct, composite, slice);
    }
}
