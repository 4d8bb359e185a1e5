package io.rxe4j.examples.perf;

import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.examples.BufferAdvert;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.net.udp.UdpTransport.Io;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * rxe-perf: perftest-style benchmarks of rxe4j RC ({@code write_bw}, {@code read_bw}, {@code
 * send_bw}, {@code atomic_bw}, {@code write_lat}, {@code read_lat}, {@code send_lat}, {@code
 * atomic_lat}), optionally against plain UDP with the same traffic pattern ({@code --raw-udp},
 * {@code --compare}). Both ends in one process by default; {@code --server} / {@code --connect} for
 * two processes (bootstrap over TCP). Run with {@code --enable-native-access=ALL-UNNAMED} (needed
 * for {@code --transport epoll}).
 */
@Command(name = "rxe-perf", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "perftest-style RC benchmarks for rxe4j, with a raw-UDP reference.")
public final class RxePerf implements Callable<Integer> {
    /** Largest message of {@code -a}: 8 MiB. */
    public static final int MAX_ALL_SIZE = 8 << 20;
    /** Default TCP port of the bootstrap (perftest's). */
    public static final int DEFAULT_PORT = 18515;

    @Parameters(index = "0", paramLabel = "TEST", arity = "0..1",
            description = "write_bw, read_bw, send_bw, atomic_bw, write_lat, read_lat, send_lat, atomic_lat "
                    + "(with --server optional: the client's)")
    String testName;

    /** The parsed command line, to tell which options were given explicitly (the option exchange). */
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = {"-s", "--size"}, description = "message size in bytes (default 65536 for bw, 2 for lat; 8 for atomics)")
    Integer size;

    @Option(names = {"-a", "--all"}, description = "all sizes 2, 4, ... up to --max-size")
    boolean all;

    @Option(names = "--max-size", description = "largest size of -a (default ${DEFAULT-VALUE})")
    int maxSize = MAX_ALL_SIZE;

    @Option(names = {"-n", "--iters"}, description = "iterations per size (default 5000 bw, 1000 lat; ignored with -D)")
    Long iterations;

    @Option(names = {"-D", "--duration"}, description = "seconds per size instead of -n")
    Double duration;

    @Option(names = "--watchdog", paramLabel = "SECONDS", description = "two processes, client: if the run has not "
            + "ended after SECONDS, print every thread's stack to stderr and exit 3 (default 0: off)")
    double watchdog;

    @Option(names = {"-w", "--warmup"}, description = "warm-up seconds before each measured size (default ${DEFAULT-VALUE})")
    double warmup = 1.0;

    @Option(names = "--jit-settle", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "extend each warm-up in 0.5 s steps while the JVM's JIT compilers are still busy (more than "
            + "25 ms of compilation in the last step), for at most 10 s more, so that the measured phase does not share "
            + "the cores with the compiler (rxe-perf prints the longest warm-up); --no-jit-settle: exactly -w "
            + "(default ${DEFAULT-VALUE})")
    boolean jitSettle = true;

    /** The longest warm-up of this run, rxe4j's and raw UDP's, in nanoseconds (for the output). */
    private long longestWarmupRdma;
    private long longestWarmupRaw;

    @Option(names = {"-m", "--mtu"}, description = "path MTU: 256, 512, 1024, 2048, 4096 (default: the port's active"
            + " MTU, from the interface's MTU: 1024 on a 1500-byte Ethernet, 4096 on loopback and jumbo frames)")
    int mtu;

    @Option(names = {"-q", "--qps"}, description = "number of QPs (default ${DEFAULT-VALUE})")
    int qps = 1;

    @Option(names = "--loops", description = "event loops per device (multi-core devices; UDP: that many SO_REUSEPORT "
            + "sockets, steered by QPN on epoll). QP i uses CQ i mod loops, so -q N spreads over the loops "
            + "(default ${DEFAULT-VALUE})")
    int loops = 1;

    @Option(names = "--ipv6", description = "one process over UDP: use ::1 instead of 127.0.0.1 (IPv6 has no IP ID, so "
            + "GSO segments keep a correct ICRC; over IPv4 --gso is for rxe4j peers only)")
    boolean ipv6;

    @Option(names = "--loop-idle", description = "how the UDP event loops wait when idle: BLOCK (epoll_wait/select at "
            + "once), BACKOFF (poll without blocking 200 times, yield 20 times, then block), SPIN (never block: one core per "
            + "loop) (default ${DEFAULT-VALUE})")
    UdpTransport.LoopIdle loopIdle = UdpTransport.LoopIdle.BLOCK;

    @Option(names = {"-t", "--tx-depth"}, description = "outstanding WRs per QP in bw tests (default ${DEFAULT-VALUE})")
    int txDepth = 128;

    /** perftest's DEF_CQ_MOD. */
    static final int DEFAULT_CQ_MOD = 100;

    @Option(names = "--cq-mod", description = "bw tests: signal one WR in this many per QP, the others complete "
            + "without a CQE, as perftest's --cq-mod (default ${DEFAULT-VALUE}, perftest's; capped at -t; 1 signals "
            + "every WR)")
    int cqMod = DEFAULT_CQ_MOD;

    @Option(names = "--atomic-type", description = "CAS, FAA, MCAS, MFAA (default ${DEFAULT-VALUE})")
    AtomicType atomicType = AtomicType.FAA;

    @Option(names = "--transport", description = "inproc, nio, epoll, io_uring (default: inproc in one process; with"
            + " --server or --connect, epoll where Netty's native epoll loads, else nio)")
    String transport;

    @Option(names = "--server", description = "be the passive side: wait for --connect on --port. The server takes "
            + "TEST and the shape options (-s, -a, --max-size, -n, -D, -w, -q, -t, --atomic-type, --tid, --ack-timeout, "
            + "--no-cc, --peer-budget, --ecn, -e, --busy-poll, --backoff) and the path MTU from the client; one of them "
            + "given to the server with another value than the client's is refused, on both sides, naming it. Local to "
            + "each side: --transport, --loops, --loop-idle, --gso, --gro, --[no-]direct-send, --pcap, -p, --cq-mod (used by the client's requester), "
            + "--[no-]jit-settle")
    boolean server;

    @Option(names = {"-p", "--port"}, description = "TCP bootstrap port of --server (default ${DEFAULT-VALUE})")
    int port = DEFAULT_PORT;

    @Option(names = "--connect", paramLabel = "HOST:PORT", description = "be the active side, bootstrap with this server")
    String connect;

    @Option(names = "--cold-start", description = "two processes: skip the warm-up, in which each side first runs "
            + WARM_UP_OPS + " operations of the test between two devices of its own over loopback UDP, so that the "
            + "first packets of the measured QPs meet loaded and compiled code on both sides")
    boolean coldStart;

    @Option(names = {"-e", "--events"}, description = "always wait for completions by blocking (perftest -e)")
    boolean events;

    @Option(names = "--busy-poll", description = "always busy-poll completions, also in bandwidth tests")
    boolean busyPoll;

    /**
     * Completion waiting: latency tests busy-poll (as perftest); bandwidth tests block, because on
     * a machine with few cores spinning application threads starve the event loops that move the
     * packets (docs/performance.md). {@code -e} and {@code --busy-poll} override.
     */
    private boolean useEvents(PerfTest t) {
        return events || (!busyPoll && !t.latency());
    }

    @Option(names = "--backoff", description = "wait for completions with a backoff idle strategy (Agrona's "
            + "BackoffIdleStrategy: 100 spins, 10 yields, then parks of 1 to 100 us), on both sides: low latency "
            + "without starving the device loops when there are fewer cores than busy threads")
    boolean backoff;

    /** The backoff both sides use with {@code --backoff}, else null. */
    private org.agrona.concurrent.IdleStrategy newBackoff() {
        return backoff ? new org.agrona.concurrent.BackoffIdleStrategy(100, 10, 1_000, 100_000) : null;
    }

    /** The passive side only polls for SENDs: it busy-polls only in send_lat (then as {@link #useEvents}). */
    private boolean responderEvents(PerfTest t) {
        return t.op() == PerfTest.Op.SEND ? useEvents(t) : !busyPoll;
    }

    @Option(names = "--gso", description = "epoll or io_uring: coalesce equal-size packets to a peer into UDP GSO sends")
    boolean gso;

    @Option(names = "--gro", description = "epoll only: UDP GRO on receive (coalesced reads split back into datagrams)")
    boolean gro;

    @Option(names = "--direct-send", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "epoll: rxe4j's transports hand datagrams to the kernel with their own sendmmsg (default);"
                    + " --no-direct-send writes them through Netty's channel, as the --raw-udp side always does")
    boolean directSend = true;

    @Option(names = "--raw-udp", description = "plain UDP with the same datagrams and window, no RDMA protocol")
    boolean rawUdp;

    @Option(names = "--compare", description = "run rxe4j and --raw-udp back to back; print rxe4j / raw per row")
    boolean compare;

    @Option(names = "--tid", description = "OPFN and TID RDMA on (docs/tid-rdma.md): with -m 4096, READs and WRITEs "
            + "of >= 256 KiB (4 KiB multiples) are carried as TID RDMA READ / WRITE")
    boolean tid;

    @Option(names = "--tid-compare", description = "in one process: each size with TID RDMA and with plain "
            + "READ/WRITE (two device pairs), printing TID / plain per row")
    boolean tidCompare;

    @Option(names = "--pcap", paramLabel = "FILE", description = "write every packet of the requester side (both "
            + "directions) to a pcap file (Wireshark, tshark; its ICRCs check out); in --server mode, the server's")
    java.nio.file.Path pcap;

    @Option(names = "--perftest", description = "be the peer of perftest's ib_{write,read,send,atomic}_{bw,lat} "
            + "(RC) on another host: perftest's TCP exchange on --port, UDP port 4791 on the IP of the TCP "
            + "connection (two peers on one host: --connect 127.0.0.2); with -R as perftest -R (rdma_cm); with --server "
            + "or --connect HOST[:PORT]; give both sides the same -s, -n and -q")
    boolean perftest;

    @Option(names = {"-R", "--rdma_cm"}, description = "with --perftest: be the peer of perftest -R: rdma_cm (rxe4j's "
            + "connection manager, IB CM on QP1) connects a control QP on rdma_cm port --port, perftest's exchange runs "
            + "over it, then rdma_cm connects the test QPs on the same port; the server needs --ip (perftest's "
            + "--ipv6-addr on the kernel side for IPv6)")
    boolean rdmaCm;

    @Option(names = {"--ip", "--source_ip"}, paramLabel = "IP", description = "with --perftest -R: the local IP the "
            + "device binds UDP 4791 on (IPv6 link-local with %%interface); required with --server, the client's "
            + "default is the source address of the route to the server")
    String localIp;

    @Option(names = "--json", description = "print JSON instead of the table")
    boolean json;

    @Option(names = "--no-cc", description = "turn congestion control (the per-peer AIMD window) off: for measuring "
            + "the raw engine on a lossless path (one process, loopback). Nothing then paces the senders at a "
            + "bottleneck: with many QPs (>= 16) or a real network, losses pile up until RETRY_EXC_ERR (seen with "
            + "128 QPs); a WARN says so")
    boolean noCongestionControl;

    @Option(names = "--peer-budget", paramLabel = "BYTES", description = "bytes in flight per peer at most "
            + "(default: from the socket buffers)")
    long peerBudget;

    @Option(names = "--ecn", description = "RoCEv2 ECN: CNPs for CE-marked requests (only transports that see the "
            + "mark, i.e. inproc with a link model)")
    boolean ecn;

    /** One line of what the reliability and congestion machinery did, requester (a) and responder (b). */
    private void printCounters(RdmaBench.Side a, RdmaBench.Side b) {
        long rcvd = b.device.counter("rcvd_pkts");
        long dup = b.device.counter("duplicate_request");
        out.printf(java.util.Locale.ROOT, " counters: requester sent_pkts=%d resent_pkts=%d retransmit_timeouts=%d "
                + "cc_window_reductions=%d budget_waits=%d rcv_queue_drops=%d; responder rcvd_pkts=%d "
                + "duplicate_request=%d (%.2f%% of received) rcv_queue_drops=%d%n", a.device.counter("sent_pkts"),
                a.device.counter("resent_pkts"), a.device.counter("retransmit_timeouts"),
                a.device.counter("cc_window_reductions"), a.device.counter("budget_waits"),
                a.device.counter("rcv_queue_drops"), rcvd, dup, rcvd == 0 ? 0.0 : 100.0 * dup / rcvd,
                b.device.counter("rcv_queue_drops"));
        if (a.device.numCompVectors() > 1 || b.device.numCompVectors() > 1) {
            out.printf(java.util.Locale.ROOT, " loops: requester %d, steered_pkts=%d; responder %d, steered_pkts=%d%n",
                    a.device.numCompVectors(), a.device.counter("steered_pkts"), b.device.numCompVectors(),
                    b.device.counter("steered_pkts"));
        }
    }

    /** @return the device configuration the options ask for */
    private io.rxe4j.verbs.DeviceConfig deviceConfig() {
        io.rxe4j.verbs.DeviceConfig c = io.rxe4j.verbs.DeviceConfig.defaults()
                .withCongestionControl(!noCongestionControl).withPeerBudgetBytes(peerBudget).withEcn(ecn);
        return tid || tidCompare ? c.withTidRdma() : c;
    }

    /** @return the configuration of the plain pair of {@code --tid-compare}: as {@link #deviceConfig()}, TID off */
    private io.rxe4j.verbs.DeviceConfig plainConfig() {
        return io.rxe4j.verbs.DeviceConfig.defaults().withCongestionControl(!noCongestionControl)
                .withPeerBudgetBytes(peerBudget).withEcn(ecn);
    }

    /** The label of the second result of a row: raw UDP (--compare) or plain READ/WRITE (--tid-compare). */
    private String other() {
        return tidCompare ? "plain" : "raw";
    }

    /**
     * The tools' local ACK timeout exponent: 17 (4.096 us x 2^17 = 537 ms; 8 tries = 4.3 s), as rdma_cm
     * sets for an rxe peer and as {@link io.rxe4j.verbs.cm.ConnectionParams#defaults()}. 14 (67 ms) made a
     * fresh server JVM, which answers its first packet after 100-200 ms, resend the first window of
     * every two-process run, and fail it on a loaded host (issue 19).
     */
    public static final int DEFAULT_ACK_TIMEOUT = 17;

    @Option(names = "--ack-timeout", description = "QP local ACK timeout exponent, 4.096 us x 2^n; 0 = none "
            + "(default ${DEFAULT-VALUE}: 537 ms, 4.3 s with the 7 retries, as rdma_cm)")
    int ackTimeout = DEFAULT_ACK_TIMEOUT;

    @Option(names = {"-u", "--qp-timeout"}, description = "with --perftest: the QP local ACK timeout exponent as "
            + "perftest's -u (4.096 us x 2^n; default ${DEFAULT-VALUE}, perftest's: 67 ms, 537 ms with the 7 retries)")
    int qpTimeout = io.rxe4j.examples.interop.PerftestPeer.PERFTEST_QP_TIMEOUT;

    private PrintStream out = System.out;
    private final List<Result[]> rows = new ArrayList<>();

    /** Entry point; exits with the command's code. */
    public static void main(String[] args) {
        System.exit(run(System.out, args));
    }

    /** Runs the command, printing to {@code out}; @return the exit code (0 = success). */
    public static int run(PrintStream out, String... args) {
        RxePerf perf = new RxePerf();
        perf.out = out;
        CommandLine cl = new CommandLine(perf).setCaseInsensitiveEnumValuesAllowed(true);
        cl.setOut(new java.io.PrintWriter(out, true));
        return cl.execute(args);
    }

    /** Parses {@code args} without running (for tests). */
    static RxePerf parse(String... args) {
        RxePerf perf = new RxePerf();
        new CommandLine(perf).setCaseInsensitiveEnumValuesAllowed(true).parseArgs(args);
        perf.validate();
        return perf;
    }

    PerfTest test() {
        if (testName == null) {
            throw new IllegalArgumentException("TEST missing: write_bw, read_bw, send_bw, atomic_bw, write_lat, "
                    + "read_lat, send_lat or atomic_lat (only --server may omit it: it takes the client's)");
        }
        return PerfTest.parse(testName);
    }

    /** @return the path MTU asked for with {@code -m}, or null (no {@code -m}): the port's active MTU */
    Mtu pathMtu() {
        return mtu == 0 ? null : Mtu.ofBytes(mtu);
    }

    /** The port's active MTU of the device in use, in bytes, once one is open (0 before); printed with the MTU. */
    private int activeMtu;

    /**
     * Resolves a default {@code -m} to {@code device}'s port's active MTU (the connection manager's
     * default, which the QPs use unless the peer offers less), and remembers that active MTU.
     */
    private void resolveMtu(io.rxe4j.verbs.RdmaDevice device) {
        activeMtu = device.queryPort(1).activeMtu().bytes();
        if (mtu == 0) {
            mtu = activeMtu;
        }
    }

    /** @return inproc, nio, epoll or io_uring, validated */
    String transportName() {
        String t = transport != null ? transport.toLowerCase(Locale.ROOT).replace('-', '_')
                : !(server || connect != null) ? "inproc" : UdpTransport.isEpollAvailable() ? "epoll" : "nio";
        if (t.equals("iouring")) {
            t = "io_uring";
        }
        if (!t.equals("inproc") && !t.equals("nio") && !t.equals("epoll") && !t.equals("io_uring")) {
            throw new IllegalArgumentException("--transport must be inproc, nio, epoll or io_uring, got '" + transport
                    + "'");
        }
        return t;
    }

    Io io() {
        return switch (transportName()) {
            case "epoll" -> Io.EPOLL;
            case "io_uring" -> Io.IO_URING;
            default -> Io.NIO;
        };
    }

    /** @return the message sizes to run */
    List<Integer> sizes() {
        PerfTest t = test();
        List<Integer> s = new ArrayList<>();
        if (t.op() == PerfTest.Op.ATOMIC) {
            s.add(8);
        } else if (all) {
            for (long v = 2; v <= maxSize; v <<= 1) {
                s.add((int) v);
            }
        } else {
            s.add(size != null ? size : t.latency() ? 2 : 65536);
        }
        return s;
    }

    long iterationsPerSize() {
        return iterations != null ? iterations : test().latency() ? 1000 : 5000;
    }

    void validate() {
        if (testName != null || !server || perftest) {
            test();
        }
        pathMtu();
        transportName();
        if (size != null && (size < 1 || size > (1 << 30))) {
            throw new IllegalArgumentException("-s must be 1..2^30 bytes, got " + size);
        }
        if (maxSize < 2 || maxSize > (1 << 30)) {
            throw new IllegalArgumentException("--max-size must be 2..2^30, got " + maxSize);
        }
        if (qps < 1 || qps > 1024) {
            throw new IllegalArgumentException("-q must be 1..1024, got " + qps);
        }
        if (txDepth < 1 || txDepth > 8192) {
            throw new IllegalArgumentException("-t must be 1..8192, got " + txDepth);
        }
        if (cqMod < 1) {
            throw new IllegalArgumentException("--cq-mod must be >= 1, got " + cqMod);
        }
        if (iterations != null && iterations < 1) {
            throw new IllegalArgumentException("-n must be >= 1, got " + iterations);
        }
        if (duration != null && !(duration > 0)) {
            throw new IllegalArgumentException("-D must be > 0 seconds, got " + duration);
        }
        if (!(warmup >= 0) || Double.isInfinite(warmup)) {
            throw new IllegalArgumentException("--warmup must be >= 0, got " + warmup);
        }
        if (!(watchdog >= 0)) {
            throw new IllegalArgumentException("--watchdog must be >= 0 seconds (0: off), got " + watchdog);
        }
        if (server && connect != null) {
            throw new IllegalArgumentException("--server and --connect exclude each other");
        }
        if (rawUdp && compare) {
            throw new IllegalArgumentException("--raw-udp and --compare exclude each other (--compare runs both)");
        }
        if ((rawUdp || compare) && transportName().equals("inproc")) {
            throw new IllegalArgumentException("--raw-udp / --compare need --transport nio, epoll or io_uring");
        }
        if (tidCompare && (compare || rawUdp || server || connect != null)) {
            throw new IllegalArgumentException("--tid-compare runs in one process and excludes --compare/--raw-udp");
        }
        if ((tid || tidCompare) && mtu != 0 && mtu != 4096) {
            throw new IllegalArgumentException("--tid / --tid-compare need -m 4096 (TID RDMA is negotiated only then), got "
                    + mtu);
        }
        if (loops < 1 || loops > 64) {
            throw new IllegalArgumentException("--loops must be 1..64, got " + loops);
        }
        if (ackTimeout < 0 || ackTimeout > 31) {
            throw new IllegalArgumentException("--ack-timeout must be 0..31, got " + ackTimeout);
        }
        if ((server || connect != null) && transportName().equals("inproc")) {
            throw new IllegalArgumentException("two processes need --transport nio, epoll or io_uring");
        }
    }

    @Override
    public Integer call() throws Exception {
        if (perftest) {
            return runPerftest();
        }
        if (rdmaCm || localIp != null) {
            System.err.println("rxe-perf: -R and --ip go with --perftest (rxe-perf's own two-process mode always "
                    + "connects its QPs with the connection manager)");
            return 2;
        }
        try {
            validate();
        } catch (IllegalArgumentException e) {
            System.err.println("rxe-perf: " + e.getMessage());
            return 2;
        }
        if (io() == Io.EPOLL) {
            UdpTransport.ensureEpoll();
        } else if (io() == Io.IO_URING) {
            UdpTransport.ensureIoUring();
        }
        if (server) {
            return runServer();
        }
        if (connect != null) {
            return runClient();
        }
        runLocal();
        return 0;
    }

    /** @return the results, one array per size: [rxe4j or raw] or [rxe4j, raw] with --compare */
    List<Result[]> results() {
        return rows;
    }

    private int rqDepth() {
        return Math.max(2 * txDepth, 16);
    }

    private long mrBytes() {
        long largest = 0;
        for (int s : sizes()) {
            largest = Math.max(largest, s);
        }
        return 2 * Math.max(largest, 64) + 4096;
    }

    /** A UDP transport on {@code ip} with the chosen I/O, {@link #loops} sockets and, on epoll, GSO/GRO. */
    private Transport udp(InetAddress ip) {
        UdpTransport.Builder b = UdpTransport.builder(ip).port(0).io(io()).gso(gso).gro(gro).loops(loops).loopIdle(loopIdle);
        if (!directSend) {
            b.directSend(false);
        }
        return b.bindLoops();
    }

    /**
     * The raw side's UDP features: exactly the rxe4j side's (channel implementation, GSO, GRO), so
     * that --compare compares like with like (issue 13).
     */
    RawUdpBench.Features rawFeatures() {
        return new RawUdpBench.Features(io(), gso, gro);
    }

    /** {@code t}, wrapped to write its packets to {@link #pcap} when given. */
    private Transport captured(Transport t) {
        return pcap == null ? t : new io.rxe4j.net.pcap.CapturingTransport(t, pcap);
    }

    private Transport newTransport(InJvmFabric fabric, InetAddress ip, String name) {
        if (fabric != null) {
            return fabric.newTransport(new InetSocketAddress(ip, 4791), loops);
        }
        return udp(ip);
    }

    private void runLocal() throws Exception {
        PerfTest test = test();
        boolean doRdma = !rawUdp;
        boolean doRaw = rawUdp || compare;
        InetAddress lo = ipv6 ? InetAddress.getByName("::1") : InetAddress.getLoopbackAddress();
        InJvmFabric fabric = transportName().equals("inproc") ? new InJvmFabric() : null;
        RdmaBench.Side a = null;
        RdmaBench.Side b = null;
        RdmaBench.Side a2 = null;
        RdmaBench.Side b2 = null;
        RdmaBench.Responder responder = null;
        RdmaBench.Responder responder2 = null;
        RdmaBench.Requester plainRequester = null;
        RawUdpBench.Responder rawResponder = null;
        RawUdpBench.Requester rawRequester = null;
        warnNoCc(null);
        try {
            RdmaBench.Requester requester = null;
            if (doRdma) {
                InetAddress ipA = fabric != null ? InetAddress.getByName("10.0.0.1") : lo;
                InetAddress ipB = fabric != null ? InetAddress.getByName("10.0.0.2") : lo;
                a = new RdmaBench.Side(captured(newTransport(fabric, ipA, "a")), mrBytes(), qps, txDepth, rqDepth(),
                        deviceConfig());
                b = new RdmaBench.Side(newTransport(fabric, ipB, "b"), mrBytes(), qps, txDepth, rqDepth(),
                        deviceConfig());
                resolveMtu(a.device);
                a.events = useEvents(test());
                b.events = responderEvents(test());
                a.backoff = newBackoff();
                b.backoff = newBackoff();
                BufferAdvert[] peers = connectPair(a, b);
                responder = new RdmaBench.Responder(b, (int) Math.min(Integer.MAX_VALUE, mrBytes() / 2));
                responder.echo(test == PerfTest.SEND_LAT);
                requester = new RdmaBench.Requester(a, peers).cqMod(cqMod);
                if (tid || tidCompare) {
                    a.negotiateTid(peers);
                    if (!json) {
                        out.println(" TID RDMA negotiated on " + qps + " QP(s): " + a.qps[0].tidRdma());
                    }
                }
                if (tidCompare) {
                    InetAddress ipA2 = fabric != null ? InetAddress.getByName("10.0.0.3") : lo;
                    InetAddress ipB2 = fabric != null ? InetAddress.getByName("10.0.0.4") : lo;
                    a2 = new RdmaBench.Side(newTransport(fabric, ipA2, "a2"), mrBytes(), qps, txDepth, rqDepth(),
                            plainConfig());
                    b2 = new RdmaBench.Side(newTransport(fabric, ipB2, "b2"), mrBytes(), qps, txDepth, rqDepth(),
                            plainConfig());
                    a2.events = a.events;
                    b2.events = b.events;
                    BufferAdvert[] peers2 = connectPair(a2, b2);
                    responder2 = new RdmaBench.Responder(b2, (int) Math.min(Integer.MAX_VALUE, mrBytes() / 2));
                    plainRequester = new RdmaBench.Requester(a2, peers2).cqMod(cqMod);
                }
            }
            if (mtu == 0) { // raw UDP only: the loopback interface's active MTU
                java.net.NetworkInterface ni = java.net.NetworkInterface.getByInetAddress(lo);
                activeMtu = Mtu.activeForLinkMtu(ni == null ? -1 : ni.getMTU()).bytes();
                mtu = activeMtu;
            }
            if (doRaw) {
                rawResponder = new RawUdpBench.Responder(rawFeatures(), lo);
                rawRequester = new RawUdpBench.Requester(rawFeatures(), lo, rawResponder.address());
            }
            header();
            for (int s : sizes()) {
                Result r = doRdma ? measureRdma(requester, test, s) : null;
                Result raw = doRaw ? measureRaw(rawRequester, test, s) : tidCompare ? measureRdma(plainRequester, test, s)
                        : null;
                Result[] row = compare || tidCompare ? new Result[] {r, raw} : new Result[] {doRdma ? r : raw};
                rows.add(row);
                printRow(row);
            }
            if (doRdma) {
                requesterCounters = a.device.counters();
                responderCounters = b.device.counters();
            }
            footer();
            if (doRdma && !json) {
                printCounters(a, b);
                if (tid || tidCompare) {
                    out.printf(Locale.ROOT, " TID counters: requester tid_read_requests=%d tid_read_segments_done=%d "
                            + "tid_restarts=%d tid_write_requests_sent=%d tid_write_segments_acked=%d "
                            + "tid_resyncs_sent=%d; responder tid_write_segments_rcvd=%d tid_naks_sent=%d%n",
                            a.device.counter("tid_read_requests"), a.device.counter("tid_read_segments_done"),
                            a.device.counter("tid_restarts"), a.device.counter("tid_write_requests_sent"),
                            a.device.counter("tid_write_segments_acked"), a.device.counter("tid_resyncs_sent"),
                            b.device.counter("tid_write_segments_rcvd"), b.device.counter("tid_naks_sent"));
                }
            }
        } finally {
            closeAll(responder2, a2, b2, rawRequester, rawResponder, responder, a, b);
        }
    }

    /**
     * Connects {@code a}'s QPs to {@code b}'s through the connection manager (IB CM on the devices'
     * QP1s), with a listener on {@code b}'s device ({@code b} accepts on another thread).
     *
     * @return {@code b}'s MR, one advert per QP
     */
    private BufferAdvert[] connectPair(RdmaBench.Side a, RdmaBench.Side b) throws Exception {
        try (RdmaListener listener = RdmaListener.listen(b.device, 0)) {
            // a thread of its own, not the common pool: that may be busy or have a single thread (2 cores)
            java.util.concurrent.CompletableFuture<Void> accepted = new java.util.concurrent.CompletableFuture<>();
            Thread.ofPlatform().name("rxe-perf-accept").daemon().start(() -> {
                try {
                    b.acceptAll(listener, pathMtu(), ackTimeout);
                    accepted.complete(null);
                } catch (Throwable e) {
                    accepted.completeExceptionally(e);
                }
            });
            BufferAdvert[] peers = a.connectAll(b.device.address(), listener.port(), pathMtu(), ackTimeout);
            accepted.get(30, java.util.concurrent.TimeUnit.SECONDS);
            return peers;
        }
    }

    /** {@code --perftest}: perftest's peer ({@link io.rxe4j.examples.interop.PerftestPeer}). */
    private int runPerftest() {
        io.rxe4j.examples.interop.PerftestPeer.Config cfg;
        try {
            cfg = perftestConfig();
        } catch (IllegalArgumentException e) {
            System.err.println("rxe-perf: " + e.getMessage());
            return 2;
        }
        return io.rxe4j.examples.interop.PerftestPeer.run(cfg, out, System.err);
    }

    /**
     * @return what {@code --perftest} runs, from the options
     * @throws IllegalArgumentException for options that do not go together
     */
    io.rxe4j.examples.interop.PerftestPeer.Config perftestConfig() {
        if (server == (connect != null)) {
            throw new IllegalArgumentException("--perftest needs --server or --connect HOST[:PORT]");
        }
        if (localIp != null && !rdmaCm) {
            throw new IllegalArgumentException("--ip goes with -R (without -R the device takes the address of "
                    + "perftest's TCP connection)");
        }
        String host = null;
        int p = port;
        if (connect != null) {
            int colon = connect.lastIndexOf(':');
            boolean hasPort = colon > 0 && connect.indexOf(':') == colon; // an IPv6 literal has several
            host = hasPort ? connect.substring(0, colon) : connect;
            p = hasPort ? Integer.parseInt(connect.substring(colon + 1)) : port;
        }
        PerfTest t = test();
        return new io.rxe4j.examples.interop.PerftestPeer.Config(t, sizes().get(0), iterationsPerSize(), qps, txDepth,
                atomicType, pathMtu(), server, host, p, pcap, tid, loops, qpTimeout, rdmaCm, localIp);
    }

    /** Closes each non-null resource in order. */
    private static void closeAll(AutoCloseable... resources) throws Exception {
        for (AutoCloseable r : resources) {
            if (r != null) {
                r.close();
            }
        }
    }

    private long warmupNanos() {
        return (long) (warmup * 1e9);
    }

    private long durationNanos() {
        return duration == null ? 0 : (long) (duration * 1e9);
    }

    /** Outstanding READs and atomics per QP: the QPs' max_rd_atomic / max_dest_rd_atomic. */
    static final int MAX_RD_ATOMIC = 16;

    /**
     * @return the raw-UDP window: one for latency tests; otherwise -t per QP, capped for READ and
     *     atomics at {@link #MAX_RD_ATOMIC} per QP, as the RC requester caps them
     */
    int window() {
        PerfTest t = test();
        if (t.latency()) {
            return 1;
        }
        boolean rdAtomic = t.op() == PerfTest.Op.READ || t.op() == PerfTest.Op.ATOMIC;
        return (rdAtomic ? Math.min(txDepth, MAX_RD_ATOMIC) : txDepth) * qps;
    }

    /** The warm-up before each measured size ({@code -w}, {@code --jit-settle}). */
    long warmUpPhase(WarmUp.Phase phase) throws Exception {
        return WarmUp.ofThisJvm(jitSettle).run(warmupNanos(), phase);
    }

    private Result measureRdma(RdmaBench.Requester req, PerfTest test, int s) throws Exception {
        int depth = test.latency() ? 1 : txDepth;
        longestWarmupRdma = Math.max(longestWarmupRdma, warmUpPhase(nanos -> req.run(test, s, atomicType, depth, 0, nanos)));
        return req.run(test, s, atomicType, depth, duration == null ? iterationsPerSize() : 0, durationNanos());
    }

    private Result measureRaw(RawUdpBench.Requester req, PerfTest test, int s) throws Exception {
        Shape shape = Shape.of(test, s, mtu, atomicType);
        if (test.latency()) { // the caller posts and waits as the rxe4j side does, so the ratio compares like with like
            RawUdpBench.Requester.Wait wait = backoff ? RawUdpBench.Requester.Wait.BACKOFF
                    : useEvents(test) ? RawUdpBench.Requester.Wait.BLOCK : RawUdpBench.Requester.Wait.BUSY;
            longestWarmupRaw = Math.max(longestWarmupRaw, warmUpPhase(nanos -> req.runLatency(test, s, shape, 0, nanos, wait)));
            return req.runLatency(test, s, shape, duration == null ? iterationsPerSize() : 0, durationNanos(), wait);
        }
        longestWarmupRaw = Math.max(longestWarmupRaw, warmUpPhase(nanos -> req.run(test, s, shape, window(), 0, nanos)));
        return req.run(test, s, shape, window(), duration == null ? iterationsPerSize() : 0, durationNanos());
    }

    // ---- two processes ----

    /**
     * One option of the two-process exchange: the client sends every one, the server adopts it
     * (issue 19: {@code --tid} and the other shape options had to be given twice).
     *
     * @param key the word on the wire
     * @param option the option's name, to tell whether the server was given it explicitly (null: TEST)
     * @param get this side's value as a word ({@code -} for none)
     * @param set adopts a word
     */
    private record Shared(String key, String option, java.util.function.Supplier<String> get,
            java.util.function.Consumer<String> set) {}

    private static String word(Object v) {
        return v == null ? "-" : v.toString();
    }

    private static boolean none(String v) {
        return v.equals("-");
    }

    /** @return the options the client sends and the server adopts, in wire order */
    private List<Shared> shared() {
        return List.of(
                new Shared("test", null, () -> testName == null ? "-" : test().cliName(), v -> testName = none(v) ? null : v),
                new Shared("size", "--size", () -> word(size), v -> size = none(v) ? null : Integer.valueOf(v)),
                new Shared("all", "--all", () -> word(all), v -> all = Boolean.parseBoolean(v)),
                new Shared("max-size", "--max-size", () -> word(maxSize), v -> maxSize = Integer.parseInt(v)),
                new Shared("iters", "--iters", () -> word(iterations), v -> iterations = none(v) ? null : Long.valueOf(v)),
                new Shared("duration", "--duration", () -> word(duration), v -> duration = none(v) ? null : Double.valueOf(v)),
                new Shared("warmup", "--warmup", () -> word(warmup), v -> warmup = Double.parseDouble(v)),
                new Shared("qps", "--qps", () -> word(qps), v -> qps = Integer.parseInt(v)),
                new Shared("tx-depth", "--tx-depth", () -> word(txDepth), v -> txDepth = Integer.parseInt(v)),
                new Shared("atomic-type", "--atomic-type", () -> atomicType.name(), v -> atomicType = AtomicType.valueOf(v)),
                new Shared("tid", "--tid", () -> word(tid), v -> tid = Boolean.parseBoolean(v)),
                new Shared("ack-timeout", "--ack-timeout", () -> word(ackTimeout), v -> ackTimeout = Integer.parseInt(v)),
                new Shared("no-cc", "--no-cc", () -> word(noCongestionControl),
                        v -> noCongestionControl = Boolean.parseBoolean(v)),
                new Shared("peer-budget", "--peer-budget", () -> word(peerBudget), v -> peerBudget = Long.parseLong(v)),
                new Shared("ecn", "--ecn", () -> word(ecn), v -> ecn = Boolean.parseBoolean(v)),
                new Shared("events", "--events", () -> word(events), v -> events = Boolean.parseBoolean(v)),
                new Shared("busy-poll", "--busy-poll", () -> word(busyPoll), v -> busyPoll = Boolean.parseBoolean(v)),
                new Shared("backoff", "--backoff", () -> word(backoff), v -> backoff = Boolean.parseBoolean(v)));
    }

    /** @return whether {@code option} (null: TEST) was on this side's command line */
    private boolean given(String option) {
        CommandLine.ParseResult pr = spec == null ? null : spec.commandLine().getParseResult();
        if (pr == null) {
            return false;
        }
        return option == null ? pr.hasMatchedPositional(0) : pr.hasMatchedOption(option);
    }

    /** @return the client's PARAMS line: {@code PARAMS key=value ...}, plus the MR size and path MTU */
    String paramsLine() {
        StringBuilder sb = new StringBuilder("PARAMS");
        for (Shared o : shared()) {
            sb.append(' ').append(o.key()).append('=').append(o.get().get());
        }
        return sb.append(" mr=").append(mrBytes()).append(" mtu=").append(mtu).toString();
    }

    /**
     * The server's side of the exchange: adopts the client's options, except that an option given to
     * the server explicitly with another value is a contradiction.
     *
     * @return the client's {@code mr} and {@code mtu} words
     * @throws IllegalArgumentException naming each contradiction, or a bad line or value
     */
    Map<String, String> adopt(String line) {
        String[] words = line.split(" ");
        if (words.length == 0 || !words[0].equals("PARAMS")) {
            throw new IllegalArgumentException("bad PARAMS line from the client: " + line);
        }
        Map<String, String> p = new java.util.LinkedHashMap<>();
        for (int i = 1; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("bad PARAMS word from the client: '" + words[i] + "'");
            }
            p.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
        List<String> conflicts = new ArrayList<>();
        for (Shared o : shared()) {
            String v = p.get(o.key());
            if (v == null) {
                throw new IllegalArgumentException("the client did not send '" + o.key() + "' (another rxe-perf version?)");
            }
            if (given(o.option()) && !v.equals(o.get().get())) {
                conflicts.add((o.option() == null ? "TEST" : o.option()) + ": server " + o.get().get() + ", client " + v);
            }
        }
        if (!conflicts.isEmpty()) {
            throw new IllegalArgumentException("the server was given other options than the client (" + String.join("; ",
                    conflicts) + "); give them to the client only: the server takes them from it");
        }
        for (Shared o : shared()) {
            try {
                o.set().accept(p.get(o.key()));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("bad value from the client: " + o.key() + "=" + p.get(o.key()));
            }
        }
        if (!p.containsKey("mr") || !p.containsKey("mtu")) {
            throw new IllegalArgumentException("bad PARAMS line from the client (no mr/mtu): " + line);
        }
        validate();
        return p;
    }

    /** Prints the WARN of {@code --no-cc} where it is a foot-gun: many QPs, or a peer that is not this host. */
    private void warnNoCc(InetAddress peer) {
        if (!noCongestionControl) {
            return;
        }
        boolean remote = peer != null && !peer.isLoopbackAddress();
        if (qps >= 16 || remote) {
            System.err.println("rxe-perf: WARN --no-cc with " + (remote ? "the remote peer " + peer.getHostAddress()
                    : qps + " QPs") + ": without congestion control nothing paces the senders at a bottleneck, and "
                    + "losses can pile up until RETRY_EXC_ERR; --no-cc is for measuring the raw engine on a lossless path");
        }
    }

    /** The device counters of the responder (two processes: sent back by the server), for --json. */
    private Map<String, Long> responderCounters;
    /** The device counters of the requester, for --json. */
    private Map<String, Long> requesterCounters;

    /** @return {@code counters} as {@code COUNTERS name=value ...} */
    static String countersLine(Map<String, Long> counters) {
        StringBuilder sb = new StringBuilder("COUNTERS");
        counters.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
        return sb.toString();
    }

    /** @return the counters of a {@link #countersLine} */
    static Map<String, Long> parseCounters(String line) {
        String[] words = line.split(" ");
        if (words.length == 0 || !words[0].equals("COUNTERS")) {
            throw new IllegalStateException("bad COUNTERS line from the server: " + line);
        }
        Map<String, Long> m = new java.util.LinkedHashMap<>();
        for (int i = 1; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            m.put(words[i].substring(0, eq), Long.parseLong(words[i].substring(eq + 1)));
        }
        return m;
    }

    /** Operations of the warm-up ({@link #warmUp}). */
    static final int WARM_UP_OPS = 256;

    /**
     * Two processes: runs {@link #WARM_UP_OPS} operations of {@code test} (at most 64 KiB each) between
     * two devices of this JVM over loopback UDP, through the connection manager, with this side's
     * transport options, before the measured QPs carry a packet. A fresh JVM runs its receive,
     * responder, ACK and completion paths interpreted and loads their classes on the first packet:
     * 100-200 ms, and more on a loaded host, against the peer's ACK timeout (issue 19). A failure
     * here is reported and does not stop the run.
     */
    private void warmUp(PerfTest test) {
        if (coldStart || rawUdp) {
            return;
        }
        InetAddress lo = InetAddress.getLoopbackAddress();
        int s = Math.min(sizes().get(0), 65536);
        long mr = 2L * Math.max(s, 64) + 4096;
        int depth = test.latency() ? 1 : 8;
        try (RdmaBench.Side a = new RdmaBench.Side(udp(lo), mr, 1, depth, 16, plainConfig());
                RdmaBench.Side b = new RdmaBench.Side(udp(lo), mr, 1, depth, 16, plainConfig())) {
            a.events = useEvents(test);
            b.events = responderEvents(test);
            BufferAdvert[] peers = connectPair(a, b);
            try (RdmaBench.Responder r = new RdmaBench.Responder(b, (int) (mr / 2))) {
                r.echo(test == PerfTest.SEND_LAT);
                new RdmaBench.Requester(a, peers).cqMod(cqMod).run(test, s, atomicType, depth, WARM_UP_OPS, 0);
            }
        } catch (Exception e) {
            System.err.println("rxe-perf: the warm-up failed (" + e + "); measuring anyway");
        }
    }

    private int runServer() throws Exception {
        try (ServerSocket listen = new ServerSocket(port)) {
            out.println("rxe-perf server: waiting on TCP port " + listen.getLocalPort());
            try (Socket s = listen.accept(); ControlChannel boot = new ControlChannel(s)) {
                Map<String, String> p;
                try {
                    p = adopt(boot.receive());
                } catch (IllegalArgumentException e) {
                    boot.send("REFUSED " + e.getMessage());
                    System.err.println("rxe-perf server: " + e.getMessage());
                    return 2;
                }
                PerfTest test = test();
                warmUp(test); // before the client's first packet: it connects and posts only after READY
                long mr = Long.parseLong(p.get("mr"));
                int mtuBytes = Integer.parseInt(p.get("mtu"));
                Mtu m = mtuBytes == 0 ? null : Mtu.ofBytes(mtuBytes); // 0: the client has no -m, use our port's
                warnNoCc(s.getInetAddress());
                InetAddress ip = s.getLocalAddress();
                try (RawUdpBench.Responder raw = new RawUdpBench.Responder(rawFeatures(), ip);
                        RdmaBench.Side side = new RdmaBench.Side(
                                captured(udp(ip)), mr, qps, txDepth,
                                Math.max(2 * txDepth, 16), deviceConfig());
                        RdmaListener cm = RdmaListener.listen(side.device, 0)) {
                    side.events = responderEvents(test);
                    side.backoff = newBackoff();
                    out.println("rxe-perf server: port active MTU " + side.device.queryPort(1).activeMtu().bytes()
                            + " (link MTU " + side.device.linkMtu() + "), path MTU "
                            + (m != null ? m.bytes() + " (the client's -m)" : "at most the port's active MTU"));
                    // the QPs are connected by the connection manager, on a listener of their own
                    boot.send("RAW " + raw.address().getAddress().getHostAddress() + " " + raw.address().getPort()
                            + " CM " + cm.port() + " " + side.device.address().getPort());
                    side.acceptAll(cm, m, ackTimeout);
                    try (RdmaBench.Responder responder = new RdmaBench.Responder(side, (int) Math.min(Integer.MAX_VALUE, mr / 2))) {
                        responder.echo(test == PerfTest.SEND_LAT);
                        boot.send("READY");
                        String line = boot.receive();
                        out.println("rxe-perf server: client says " + line + "; counters " + side.device.counters());
                        boot.send(countersLine(side.device.counters()));
                        boot.send(responder.failure() == null ? "OK" : "FAIL " + responder.failure());
                    }
                }
            }
        }
        return 0;
    }

    /**
     * Starts the {@code --watchdog}: a daemon thread that, unless the JVM ended first, dumps every
     * thread's stack to stderr after the given time and exits with 3, so that a run that hangs
     * (outside the bandwidth loop's own 30 s stall check) tells where before a harness kills it.
     */
    private void startWatchdog() {
        if (watchdog <= 0) {
            return;
        }
        long millis = (long) (watchdog * 1000);
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                return;
            }
            StringBuilder sb = new StringBuilder("rxe-perf: --watchdog " + watchdog + " s passed, the run has not ended;"
                    + " thread stacks:\n");
            for (var e : Thread.getAllStackTraces().entrySet()) {
                sb.append('"').append(e.getKey().getName()).append("\" ").append(e.getKey().getState()).append('\n');
                for (StackTraceElement f : e.getValue()) {
                    sb.append("\tat ").append(f).append('\n');
                }
            }
            System.err.print(sb);
            System.err.flush();
            Runtime.getRuntime().halt(3);
        }, "rxe-perf-watchdog");
        t.setDaemon(true);
        t.start();
    }

    private int runClient() throws Exception {
        startWatchdog();
        int colon = connect.lastIndexOf(':');
        String host = colon < 0 ? connect : connect.substring(0, colon);
        int p = colon < 0 ? DEFAULT_PORT : Integer.parseInt(connect.substring(colon + 1));
        PerfTest test = test();
        try (Socket s = new Socket(host, p); ControlChannel boot = new ControlChannel(s)) {
            boot.send(paramsLine());
            warmUp(test); // while the server warms up too
            String answer = boot.receive();
            if (answer.startsWith("REFUSED ")) {
                System.err.println("rxe-perf: the server refused the options: " + answer.substring(8));
                return 2;
            }
            String[] raw = answer.split(" ");
            if (raw.length != 6 || !raw[0].equals("RAW") || !raw[3].equals("CM")) {
                throw new IllegalStateException("bad RAW/CM line from the server: " + answer);
            }
            InetSocketAddress rawPeer = new InetSocketAddress(InetAddress.getByName(raw[1]), Integer.parseInt(raw[2]));
            int cmPort = Integer.parseInt(raw[4]);
            InetSocketAddress serverDevice = new InetSocketAddress(InetAddress.getByName(host), Integer.parseInt(raw[5]));
            warnNoCc(s.getInetAddress());
            InetAddress ip = s.getLocalAddress();
            try (RdmaBench.Side side = new RdmaBench.Side(captured(udp(ip)),
                    mrBytes(), qps, txDepth, rqDepth(), deviceConfig())) {
                side.events = useEvents(test());
                side.backoff = newBackoff();
                Mtu asked = pathMtu();
                resolveMtu(side.device);
                BufferAdvert[] peers = side.connectAll(serverDevice, cmPort, asked, ackTimeout);
                mtu = side.conns[0].pathMtu().bytes(); // the smaller of the two sides' offers
                String ready = boot.receive();
                if (!ready.equals("READY")) {
                    throw new IllegalStateException("server: " + ready);
                }
                if (tid) { // as in one process: negotiate before measuring, so no row runs as plain RDMA
                    side.negotiateTid(peers);
                    if (!json) {
                        out.println(" TID RDMA negotiated on " + qps + " QP(s): " + side.qps[0].tidRdma());
                    }
                }
                RdmaBench.Requester req = new RdmaBench.Requester(side, peers).cqMod(cqMod);
                try (RawUdpBench.Requester rawReq = rawUdp || compare
                        ? new RawUdpBench.Requester(rawFeatures(), ip, rawPeer) : null) {
                    header();
                    for (int size : sizes()) {
                        Result r = rawUdp ? null : measureRdma(req, test, size);
                        Result rr = rawReq == null ? null : measureRaw(rawReq, test, size);
                        Result[] row = compare ? new Result[] {r, rr} : new Result[] {rawUdp ? rr : r};
                        rows.add(row);
                        printRow(row);
                    }
                    boot.send("DONE");
                    requesterCounters = side.device.counters();
                    responderCounters = parseCounters(boot.receive());
                    footer();
                }
                if (!json) {
                    out.println(" requester counters: " + requesterCounters);
                    out.println(" responder counters: " + responderCounters);
                }
                String ok = boot.receive();
                if (!ok.equals("OK")) {
                    throw new IllegalStateException("server: " + ok);
                }
            }
        }
        return 0;
    }

    // ---- output ----

    private static final String LINE = "-".repeat(100);

    private void header() {
        if (json) {
            return;
        }
        PerfTest t = test();
        out.println(LINE);
        out.printf(Locale.ROOT, " %s%s%n", t.title(), rawUdp ? " (raw UDP)" : compare ? " (rxe4j vs raw UDP)"
                : tidCompare ? " (TID RDMA vs plain)" : tid ? " (TID RDMA)" : "");
        out.printf(Locale.ROOT, " transport: %s  MTU: %d (port active MTU %d)  QPs: %d  TX depth: %d%s%s  %s%n",
                transportName(), mtu, activeMtu, qps,
                t.latency() ? 1 : txDepth, t.latency() ? "" : "  CQ mod: " + Math.min(cqMod, txDepth),
                t.op() == PerfTest.Op.ATOMIC ? "  atomic: " + atomicType : "",
                duration != null ? "duration: " + duration + " s" : "iterations: " + iterationsPerSize());
        out.println(LINE);
        if (t.latency()) {
            out.printf(Locale.ROOT, " %-10s %-12s %10s %10s %10s %10s %10s %10s", "#bytes", "#iterations",
                    "t_min[us]", "t_p50[us]", "t_p99[us]", "t_p99.9[us]", "t_max[us]", "t_avg[us]");
            if (compare || tidCompare) {
                out.printf(Locale.ROOT, " %12s %12s %10s", other() + "_p50[us]", other() + "_p99[us]", "p50 ratio");
            }
        } else {
            out.printf(Locale.ROOT, " %-10s %-12s %18s %18s %14s", "#bytes", "#iterations", "BW average[MB/sec]",
                    "BW average[Gb/sec]", "MsgRate[Mpps]");
            if (compare || tidCompare) {
                out.printf(Locale.ROOT, " %14s %10s %10s", other() + "[MB/sec]", other() + "[Mpps]", "BW ratio");
            }
        }
        out.println();
    }

    private void printRow(Result[] row) {
        if (json) {
            return;
        }
        Result r = row[0];
        if (r.test().latency()) {
            out.printf(Locale.ROOT, " %-10d %-12d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f", r.bytes(),
                    r.iterations(), r.minUs(), r.latencyUs(50), r.latencyUs(99), r.latencyUs(99.9), r.maxUs(),
                    r.avgUs());
            if (row.length > 1) {
                Result raw = row[1];
                out.printf(Locale.ROOT, " %12.2f %12.2f %10.2f", raw.latencyUs(50), raw.latencyUs(99),
                        r.latencyUs(50) / raw.latencyUs(50));
            }
        } else {
            out.printf(Locale.ROOT, " %-10d %-12d %18.2f %18.3f %14.4f", r.bytes(), r.iterations(), r.mbPerSec(),
                    r.gbitPerSec(), r.mpps());
            if (row.length > 1) {
                Result raw = row[1];
                out.printf(Locale.ROOT, " %14.2f %10.4f %10.2f", raw.mbPerSec(), raw.mpps(),
                        r.mbPerSec() / raw.mbPerSec());
            }
        }
        if (r.raw() && r.lost() > 0) {
            out.printf(Locale.ROOT, "  (lost %d)", r.lost());
        } else if (row.length > 1 && row[1].lost() > 0) {
            out.printf(Locale.ROOT, "  (raw lost %d)", row[1].lost());
        }
        out.println();
    }

    private void footer() {
        if (!json) {
            out.println(LINE);
            if (longestWarmupRdma > 0 || longestWarmupRaw > 0) {
                out.printf(Locale.ROOT, " warm-up: longest %s%s%s%n",
                        longestWarmupRdma > 0 ? String.format(Locale.ROOT, "rxe4j %.1f s", longestWarmupRdma / 1e9) : "",
                        longestWarmupRdma > 0 && longestWarmupRaw > 0 ? ", " : "",
                        longestWarmupRaw > 0 ? String.format(Locale.ROOT, "raw UDP %.1f s", longestWarmupRaw / 1e9) : "");
            }
            return;
        }
        StringBuilder sb = new StringBuilder("{\"test\":\"").append(test().cliName()).append("\",\"transport\":\"")
                .append(transportName()).append("\",\"mtu\":").append(mtu).append(",\"active_mtu\":").append(activeMtu)
                .append(",\"qps\":").append(qps)
                .append(",\"tx_depth\":").append(test().latency() ? 1 : txDepth)
                .append(",\"cq_mod\":").append(test().latency() ? 1 : Math.min(cqMod, txDepth)).append(",\"atomic_type\":\"")
                .append(atomicType).append("\",\"loops\":").append(loops).append(",\"gso\":").append(gso).append(",\"direct_send\":").append(directSend)
                .append(",\"gro\":").append(gro).append(",\"ipv6\":").append(ipv6).append(",\"loop_idle\":\"")
                .append(loopIdle).append("\",\"warmup_s\":").append(warmup).append(",\"jit_settle\":").append(jitSettle)
                .append(",\"longest_warmup_s\":{\"rxe4j\":").append(String.format(Locale.ROOT, "%.3f", longestWarmupRdma / 1e9))
                .append(",\"raw\":").append(String.format(Locale.ROOT, "%.3f", longestWarmupRaw / 1e9)).append('}')
                .append(",\"results\":[");
        for (int i = 0; i < rows.size(); i++) {
            Result[] row = rows.get(i);
            sb.append(i == 0 ? "" : ",").append('{');
            sb.append(row[0].raw() ? "\"raw\":" : "\"rxe4j\":").append(row[0].toJson());
            if (row.length > 1) {
                Result r = row[0];
                Result raw = row[1];
                sb.append(",\"").append(other()).append("\":").append(raw.toJson()).append(",\"ratio\":")
                        .append(Result.num(r.test().latency() ? r.latencyUs(50) / raw.latencyUs(50)
                                : r.mbPerSec() / raw.mbPerSec()));
            }
            sb.append('}');
        }
        sb.append(']');
        if (requesterCounters != null) { // both sides' device counters (two processes: the server's sent back)
            sb.append(",\"counters\":{\"requester\":").append(countersJson(requesterCounters)).append(",\"responder\":")
                    .append(countersJson(responderCounters)).append('}');
        }
        out.println(sb.append('}'));
    }

    /** @return {@code counters} as a JSON object ({@code null} for none) */
    static String countersJson(Map<String, Long> counters) {
        if (counters == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder("{");
        counters.forEach((k, v) -> sb.append(sb.length() == 1 ? "" : ",").append('"').append(k).append("\":").append(v));
        return sb.append('}').toString();
    }

    static long seconds(long nanos) {
        return TimeUnit.NANOSECONDS.toSeconds(nanos);
    }
}
