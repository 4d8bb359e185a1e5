package io.rxe4j.examples.interop;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * One side's address in {@code ibv_rc_pingpong}'s TCP exchange ({@code struct pingpong_dest}): LID,
 * QPN, initial PSN and GID, sent as exactly {@value #WIRE_BYTES} bytes, {@code
 * sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, gid)} plus the terminating NUL, where the GID is 32 hex
 * digits of its 16 bytes in wire order ({@code gid_to_wire_gid}). On RoCE the LID is 0.
 *
 * @param lid the port's LID (0 on RoCE), 16 bits
 * @param qpn the QP number, 24 bits
 * @param psn the initial PSN, 24 bits
 * @param gid the port's GID
 */
public record PingpongDest(int lid, int qpn, int psn, Gid gid) {
    /** Size of the message: {@code sizeof "0000:000000:000000:00000000000000000000000000000000"}. */
    public static final int WIRE_BYTES = 52;
    /** What the client sends after the exchange: {@code "done"} with its NUL ({@code sizeof "done"}). */
    public static final byte[] DONE = {'d', 'o', 'n', 'e', 0};

    /**
     * @throws IllegalArgumentException for a field out of range or a null GID
     */
    public PingpongDest {
        if (lid < 0 || lid > 0xffff) {
            throw new IllegalArgumentException("lid must fit 16 bits: " + lid);
        }
        if (qpn < 0 || qpn > 0xffffff || psn < 0 || psn > 0xffffff) {
            throw new IllegalArgumentException("qpn and psn must fit 24 bits: " + qpn + ", " + psn);
        }
        if (gid == null) {
            throw new IllegalArgumentException("gid is required");
        }
    }

    /** @return the {@value #WIRE_BYTES} bytes to send: the formatted text and a NUL */
    public byte[] encode() {
        String text = String.format(Locale.ROOT, "%04x:%06x:%06x:%s", lid, qpn, psn, gid.toHex());
        byte[] ascii = text.getBytes(StandardCharsets.US_ASCII);
        byte[] msg = new byte[WIRE_BYTES];
        System.arraycopy(ascii, 0, msg, 0, ascii.length); // 51 characters; msg[51] stays NUL
        return msg;
    }

    /**
     * Parses a message as {@code sscanf(msg, "%x:%x:%x:%s")} and {@code wire_gid_to_gid} do, but
     * strictly: the text up to the first NUL must be four ':'-separated hex fields, the last one 32
     * digits.
     *
     * @param msg the bytes received (normally exactly {@value #WIRE_BYTES})
     * @throws IllegalArgumentException if the message is malformed (the message quotes it)
     */
    public static PingpongDest decode(byte[] msg) {
        int n = 0;
        while (n < msg.length && msg[n] != 0) {
            n++;
        }
        String text = new String(msg, 0, n, StandardCharsets.US_ASCII);
        String[] f = text.split(":", -1);
        if (f.length != 4) {
            throw new IllegalArgumentException("malformed rc_pingpong address '" + text + "'");
        }
        try {
            return new PingpongDest(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16),
                    Integer.parseInt(f[2], 16), Gid.parseHex(f[3]));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("malformed rc_pingpong address '" + text + "'", e);
        }
    }

    /**
     * @param which {@code "local"} or {@code "remote"}
     * @return the line {@code ibv_rc_pingpong} prints for an address, e.g. {@code "  local address:  LID
     *     0x0000, QPN 0x000011, PSN 0x5fb4a9, GID ::ffff:10.99.0.1"}
     */
    public String describe(String which) {
        return String.format(Locale.ROOT, "  %s address: %sLID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", which,
                which.equals("local") ? " " : "", lid, qpn, psn, gid.toInetNtop());
    }
}
