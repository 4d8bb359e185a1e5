package io.rxe4j.net.pcap;

import io.netty.buffer.ByteBuf;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes RoCEv2 packets (UDP payloads: BTH to ICRC) to a classic pcap file (LINKTYPE_ETHERNET,
 * microsecond timestamps, little-endian file header) with synthesized Ethernet, IP and UDP headers
 * that carry the real addresses and ports. The IPv4 header is the one rxe4j's UDP sockets send:
 * DSCP/ECN 0 (ECN CE for a received packet the network marked), identification 0, DF set, TTL 64,
 * a correct header checksum; IPv6: traffic class 0, flow label 0, hop limit 64. The UDP checksum is
 * 0 over IPv4 and computed over IPv6. The ICRC covers the IP identification and flags, so with
 * these values a capture's ICRCs check out (e.g. with {@code pcap_icrc.py}). The MAC addresses are
 * made up from the IP addresses ({@code 02:00:} + the IPv4 address, or the last four bytes of the
 * IPv6 address).
 *
 * <p>Thread-safe: each record is written under a lock. Records are buffered; {@link #flush()} or
 * {@link #close()} puts them in the file. A write error (disk full) never reaches the caller: the
 * writer logs it once, stops capturing and counts what it could not write ({@link #failures()}).
 */
public final class PcapWriter implements AutoCloseable {
    private static final int LINKTYPE_ETHERNET = 1;
    private static final int SNAPLEN = 65_535;

    private final OutputStream out;
    private final ByteBuffer rec = ByteBuffer.allocate(16 + 14 + 40 + 8 + SNAPLEN).order(ByteOrder.BIG_ENDIAN);
    private long records;
    private long failures;
    private boolean closed;
    /** Set after the first write error: capturing stops, the data path never notices (counted, logged once). */
    private boolean broken;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PcapWriter.class);

    /**
     * Creates (or truncates) {@code file} and writes the pcap file header.
     *
     * @throws UncheckedIOException if the file cannot be written
     */
    public PcapWriter(Path file) {
        try {
            out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
            ByteBuffer h = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(SNAPLEN)
                    .putInt(LINKTYPE_ETHERNET);
            out.write(h.array());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write pcap file " + file, e);
        }
    }

    /**
     * Appends one packet.
     *
     * @param payload the UDP payload, from its reader index, {@code readableBytes()} long (not consumed)
     * @param from sender (IP, UDP port)
     * @param to recipient (IP, UDP port); the same IP family as {@code from}
     * @param ceMarked whether the network marked the packet Congestion Experienced
     * @param epochMicros capture time, microseconds since 1970
     */
    public synchronized void write(ByteBuf payload, InetSocketAddress from, InetSocketAddress to, boolean ceMarked,
            long epochMicros) {
        if (closed || broken) {
            if (broken) {
                failures++;
            }
            return;
        }
        int len = Math.min(payload.readableBytes(), SNAPLEN - 14 - 40 - 8);
        InetAddress src = from.getAddress();
        InetAddress dst = to.getAddress();
        boolean v6 = src instanceof Inet6Address || dst instanceof Inet6Address;
        byte[] s = bytes(src, v6);
        byte[] d = bytes(dst, v6);
        int ipLen = v6 ? 40 : 20;
        int frame = 14 + ipLen + 8 + len;
        rec.clear();
        // record header (written little-endian like the file header)
        rec.order(ByteOrder.LITTLE_ENDIAN).putInt((int) (epochMicros / 1_000_000)).putInt((int) (epochMicros % 1_000_000))
                .putInt(frame).putInt(frame).order(ByteOrder.BIG_ENDIAN);
        // Ethernet
        rec.put(mac(d)).put(mac(s)).putShort((short) (v6 ? 0x86DD : 0x0800));
        int ipStart = rec.position();
        if (v6) {
            rec.putInt(6 << 28 | (ceMarked ? 3 << 20 : 0)).putShort((short) (8 + len)).put((byte) 17).put((byte) 64)
                    .put(s).put(d);
        } else {
            rec.put((byte) 0x45).put((byte) (ceMarked ? 3 : 0)).putShort((short) (20 + 8 + len)).putShort((short) 0)
                    .putShort((short) 0x4000).put((byte) 64).put((byte) 17).putShort((short) 0).put(s).put(d);
            rec.putShort(ipStart + 10, (short) checksum(rec, ipStart, 20, 0));
        }
        int udpStart = rec.position();
        rec.putShort((short) from.getPort()).putShort((short) to.getPort()).putShort((short) (8 + len)).putShort((short) 0);
        payload.getBytes(payload.readerIndex(), rec.array(), rec.position(), len);
        rec.position(rec.position() + len);
        if (v6) { // the UDP checksum is mandatory over IPv6 (RFC 8200); rxe4j's sockets compute it
            long pseudo = sum(s) + sum(d) + (8 + len) + 17;
            int c = checksum(rec, udpStart, 8 + len, pseudo);
            rec.putShort(udpStart + 6, (short) (c == 0 ? 0xFFFF : c));
        }
        try {
            out.write(rec.array(), 0, rec.position());
            records++;
        } catch (IOException e) {
            fail("write", e);
        }
    }

    /** @return records written */
    public synchronized long records() {
        return records;
    }

    /** Writes buffered records to the file. */
    public synchronized void flush() {
        if (closed || broken) {
            return;
        }
        try {
            out.flush();
        } catch (IOException e) {
            fail("flush", e);
        }
    }

    /** The capture's own failure never reaches the device: log once, count, stop capturing. */
    private void fail(String what, IOException e) {
        failures++;
        broken = true;
        LOG.warn("pcap capture stopped: cannot {} the file ({}); the device goes on without capturing", what,
                e.toString());
    }

    /** @return packets not captured because the file could not be written */
    public synchronized long failures() {
        return failures;
    }

    /** Flushes and closes the file. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            out.close();
        } catch (IOException e) {
            if (!broken) {
                fail("close", e);
            }
        }
    }

    private static byte[] bytes(InetAddress a, boolean v6) {
        byte[] b = a.getAddress();
        if (v6 && a instanceof Inet4Address) { // IPv4-mapped, if the families ever mix
            byte[] m = new byte[16];
            m[10] = (byte) 0xFF;
            m[11] = (byte) 0xFF;
            System.arraycopy(b, 0, m, 12, 4);
            return m;
        }
        return b;
    }

    private static byte[] mac(byte[] ip) {
        int n = ip.length;
        return new byte[] {2, 0, ip[n - 4], ip[n - 3], ip[n - 2], ip[n - 1]};
    }

    private static long sum(byte[] b) {
        long s = 0;
        for (int i = 0; i < b.length; i += 2) {
            s += (b[i] & 0xFF) << 8 | (i + 1 < b.length ? b[i + 1] & 0xFF : 0);
        }
        return s;
    }

    /** The Internet checksum (RFC 1071) of {@code len} bytes at {@code at}, plus {@code initial}. */
    private static int checksum(ByteBuffer b, int at, int len, long initial) {
        long s = initial;
        byte[] a = b.array();
        for (int i = 0; i < len; i += 2) {
            s += (a[at + i] & 0xFF) << 8 | (i + 1 < len ? a[at + i + 1] & 0xFF : 0);
        }
        while ((s >> 16) != 0) {
            s = (s & 0xFFFF) + (s >> 16);
        }
        return (int) (~s & 0xFFFF);
    }
}
