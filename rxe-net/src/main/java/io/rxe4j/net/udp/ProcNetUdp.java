package io.rxe4j.net.udp;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads a UDP socket's drop count from Linux's {@code /proc/net/udp} (IPv4) or {@code
 * /proc/net/udp6} (IPv6): the last column, {@code drops} (the socket's {@code sk_drops}), counts
 * every datagram the kernel dropped for that socket: because its receive buffer was full, but also
 * because its UDP checksum was wrong (checked when the datagram is queued), or for lack of memory.
 * The kernel does not split that count per socket; {@link #udpErrors} reads the namespace-wide
 * split from {@code /proc/net/snmp} and {@code /proc/net/snmp6}. The socket is found by its bound local address,
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

    /** Index of RcvbufErrors in {@link #udpErrors}'s result. */
    static final int RCVBUF_ERRORS = 0;
    /** Index of InCsumErrors in {@link #udpErrors}'s result. */
    static final int IN_CSUM_ERRORS = 1;

    /**
     * @return the network namespace's UDP {@code RcvbufErrors} and {@code InCsumErrors} (IPv4 plus
     *     IPv6), as of now, from {@code /proc/net/snmp} and {@code /proc/net/snmp6}; a file that
     *     cannot be read counts 0
     */
    static long[] udpErrors() {
        return udpErrors(read("/proc/net/snmp"), read("/proc/net/snmp6"));
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file), StandardCharsets.US_ASCII);
        } catch (IOException | SecurityException e) {
            return "";
        }
    }

    /**
     * Parses the UDP error counters: {@code snmp}'s two "Udp:" lines (names, then values; not
     * "UdpLite:") and {@code snmp6}'s "Udp6RcvbufErrors N" and "Udp6InCsumErrors N" lines, summed.
     *
     * @param snmp the text of {@code /proc/net/snmp} (may be empty)
     * @param snmp6 the text of {@code /proc/net/snmp6} (may be empty)
     * @return {RcvbufErrors, InCsumErrors}; a counter absent or malformed counts 0
     */
    static long[] udpErrors(String snmp, String snmp6) {
        long[] r = new long[2];
        String[] names = null;
        for (String line : snmp.split("\\n")) {
            if (!line.startsWith("Udp:")) {
                continue;
            }
            String[] f = line.trim().split("\\s+");
            if (names == null) {
                names = f;
                continue;
            }
            for (int i = 1; i < Math.min(names.length, f.length); i++) {
                int at = names[i].equals("RcvbufErrors") ? RCVBUF_ERRORS : names[i].equals("InCsumErrors")
                        ? IN_CSUM_ERRORS : -1;
                if (at >= 0) {
                    r[at] += parse(f[i]);
                }
            }
            break;
        }
        for (String line : snmp6.split("\\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 2 && f[0].equals("Udp6RcvbufErrors")) {
                r[RCVBUF_ERRORS] += parse(f[1]);
            } else if (f.length == 2 && f[0].equals("Udp6InCsumErrors")) {
                r[IN_CSUM_ERRORS] += parse(f[1]);
            }
        }
        return r;
    }

    private static long parse(String s) {
        try {
            return Math.max(0, Long.parseLong(s));
        } catch (NumberFormatException e) {
            return 0;
        }
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
