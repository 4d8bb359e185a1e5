package io.rxe4j.examples.interop;

import java.util.Locale;

/**
 * One side's line in the {@code rxe_ops} TCP exchange (the kernel VM's {@code guest/rxe_ops.c}):
 * {@code "QPN:PSN:RKEY:VADDR:GID\n"}, written as {@code "%06x:%06x:%08x:%016" PRIx64 ":%s\n"} with the
 * GID as 32 hex digits of its wire bytes. The client sends first; the server answers; the client
 * ends the session with {@link #DONE}.
 *
 * @param qpn the QP number, 24 bits
 * @param psn the initial PSN, 24 bits
 * @param rkey the rkey of the side's 8 KiB buffer
 * @param vaddr the buffer's virtual address
 * @param gid the side's GID
 */
public record OpsDest(int qpn, int psn, int rkey, long vaddr, Gid gid) {
    /** The client's closing line (with its newline). */
    public static final String DONE = "done\n";

    /**
     * @throws IllegalArgumentException for a QPN or PSN out of range or a null GID
     */
    public OpsDest {
        if (qpn < 0 || qpn > 0xffffff || psn < 0 || psn > 0xffffff) {
            throw new IllegalArgumentException("qpn and psn must fit 24 bits: " + qpn + ", " + psn);
        }
        if (gid == null) {
            throw new IllegalArgumentException("gid is required");
        }
    }

    /** @return the line to send, with its trailing newline */
    public String toLine() {
        return String.format(Locale.ROOT, "%06x:%06x:%08x:%016x:%s", qpn, psn, rkey, vaddr, gid.toHex()) + "\n";
    }

    /**
     * Parses a line as {@code rxe_ops}' {@code recv_line} does ({@code "%x:%x:%x:%" SCNx64 ":%32s"}),
     * strictly: five ':'-separated hex fields, the last one 32 digits; a trailing newline (and CR)
     * is ignored.
     *
     * @throws IllegalArgumentException if the line is malformed (the message quotes it)
     */
    public static OpsDest parse(String line) {
        String s = line == null ? "" : line.strip();
        String[] f = s.split(":", -1);
        if (f.length != 5) {
            throw new IllegalArgumentException("malformed rxe_ops line '" + s + "'");
        }
        try {
            return new OpsDest(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16),
                    Integer.parseUnsignedInt(f[2], 16), Long.parseUnsignedLong(f[3], 16), Gid.parseHex(f[4]));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("malformed rxe_ops line '" + s + "'", e);
        }
    }

    /**
     * @param which {@code "local "} or {@code "remote"}
     * @return the line {@code rxe_ops} prints, e.g. {@code "local  QPN 0x000011 PSN 0x5fb4a9 RKEY
     *     0x00001234 VADDR 0x00007f0000001000 GID 00000000000000000000ffff0a630001"}
     */
    public String describe(String which) {
        return String.format(Locale.ROOT, "%-6s QPN 0x%06x PSN 0x%06x RKEY 0x%08x VADDR 0x%016x GID %s", which, qpn,
                psn, rkey, vaddr, gid.toHex());
    }
}
