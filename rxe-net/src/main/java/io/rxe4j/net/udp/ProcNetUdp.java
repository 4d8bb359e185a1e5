package io.rxe4j.net.udp;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads a UDP socket's receive-queue drop count from Linux's {@code /proc/net/udp} (IPv4) or
 * {@code /proc/net/udp6} (IPv6): the last column, {@code drops}, counts the datagrams the kernel
 * dropped for that socket because its receive buffer was full (the per-socket part of
 * {@code /proc/net/snmp}'s {@code RcvbufErrors}). The socket is found by its bound local address,
 * written there as hex words in host byte order ({@code 0100007F:12B7} is 127.0.0.1:4791). Several
 * rows share an address only for an {@code SO_REUSEPORT} group ({@link #group}).
 */
final class ProcNetUdp {
    private ProcNetUdp() {}

    /**
     * @param local a bound (IP, port)
     * @return the number of sockets bound to exactly {@code local} (more than one only with {@code
     *     SO_REUSEPORT}), and the sum of their drop counts; or null when the file cannot be read
     */
    static long[] group(InetSocketAddress local) {
        boolean v6 = local.getAddress() instanceof Inet6Address;
        Path file = Path.of(v6 ? "/proc/net/udp6" : "/proc/net/udp");
        String key = hexAddress(local);
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        } catch (IOException | SecurityException e) {
            return null;
        }
        long sockets = 0;
        long drops = 0;
        for (int i = 1; i < lines.size(); i++) {
            String[] f = lines.get(i).trim().split("\\s+");
            if (f.length >= 13 && f[1].equalsIgnoreCase(key)) {
                sockets++;
                try {
                    drops += Long.parseLong(f[f.length - 1]);
                } catch (NumberFormatException e) {
                    // a malformed row: counted as a socket, without drops
                }
            }
        }
        return new long[] {sockets, drops};
    }

    /** @return {@code local} as /proc/net/udp writes it: address words in host (little-endian) order, ":" port */
    static String hexAddress(InetSocketAddress local) {
        byte[] a = local.getAddress().getAddress();
        boolean le = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;
        StringBuilder sb = new StringBuilder(40);
        for (int w = 0; w < a.length; w += 4) {
            for (int k = 0; k < 4; k++) { // each 32-bit word printed as a native int
                sb.append(String.format("%02X", a[w + (le ? 3 - k : k)] & 0xFF));
            }
        }
        return sb.append(':').append(String.format("%04X", local.getPort())).toString();
    }
}
