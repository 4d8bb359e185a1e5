package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/** {@link Grh}: the 40 bytes of a UD receive, byte for byte ({@code verbs-surface-facts.md} §2.6). */
class GrhTest {
    @Test
    void ipv4IsTwentyZeroBytesThenAValidIpv4Header() throws Exception {
        ByteBuf b = Unpooled.buffer(40, 40);
        b.setBytes(0, new byte[40]);
        for (int i = 0; i < 40; i++) {
            b.setByte(i, 0xAA); // what was there before must not survive
        }
        byte[] src = Grh.addressBytes(InetAddress.getByName("10.77.0.1"));
        byte[] dst = Grh.addressBytes(InetAddress.getByName("10.77.0.2"));
        Grh.write(b, 0, src, dst, 100);
        byte[] g = new byte[40];
        b.getBytes(0, g);
        byte[] expected = {
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0x45, 0, 0, (byte) 128, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2};
        int sum = 0; // RFC 1071 over the header with a zero checksum field
        for (int i = 20; i < 40; i += 2) {
            sum += ((expected[i] & 0xFF) << 8) | (expected[i + 1] & 0xFF);
        }
        sum = (sum & 0xFFFF) + (sum >>> 16);
        int csum = ~sum & 0xFFFF;
        expected[30] = (byte) (csum >>> 8);
        expected[31] = (byte) csum;
        assertThat(g).isEqualTo(expected);
        assertThat(csum).as("10.77.0.1 -> 10.77.0.2, 128 bytes, DF, TTL 64, UDP").isEqualTo(0x25D1);
    }

    @Test
    void ipv6IsTheIpv6Header() throws Exception {
        ByteBuf b = Unpooled.buffer(40, 40);
        InetAddress s = InetAddress.getByName("fd00::1");
        InetAddress d = InetAddress.getByName("fd00::2");
        Grh.write(b, 0, Grh.addressBytes(s), Grh.addressBytes(d), 1052);
        assertThat(b.getInt(0)).as("version 6, traffic class 0, flow label 0").isEqualTo(0x6000_0000);
        assertThat(b.getUnsignedShort(4)).as("payload length: UDP header + RoCE packet").isEqualTo(1060);
        assertThat(b.getUnsignedByte(6)).isEqualTo((short) 17);
        assertThat(b.getUnsignedByte(7)).isEqualTo((short) 64);
        byte[] a = new byte[16];
        b.getBytes(8, a);
        assertThat(a).isEqualTo(s.getAddress());
        b.getBytes(24, a);
        assertThat(a).isEqualTo(d.getAddress());
    }

    @Test
    void aV4MappedAddressIsIpv4AndTwoFamiliesAreRefused() throws Exception {
        byte[] mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xFF, (byte) 0xFF, 1, 2, 3, 4};
        assertThat(Grh.addressBytes(java.net.Inet6Address.getByAddress(null, mapped, -1))).containsExactly(1, 2, 3, 4);
        assertThat(Grh.addressBytes(InetAddress.getByName("::1"))).hasSize(16);
        ByteBuf b = Unpooled.buffer(40, 40);
        assertThatThrownBy(() -> Grh.write(b, 0, new byte[4], new byte[16], 0))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
