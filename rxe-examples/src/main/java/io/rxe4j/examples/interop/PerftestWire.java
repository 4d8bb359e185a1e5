package io.rxe4j.examples.interop;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * perftest's TCP exchange without rdma_cm (linux-rdma/perftest {@code perftest_communication.c}:
 * {@code ctx_xchg_data_ethernet}, {@code ethernet_write_keys}/{@code ethernet_read_keys},
 * {@code exchange_versions}, {@code check_sys_data}, {@code check_mtu}, {@code xchg_bw_reports}).
 * In every exchange the client writes first and then reads; the server reads first and then
 * writes. perftest reads each message with one {@code read()} of its exact size, so each is written
 * with one {@code write()}.
 *
 * <p>rxe4j announces perftest version {@value #VERSION}: at least 5.70 (perftest refuses older
 * peers), at least 5.33 (8-byte iteration counts in reports) and below 6.28, so that neither side
 * runs {@code negotiate_params}, whose message embeds a native {@code struct ibv_device_attr}.
 *
 * <p>With perftest's {@code -R} the same messages, in the same order and of the same sizes, travel
 * as SENDs over an RC QP that rdma_cm connected ({@link PerftestCmLink}; perftest's {@code
 * ctx_xchg_data_rdma}, {@code rdma_write_data}/{@code rdma_read_data}), and the dest of {@link
 * #handshake} is the binary {@code struct pingpong_dest} ({@code rdma_write_keys}/{@code
 * rdma_read_keys}, {@link PerftestDest#binary()}) instead of the text one.
 */
final class PerftestWire implements AutoCloseable {
    /**
     * What carries the messages: one {@link #write} is one message (a TCP {@code write()} or one
     * SEND), one {@link #read} takes exactly one message of the given size.
     */
    interface Link extends AutoCloseable {
        /** Sends one message. */
        void write(byte[] msg) throws IOException;

        /** Receives one message of exactly {@code msg.length} bytes into {@code msg}. */
        void read(byte[] msg) throws IOException;

        @Override
        void close() throws IOException;
    }

    /** A TCP connection: perftest's exchange without rdma_cm. */
    private static final class TcpLink implements Link {
        private final Socket socket;
        private final DataInputStream in;
        private final OutputStream out;

        TcpLink(Socket socket) throws IOException {
            this.socket = socket;
            socket.setTcpNoDelay(true);
            this.in = new DataInputStream(socket.getInputStream());
            this.out = socket.getOutputStream();
        }

        @Override
        public void write(byte[] msg) throws IOException {
            out.write(msg);
            out.flush();
        }

        @Override
        public void read(byte[] b) throws IOException {
            try {
                in.readFully(b);
            } catch (EOFException e) {
                throw new IOException("perftest peer closed the TCP connection (" + b.length + "-byte message expected)",
                        e);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }

        @Override
        public String toString() {
            return "perftest TCP " + socket.getLocalSocketAddress() + " <-> " + socket.getRemoteSocketAddress();
        }
    }

    /** The perftest version rxe4j speaks. */
    static final String VERSION = "6.10";
    /** perftest's {@code MAX_VERSION}: the version field is 16 bytes, NUL padded. */
    static final int VERSION_BYTES = 16;
    /** {@code KEY_MSG_SIZE_GID}: the dest message with a GID, 107 characters and a NUL. */
    static final int DEST_BYTES = 108;

    private final Link link;
    private final boolean client;
    private final boolean binaryDests;
    private String remoteVersion;

    /** perftest's TCP exchange (no {@code -R}) on a connected socket. */
    PerftestWire(Socket socket, boolean client) throws IOException {
        this(new TcpLink(socket), client, false);
    }

    /**
     * @param link what carries the messages
     * @param client whether this side writes first in each exchange (perftest's client)
     * @param binaryDests the dest of {@link #handshake} in binary (with {@code -R}) instead of text
     */
    PerftestWire(Link link, boolean client, boolean binaryDests) {
        this.link = link;
        this.client = client;
        this.binaryDests = binaryDests;
    }

    /** One exchange of {@code mine.length} bytes each way, in perftest's order. */
    byte[] xchg(byte[] mine) throws IOException {
        byte[] theirs = new byte[mine.length];
        if (client) {
            link.write(mine);
            link.read(theirs);
        } else {
            link.read(theirs);
            link.write(mine);
        }
        return theirs;
    }

    /**
     * {@code exchange_versions} and {@code check_version_compatibility}.
     *
     * @return the peer's version
     * @throws IOException if the peer's version is older than 5.70
     */
    String versions() throws IOException {
        byte[] mine = new byte[VERSION_BYTES];
        byte[] v = VERSION.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(v, 0, mine, 0, v.length);
        remoteVersion = cString(xchg(mine));
        if (number(remoteVersion) < 5.70) {
            throw new IOException("perftest peer version '" + remoteVersion + "' is older than 5.70 (not supported)");
        }
        return remoteVersion;
    }

    /** {@code check_sys_data}: cycle buffer (page size) and cache line size, network order; the larger wins. */
    int[] sysData(int cycleBuffer, int cacheLine) throws IOException {
        int rc = ByteBuffer.wrap(xchg(ByteBuffer.allocate(4).putInt(cycleBuffer).array())).getInt();
        int rl = ByteBuffer.wrap(xchg(ByteBuffer.allocate(4).putInt(cacheLine).array())).getInt();
        return new int[] {Math.max(rc, cycleBuffer), Math.max(rl, cacheLine)};
    }

    /**
     * {@code check_mtu}: the IBTA MTU code (1..5) as a decimal string in 2 bytes (peer version at
     * least 5.31); the smaller valid one wins.
     *
     * @return the MTU code to use
     */
    int mtu(int code) throws IOException {
        byte[] mine = new byte[2];
        mine[0] = (byte) ('0' + code);
        String theirs = cString(xchg(mine));
        int rem;
        try {
            rem = Integer.parseInt(theirs.trim());
        } catch (NumberFormatException e) {
            throw new IOException("perftest peer sent MTU '" + theirs + "'", e);
        }
        return rem >= 1 && rem <= 5 && rem < code ? rem : code;
    }

    /** {@code ctx_hand_shake}: one dest message each way (text, or binary with {@code -R}). */
    PerftestDest handshake(PerftestDest mine) throws IOException {
        return binaryDests ? PerftestDest.parseBinary(xchg(mine.binary())) : PerftestDest.parse(xchg(mine.format()));
    }

    /**
     * {@code xchg_bw_reports} for a peer of version at least 5.33: size and iterations as 8-byte
     * big-endian integers, then BW peak, BW average (MiB/s) and message rate (Mpps) as big-endian
     * IEEE doubles, each in its own exchange.
     */
    double[] xchgReport(long size, long iters, double bwPeak, double bwAvg, double msgRate) throws IOException {
        long rSize = ByteBuffer.wrap(xchg(ByteBuffer.allocate(8).putLong(size).array())).getLong();
        long rIters = ByteBuffer.wrap(xchg(ByteBuffer.allocate(8).putLong(iters).array())).getLong();
        double rPeak = ByteBuffer.wrap(xchg(ByteBuffer.allocate(8).putDouble(bwPeak).array())).getDouble();
        double rAvg = ByteBuffer.wrap(xchg(ByteBuffer.allocate(8).putDouble(bwAvg).array())).getDouble();
        double rRate = ByteBuffer.wrap(xchg(ByteBuffer.allocate(8).putDouble(msgRate).array())).getDouble();
        return new double[] {rSize, rIters, rPeak, rAvg, rRate};
    }

    static String cString(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.US_ASCII);
    }

    /** {@code atof} of a version string: the leading number, 0 if none. */
    static double number(String v) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*(\\d+(\\.\\d+)?)").matcher(v);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    String remoteVersion() {
        return remoteVersion;
    }

    @Override
    public void close() throws IOException {
        link.close();
    }

    @Override
    public String toString() {
        return link.toString();
    }
}
