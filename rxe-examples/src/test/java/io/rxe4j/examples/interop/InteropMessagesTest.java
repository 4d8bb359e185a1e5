package io.rxe4j.examples.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The pure parts of the interop tools: GIDs, ibv_rc_pingpong's 52-byte message, rxe_ops' line. */
class InteropMessagesTest {

    private static InetAddress ip(String s) throws Exception {
        return InetAddress.getByName(s);
    }

    @Test
    void gidOfIpv4IsIpv4Mapped() throws Exception {
        Gid g = Gid.of(ip("10.99.0.1"));
        assertThat(g.toHex()).isEqualTo("00000000000000000000ffff0a630001");
        assertThat(g.isIpv4Mapped()).isTrue();
        assertThat(g.isLinkLocal()).isFalse();
        assertThat(g.toInetNtop()).isEqualTo("::ffff:10.99.0.1");
        InetAddress back = g.toAddress(null);
        assertThat(back).isInstanceOf(Inet4Address.class).isEqualTo(ip("10.99.0.1"));
    }

    @Test
    void gidOfIpv6IsTheAddressAndLinkLocalTakesTheLocalScope() throws Exception {
        Gid g = Gid.of(ip("fe80::5054:ff:fe00:11"));
        assertThat(g.toHex()).isEqualTo("fe80000000000000505400fffe000011");
        assertThat(g.isIpv4Mapped()).isFalse();
        assertThat(g.isLinkLocal()).isTrue();
        assertThat(g.toInetNtop()).isEqualTo("fe80::5054:ff:fe00:11");

        Inet6Address local = Inet6Address.getByAddress(null, ip("fe80::1").getAddress(), 7);
        InetAddress peer = g.toAddress(local);
        assertThat(peer).isInstanceOf(Inet6Address.class);
        assertThat(((Inet6Address) peer).getScopeId()).isEqualTo(7);
        assertThat(peer.getAddress()).isEqualTo(g.raw());
        // a global IPv6 GID gets no scope
        Inet6Address global = (Inet6Address) Gid.parseHex("20010db8000000000000000000000001").toAddress(local);
        assertThat(global.getScopeId()).isZero();
    }

    @Test
    void gidHexRoundTripsAndRejectsBadInput() {
        String hex = "fe80000000000000505400fffe000011";
        assertThat(Gid.parseHex(hex).toHex()).isEqualTo(hex);
        assertThat(Gid.parseHex(hex.toUpperCase())).isEqualTo(Gid.parseHex(hex));
        assertThatThrownBy(() -> Gid.parseHex(hex.substring(1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Gid.parseHex("zz" + hex.substring(2))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Gid.of(new byte[15])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void inetNtopMatchesGlibc() {
        assertThat(Gid.of(new byte[16]).toInetNtop()).isEqualTo("::");
        assertThat(Gid.parseHex("00000000000000000000000000000001").toInetNtop()).isEqualTo("::1");
        assertThat(Gid.parseHex("0000000000000000000000000a630001").toInetNtop()).isEqualTo("::10.99.0.1");
        assertThat(Gid.parseHex("20010db8000000010000000000000001").toInetNtop()).isEqualTo("2001:db8:0:1::1");
        // a single zero group is not compressed; of two equal runs the first one is
        assertThat(Gid.parseHex("20010db8000000010001000100010001").toInetNtop()).isEqualTo("2001:db8:0:1:1:1:1:1");
        assertThat(Gid.parseHex("20010000000000010000000000000000").toInetNtop()).isEqualTo("2001:0:0:1::");
        assertThat(Gid.parseHex("20010000000000010001000000000001").toInetNtop()).isEqualTo("2001::1:1:0:0:1");
    }

    @Test
    void pingpongMessageIsTheFiftyTwoBytesOfRcPingpong() throws Exception {
        PingpongDest d = new PingpongDest(0, 0x00bba9, 0x5fb4a9, Gid.of(ip("10.99.0.1")));
        byte[] msg = d.encode();
        assertThat(msg).hasSize(52);
        assertThat(msg[51]).isZero();
        assertThat(new String(msg, 0, 51, StandardCharsets.US_ASCII))
                .isEqualTo("0000:00bba9:5fb4a9:00000000000000000000ffff0a630001");
        assertThat(PingpongDest.decode(msg)).isEqualTo(d);
        assertThat(d.describe("local"))
                .isEqualTo("  local address:  LID 0x0000, QPN 0x00bba9, PSN 0x5fb4a9, GID ::ffff:10.99.0.1");
        assertThat(d.describe("remote"))
                .isEqualTo("  remote address: LID 0x0000, QPN 0x00bba9, PSN 0x5fb4a9, GID ::ffff:10.99.0.1");
        assertThat(PingpongDest.DONE).containsExactly('d', 'o', 'n', 'e', 0);
    }

    @Test
    void pingpongMessageWithIpv6Gid() throws Exception {
        // as the kernel's ibv_rc_pingpong -g 0 (fe80:: GID) sends it
        byte[] msg = new byte[52];
        byte[] text = "0000:000013:987ada:fe80000000000000505400fffe000011".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, msg, 0, text.length);
        PingpongDest d = PingpongDest.decode(msg);
        assertThat(d.lid()).isZero();
        assertThat(d.qpn()).isEqualTo(0x13);
        assertThat(d.psn()).isEqualTo(0x987ada);
        assertThat(d.gid()).isEqualTo(Gid.of(ip("fe80::5054:ff:fe00:11")));
        assertThat(d.gid().toInetNtop()).isEqualTo("fe80::5054:ff:fe00:11");
        assertThat(d.encode()).isEqualTo(msg);
    }

    @Test
    void pingpongMessageRejectsGarbage() {
        assertThatThrownBy(() -> PingpongDest.decode("0000:000013:987ada".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0000:000013:987ada");
        assertThatThrownBy(() -> PingpongDest.decode(
                "0000:000013:987ada:fe80".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PingpongDest(0, 1 << 24, 0, Gid.of(new byte[16])))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void rxeOpsLineMatchesTheCFormat() throws Exception {
        OpsDest d = new OpsDest(0x15, 0x8f96f1, 0x0000063f, 0x000056245a5a2000L, Gid.of(ip("10.99.0.11")));
        String line = d.toLine();
        assertThat(line).isEqualTo("000015:8f96f1:0000063f:000056245a5a2000:00000000000000000000ffff0a63000b\n");
        assertThat(OpsDest.parse(line)).isEqualTo(d);
        assertThat(d.describe("local")).isEqualTo("local  QPN 0x000015 PSN 0x8f96f1 RKEY 0x0000063f VADDR "
                + "0x000056245a5a2000 GID 00000000000000000000ffff0a63000b");
        assertThat(d.describe("remote")).startsWith("remote QPN 0x000015 ");
    }

    @Test
    void rxeOpsLineWithIpv6GidHighRkeyAndHighAddress() throws Exception {
        OpsDest d = new OpsDest(0xffffff, 0, 0xdeadbeef, 0xffff800012345000L, Gid.of(ip("fe80::38dd:7bff:fe44:7c32")));
        String line = d.toLine();
        assertThat(line).isEqualTo("ffffff:000000:deadbeef:ffff800012345000:fe8000000000000038dd7bfffe447c32\n");
        OpsDest back = OpsDest.parse(line);
        assertThat(back).isEqualTo(d);
        assertThat(back.rkey()).isEqualTo(0xdeadbeef);
        assertThat(back.vaddr()).isEqualTo(0xffff800012345000L);
        // rxe_ops' sscanf takes the fields without zero padding too, and ignores a CR
        assertThat(OpsDest.parse("15:1:63f:1000:" + d.gid().toHex() + "\r\n"))
                .isEqualTo(new OpsDest(0x15, 1, 0x63f, 0x1000, d.gid()));
    }

    @Test
    void rxeOpsLineRejectsGarbage() {
        assertThatThrownBy(() -> OpsDest.parse("done\n")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("done");
        assertThatThrownBy(() -> OpsDest.parse("15:1:63f:1000:abc")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OpsDest.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void rxeOpsNamesAndAwriteBytes() {
        assertThat(RxeOpsPeer.Op.parseList("all")).extracting(o -> o.wireName).containsExactly("write", "writeimm",
                "send", "sendimm", "read", "cas", "fadd", "awrite", "flush", "read8");
        assertThat(RxeOpsPeer.Op.parseList("write,writeimm,send,sendimm,read,cas,fadd,awrite,read8,flush,flushmr"))
                .hasSize(11).doesNotHaveDuplicates();
        assertThat(RxeOpsPeer.Op.parseList("")).isEmpty();
        assertThatThrownBy(() -> RxeOpsPeer.Op.parseList("write,bogus")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bogus");
        assertThat(HexFormat.of().formatHex(RxeOpsPeer.AWRITE_BYTES)).isEqualTo("0123456789abcdef");
    }

    @Test
    void opsModelPredictsTheServerBufferAndAtomicResults() {
        RxeOpsPeer.Model m = new RxeOpsPeer.Model();
        assertThat(m.range(0, 3)).containsExactly(0x40, 0x41, 0x42);
        assertThat(m.cas(0, RxeOpsPeer.CAS_SWAP)).isZero();
        assertThat(m.cas(0, 7)).isEqualTo(RxeOpsPeer.CAS_SWAP); // second CAS: compare fails, word unchanged
        assertThat(m.word(2048)).isEqualTo(RxeOpsPeer.CAS_SWAP);
        assertThat(m.fadd(5)).isZero();
        assertThat(m.fadd(5)).isEqualTo(5);
        m.write(RxeOpsPeer.AWRITE_BYTES, 2064);
        assertThat(m.range(2064, 8)).isEqualTo(RxeOpsPeer.AWRITE_BYTES);
    }
}
