package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;
import java.net.Inet6Address;
import java.net.InetAddress;

/**
 * The 40 bytes a UD receive places at the head of its buffer ({@code union rdma_network_hdr};
 * {@code verbs-surface-facts.md} §2.6): for an IPv4 packet 20 zero bytes and then the IPv4 header,
 * for an IPv6 packet the IPv6 header. A UDP socket does not see the received IP header, so it is
 * rebuilt from what the socket knows, as for the ICRC ({@code extensions.md}, "ICRC"): IPv4 with
 * IHL 5, TOS 0, DF, ID 0, TTL {@link #HOP_LIMIT}, protocol 17 and a valid header checksum; IPv6 with
 * traffic class and flow label 0, next header 17 and hop limit {@link #HOP_LIMIT}. Lengths and
 * addresses are the packet's. Big-endian.
 */
public final class Grh {
    /** Bytes placed before the payload of every UD receive: 40. */
    public static final int LENGTH = 40;
    /** The TTL / hop limit of a rebuilt header (the received one is not visible): 64. */
    public static final int HOP_LIMIT = 64;
    private static final int UDP_HEADER = 8;

    private Grh() {}

    /**
     * Writes the 40 bytes at {@code at} for a RoCEv2 packet of {@code udpPayloadLength} bytes (BTH to
     * ICRC) from {@code src} to {@code dst}, addresses as {@link #addressBytes} gives them (4 bytes:
     * IPv4; 16: IPv6). Allocates nothing.
     *
     * @throws IllegalArgumentException if one address has 4 bytes and the other 16
     */
    public static void write(ByteBuf b, int at, byte[] src, byte[] dst, int udpPayloadLength) {
        if (src.length != dst.length) {
            throw new IllegalArgumentException("GRH addresses of two IP versions: " + src.length + " and " + dst.length
                    + " bytes");
        }
        if (src.length == 4) {
            b.setZero(at, 20);
            int h = at + 20;
            b.setByte(h, 0x45);
            b.setByte(h + 1, 0);
            b.setShort(h + 2, 20 + UDP_HEADER + udpPayloadLength);
            b.setShort(h + 4, 0); // ID 0: rxe4j sends DF with ID 0, and a socket cannot see a peer's ID
            b.setShort(h + 6, 0x4000); // DF
            b.setByte(h + 8, HOP_LIMIT);
            b.setByte(h + 9, 17);
            b.setShort(h + 10, 0);
            b.setBytes(h + 12, src);
            b.setBytes(h + 16, dst);
            b.setShort(h + 10, checksum(b, h));
            return;
        }
        b.setInt(at, 0x6000_0000);
        b.setShort(at + 4, UDP_HEADER + udpPayloadLength);
        b.setByte(at + 6, 17);
        b.setByte(at + 7, HOP_LIMIT);
        b.setBytes(at + 8, src);
        b.setBytes(at + 24, dst);
    }

    /**
     * @return the bytes of {@code a} as a GRH carries them: 4 for an IPv4 address or a v4-mapped IPv6
     *     one (the packet went over IPv4), else 16; a fresh array (callers cache it)
     */
    public static byte[] addressBytes(InetAddress a) {
        byte[] x = a.getAddress();
        if (x.length == 16 && !(a instanceof Inet6Address && ((Inet6Address) a).getScopeId() != 0)) {
            boolean mapped = (x[10] & 0xFF) == 0xFF && (x[11] & 0xFF) == 0xFF;
            for (int i = 0; i < 10 && mapped; i++) {
                mapped = x[i] == 0;
            }
            if (mapped) {
                return new byte[] {x[12], x[13], x[14], x[15]};
            }
        }
        return x;
    }

    /** @return the IPv4 header checksum of the 20 bytes at {@code h} (its checksum field 0) */
    static int checksum(ByteBuf b, int h) {
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += b.getUnsignedShort(h + i);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }
}
