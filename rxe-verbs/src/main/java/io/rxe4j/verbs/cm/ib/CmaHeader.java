package io.rxe4j.verbs.cm.ib;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * rdma_cm's header at the start of a REQ's or SIDR_REQ's private data ({@code cma.c struct cma_hdr};
 * {@code cm-facts.md} §4.2): version 0, the IP version in the high nibble of byte 1, the active
 * side's rdma_cm port (its source port, BE16), and both IP addresses (IPv4 in the last four of 16
 * bytes). 36 bytes; the user's private data follows it (56 bytes of a REQ, 180 of a SIDR_REQ).
 *
 * @param srcPort the active side's port, 0..65535
 * @param src the active side's IP
 * @param dst the passive side's IP, of the same family
 */
public record CmaHeader(int srcPort, InetAddress src, InetAddress dst) {
    /** Bytes of the header. */
    public static final int LENGTH = 36;
    /** {@code CMA_VERSION}. */
    public static final int VERSION = 0;

    /** @throws IllegalArgumentException for a port out of range, or addresses of two families */
    public CmaHeader {
        if (srcPort < 0 || srcPort > 0xFFFF) {
            throw new IllegalArgumentException("port must be 0..65535, got " + srcPort);
        }
        if ((src instanceof Inet4Address) != (dst instanceof Inet4Address)) {
            throw new IllegalArgumentException("the addresses are of two families: " + src + ", " + dst);
        }
    }

    /** @return 4 or 6 */
    public int ipVersion() {
        return src instanceof Inet4Address ? 4 : 6;
    }

    /** @return the 36 header bytes followed by {@code user} ({@code userMax} bytes at most) */
    public byte[] encode(byte[] user, int userMax) {
        if (user.length > userMax) {
            throw new IllegalArgumentException("at most " + userMax + " bytes of private data, got " + user.length);
        }
        ByteBuffer b = ByteBuffer.allocate(LENGTH + user.length);
        b.put((byte) VERSION).put((byte) (ipVersion() << 4)).putShort((short) srcPort);
        b.put(address16(src)).put(address16(dst)).put(user);
        return b.array();
    }

    /**
     * @return the header at the start of {@code privateData}, or null when it is not one rdma_cm
     *     takes (shorter than 36 bytes, a version other than 0, an IP version other than 4 or 6:
     *     {@code cma_save_ip_info} refuses it, REJ 28)
     */
    public static CmaHeader parse(byte[] privateData) {
        if (privateData == null || privateData.length < LENGTH || privateData[0] != VERSION) {
            return null;
        }
        int ipv = (privateData[1] & 0xFF) >>> 4;
        if (ipv != 4 && ipv != 6) {
            return null;
        }
        int port = ((privateData[2] & 0xFF) << 8) | (privateData[3] & 0xFF);
        try {
            InetAddress src = ipv == 4 ? InetAddress.getByAddress(Arrays.copyOfRange(privateData, 16, 20))
                    : Inet6Address.getByAddress(null, Arrays.copyOfRange(privateData, 4, 20), null);
            InetAddress dst = ipv == 4 ? InetAddress.getByAddress(Arrays.copyOfRange(privateData, 32, 36))
                    : Inet6Address.getByAddress(null, Arrays.copyOfRange(privateData, 20, 36), null);
            return new CmaHeader(port, src, dst);
        } catch (UnknownHostException e) {
            return null; // cannot happen for 4 or 16 bytes
        }
    }

    /** @return the user's private data after the header (all of the field past it) */
    public static byte[] userData(byte[] privateData) {
        return Arrays.copyOfRange(privateData, LENGTH, privateData.length);
    }

    private static byte[] address16(InetAddress a) {
        byte[] raw = a.getAddress();
        if (raw.length == 16) {
            return raw;
        }
        byte[] b = new byte[16];
        System.arraycopy(raw, 0, b, 12, 4); // IPv4 in the last four bytes, the rest zero
        return b;
    }
}
