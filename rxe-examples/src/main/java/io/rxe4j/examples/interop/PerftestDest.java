package io.rxe4j.examples.interop;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * perftest's {@code struct pingpong_dest} as it travels with a GID ({@code KEY_PRINT_FMT_GID},
 * {@code "%04x:%04x:%06x:%06x:%08x:%016llx:" + 16 × "%02x:" + "%08x:"}): LID, outstanding READs,
 * QPN, PSN, rkey, virtual address of the buffer the peer may use, GID, SRQ number; 107 characters
 * and a NUL, 108 bytes. With {@code -R} the same struct travels in binary ({@link #binary()}).
 */
record PerftestDest(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, Gid gid, int srqn) {
    /**
     * {@code sizeof(struct pingpong_dest)} on x86-64 and aarch64: five ints, 4 bytes of padding, the
     * 8-byte vaddr, the 16-byte GID, srqn and gid_index: 56 bytes. perftest's receive buffer on its
     * rdma_cm control QP is this long ({@code post_one_recv_wqe}).
     */
    static final int BINARY_BYTES = 56;

    /** The all-zero dest perftest sends in the two hand shakes around the rdma_cm connection. */
    static final PerftestDest ZERO = new PerftestDest(0, 0, 0, 0, 0, 0, Gid.of(new byte[Gid.BYTES]), 0);

    /**
     * The dest as perftest's {@code rdma_write_keys} sends it over the rdma_cm control QP (perftest
     * built with {@code HAVE_ENDIAN}, as on glibc): {@code struct pingpong_dest} with every integer
     * big-endian ({@code htobe32}, {@code htobe64}) at its native offset: lid 0, out_reads 4, qpn 8,
     * psn 12, rkey 16, padding 20 (zero here; perftest leaves its stack bytes), vaddr 24, GID 32
     * (wire order), srqn 48, gid_index 52 (0 here; perftest sends its {@code -x}, and ignores the
     * field on receipt).
     */
    byte[] binary() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(BINARY_BYTES); // big-endian
        b.putInt(lid).putInt(outReads).putInt(qpn).putInt(psn).putInt(rkey).putInt(0).putLong(vaddr).put(gid.raw())
                .putInt(srqn).putInt(0);
        return b.array();
    }

    /**
     * Parses a dest as {@code rdma_read_keys} does: the big-endian fields of {@link #binary()}
     * (perftest itself ignores srqn and gid_index there; srqn is kept).
     *
     * @throws IllegalArgumentException if {@code msg} is shorter than {@value #BINARY_BYTES} bytes
     */
    static PerftestDest parseBinary(byte[] msg) {
        if (msg.length < BINARY_BYTES) {
            throw new IllegalArgumentException("a binary perftest dest has " + BINARY_BYTES + " bytes, got " + msg.length);
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(msg);
        int lid = b.getInt();
        int outReads = b.getInt();
        int qpn = b.getInt();
        int psn = b.getInt();
        int rkey = b.getInt();
        b.getInt(); // padding
        long vaddr = b.getLong();
        byte[] gid = new byte[Gid.BYTES];
        b.get(gid);
        return new PerftestDest(lid, outReads, qpn, psn, rkey, vaddr, Gid.of(gid), b.getInt());
    }

    byte[] format() {
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "%04x:%04x:%06x:%06x:%08x:%016x:", lid, outReads,
                qpn, psn, rkey, vaddr));
        for (byte b : gid.raw()) {
            s.append(String.format(Locale.ROOT, "%02x:", b & 0xFF));
        }
        s.append(String.format(Locale.ROOT, "%08x:", srqn));
        byte[] msg = new byte[PerftestWire.DEST_BYTES];
        byte[] text = s.toString().getBytes(StandardCharsets.US_ASCII);
        if (text.length != PerftestWire.DEST_BYTES - 1) {
            throw new IllegalStateException("perftest dest message is " + text.length + " characters, not 107");
        }
        System.arraycopy(text, 0, msg, 0, text.length);
        return msg;
    }

    /**
     * Parses a 108-byte dest message.
     *
     * @throws IllegalArgumentException if it is malformed (the message quotes it)
     */
    static PerftestDest parse(byte[] msg) {
        String text = PerftestWire.cString(msg);
        String[] f = text.split(":", -1);
        if (f.length < 23) {
            throw new IllegalArgumentException("malformed perftest dest message '" + text + "'");
        }
        try {
            byte[] gid = new byte[Gid.BYTES];
            for (int i = 0; i < Gid.BYTES; i++) {
                gid[i] = (byte) Integer.parseInt(f[6 + i], 16);
            }
            return new PerftestDest(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), Integer.parseInt(f[2], 16),
                    Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16), Long.parseUnsignedLong(f[5], 16),
                    Gid.of(gid), Integer.parseUnsignedInt(f[22], 16));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed perftest dest message '" + text + "'", e);
        }
    }

    /**
     * perftest's address lines ({@code ctx_print_pingpong_data}: {@code BASIC_ADDR_FMT}, then for
     * READ {@code READ_FMT} and for READ and WRITE {@code RDMA_FMT}, then {@code PERF_GID_FMT} with
     * each GID byte in decimal).
     *
     * @param op the test's operation
     */
    String describe(String side, io.rxe4j.examples.perf.PerfTest.Op op) {
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, " %s address: LID %s QPN %s PSN %s", side,
                cHex(lid, 4), cHex(qpn, 6), cHex(psn, 6)));
        if (op == io.rxe4j.examples.perf.PerfTest.Op.READ) {
            s.append(" OUT ").append(cHex(outReads, 4));
        }
        if (op == io.rxe4j.examples.perf.PerfTest.Op.READ || op == io.rxe4j.examples.perf.PerfTest.Op.WRITE) {
            s.append(" RKey ").append(cHex(rkey, 8)).append(" VAddr ").append(cHex(vaddr, 16));
        }
        s.append("\n GID: ");
        byte[] raw = gid.raw();
        for (int i = 0; i < raw.length; i++) {
            s.append(i == 0 ? "" : ":").append(String.format(Locale.ROOT, "%02d", raw[i] & 0xFF));
        }
        return s.toString();
    }

    /** C's {@code %#0<width>x}: zero-padded to {@code width} characters including "0x"; plain zeros for 0. */
    static String cHex(long v, int width) {
        if (v == 0) {
            return "0".repeat(width);
        }
        String h = Long.toHexString(v);
        return "0x" + "0".repeat(Math.max(0, width - 2 - h.length())) + h;
    }
}
