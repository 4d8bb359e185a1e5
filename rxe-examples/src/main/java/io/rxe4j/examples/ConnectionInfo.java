package io.rxe4j.examples;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * What one side of an RC connection tells the other before both move their QPs to RTS, like
 * {@code ibv_rc_pingpong}'s {@code LID:QPN:PSN:GID} line: the device's (IP, UDP port), the QPN,
 * the initial PSN, and the rkey, virtual address and length (bytes) of the MR the peer may use.
 *
 * <p>Text form (one line, ASCII, space separated, numbers in hex except the port):
 * {@code <ip> <udpPort> <qpn> <psn> <rkey> <va> <length>}.
 */
public record ConnectionInfo(InetSocketAddress address, int qpn, int psn, int rkey, long va, long length) {

    /** @return the one-line text form (no newline) */
    public String toLine() {
        return address.getAddress().getHostAddress() + " " + address.getPort() + " " + Integer.toHexString(qpn) + " "
                + Integer.toHexString(psn) + " " + Integer.toHexString(rkey) + " " + Long.toHexString(va) + " "
                + Long.toHexString(length);
    }

    /**
     * Parses {@link #toLine()}'s form.
     *
     * @throws IllegalArgumentException if the line is malformed (the message quotes it)
     */
    public static ConnectionInfo parse(String line) {
        String[] f = line == null ? new String[0] : line.trim().split(" ");
        if (f.length != 7) {
            throw new IllegalArgumentException("malformed connection info line: '" + line + "'");
        }
        try {
            InetAddress ip = InetAddress.getByName(f[0]);
            return new ConnectionInfo(new InetSocketAddress(ip, Integer.parseInt(f[1])), Integer.parseInt(f[2], 16),
                    Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16), Long.parseUnsignedLong(f[5], 16),
                    Long.parseUnsignedLong(f[6], 16));
        } catch (NumberFormatException | UnknownHostException e) {
            throw new IllegalArgumentException("malformed connection info line: '" + line + "'", e);
        }
    }
}
