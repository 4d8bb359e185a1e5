package io.rxe4j.examples.interop;

import io.rxe4j.examples.perf.AtomicType;
import io.rxe4j.examples.perf.PerfTest;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectRequest;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * rxe-perf as the peer of perftest's {@code ib_write_bw}, {@code ib_read_bw}, {@code ib_send_bw}
 * and {@code ib_atomic_bw} (RC, without rdma_cm), as server or client: perftest's TCP exchange
 * ({@link PerftestWire}), its QP attributes ({@code ctx_connect}: timeout 14, retry 7, RNR retry 7,
 * RNR timer 12, the peer's outstanding READs), its sequence of hand shakes for each test, and its
 * report lines. A kernel {@code rdma_rxe} (or RoCE NIC) host runs e.g. {@code ib_write_bw -d rxe0 -x
 * 1 <jvm-host>} against {@code rxe-perf write_bw --perftest --server}, or serves {@code ib_write_bw
 * -d rxe0 -x 1} for {@code rxe-perf write_bw --perftest --connect <host>}.
 *
 * <p>Both sides must be given the same test parameters ({@code -s}, {@code -n}, {@code -q}),
 * because perftest only checks them in its {@code negotiate_params} exchange from version 6.28 on,
 * which rxe4j does not speak (see {@link PerftestWire}). The device binds UDP port 4791 on the IP
 * of the TCP connection, as a RoCE host would. Iterations are per QP, as in perftest.
 */
public final class PerftestPeer {
    /** perftest's default QP timeout ({@code -u}): 14, 4.096 µs × 2^14 = 67 ms. */
    public static final int PERFTEST_QP_TIMEOUT = 14;

    /**
     * What to run, as perftest's options.
     *
     * @param test the test (bandwidth or latency)
     * @param size message size in bytes ({@code -s}; 8 for atomics)
     * @param iters iterations per QP ({@code -n})
     * @param qps number of QPs ({@code -q}; 1 for latency tests)
     * @param txDepth outstanding work requests per QP in bandwidth tests ({@code -t})
     * @param atomic FETCH_AND_ADD or CMP_AND_SWAP ({@code -A})
     * @param mtu the largest path MTU this side accepts, or null for the port's active MTU
     *     ({@code RdmaDevice.queryPort}); the smaller of the two sides' wins
     * @param server whether to wait for perftest's client instead of connecting
     * @param host the server's host (client only), else null
     * @param port the TCP port of the exchange ({@code -p})
     * @param pcap a pcap file for this side's packets, or null
     * @param opfn whether OPFN and TID RDMA are on (a kernel peer ignores them)
     * @param loops event loops of the device
     * @param qpTimeout the QPs' local ACK timeout exponent (perftest's {@code -u}, 4.096 µs × 2^n;
     *     perftest's default {@link #PERFTEST_QP_TIMEOUT}), 1..31
     * @param rdmaCm perftest's {@code -R}: rdma_cm connects a control QP and then the test's QPs on
     *     rdma_cm port {@code port}, and the exchange runs over the control QP ({@link PerftestCmLink})
     *     instead of TCP
     * @param localIp with {@code rdmaCm}: the IP the device binds UDP 4791 on (perftest's {@code
     *     --source_ip}; an IPv6 link-local one with its {@code %interface}); required for the server,
     *     for the client null means the source address of the route to {@code host}
     */
    public record Config(PerfTest test, int size, long iters, int qps, int txDepth, AtomicType atomic, Mtu mtu,
            boolean server, String host, int port, Path pcap, boolean opfn, int loops, int qpTimeout, boolean rdmaCm,
            String localIp) {
        /** Without rdma_cm (perftest's TCP exchange). */
        public Config(PerfTest test, int size, long iters, int qps, int txDepth, AtomicType atomic, Mtu mtu,
                boolean server, String host, int port, Path pcap, boolean opfn, int loops, int qpTimeout) {
            this(test, size, iters, qps, txDepth, atomic, mtu, server, host, port, pcap, opfn, loops, qpTimeout, false,
                    null);
        }

        /** One event loop. */
        public Config(PerfTest test, int size, long iters, int qps, int txDepth, AtomicType atomic, Mtu mtu,
                boolean server, String host, int port, Path pcap, boolean opfn) {
            this(test, size, iters, qps, txDepth, atomic, mtu, server, host, port, pcap, opfn, 1);
        }

        /** perftest's QP timeout. */
        public Config(PerfTest test, int size, long iters, int qps, int txDepth, AtomicType atomic, Mtu mtu,
                boolean server, String host, int port, Path pcap, boolean opfn, int loops) {
            this(test, size, iters, qps, txDepth, atomic, mtu, server, host, port, pcap, opfn, loops, PERFTEST_QP_TIMEOUT);
        }

        /** @throws IllegalArgumentException for a latency test or out-of-range values */
        public Config {
            if (test.latency() && qps != 1) {
                throw new IllegalArgumentException("perftest's latency tests use one QP, not -q " + qps);
            }
            if (size < 1 || iters < 1 || qps < 1 || txDepth < 1) {
                throw new IllegalArgumentException("size, iterations, QPs and tx depth must be >= 1");
            }
            if (qpTimeout < 1 || qpTimeout > 31) {
                throw new IllegalArgumentException("-u (QP timeout) must be 1..31, got " + qpTimeout);
            }
            if (loops < 1 || loops > 64) {
                throw new IllegalArgumentException("--loops must be 1..64, got " + loops);
            }
            if (test.op() == PerfTest.Op.ATOMIC && size != 8) {
                throw new IllegalArgumentException("atomic_bw uses 8-byte operations, not -s " + size);
            }
            if (atomic != AtomicType.FAA && atomic != AtomicType.CAS) {
                throw new IllegalArgumentException("perftest knows CMP_AND_SWAP and FETCH_AND_ADD, not " + atomic);
            }
            if (rdmaCm && server && (localIp == null || localIp.isBlank())) {
                throw new IllegalArgumentException("--perftest -R --server needs --ip (the address the device and its "
                        + "rdma_cm listener are on)");
            }
            if (!rdmaCm && localIp != null) {
                throw new IllegalArgumentException("--ip goes with -R (without it the device takes the TCP connection's "
                        + "address)");
            }
            if (!server && (host == null || host.isBlank())) {
                throw new IllegalArgumentException("the client needs the server's host");
            }
        }
    }

    private static final int OUT_READS = 16;
    /** How long the server waits for perftest's client, ms. */
    private static final int ACCEPT_TIMEOUT_MILLIS = 120_000;
    private static final int RX_DEPTH = 512;
    private static final int CYCLE_BUFFER = 4096;
    private static final int CACHE_LINE = 64;
    private static final long STALL_SECONDS = 30;
    private static final String LINE = "---------------------------------------------------------------------------------------";

    /** With -R: how long the CM's exchange (REQ to REP, REP to RTU) may take on this side. */
    private static final Duration CM_TIMEOUT = Duration.ofSeconds(30);
    /** With -R, the client: how long it retries while the server's rdma_cm port refuses (REJ 8). */
    private static final long CONNECT_RETRY_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** With -R: the longest wait for one message on the control QP (the peer may be running the test). */
    private static final long READ_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(600);
    /** With -R: how long the end waits for the DREQs or DREPs of the test QPs' connections. */
    private static final long DISCONNECT_WAIT_SECONDS = 20;

    private final Config c;
    private final PrintStream out;
    /** With -R, the server: the listener of the control and test connections; else null. */
    private RdmaListener listener;
    /** With -R, the client: the server's IP and rdma_cm port; else null. */
    private InetSocketAddress cmServer;

    private PerftestPeer(Config c, PrintStream out) {
        this.c = c;
        this.out = out;
    }

    /**
     * Runs one test as perftest's peer.
     *
     * @return 0 on success, 1 on a failed completion or a broken exchange (said on {@code err})
     */
    public static int run(Config c, PrintStream out, PrintStream err) {
        try {
            return new PerftestPeer(c, out).run();
        } catch (IOException | RuntimeException e) {
            // e.g. the UDP port 4791 of the TCP connection's address is taken (both peers on one IP)
            err.println("rxe-perf --perftest: " + e.getMessage()
                    + (e.getCause() != null && !String.valueOf(e.getMessage()).contains(String.valueOf(
                            e.getCause().getMessage())) ? " (" + e.getCause().getMessage() + ")" : ""));
            return 1;
        }
    }

    private int run() throws IOException {
        if (c.rdmaCm()) {
            return runRdmaCm();
        }
        try (Socket s = c.server() ? accept() : connect(); PerftestWire wire = new PerftestWire(s, !c.server())) {
            InetAddress local = s.getLocalAddress();
            try (InteropDevice dev = new InteropDevice(local, 4791, InteropDevice.IcrcMode.AUTO, false, c.opfn(),
                    c.pcap(), null, 0, c.loops())) {
                dev.printNotes(System.err, false);
                return negotiateAndTest(dev, wire);
            }
        }
    }

    /** perftest's exchange of versions, system data and MTU, then the test; the counters on a failure. */
    private int negotiateAndTest(InteropDevice dev, PerftestWire wire) throws IOException {
        String rv = wire.versions();
        int[] sys = wire.sysData(CYCLE_BUFFER, CACHE_LINE);
        Mtu mine = c.mtu() != null ? c.mtu() : dev.device().queryPort(1).activeMtu();
        Mtu mtu = Mtu.values()[wire.mtu(mine.value()) - 1];
        try {
            return test(dev, wire, rv, sys[0], mtu);
        } catch (RuntimeException e) {
            printCounters(dev);
            throw e;
        }
    }

    /** With -R, the server: the next rdma_cm request on the listener, within the accept timeout. */
    private ConnectRequest nextRequest(String what) throws IOException {
        ConnectRequest r;
        try {
            r = listener.getRequest(Duration.ofMillis(ACCEPT_TIMEOUT_MILLIS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        if (r == null) {
            throw new IOException("no " + what + " within " + ACCEPT_TIMEOUT_MILLIS / 1000 + " s");
        }
        return r;
    }

    /**
     * perftest's {@code -R}: the device on {@link Config#localIp} (or the route's source address), a
     * control QP connected by rdma_cm on port {@code -p} (the server listens there with {@link
     * RdmaListener}, which also takes the test QPs' requests later), the exchange over it, the test.
     */
    private int runRdmaCm() throws IOException {
        InetSocketAddress server = c.server() ? null : new InetSocketAddress(InteropDevice.resolve(c.host()), c.port());
        InetAddress local = c.localIp() != null ? InteropDevice.resolve(c.localIp()) : routeSource(server.getAddress());
        try (InteropDevice dev = new InteropDevice(local, 4791, InteropDevice.IcrcMode.AUTO, false, c.opfn(), c.pcap(),
                null, 0, c.loops())) {
            dev.printNotes(System.err, false);
            ConnectionParams ctl = PerftestCmLink.params(c.qpTimeout(), CM_TIMEOUT);
            PerftestCmLink link;
            if (c.server()) {
                listener = RdmaListener.listen(dev.device(), c.port());
                printWaiting();
                ConnectRequest r = nextRequest("perftest -R client connected to rdma_cm port " + c.port() + " of "
                        + dev.device().address());
                link = PerftestCmLink.accept(dev.device(), r, ctl, READ_TIMEOUT_NANOS);
            } else {
                link = PerftestCmLink.connect(dev.device(), server, ctl, System.nanoTime() + CONNECT_RETRY_NANOS,
                        READ_TIMEOUT_NANOS);
            }
            cmServer = server;
            System.err.println("rxe-perf --perftest -R: control " + link.connection() + ", path MTU "
                    + link.connection().pathMtu().bytes());
            try (PerftestWire wire = new PerftestWire(link, !c.server(), true)) {
                return negotiateAndTest(dev, wire);
            }
        } finally {
            if (listener != null) {
                listener.close();
            }
        }
    }

    /** The local address a UDP socket would send from to {@code peer} (the route's source). */
    private static InetAddress routeSource(InetAddress peer) throws IOException {
        try (java.net.DatagramSocket ds = new java.net.DatagramSocket()) {
            ds.connect(peer, 4791);
            InetAddress a = ds.getLocalAddress();
            if (a == null || a.isAnyLocalAddress()) {
                throw new IOException("no route to " + peer + " (give --ip)");
            }
            return a;
        }
    }

    private void printCounters(InteropDevice dev) {
        // what the engine saw (drops by reason, timeouts, resends) names the cause of a failed completion
        StringBuilder sb = new StringBuilder("rxe-perf --perftest: device counters at the failure:");
        dev.device().counters().forEach((k, v) -> {
            if (v != 0) {
                sb.append(' ').append(k).append('=').append(v);
            }
        });
        System.err.println(sb);
    }

    private void printWaiting() {
        out.println();
        out.println("************************************");
        out.println("* Waiting for client to connect... *");
        out.println("************************************");
        out.flush();
    }

    private Socket accept() throws IOException {
        try (ServerSocket ss = new ServerSocket(c.port())) {
            ss.setSoTimeout(ACCEPT_TIMEOUT_MILLIS);
            printWaiting();
            try {
                return ss.accept();
            } catch (java.net.SocketTimeoutException e) {
                throw new IOException("no perftest client connected to TCP port " + c.port() + " within "
                        + ACCEPT_TIMEOUT_MILLIS / 1000 + " s", e);
            }
        }
    }

    private Socket connect() throws IOException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                return new Socket(c.host(), c.port());
            } catch (ConnectException e) { // perftest's client gives up at once; a started server may still be booting
                if (System.nanoTime() > deadline) {
                    throw new IOException("no perftest server at " + c.host() + ":" + c.port() + ": " + e.getMessage(), e);
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted", ie);
                }
            }
        }
    }

    private int test(InteropDevice dev, PerftestWire wire, String remoteVersion, int cycleBuffer, Mtu mtu)
            throws IOException {
        int q = c.qps();
        long bufBytes = Math.max(cycleBuffer, c.size()) * 2L;
        ProtectionDomain pd = dev.device().allocPd();
        MemoryRegion mr = pd.allocMr(bufBytes * q * 2, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
                | Access.REMOTE_ATOMIC);
        // one CQ per event loop of the device, so that the QPs spread over the loops (QP i on CQ i mod n)
        CompletionQueue[] cq = new CompletionQueue[Math.min(q, dev.device().numCompVectors())];
        for (int i = 0; i < cq.length; i++) {
            cq[i] = dev.device().createCq(Math.min(32767, q * (c.txDepth() + RX_DEPTH) + 16), i);
        }
        QueuePair[] qps = new QueuePair[q];
        RdmaConnection[] conns = c.rdmaCm() ? new RdmaConnection[q] : null;
        boolean ok = false;
        try {
            SecureRandom rnd = new SecureRandom();
            PerftestDest[] my = new PerftestDest[q];
            PerftestDest[] rem = new PerftestDest[q];
            printHeader(remoteVersion, mtu);
            if (c.rdmaCm()) { // create_rdma_cm_connection: a hand shake, the test QPs by rdma_cm, a hand shake
                wire.handshake(PerftestDest.ZERO);
                connectTestQps(pd, cq, conns);
                wire.handshake(PerftestDest.ZERO);
                for (int i = 0; i < q; i++) {
                    qps[i] = conns[i].qp();
                }
                out.printf(Locale.ROOT, " rdma_cm QPs     : ON\t\tpath MTU (rdma_cm) : %d[B]%n", conns[0].pathMtu().bytes());
            } else {
                for (int i = 0; i < q; i++) {
                    CompletionQueue qcq = cq[i % cq.length];
                    qps[i] = pd.createQp(new QpInitAttr(qcq, qcq, new QpCaps(c.txDepth(), RX_DEPTH, 1, 1, 0), QpType.RC,
                            false));
                }
            }
            for (int i = 0; i < q; i++) { // set_up_connection (with rdma_cm the PSN is not used: the CM chose them)
                my[i] = new PerftestDest(0, OUT_READS, qps[i].qpNum(), rnd.nextInt(1 << 24), mr.rkey(),
                        mr.addr() + (q + i) * bufBytes, dev.gid(), 0);
            }
            boolean send = c.test().op() == PerfTest.Op.SEND;
            boolean lat = c.test().latency();
            if (lat && !send) { // write_lat, read_lat, atomic_lat shake hands once before the per-QP exchange
                wire.handshake(my[0]);
            }
            for (int i = 0; i < q; i++) {
                rem[i] = wire.handshake(my[i]);
            }
            if (!c.rdmaCm()) { // with rdma_cm perftest checks neither the GIDs nor connects the QPs itself
                if (rem[0].gid().isIpv4Mapped() != dev.gid().isIpv4Mapped()) {
                    throw new IOException("the perftest peer's GID " + rem[0].gid().toHex() + " is not of this side's "
                            + "IP version (" + dev.gid().toHex() + "); use the GID index of the same family (-x)");
                }
                for (int i = 0; i < q; i++) {
                    connectQp(dev, qps[i], my[i], rem[i], mtu);
                }
            }
            if (send) { // send_bw: one hand shake, then one per QP
                wire.handshake(my[0]);
            }
            for (int i = 0; i < q; i++) {
                out.println(my[i].describe("local", c.test().op()));
            }
            for (int i = 0; i < q; i++) {
                rem[i] = wire.handshake(my[i]);
                out.println(rem[i].describe("remote", c.test().op()));
            }
            out.println(LINE);
            if (!send) { // write/read/atomic: "an additional handshake is required after moving qp to RTR"
                wire.handshake(my[0]);
            }
            if (lat) {
                int rc = latency(dev, wire, cq, qps[0], mr, my[0], rem[0], bufBytes);
                ok = rc == 0;
                return rc;
            }
            out.println(" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]");
            out.flush();
            if (send) {
                if (c.server()) {
                    for (int i = 0; i < q; i++) {
                        for (int k = 0; k < Math.min(RX_DEPTH, c.iters()); k++) {
                            qps[i].postRecv(recv(mr, i, bufBytes));
                        }
                    }
                }
                wire.handshake(my[0]);
                double[] r = c.server() ? receive(dev, cq, qps, mr, bufBytes) : post(dev, cq, qps, mr, rem, bufBytes);
                report(r);
                out.println(LINE);
                wire.handshake(my[0]); // ctx_close_connection
                ok = true;
                return 0;
            }
            if (c.server()) { // the passive side of write/read/atomic just serves its memory
                wire.handshake(my[0]); // the client is done
                double[] theirs = wire.xchgReport(0, 0, 0, 0, 0);
                report(new double[] {theirs[0], theirs[1], theirs[2], theirs[3], theirs[4]});
                wire.handshake(my[0]); // ctx_close_connection
                out.println(LINE);
                if (c.test().op() == PerfTest.Op.ATOMIC) {
                    out.printf(Locale.ROOT, " rxe4j: the word at the advertised address now holds %d%n",
                            mr.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, (q) * bufBytes));
                }
                ok = true;
                return 0;
            }
            double[] r = post(dev, cq, qps, mr, rem, bufBytes);
            report(r);
            out.println(LINE);
            wire.handshake(my[0]);
            wire.xchgReport((long) r[0], (long) r[1], r[2], r[3], r[4]);
            wire.handshake(my[0]); // ctx_close_connection
            ok = true;
            return 0;
        } finally {
            out.flush();
            if (conns != null) {
                disconnectTestQps(conns, ok);
            } else {
                for (QueuePair qp : qps) {
                    if (qp != null) {
                        qp.close();
                    }
                }
            }
            mr.close();
            for (CompletionQueue x : cq) {
                x.close();
            }
            pd.close();
        }
    }

    /**
     * The latency tests after the last set-up hand shake: {@code write_lat} (ping-pong of RDMA
     * WRITEs, each side spinning on the last byte of its buffer; the server writes first),
     * {@code send_lat} (ping-pong of SENDs; the client sends first), {@code read_lat} and {@code
     * atomic_lat} (the client alone, one operation at a time; the server waits for the close).
     * Reports perftest's latency line in microseconds: half the round trip for write and send, the
     * whole operation for read and atomic.
     */
    private int latency(InteropDevice dev, PerftestWire wire, CompletionQueue[] cq, QueuePair qp, MemoryRegion mr,
            PerftestDest my, PerftestDest rem, long bufBytes) throws IOException {
        PerfTest.Op op = c.test().op();
        if (!c.server() || op == PerfTest.Op.WRITE || op == PerfTest.Op.SEND) { // read/atomic servers only wait
            out.println(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                    + "   99% percentile[usec]   99.9% percentile[usec]");
            out.flush();
        }
        int n = (int) Math.min(Integer.MAX_VALUE - 1, c.iters());
        long[] stamps = new long[n + 1];
        WorkCompletion[] wc = {new WorkCompletion()};
        java.lang.foreign.MemorySegment seg = mr.segment();
        switch (op) {
            case WRITE -> {
                long pollOff = my.vaddr() - mr.addr() + c.size() - 1;
                long postOff = c.size() - 1;
                SendWr wr = new SendWr().rdmaWrite(0, rem.vaddr(), rem.rkey(), new Sge(mr.addr(), c.size(), mr.lkey()))
                        .signaled();
                long scnt = 0;
                long rcnt = 0;
                long ccnt = 0;
                while (scnt < n || ccnt < n || rcnt < n) {
                    if (rcnt < n && !(scnt < 1 && c.server())) {
                        rcnt++;
                        spinFor(dev, seg, pollOff, (byte) rcnt);
                    }
                    if (scnt < n) {
                        stamps[(int) scnt] = System.nanoTime();
                        seg.set(ValueLayout.JAVA_BYTE, postOff, (byte) ++scnt);
                        qp.postSend(wr);
                    }
                    if (ccnt < n) {
                        dev.awaitCompletions(cq, wc, STALL_SECONDS);
                        check(wc[0], new QueuePair[] {qp});
                        ccnt++;
                    }
                }
                stamps[n] = System.nanoTime();
                latencyReport(stamps, n, true);
            }
            case SEND -> {
                int rx = (int) Math.min(RX_DEPTH, c.iters());
                for (int k = 0; k < rx; k++) {
                    qp.postRecv(new RecvWr().set(1, new Sge(mr.addr() + bufBytes, c.size(), mr.lkey())));
                }
                long posted = rx;
                wire.handshake(my);
                SendWr wr = new SendWr().send(0, new Sge(mr.addr(), c.size(), mr.lkey())).signaled();
                long scnt = 0;
                long rcnt = 0;
                long sdone = 0;
                while (scnt < n || rcnt < n) {
                    if (rcnt < n && !(scnt < 1 && !c.server())) {
                        boolean got = false;
                        while (!got) { // a receive completion; send completions are counted on the way
                            dev.awaitCompletions(cq, wc, STALL_SECONDS);
                            check(wc[0], new QueuePair[] {qp});
                            if (wc[0].wrId == 1) {
                                got = true;
                            } else {
                                sdone++;
                            }
                        }
                        rcnt++;
                        if (posted < c.iters()) {
                            qp.postRecv(new RecvWr().set(1, new Sge(mr.addr() + bufBytes, c.size(), mr.lkey())));
                            posted++;
                        }
                    }
                    if (scnt < n) {
                        stamps[(int) scnt] = System.nanoTime();
                        qp.postSend(wr);
                        scnt++;
                    }
                }
                stamps[n] = System.nanoTime();
                while (sdone < scnt) {
                    dev.awaitCompletions(cq, wc, STALL_SECONDS);
                    check(wc[0], new QueuePair[] {qp});
                    sdone++;
                }
                latencyReport(stamps, n, true);
                wire.handshake(my); // ctx_close_connection
            }
            case READ, ATOMIC -> {
                if (c.server()) {
                    wire.handshake(my); // ctx_close_connection: the client is done
                    out.println(LINE);
                    return 0;
                }
                Sge local = new Sge(mr.addr(), op == PerfTest.Op.READ ? c.size() : 8, mr.lkey());
                SendWr wr = op == PerfTest.Op.READ ? new SendWr().rdmaRead(0, rem.vaddr(), rem.rkey(), local).signaled()
                        : c.atomic() == AtomicType.CAS
                                ? new SendWr().compareAndSwap(0, rem.vaddr() & ~7L, rem.rkey(), 0, 0, local).signaled()
                                : new SendWr().fetchAndAdd(0, rem.vaddr() & ~7L, rem.rkey(), 1, local).signaled();
                for (int k = 0; k < n; k++) {
                    stamps[k] = System.nanoTime();
                    qp.postSend(wr);
                    dev.awaitCompletions(cq, wc, STALL_SECONDS);
                    check(wc[0], new QueuePair[] {qp});
                }
                stamps[n] = System.nanoTime();
                latencyReport(stamps, n, false);
                wire.handshake(my); // ctx_close_connection
            }
        }
        out.println(LINE);
        return 0;
    }

    /** Spins until the byte at {@code off} of {@code seg} is {@code want} (written there by the peer's RDMA WRITE). */
    private static void spinFor(InteropDevice dev, java.lang.foreign.MemorySegment seg, long off, byte want) {
        long deadline = System.nanoTime() + STALL_SECONDS * 1_000_000_000L;
        int spins = 0;
        while (true) {
            java.lang.invoke.VarHandle.acquireFence(); // re-read memory the device loop writes
            if (seg.get(ValueLayout.JAVA_BYTE, off) == want) {
                return;
            }
            if ((++spins & 0xFFFF) == 0 && System.nanoTime() > deadline) {
                throw new InteropDevice.StallException("the peer's RDMA WRITE " + (want & 0xFF) + " did not arrive within "
                        + STALL_SECONDS + " s; rxe4j counters " + dev.counters());
            }
            Thread.onSpinWait();
        }
    }

    /**
     * perftest's {@code print_report_lat}: from the post times of consecutive iterations, halved
     * for the ping-pong tests; minimum, maximum, typical (median), average, standard deviation,
     * 99% and 99.9% percentiles, in microseconds.
     */
    private void latencyReport(long[] stamps, int n, boolean halve) {
        double[] us = new double[n];
        for (int i = 0; i < n; i++) {
            us[i] = (stamps[i + 1] - stamps[i]) / 1000.0 / (halve ? 2 : 1);
        }
        double[] sorted = us.clone();
        java.util.Arrays.sort(sorted);
        double avg = 0;
        for (double v : us) {
            avg += v;
        }
        avg /= n;
        double var = 0;
        for (double v : us) {
            var += (v - avg) * (v - avg);
        }
        double stdev = Math.sqrt(var / n);
        out.printf(Locale.ROOT, " %-7d %-10d     %-7.2f        %-7.2f      %-7.2f          %-7.2f         %-7.2f"
                + "            %-7.2f                  %-7.2f%n", c.size(), n, sorted[0], sorted[n - 1], sorted[n / 2], avg,
                stdev, sorted[Math.min(n - 1, (int) Math.ceil(n * 0.99) - 1)],
                sorted[Math.min(n - 1, (int) Math.ceil(n * 0.999) - 1)]);
    }

    private static RecvWr recv(MemoryRegion mr, int qp, long bufBytes) {
        return new RecvWr().set(qp, new Sge(mr.addr() + qp * bufBytes, (int) Math.min(Integer.MAX_VALUE, bufBytes),
                mr.lkey()));
    }

    /**
     * The test QPs' rdma_cm parameters as perftest's ({@code rdma_cm_route_handler} on the client,
     * {@code rdma_cm_connection_request_handler} on the server): responder_resources and
     * initiator_depth the outstanding READs for read and atomic tests, else 0; retry 7; RNR retry 7
     * (perftest passes its retry count, 7); min RNR timer 12 ({@code MIN_RNR_TIMER}, set by the server
     * after rdma_accept); the ACK timeout of {@code -u} ({@code RDMA_OPTION_ID_ACK_TIMEOUT}). No
     * private data: perftest passes {@code rai->ai_connect}, empty for an IP address.
     */
    static ConnectionParams testQpParams(Config c) {
        boolean rd = c.test().op() == PerfTest.Op.READ || c.test().op() == PerfTest.Op.ATOMIC;
        ConnectionParams p = ConnectionParams.defaults().withInitiatorDepth(rd ? OUT_READS : 0)
                .withResponderResources(rd ? OUT_READS : 0).withRetryCnt(7).withRnrRetry(7).withMinRnrTimer(12)
                .withAckTimeout(c.qpTimeout()).withCaps(new QpCaps(c.txDepth(), RX_DEPTH, 1, 1, 0))
                .withTimeout(CM_TIMEOUT);
        return c.mtu() != null ? p.withPathMtu(c.mtu()) : p;
    }

    /**
     * The test QPs through rdma_cm on port {@code -p}, QP i on CQ i mod n: the client connects them one
     * after the other (retrying while perftest's listener is not up yet); the server accepts them in
     * the order their requests come (perftest's server numbers them so too).
     */
    private void connectTestQps(ProtectionDomain pd, CompletionQueue[] cq, RdmaConnection[] conns) throws IOException {
        ConnectionParams p = testQpParams(c);
        for (int i = 0; i < conns.length; i++) {
            CompletionQueue qcq = cq[i % cq.length];
            if (c.server()) {
                ConnectRequest r = nextRequest("rdma_cm request for test QP " + i + " of " + conns.length);
                conns[i] = r.accept(pd, qcq, qcq, p);
            } else {
                conns[i] = PerftestCmLink.connectRetrying(pd, qcq, qcq, cmServer, p, qp -> { },
                        System.nanoTime() + CONNECT_RETRY_NANOS);
            }
        }
        if (listener != null) { // perftest's server destroys its listen id once all its QPs are connected
            listener.close();
        }
    }

    /**
     * The end of the test connections ({@code destroy_ctx} → {@code rdma_cm_disconnect_nodes}): the
     * server disconnects each (DREQ) and waits for the DREPs, the client waits for the server's DREQs
     * (a perftest client waits for them forever); then the QPs go. After a failure, this side just
     * disconnects.
     */
    private void disconnectTestQps(RdmaConnection[] conns, boolean ok) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DISCONNECT_WAIT_SECONDS);
        java.util.List<java.util.concurrent.CompletableFuture<Void>> ends = new java.util.ArrayList<>();
        for (RdmaConnection conn : conns) {
            if (conn != null) {
                ends.add(c.server() || !ok ? conn.disconnectAsync() : conn.disconnected());
            }
        }
        if (ok) {
            try {
                java.util.concurrent.CompletableFuture.allOf(ends.toArray(new java.util.concurrent.CompletableFuture[0]))
                        .get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                System.err.println("rxe-perf --perftest -R: the test connections did not all end within "
                        + DISCONNECT_WAIT_SECONDS + " s (" + (c.server() ? "no DREP" : "no DREQ from the server")
                        + "); disconnecting");
            } catch (java.util.concurrent.ExecutionException e) {
                // ended anyway
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (RdmaConnection conn : conns) {
            if (conn != null) {
                conn.close();
            }
        }
    }

    /** perftest's {@code ctx_connect} for RC: RESET → INIT → RTR → RTS, with the QP timeout of {@code -u}. */
    private void connectQp(InteropDevice dev, QueuePair qp, PerftestDest my, PerftestDest rem, Mtu mtu) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.LOCAL_WRITE
                | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        qp.modify(new QpAttr().state(QpState.RTR).av(dev.peerAddress(rem.gid(), 4791)).pathMtu(mtu)
                .destQpNum(rem.qpn()).rqPsn(rem.psn()).maxDestRdAtomic(my.outReads()).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(c.qpTimeout()).retryCnt(7).rnrRetry(7).sqPsn(my.psn())
                .maxRdAtomic(Math.max(1, Math.min(rem.outReads(), 128))));
    }

    /** The active side: {@code iters} operations per QP, at most {@code txDepth} outstanding per QP. */
    private double[] post(InteropDevice dev, CompletionQueue[] cq, QueuePair[] qps, MemoryRegion mr, PerftestDest[] rem,
            long bufBytes) {
        int q = qps.length;
        long[] posted = new long[q];
        long[] done = new long[q];
        SendWr[] wrs = new SendWr[q];
        for (int i = 0; i < q; i++) {
            Sge local = new Sge(mr.addr() + i * bufBytes, c.size(), mr.lkey());
            long va = rem[i].vaddr();
            wrs[i] = switch (c.test().op()) {
                case WRITE -> new SendWr().rdmaWrite(i, va, rem[i].rkey(), local);
                case READ -> new SendWr().rdmaRead(i, va, rem[i].rkey(), local);
                case SEND -> new SendWr().send(i, local);
                case ATOMIC -> c.atomic() == AtomicType.CAS
                        ? new SendWr().compareAndSwap(i, va & ~7L, rem[i].rkey(), 0, 0, new Sge(local.addr, 8, local.lkey))
                        : new SendWr().fetchAndAdd(i, va & ~7L, rem[i].rkey(), 1, new Sge(local.addr, 8, local.lkey));
            };
            wrs[i].signaled();
        }
        WorkCompletion[] wc = new WorkCompletion[64];
        for (int i = 0; i < wc.length; i++) {
            wc[i] = new WorkCompletion();
        }
        long total = c.iters() * q;
        long completed = 0;
        long t0 = System.nanoTime();
        while (completed < total) {
            for (int i = 0; i < q; i++) {
                while (posted[i] < c.iters() && posted[i] - done[i] < c.txDepth() && qps[i].tryPostSend(wrs[i])) {
                    posted[i]++;
                }
            }
            int n = dev.awaitCompletions(cq, wc, STALL_SECONDS);
            for (int k = 0; k < n; k++) {
                check(wc[k], qps);
                done[(int) wc[k].wrId]++;
                completed++;
            }
        }
        return result(total, System.nanoTime() - t0);
    }

    /** The passive side of send_bw: {@code iters} receives per QP, re-posting as they complete. */
    private double[] receive(InteropDevice dev, CompletionQueue[] cq, QueuePair[] qps, MemoryRegion mr, long bufBytes) {
        long total = c.iters() * qps.length;
        long[] postedPerQp = new long[qps.length];
        java.util.Arrays.fill(postedPerQp, Math.min(RX_DEPTH, c.iters()));
        WorkCompletion[] wc = new WorkCompletion[64];
        for (int i = 0; i < wc.length; i++) {
            wc[i] = new WorkCompletion();
        }
        long completed = 0;
        long t0 = 0;
        while (completed < total) {
            int n = dev.awaitCompletions(cq, wc, STALL_SECONDS);
            if (t0 == 0) {
                t0 = System.nanoTime();
            }
            for (int k = 0; k < n; k++) {
                check(wc[k], qps);
                if (wc[k].byteLen != c.size()) {
                    throw new IllegalStateException("received " + wc[k].byteLen + " bytes, expected -s " + c.size());
                }
                completed++;
                int i = (int) wc[k].wrId;
                if (postedPerQp[i] < c.iters()) {
                    qps[i].postRecv(recv(mr, i, bufBytes));
                    postedPerQp[i]++;
                }
            }
        }
        return result(total, System.nanoTime() - t0);
    }

    private static void check(WorkCompletion wc, QueuePair[] qps) {
        if (wc.status != WcStatus.SUCCESS) {
            String why = "";
            for (QueuePair qp : qps) {
                if (qp.qpNum() == wc.qpNum && qp.errorReason() != null) {
                    why = "; " + qp.errorReason();
                }
            }
            throw new IllegalStateException(String.format(Locale.ROOT, "completion with status %s (vendor_err 0x%x) for "
                    + "wr_id %d%s", wc.status, wc.vendorErr, wc.wrId, why));
        }
    }

    private double[] result(long ops, long nanos) {
        double secs = Math.max(nanos, 1) / 1e9;
        double mib = (double) c.size() * ops / secs / (1 << 20);
        return new double[] {c.size(), ops / c.qps(), mib, mib, ops / secs / 1e6};
    }

    /**
     * perftest's {@code REPORT_FMT} line: size, iterations, BW peak and average (MiB/s), Mpps.
     * rxe4j's peak is its average (it does not time each completion as perftest does).
     */
    private void report(double[] r) {
        out.printf(Locale.ROOT, " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f%n", (long) r[0], (long) r[1],
                r[2], r[3], r[4]);
    }

    private void printHeader(String remoteVersion, Mtu mtu) {
        out.println(LINE);
        out.println("                    " + c.test().title());
        out.printf(Locale.ROOT, " rxe4j as perftest %s peer (perftest %s on the other side)%n", PerftestWire.VERSION,
                remoteVersion);
        out.printf(Locale.ROOT, " Number of qps   : %d\t\tTransport type : IB%n", c.qps());
        out.printf(Locale.ROOT, " Connection type : RC\t\tUsing SRQ      : OFF%n");
        out.printf(Locale.ROOT, " TX depth        : %d%n", c.txDepth());
        if (c.test().op() == PerfTest.Op.ATOMIC) {
            out.printf(Locale.ROOT, " Atomic type     : %s%n", c.atomic() == AtomicType.CAS ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
        }
        out.printf(Locale.ROOT, " Mtu             : %d[B]%n", mtu.bytes());
        out.printf(Locale.ROOT, " Link type       : Ethernet%n");
        out.println(LINE);
    }
}
