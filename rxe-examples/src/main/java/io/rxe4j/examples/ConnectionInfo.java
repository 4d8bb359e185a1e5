package io.rxe4j.examples;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * What one side of an RC connection tells the other before both move their QPs to RTS, like
 * {@code ibv_rc_pingpong}'s {@code LID:QPN:PSN:GID} line: the device's (IP, UDP port), the QPN,
 * the initial PSN, the rkey, virtual address and length (bytes) of the MR the peer may use and,
 * optionally, the rkey, virtual address and length of a second, persistent (file-backed) MR the
 * peer may WRITE, READ and FLUSH.
 *
 * <p>Text form (one line, ASCII, space separated, numbers in hex except the port):
 * {@code <ip> <udpPort> <qpn> <psn> <rkey> <va> <length> [<pmemRkey> <pmemVa> <pmemLength>]}. The
 * three persistent-MR fields are written only when there is such an MR ({@code pmemLength > 0});
 * a line without them parses with all three 0.
 */
public record ConnectionInfo(InetSocketAddress address, int qpn, int psn, int rkey, long va, long length,
        int pmemRkey, long pmemVa, long pmemLength) {

    /** Connection info without a persistent MR. */
    public ConnectionInfo(InetSocketAddress address, int qpn, int psn, int rkey, long va, long length) {
        this(address, qpn, psn, rkey, va, length, 0, 0, 0);
    }

    /** @return whether the peer advertises a persistent MR */
    public boolean hasPmem() {
        return pmemLength != 0;
    }

    /** @return the one-line text form (no newline) */
    public String toLine() {
        String line = address.getAddress().getHostAddress() + " " + address.getPort() + " " + Integer.toHexString(qpn)
                + " " + Integer.toHexString(psn) + " " + Integer.toHexString(rkey) + " " + Long.toHexString(va) + " "
                + Long.toHexString(length);
        if (hasPmem()) {
            line += " " + Integer.toHexString(pmemRkey) + " " + Long.toHexString(pmemVa) + " "
                    + Long.toHexString(pmemLength);
        }
        return line;
    }

    /**
     * Parses {@link #toLine()}'s form (7 fields, or 10 with a persistent MR).
     *
     * @throws IllegalArgumentException if the line is malformed (the message quotes it)
     */
    public static ConnectionInfo parse(String line) {
        String[] f = line == null ? new String[0] : line.trim().split(" ");
        if (f.length != 7 && f.length != 10) {
            throw new IllegalArgumentException("malformed connection info line: '" + line + "'");
        }
        try {
            InetAddress ip = InetAddress.getByName(f[0]);
            boolean pmem = f.length == 10;
            return new ConnectionInfo(new InetSocketAddress(ip, Integer.parseInt(f[1])), Integer.parseInt(f[2], 16),
                    Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16), Long.parseUnsignedLong(f[5], 16),
                    Long.parseUnsignedLong(f[6], 16), pmem ? Integer.parseUnsignedInt(f[7], 16) : 0,
                    pmem ? Long.parseUnsignedLong(f[8], 16) : 0, pmem ? Long.parseUnsignedLong(f[9], 16) : 0);
        } catch (NumberFormatException | UnknownHostException e) {
            throw new IllegalArgumentException("malformed connection info line: '" + line + "'", e);
        }
    }
}
