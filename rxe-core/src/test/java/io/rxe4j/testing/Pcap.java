package io.rxe4j.testing;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Predicate;

/**
 * A small reader for classic libpcap files that extracts UDP datagrams, for tests only.
 *
 * <p>Supported: both byte orders, microsecond ({@code a1b2c3d4}) and nanosecond
 * ({@code a1b23c4d}) timestamps; link types Ethernet II (1, with any number of 802.1Q / 802.1ad
 * VLAN tags), raw IP (101, 228, 229) and Linux cooked capture (113); IPv4 (options allowed) and
 * IPv6 (hop-by-hop, routing and destination-options extension headers skipped). Frames that are
 * not IP/UDP, and IP fragments, are skipped. A UDP datagram cut short by the capture's snap
 * length is an error, so a test never silently sees half a packet. pcapng is not supported.
 */
public final class Pcap {
    /** Link type: Ethernet II. */
    public static final int LINKTYPE_ETHERNET = 1;
    /** Link type: raw IP (IPv4 or IPv6 by version nibble). */
    public static final int LINKTYPE_RAW = 101;
    /** Link type: Linux cooked capture v1. */
    public static final int LINKTYPE_LINUX_SLL = 113;
    /** Link type: raw IPv4. */
    public static final int LINKTYPE_IPV4 = 228;
    /** Link type: raw IPv6. */
    public static final int LINKTYPE_IPV6 = 229;

    private static final int ETHERTYPE_IPV4 = 0x0800;
    private static final int ETHERTYPE_IPV6 = 0x86DD;
    private static final int ETHERTYPE_VLAN = 0x8100;
    private static final int ETHERTYPE_QINQ = 0x88A8;
    private static final int ETHERTYPE_QINQ_OLD = 0x9100;
    private static final int PROTO_UDP = 17;

    private Pcap() {}

    /**
     * One UDP datagram from a capture.
     *
     * @param frame 1-based frame number in the file (as Wireshark numbers them)
     * @param timestampNanos capture time, nanoseconds since the epoch
     * @param vlanId the innermost 802.1Q VLAN ID, or -1 if untagged
     * @param ipHeader the IP header exactly as captured: IPv4 with options, or the 40-byte IPv6
     *     fixed header (extension headers are not included)
     * @param srcIp source address
     * @param dstIp destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @param udpPayload the UDP payload (UDP length minus 8 bytes; link-layer padding removed)
     */
    public record UdpPacket(int frame, long timestampNanos, int vlanId, byte[] ipHeader, InetAddress srcIp,
            InetAddress dstIp, int srcPort, int dstPort, byte[] udpPayload) {

        /** @return 4 or 6 */
        public int ipVersion() {
            return (ipHeader[0] >> 4) & 0xF;
        }

        /** @return IPv4 identification, or 0 for IPv6 (which has no per-packet ID outside fragments) */
        public int ipv4Id() {
            return ipVersion() == 4 ? u16(ipHeader, 4) : 0;
        }

        /** @return IPv4 type of service, or the IPv6 traffic class */
        public int tos() {
            return ipVersion() == 4 ? ipHeader[1] & 0xFF : ((u16(ipHeader, 0) >> 4) & 0xFF);
        }

        /** @return IPv4 TTL or IPv6 hop limit */
        public int ttl() {
            return ipHeader[ipVersion() == 4 ? 8 : 7] & 0xFF;
        }

        /** @return whether the IPv4 "don't fragment" flag is set (false for IPv6) */
        public boolean dontFragment() {
            return ipVersion() == 4 && (ipHeader[6] & 0x40) != 0;
        }

        /** @return the IPv6 flow label, or 0 for IPv4 */
        public int flowLabel() {
            return ipVersion() == 6 ? ByteBuffer.wrap(ipHeader, 0, 4).getInt() & 0xFFFFF : 0;
        }

        /** @return (source IP, source port) */
        public InetSocketAddress srcSocket() {
            return new InetSocketAddress(srcIp, srcPort);
        }

        /** @return (destination IP, destination port) */
        public InetSocketAddress dstSocket() {
            return new InetSocketAddress(dstIp, dstPort);
        }

        /** @return whether either port is {@code port} */
        public boolean hasPort(int port) {
            return srcPort == port || dstPort == port;
        }

        @Override
        public String toString() {
            return "frame " + frame + " " + srcIp.getHostAddress() + ":" + srcPort + " -> " + dstIp.getHostAddress()
                    + ":" + dstPort + " (" + udpPayload.length + " bytes: "
                    + HexFormat.of().formatHex(udpPayload, 0, Math.min(udpPayload.length, 16))
                    + (udpPayload.length > 16 ? "…" : "") + ")";
        }
    }

    /**
     * Reads every UDP datagram of a capture file.
     *
     * @throws IOException if the file cannot be read, is not a classic pcap, or a UDP datagram is
     *     truncated
     */
    public static List<UdpPacket> readUdp(Path file) throws IOException {
        return readUdp(Files.readAllBytes(file), file.toString());
    }

    /**
     * Reads the UDP datagrams of a capture file that have {@code port} as source or destination.
     *
     * @throws IOException see {@link #readUdp(Path)}
     */
    public static List<UdpPacket> readUdp(Path file, int port) throws IOException {
        return filter(readUdp(file), p -> p.hasPort(port));
    }

    /**
     * Reads every UDP datagram of a capture held in memory.
     *
     * @param name used in error messages
     * @throws IOException if the data is not a classic pcap or a UDP datagram is truncated
     */
    public static List<UdpPacket> readUdp(byte[] data, String name) throws IOException {
        if (data.length < 24) {
            throw new IOException(name + ": too short for a pcap header");
        }
        ByteBuffer b = ByteBuffer.wrap(data);
        int magic = b.order(ByteOrder.BIG_ENDIAN).getInt(0);
        ByteOrder order;
        boolean nanos;
        switch (magic) {
            case 0xA1B2C3D4 -> { order = ByteOrder.BIG_ENDIAN; nanos = false; }
            case 0xD4C3B2A1 -> { order = ByteOrder.LITTLE_ENDIAN; nanos = false; }
            case 0xA1B23C4D -> { order = ByteOrder.BIG_ENDIAN; nanos = true; }
            case 0x4D3CB2A1 -> { order = ByteOrder.LITTLE_ENDIAN; nanos = true; }
            default -> throw new IOException(name + ": not a classic pcap file (magic 0x"
                    + Integer.toHexString(magic) + "; pcapng is not supported)");
        }
        b.order(order);
        int linkType = b.getInt(20) & 0x0FFFFFFF; // upper bits: FCS info
        List<UdpPacket> out = new ArrayList<>();
        int off = 24;
        int frame = 0;
        while (off < data.length) {
            if (off + 16 > data.length) {
                throw new IOException(name + ": truncated record header at offset " + off);
            }
            long sec = b.getInt(off) & 0xFFFFFFFFL;
            long frac = b.getInt(off + 4) & 0xFFFFFFFFL;
            int incl = b.getInt(off + 8);
            if (incl < 0 || off + 16 + incl > data.length) {
                throw new IOException(name + ": truncated record at offset " + off);
            }
            frame++;
            long ts = sec * 1_000_000_000L + (nanos ? frac : frac * 1000);
            UdpPacket p = decodeFrame(data, off + 16, incl, linkType, frame, ts, name);
            if (p != null) {
                out.add(p);
            }
            off += 16 + incl;
        }
        return out;
    }

    /** @return the packets matching {@code which}, in order */
    public static List<UdpPacket> filter(List<UdpPacket> packets, Predicate<UdpPacket> which) {
        return packets.stream().filter(which).toList();
    }

    private static UdpPacket decodeFrame(byte[] d, int start, int len, int linkType, int frame, long ts, String name)
            throws IOException {
        int end = start + len;
        int at;
        int etherType;
        int vlan = -1;
        switch (linkType) {
            case LINKTYPE_ETHERNET -> {
                if (len < 14) {
                    return null;
                }
                at = start + 12;
                etherType = u16(d, at);
                at += 2;
                while (etherType == ETHERTYPE_VLAN || etherType == ETHERTYPE_QINQ || etherType == ETHERTYPE_QINQ_OLD) {
                    if (at + 4 > end) {
                        return null;
                    }
                    vlan = u16(d, at) & 0x0FFF;
                    etherType = u16(d, at + 2);
                    at += 4;
                }
            }
            case LINKTYPE_LINUX_SLL -> {
                if (len < 16) {
                    return null;
                }
                etherType = u16(d, start + 14);
                at = start + 16;
            }
            case LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6 -> {
                if (len < 1) {
                    return null;
                }
                at = start;
                etherType = ((d[at] >> 4) & 0xF) == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4;
            }
            default -> throw new IOException(name + ": unsupported link type " + linkType);
        }
        return switch (etherType) {
            case ETHERTYPE_IPV4 -> decodeIpv4(d, at, end, vlan, frame, ts, name);
            case ETHERTYPE_IPV6 -> decodeIpv6(d, at, end, vlan, frame, ts, name);
            default -> null;
        };
    }

    private static UdpPacket decodeIpv4(byte[] d, int at, int end, int vlan, int frame, long ts, String name)
            throws IOException {
        if (at + 20 > end || ((d[at] >> 4) & 0xF) != 4) {
            return null;
        }
        int ihl = (d[at] & 0xF) * 4;
        int total = u16(d, at + 2);
        if (ihl < 20 || total < ihl || at + ihl > end) {
            return null;
        }
        int fragment = u16(d, at + 6);
        if ((fragment & 0x3FFF) != 0) { // MF set or non-zero offset
            return null;
        }
        if ((d[at + 9] & 0xFF) != PROTO_UDP) {
            return null;
        }
        byte[] header = Arrays.copyOfRange(d, at, at + ihl);
        InetAddress src = address(d, at + 12, 4);
        InetAddress dst = address(d, at + 16, 4);
        return decodeUdp(d, at + ihl, Math.min(end, at + total), header, src, dst, vlan, frame, ts, name);
    }

    private static UdpPacket decodeIpv6(byte[] d, int at, int end, int vlan, int frame, long ts, String name)
            throws IOException {
        if (at + 40 > end || ((d[at] >> 4) & 0xF) != 6) {
            return null;
        }
        int payloadLength = u16(d, at + 4);
        int next = d[at + 6] & 0xFF;
        byte[] header = Arrays.copyOfRange(d, at, at + 40);
        InetAddress src = address(d, at + 8, 16);
        InetAddress dst = address(d, at + 24, 16);
        int limit = Math.min(end, at + 40 + payloadLength);
        int p = at + 40;
        while (next == 0 || next == 43 || next == 60) { // hop-by-hop, routing, destination options
            if (p + 8 > limit) {
                return null;
            }
            next = d[p] & 0xFF;
            p += ((d[p + 1] & 0xFF) + 1) * 8;
        }
        if (next != PROTO_UDP) {
            return null; // includes fragment header (44)
        }
        return decodeUdp(d, p, limit, header, src, dst, vlan, frame, ts, name);
    }

    private static UdpPacket decodeUdp(byte[] d, int at, int end, byte[] ipHeader, InetAddress src, InetAddress dst,
            int vlan, int frame, long ts, String name) throws IOException {
        if (at + 8 > end) {
            throw new IOException(name + ": frame " + frame + ": UDP header truncated");
        }
        int sport = u16(d, at);
        int dport = u16(d, at + 2);
        int udpLength = u16(d, at + 4);
        if (udpLength < 8) {
            return null; // malformed (or a jumbogram); not ours to interpret
        }
        if (at + udpLength > end) {
            throw new IOException(name + ": frame " + frame + ": UDP datagram truncated (UDP length "
                    + udpLength + ", " + (end - at) + " bytes captured)");
        }
        byte[] payload = Arrays.copyOfRange(d, at + 8, at + udpLength);
        return new UdpPacket(frame, ts, vlan, ipHeader, src, dst, sport, dport, payload);
    }

    private static InetAddress address(byte[] d, int at, int len) {
        byte[] raw = Arrays.copyOfRange(d, at, at + len);
        try {
            // Inet6Address.getByAddress keeps an IPv4-mapped IPv6 address as IPv6 (InetAddress
            // would turn it into an Inet4Address), so the address family matches the IP header
            return len == 16 ? Inet6Address.getByAddress(null, raw, -1) : InetAddress.getByAddress(raw);
        } catch (UnknownHostException e) {
            throw new AssertionError(e); // only thrown for a bad length
        }
    }

    private static int u16(byte[] d, int at) {
        return ((d[at] & 0xFF) << 8) | (d[at + 1] & 0xFF);
    }
}
