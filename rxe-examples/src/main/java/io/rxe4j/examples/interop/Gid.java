package io.rxe4j.examples.interop;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A RoCEv2 GID: the 16 bytes of an IPv6 address in wire (network) order. An IPv4 address {@code
 * a.b.c.d} is the IPv4-mapped GID {@code ::ffff:a.b.c.d}; an IPv6 address is its own GID. This is
 * how {@code ibv_rc_pingpong} and {@code rxe_ops} advertise a port's GID, and how an rxe4j device
 * (which is addressed by IP and UDP port) maps to one.
 */
public final class Gid {
    /** Bytes in a GID. */
    public static final int BYTES = 16;

    private static final HexFormat HEX = HexFormat.of();

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /**
     * @param raw 16 bytes in wire order (copied)
     * @return the GID
     * @throws IllegalArgumentException unless {@code raw} has 16 bytes
     */
    public static Gid of(byte[] raw) {
        if (raw == null || raw.length != BYTES) {
            throw new IllegalArgumentException("a GID has 16 bytes, got " + (raw == null ? "null" : raw.length));
        }
        return new Gid(raw.clone());
    }

    /**
     * @param ip an IPv4 or IPv6 address
     * @return {@code ::ffff:a.b.c.d} for IPv4, the address bytes for IPv6 (the scope is not part of a
     *     GID)
     */
    public static Gid of(InetAddress ip) {
        byte[] a = ip.getAddress();
        if (a.length == 4) {
            byte[] g = new byte[BYTES];
            g[10] = (byte) 0xff;
            g[11] = (byte) 0xff;
            System.arraycopy(a, 0, g, 12, 4);
            return new Gid(g);
        }
        return new Gid(a);
    }

    /**
     * Parses the 32 hex digits that {@code ibv_rc_pingpong} ({@code gid_to_wire_gid}) and {@code
     * rxe_ops} ({@code gid_str}) send: the 16 bytes in wire order, two digits each.
     *
     * @throws IllegalArgumentException unless {@code hex} is exactly 32 hex digits
     */
    public static Gid parseHex(String hex) {
        if (hex == null || hex.length() != 2 * BYTES) {
            throw new IllegalArgumentException("a GID is 32 hex digits, got '" + hex + "'");
        }
        try {
            return new Gid(HEX.parseHex(hex.toLowerCase(Locale.ROOT)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a GID is 32 hex digits, got '" + hex + "'", e);
        }
    }

    /** @return the 16 bytes in wire order (a copy) */
    public byte[] raw() {
        return raw.clone();
    }

    /** @return the 32 lower-case hex digits of the wire bytes */
    public String toHex() {
        return HEX.formatHex(raw);
    }

    /** @return whether this is an IPv4-mapped GID ({@code ::ffff:a.b.c.d}), i.e. a RoCEv2 IPv4 peer */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return raw[10] == (byte) 0xff && raw[11] == (byte) 0xff;
    }

    /** @return whether this is an IPv6 link-local GID ({@code fe80::/10}) */
    public boolean isLinkLocal() {
        return (raw[0] & 0xff) == 0xfe && (raw[1] & 0xc0) == 0x80;
    }

    /**
     * The peer's IP address, as RoCEv2 derives it from the destination GID: IPv4 for an IPv4-mapped
     * GID, otherwise IPv6. A link-local IPv6 address needs a scope to be reachable; it takes {@code
     * scopeFrom}'s (the local address the transport is bound to), if that has one.
     *
     * @param scopeFrom the local address, whose IPv6 scope a link-local peer shares; may be null
     */
    public InetAddress toAddress(InetAddress scopeFrom) {
        try {
            if (isIpv4Mapped()) {
                return InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16));
            }
            if (isLinkLocal() && scopeFrom instanceof Inet6Address l6) {
                NetworkInterface nif = l6.getScopedInterface();
                if (nif != null) {
                    return Inet6Address.getByAddress(null, raw.clone(), nif);
                }
                if (l6.getScopeId() != 0) {
                    return Inet6Address.getByAddress(null, raw.clone(), l6.getScopeId());
                }
            }
            return InetAddress.getByAddress(raw.clone());
        } catch (UnknownHostException e) {
            throw new IllegalStateException("16 bytes are always an address", e);
        }
    }

    /**
     * Formats the GID as glibc's {@code inet_ntop(AF_INET6, ...)} does (which is what {@code
     * ibv_rc_pingpong} prints): lower-case hex groups without leading zeros, the longest run of at
     * least two zero groups (the first of equal runs) as {@code ::}, and the last 32 bits in dotted
     * decimal for {@code ::ffff:a.b.c.d} and {@code ::a.b.c.d}.
     */
    public String toInetNtop() {
        int[] w = new int[8];
        for (int i = 0; i < 8; i++) {
            w[i] = ((raw[2 * i] & 0xff) << 8) | (raw[2 * i + 1] & 0xff);
        }
        int bestBase = -1;
        int bestLen = 0;
        for (int i = 0; i < 8;) {
            if (w[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && w[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestBase = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) {
            bestBase = -1;
        }
        StringBuilder sb = new StringBuilder(46);
        for (int i = 0; i < 8; i++) {
            if (bestBase != -1 && i >= bestBase && i < bestBase + bestLen) {
                if (i == bestBase) {
                    sb.append(':');
                }
                continue;
            }
            if (i != 0) {
                sb.append(':');
            }
            if (i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff))) {
                sb.append(raw[12] & 0xff).append('.').append(raw[13] & 0xff).append('.').append(raw[14] & 0xff)
                        .append('.').append(raw[15] & 0xff);
                return sb.toString();
            }
            sb.append(Integer.toHexString(w[i]));
        }
        if (bestBase != -1 && bestBase + bestLen == 8) {
            sb.append(':');
        }
        return sb.toString();
    }

    /** @return true for a GID with the same 16 bytes */
    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    /** @return {@link #toInetNtop()} */
    @Override
    public String toString() {
        return toInetNtop();
    }

    /**
     * @param ip any address
     * @return whether a UDP socket bound to {@code ip} talks RoCEv2 over IPv4
     */
    static boolean isIpv4(InetAddress ip) {
        return ip instanceof Inet4Address;
    }
}
