package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.NativeMemory;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/**
 * RoCEv2 invariant CRC ({@code rxe-facts.md} §3, {@code extensions.md} §1).
 *
 * <p>CRC-32 (zlib) over 8 bytes of 0xFF, the IP header rebuilt from the socket addresses with
 * TOS/TTL/checksum (IPv4) or traffic class/flow label/hop limit (IPv6) masked to ones, the UDP
 * header with its checksum masked to ones, the BTH with byte 4 masked to 0xFF, and the rest of
 * the packet up to the ICRC. The rebuilt IPv4 header is IHL 5, DF set, ID 0, protocol 17. The
 * 32-bit result is written to the wire least-significant byte first.
 *
 * <p>The IPv4 identification is covered by the ICRC ({@code rxe-facts.md} §3.2). rxe4j sends
 * with ID 0, so the plain methods assume 0; when the real ID of a received IPv4 packet is known
 * (e.g. a capture of a kernel {@code rdma_rxe} peer, which sends a changing ID), pass it to the
 * overloads taking {@code ipv4Id}. It is ignored for IPv6.
 *
 * <p>{@linkplain #rxeFlushCompat rxe FLUSH compatibility}: Linux {@code rdma_rxe} computes the
 * FLUSH (0x1C) ICRC over the masked headers and then over BTH+FETH+RETH a second time, unmasked.
 *
 * <p>Not thread-safe: one instance per event loop. Allocation-free per packet (address bytes are
 * cached per address pair).
 */
public final class Icrc {
    /** ICRC length in bytes. */
    public static final int LENGTH = 4;
    private static final int IPV4_HEADER = 20;
    private static final int IPV6_HEADER = 40;
    private static final int UDP_HEADER = 8;

    private final CRC32 crc = new CRC32();
    private final NativeMemory.Window window = new NativeMemory.Window();
    private final byte[] pseudo = new byte[8 + IPV6_HEADER + UDP_HEADER + Bth.LENGTH];
    private InetSocketAddress cachedSrc;
    private InetSocketAddress cachedDst;
    private byte[] srcIp;
    private byte[] dstIp;
    private boolean rxeFlushCompat;

    /** Creates a calculator producing the standard ICRC. */
    public Icrc() {}

    /**
     * Produces and accepts {@code rdma_rxe}'s FLUSH ICRC variant instead of the standard one.
     *
     * @param on whether FLUSH packets use the rxe variant
     * @return this
     */
    public Icrc rxeFlushCompat(boolean on) {
        this.rxeFlushCompat = on;
        return this;
    }

    /**
     * Computes the ICRC of a packet.
     *
     * @param pkt buffer holding the UDP payload
     * @param at absolute index of the BTH
     * @param lengthWithIcrc UDP payload length in bytes, including the 4 ICRC bytes
     * @param src the sender's (IP, UDP port)
     * @param dst the receiver's (IP, UDP port)
     * @return the CRC value (to be written little-endian)
     */
    public int compute(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst) {
        return compute(pkt, at, lengthWithIcrc, src, dst, 0);
    }

    /**
     * Computes the ICRC of a packet whose IPv4 header carried identification {@code ipv4Id}.
     *
     * @param ipv4Id the 16-bit IPv4 identification of the packet (ignored for IPv6)
     * @see #compute(ByteBuf, int, int, InetSocketAddress, InetSocketAddress)
     */
    public int compute(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst,
            int ipv4Id) {
        int opcode = pkt.getUnsignedByte(at);
        boolean flushVariant = rxeFlushCompat && opcode == Opcode.RC_FLUSH.code();
        return compute(pkt, at, lengthWithIcrc, src, dst, flushVariant, ipv4Id);
    }

    /**
     * Computes the ICRC, choosing explicitly whether the rxe FLUSH variant applies.
     *
     * @see #compute(ByteBuf, int, int, InetSocketAddress, InetSocketAddress)
     */
    public int compute(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst,
            boolean flushVariant) {
        return compute(pkt, at, lengthWithIcrc, src, dst, flushVariant, 0);
    }

    /**
     * Computes the ICRC, choosing explicitly whether the rxe FLUSH variant applies, for a packet
     * whose IPv4 header carried identification {@code ipv4Id}.
     *
     * @param ipv4Id the 16-bit IPv4 identification of the packet (ignored for IPv6)
     * @see #compute(ByteBuf, int, int, InetSocketAddress, InetSocketAddress)
     */
    public int compute(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst,
            boolean flushVariant, int ipv4Id) {
        resolve(src, dst);
        int udpLength = UDP_HEADER + lengthWithIcrc;
        byte[] p = pseudo;
        int n = 0;
        for (int i = 0; i < 8; i++) {
            p[n++] = (byte) 0xFF;
        }
        if (srcIp.length == 4) {
            int total = IPV4_HEADER + udpLength;
            p[n++] = 0x45;
            p[n++] = (byte) 0xFF; // TOS masked
            p[n++] = (byte) (total >>> 8);
            p[n++] = (byte) total;
            p[n++] = (byte) (ipv4Id >>> 8); // identification (0 for rxe4j senders)
            p[n++] = (byte) ipv4Id;
            p[n++] = 0x40; // DF
            p[n++] = 0;
            p[n++] = (byte) 0xFF; // TTL masked
            p[n++] = 17;
            p[n++] = (byte) 0xFF; // checksum masked
            p[n++] = (byte) 0xFF;
            System.arraycopy(srcIp, 0, p, n, 4);
            n += 4;
            System.arraycopy(dstIp, 0, p, n, 4);
            n += 4;
        } else {
            p[n++] = 0x6F; // version 6, traffic class + flow label masked
            p[n++] = (byte) 0xFF;
            p[n++] = (byte) 0xFF;
            p[n++] = (byte) 0xFF;
            p[n++] = (byte) (udpLength >>> 8);
            p[n++] = (byte) udpLength;
            p[n++] = 17;
            p[n++] = (byte) 0xFF; // hop limit masked
            System.arraycopy(srcIp, 0, p, n, 16);
            n += 16;
            System.arraycopy(dstIp, 0, p, n, 16);
            n += 16;
        }
        int sport = src.getPort();
        int dport = dst.getPort();
        p[n++] = (byte) (sport >>> 8);
        p[n++] = (byte) sport;
        p[n++] = (byte) (dport >>> 8);
        p[n++] = (byte) dport;
        p[n++] = (byte) (udpLength >>> 8);
        p[n++] = (byte) udpLength;
        p[n++] = (byte) 0xFF; // UDP checksum masked
        p[n++] = (byte) 0xFF;
        // the BTH as three big-endian words: getBytes(index, byte[]) of a pooled direct buffer
        // duplicates its chunk's ByteBuffer per call
        putInt(p, n, pkt.getInt(at));
        putInt(p, n + 4, pkt.getInt(at + 4));
        putInt(p, n + 8, pkt.getInt(at + 8));
        p[n + Bth.RESV8A_OFFSET] = (byte) 0xFF;
        n += Bth.LENGTH;
        CRC32 c = crc;
        c.reset();
        c.update(p, 0, n);
        int restAt = at + Bth.LENGTH;
        int restLen = lengthWithIcrc - LENGTH - Bth.LENGTH;
        update(c, pkt, restAt, restLen);
        if (flushVariant) {
            int hdr = Math.min(Opcode.RC_FLUSH.headerLength(), lengthWithIcrc - LENGTH);
            update(c, pkt, at, hdr);
        }
        return (int) c.getValue();
    }

    private static void putInt(byte[] p, int n, int v) {
        p[n] = (byte) (v >>> 24);
        p[n + 1] = (byte) (v >>> 16);
        p[n + 2] = (byte) (v >>> 8);
        p[n + 3] = (byte) v;
    }

    private void update(CRC32 c, ByteBuf pkt, int index, int len) {
        if (len <= 0) {
            return;
        }
        ByteBuffer direct;
        if (pkt.hasArray()) {
            c.update(pkt.array(), pkt.arrayOffset() + index, len);
        } else if (NativeMemory.addressable(pkt) && index >= 0 && index <= pkt.capacity() - len
                && (direct = window.at(pkt.memoryAddress() + index, len)) != null) {
            // a reused view of the buffer's memory: internalNioBuffer would slice a new ByteBuffer
            // for every pooled packet buffer
            c.update(direct);
        } else if (pkt.nioBufferCount() == 1) {
            c.update(pkt.internalNioBuffer(index, len));
        } else {
            for (int i = 0; i < len; i++) {
                c.update(pkt.getByte(index + i));
            }
        }
    }

    /**
     * Computes the ICRC and writes it, little-endian, into the last 4 bytes of the packet.
     *
     * @param lengthWithIcrc UDP payload length including the 4 ICRC bytes (already reserved)
     */
    public void write(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst) {
        int value = compute(pkt, at, lengthWithIcrc, src, dst);
        pkt.setIntLE(at + lengthWithIcrc - LENGTH, value);
    }

    /**
     * Checks the ICRC in the last 4 bytes of a packet.
     *
     * @return whether it matches
     */
    public boolean check(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst) {
        return check(pkt, at, lengthWithIcrc, src, dst, 0);
    }

    /**
     * Checks the ICRC of a packet whose IPv4 header carried identification {@code ipv4Id}.
     *
     * @param ipv4Id the 16-bit IPv4 identification of the packet (ignored for IPv6)
     * @return whether it matches
     */
    public boolean check(ByteBuf pkt, int at, int lengthWithIcrc, InetSocketAddress src, InetSocketAddress dst,
            int ipv4Id) {
        if (lengthWithIcrc < Bth.LENGTH + LENGTH) {
            return false;
        }
        int carried = pkt.getIntLE(at + lengthWithIcrc - LENGTH);
        return carried == compute(pkt, at, lengthWithIcrc, src, dst, ipv4Id);
    }

    private void resolve(InetSocketAddress src, InetSocketAddress dst) {
        if ((src != cachedSrc || dst != cachedDst) && cachedSrc != null && cachedDst != null
                && (src == cachedDst || src.equals(cachedDst)) && (dst == cachedSrc || dst.equals(cachedSrc))) {
            // the other direction of the cached pair (a device checks what it receives from the
            // peer it sends to): swap instead of fetching both addresses' bytes again
            InetSocketAddress a = cachedSrc;
            cachedSrc = cachedDst;
            cachedDst = a;
            byte[] ip = srcIp;
            srcIp = dstIp;
            dstIp = ip;
            return;
        }
        if (src != cachedSrc && !src.equals(cachedSrc)) {
            srcIp = rawAddress(src.getAddress());
            cachedSrc = src;
        }
        if (dst != cachedDst && !dst.equals(cachedDst)) {
            dstIp = rawAddress(dst.getAddress());
            cachedDst = dst;
        }
        if (srcIp.length != dstIp.length) {
            // mixed families: use the IPv4-mapped IPv6 form for both, as a GID would; forget the
            // cached pair, whose converted bytes must not be reused for a later same-family call
            srcIp = toV6(srcIp);
            dstIp = toV6(dstIp);
            cachedSrc = null;
            cachedDst = null;
        }
    }

    private static byte[] rawAddress(InetAddress a) {
        if (a == null) {
            throw new IllegalArgumentException("unresolved socket address");
        }
        byte[] raw = a.getAddress();
        if (raw.length == 16 && !(a instanceof Inet4Address) && isV4Mapped(raw)) {
            byte[] v4 = new byte[4];
            System.arraycopy(raw, 12, v4, 0, 4);
            return v4;
        }
        return raw;
    }

    private static boolean isV4Mapped(byte[] raw) {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return raw[10] == (byte) 0xFF && raw[11] == (byte) 0xFF;
    }

    private static byte[] toV6(byte[] raw) {
        if (raw.length == 16) {
            return raw;
        }
        byte[] v6 = new byte[16];
        v6[10] = (byte) 0xFF;
        v6[11] = (byte) 0xFF;
        System.arraycopy(raw, 0, v6, 12, 4);
        return v6;
    }
}
