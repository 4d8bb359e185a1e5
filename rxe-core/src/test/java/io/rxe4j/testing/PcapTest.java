package io.rxe4j.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIOException;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The test-only pcap reader, on captures built here byte by byte. */
class PcapTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final byte[] MACS = HEX.parseHex("525400000011" + "525400000012");

    /** IPv4 header (IHL 5 unless options given) + UDP header + payload. */
    private static byte[] ipv4Udp(String src, String dst, int id, int tos, int ttl, int flagsFrag, int sport, int dport,
            byte[] payload, byte[] options) throws IOException {
        int ihl = 20 + options.length;
        ByteBuffer b = ByteBuffer.allocate(ihl + 8 + payload.length);
        b.put((byte) (0x40 | (ihl / 4))).put((byte) tos).putShort((short) (ihl + 8 + payload.length))
                .putShort((short) id).putShort((short) flagsFrag).put((byte) ttl).put((byte) 17).putShort((short) 0)
                .put(InetAddress.getByName(src).getAddress()).put(InetAddress.getByName(dst).getAddress()).put(options);
        b.putShort((short) sport).putShort((short) dport).putShort((short) (8 + payload.length)).putShort((short) 0)
                .put(payload);
        return b.array();
    }

    private static byte[] ipv6Udp(String src, String dst, int sport, int dport, byte[] payload, boolean hopByHop)
            throws IOException {
        int ext = hopByHop ? 8 : 0;
        ByteBuffer b = ByteBuffer.allocate(40 + ext + 8 + payload.length);
        b.putInt(0x6ABCDEF1).putShort((short) (ext + 8 + payload.length)).put((byte) (hopByHop ? 0 : 17))
                .put((byte) 33).put(v6(src)).put(v6(dst));
        if (hopByHop) {
            b.put((byte) 17).put((byte) 0).put(new byte[6]);
        }
        b.putShort((short) sport).putShort((short) dport).putShort((short) (8 + payload.length)).putShort((short) 0)
                .put(payload);
        return b.array();
    }

    /** 16 address bytes; {@code ::ffff:a.b.c.d} literals too (InetAddress would make those IPv4). */
    private static byte[] v6(String literal) throws IOException {
        if (literal.startsWith("::ffff:")) {
            byte[] r = new byte[16];
            r[10] = (byte) 0xFF;
            r[11] = (byte) 0xFF;
            System.arraycopy(InetAddress.getByName(literal.substring(7)).getAddress(), 0, r, 12, 4);
            return r;
        }
        return InetAddress.getByName(literal).getAddress();
    }

    private static byte[] ether(int etherType, byte[] ip, int... vlans) {
        ByteBuffer b = ByteBuffer.allocate(14 + 4 * vlans.length + ip.length);
        b.put(MACS);
        for (int vlan : vlans) {
            b.putShort((short) 0x8100).putShort((short) vlan);
        }
        b.putShort((short) etherType).put(ip);
        return b.array();
    }

    private static byte[] pcap(ByteOrder order, int magic, int linkType, byte[]... frames) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer h = ByteBuffer.allocate(24).order(order);
        h.putInt(magic).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(65535).putInt(linkType);
        out.writeBytes(h.array());
        int t = 0;
        for (byte[] f : frames) {
            ByteBuffer r = ByteBuffer.allocate(16).order(order);
            r.putInt(1_700_000_000 + t).putInt(123).putInt(f.length).putInt(f.length);
            out.writeBytes(r.array());
            out.writeBytes(f);
            t++;
        }
        return out.toByteArray();
    }

    @Test
    void ethernetIpv4InBothByteOrders() throws IOException {
        byte[] payload = HEX.parseHex("1100ffff" + "00000011" + "00000100" + "1f000001" + "b277b9f9");
        byte[] frame = ether(0x0800, ipv4Udp("10.0.0.2", "10.0.0.1", 0x2a3a, 0x02, 64, 0x4000, 0xC0A5, 4791,
                payload, new byte[0]));
        for (ByteOrder order : new ByteOrder[] {ByteOrder.BIG_ENDIAN, ByteOrder.LITTLE_ENDIAN}) {
            List<Pcap.UdpPacket> ps = Pcap.readUdp(pcap(order, 0xA1B2C3D4, 1, frame), "mem");
            assertThat(ps).hasSize(1);
            Pcap.UdpPacket p = ps.getFirst();
            assertThat(p.frame()).isEqualTo(1);
            assertThat(p.timestampNanos()).isEqualTo(1_700_000_000L * 1_000_000_000L + 123_000L);
            assertThat(p.vlanId()).isEqualTo(-1);
            assertThat(p.ipVersion()).isEqualTo(4);
            assertThat(p.srcIp()).isEqualTo(InetAddress.getByName("10.0.0.2")).isInstanceOf(Inet4Address.class);
            assertThat(p.dstIp()).isEqualTo(InetAddress.getByName("10.0.0.1"));
            assertThat(p.srcPort()).isEqualTo(0xC0A5);
            assertThat(p.dstPort()).isEqualTo(4791);
            assertThat(p.ipv4Id()).isEqualTo(0x2a3a);
            assertThat(p.tos()).isEqualTo(2);
            assertThat(p.ttl()).isEqualTo(64);
            assertThat(p.dontFragment()).isTrue();
            assertThat(p.ipHeader()).hasSize(20);
            assertThat(p.udpPayload()).isEqualTo(payload);
            assertThat(p.srcSocket().getPort()).isEqualTo(0xC0A5);
            assertThat(p.hasPort(4791)).isTrue();
            assertThat(p.toString()).contains("10.0.0.2:49317 -> 10.0.0.1:4791");
        }
    }

    @Test
    void nanosecondMagic() throws IOException {
        byte[] frame = ether(0x0800, ipv4Udp("1.2.3.4", "5.6.7.8", 1, 0, 1, 0, 1, 2, new byte[3], new byte[0]));
        List<Pcap.UdpPacket> ps = Pcap.readUdp(pcap(ByteOrder.LITTLE_ENDIAN, 0xA1B23C4D, 1, frame), "mem");
        assertThat(ps.getFirst().timestampNanos()).isEqualTo(1_700_000_000L * 1_000_000_000L + 123L);
    }

    @Test
    void vlanTagsOptionsPaddingAndSkippedFrames() throws IOException {
        byte[] payload = {1, 2, 3};
        byte[] tagged = ether(0x0800, ipv4Udp("10.1.1.1", "10.1.1.2", 7, 0, 9, 0, 1000, 4791, payload,
                new byte[] {1, 1, 1, 0}), 0x2064, 0x0123);
        byte[] padded = ether(0x0800, ipv4Udp("10.1.1.1", "10.1.1.2", 8, 0, 9, 0, 1000, 4791, payload, new byte[0]));
        byte[] withPad = java.util.Arrays.copyOf(padded, 60); // Ethernet minimum frame, zero padding
        byte[] fragment = ether(0x0800, ipv4Udp("10.1.1.1", "10.1.1.2", 9, 0, 9, 0x2000, 1000, 4791, payload,
                new byte[0]));
        byte[] tcpLike = ether(0x0800, ipv4Udp("10.1.1.1", "10.1.1.2", 10, 0, 9, 0, 1000, 4791, payload, new byte[0]));
        tcpLike[14 + 9] = 6;
        byte[] arp = ether(0x0806, new byte[28]);
        byte[] other = ether(0x0800, ipv4Udp("10.1.1.1", "10.1.1.2", 11, 0, 9, 0, 53, 53, payload, new byte[0]));
        byte[] file = pcap(ByteOrder.BIG_ENDIAN, 0xA1B2C3D4, 1, tagged, withPad, fragment, tcpLike, arp, other);
        List<Pcap.UdpPacket> ps = Pcap.readUdp(file, "mem");
        assertThat(ps).extracting(Pcap.UdpPacket::frame).containsExactly(1, 2, 6);
        assertThat(ps.get(0).vlanId()).as("innermost tag").isEqualTo(0x123);
        assertThat(ps.get(0).ipHeader()).hasSize(24);
        assertThat(ps.get(0).udpPayload()).isEqualTo(payload);
        assertThat(ps.get(1).udpPayload()).as("Ethernet padding is not payload").isEqualTo(payload);
        assertThat(ps.get(1).dontFragment()).isFalse();
        assertThat(Pcap.filter(ps, p -> p.hasPort(4791))).hasSize(2);
    }

    @Test
    void ipv6WithAnExtensionHeader() throws IOException {
        byte[] payload = HEX.parseHex("0430ffff");
        byte[] frame = ether(0x86DD, ipv6Udp("fe80::1", "::ffff:10.0.0.1", 0xD2B4, 4791, payload, true));
        List<Pcap.UdpPacket> ps = Pcap.readUdp(pcap(ByteOrder.LITTLE_ENDIAN, 0xA1B2C3D4, 1, frame), "mem");
        Pcap.UdpPacket p = ps.getFirst();
        assertThat(p.ipVersion()).isEqualTo(6);
        assertThat(p.srcIp()).isEqualTo(InetAddress.getByName("fe80::1"));
        assertThat(p.dstIp()).as("IPv4-mapped stays an IPv6 address").isInstanceOf(Inet6Address.class);
        assertThat(p.ipHeader()).hasSize(40);
        assertThat(p.tos()).isEqualTo(0xAB);
        assertThat(p.flowLabel()).isEqualTo(0xCDEF1);
        assertThat(p.ttl()).isEqualTo(33);
        assertThat(p.ipv4Id()).isZero();
        assertThat(p.udpPayload()).isEqualTo(payload);
    }

    @Test
    void rawIpAndLinuxCookedLinkTypes() throws IOException {
        byte[] ip = ipv4Udp("10.0.0.1", "10.0.0.2", 1, 0, 64, 0x4000, 1, 4791, new byte[] {9}, new byte[0]);
        assertThat(Pcap.readUdp(pcap(ByteOrder.BIG_ENDIAN, 0xA1B2C3D4, 101, ip), "raw")).hasSize(1);
        ByteBuffer sll = ByteBuffer.allocate(16 + ip.length);
        sll.putShort((short) 0).putShort((short) 1).putShort((short) 6).put(new byte[8]).putShort((short) 0x0800).put(ip);
        List<Pcap.UdpPacket> ps = Pcap.readUdp(pcap(ByteOrder.BIG_ENDIAN, 0xA1B2C3D4, 113, sll.array()), "sll");
        assertThat(ps.getFirst().udpPayload()).containsExactly(9);
    }

    @Test
    void errors() throws IOException {
        assertThatIOException().isThrownBy(() -> Pcap.readUdp(new byte[10], "tiny")).withMessageContaining("tiny");
        byte[] pcapng = new byte[32];
        ByteBuffer.wrap(pcapng).putInt(0x0A0D0D0A);
        assertThatIOException().isThrownBy(() -> Pcap.readUdp(pcapng, "ng")).withMessageContaining("pcapng");
        byte[] frame = ether(0x0800, ipv4Udp("10.0.0.1", "10.0.0.2", 1, 0, 64, 0, 1, 4791, new byte[40], new byte[0]));
        byte[] file = pcap(ByteOrder.BIG_ENDIAN, 0xA1B2C3D4, 1, frame);
        // cut the frame short as a small snap length would (incl_len < orig_len)
        int cut = 20;
        byte[] snapped = java.util.Arrays.copyOf(file, file.length - cut);
        ByteBuffer.wrap(snapped).putInt(24 + 8, frame.length - cut);
        assertThatIOException().isThrownBy(() -> Pcap.readUdp(snapped, "snap")).withMessageContaining("truncated");
        byte[] cutRecord = java.util.Arrays.copyOf(file, file.length - 1);
        assertThatIOException().isThrownBy(() -> Pcap.readUdp(cutRecord, "cut")).withMessageContaining("truncated");
        assertThatIOException().isThrownBy(() -> Pcap.readUdp(pcap(ByteOrder.BIG_ENDIAN, 0xA1B2C3D4, 147, frame), "lt"))
                .withMessageContaining("link type 147");
    }

    @Test
    void readsFromAFile(@TempDir Path dir) throws IOException {
        byte[] frame = ether(0x0800, ipv4Udp("10.0.0.1", "10.0.0.2", 1, 0, 64, 0, 1, 4791, new byte[] {5}, new byte[0]));
        byte[] other = ether(0x0800, ipv4Udp("10.0.0.1", "10.0.0.2", 1, 0, 64, 0, 1, 4792, new byte[] {6}, new byte[0]));
        Path f = dir.resolve("x.pcap");
        java.nio.file.Files.write(f, pcap(ByteOrder.LITTLE_ENDIAN, 0xA1B2C3D4, 1, frame, other));
        assertThat(Pcap.readUdp(f)).hasSize(2);
        assertThat(Pcap.readUdp(f, 4791)).singleElement().satisfies(p -> assertThat(p.udpPayload()).containsExactly(5));
    }
}
