package io.rxe4j.examples.interop;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ibv_rc_pingpong} (rdma-core {@code libibverbs/examples/rc_pingpong.c}) on rxe4j, wire- and
 * protocol-compatible with it, to run against a kernel {@code rdma_rxe} peer in either role.
 *
 * <p>As there: the 52-byte {@link PingpongDest} exchange over TCP (the client sends first, the server
 * connects its QP to RTS before answering, the client closes with {@code "done\0"}); an RC QP with
 * {@code rx_depth} receives posted before the exchange, max_send_wr 1; RTR with max_dest_rd_atomic 1
 * and min_rnr_timer 12; RTS with timeout 14, retry_cnt 7, rnr_retry 7, max_rd_atomic 1; a random
 * 24-bit PSN. The client SENDs first; each side posts its next SEND only when both its previous
 * SEND and a RECV have completed, and stops after {@code -n} of each; receives are re-posted when
 * fewer than two remain. One buffer, filled with 0x7b, is both the send and the receive buffer (so
 * the server echoes what it got). It prints the same lines ({@code local address: ...}, {@code
 * remote address: ...}, bytes/Mbit and iters/usec) and, in addition, checks that each message
 * arrived whole with the expected bytes.
 *
 * <p>With {@code --srq} it is {@code ibv_srq_pingpong} ({@code srq_pingpong.c}): {@code -q} RC QPs
 * (16) that take their receives from one shared receive queue of {@code -r} WRs, 256 addresses
 * exchanged each way as that tool does (the unused ones zero), {@code -n} exchanges in all.
 *
 * <p>With {@code --uc} it is {@code ibv_uc_pingpong} ({@code uc_pingpong.c}): the same exchange over a
 * UC QP (INIT with no access flags, RTR with the path only, RTS with the PSN only).
 *
 * <p>With {@code --ud} it is {@code ibv_ud_pingpong} ({@code ud_pingpong.c}) instead: a UD QP with
 * Q_Key 0x11111111, an address handle to the peer's GID (hop limit 1), SENDs of {@code -s} bytes
 * from offset 40 of the buffer and receives of {@code -s} + 40 bytes (the GRH comes first); each
 * receive is checked for byte_len {@code -s} + 40, the GRH flag, the sender's QPN and the bytes.
 *
 * <p>Instead of a device and GID index, {@code --ip} names the local IP the UDP socket binds (its
 * GID is {@code ::ffff:a.b.c.d} for IPv4, the address itself for IPv6; a link-local address needs
 * its interface, {@code fe80::1%br0}). The peer is reached at the IP of its GID, UDP port 4791.
 * Exit code 0 on success, 1 on a failed completion, bad data, a stall or a protocol error.
 */
@Command(name = "rxe-pingpong", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "ibv_rc_pingpong (with --uc ibv_uc_pingpong, with --ud ibv_ud_pingpong) on rxe4j: SEND ping-pong "
                + "over RoCEv2, "
                + "compatible with rdma-core's.")
public final class RxePingpong implements Callable<Integer> {
    /** PINGPONG_RECV_WRID. */
    static final int RECV_WRID = 1;
    /** PINGPONG_SEND_WRID. */
    static final int SEND_WRID = 2;
    /** The byte rc_pingpong fills its buffer with. */
    static final byte FILL = 0x7b;

    @Parameters(arity = "0..1", paramLabel = "SERVER", description = "server host: be the client (else the server)")
    String servername;

    @Option(names = {"-p", "--port"}, description = "TCP port to listen on / connect to (default ${DEFAULT-VALUE})")
    int port = 18515;

    @Option(names = {"-g", "--ip"}, required = true,
            description = "local IP to bind the UDP transport to (its GID is advertised), e.g. 10.99.0.1 or fe80::1%%br0")
    String ip;

    @Option(names = {"-s", "--size"}, description = "size of message to exchange (default ${DEFAULT-VALUE})")
    int size = 4096;

    @Option(names = {"-m", "--mtu"}, description = "path MTU (default: 1024 as ibv_rc_pingpong, which does not negotiate"
            + " it, or the port's active MTU if that is smaller)")
    int mtu;

    @Option(names = {"-r", "--rx-depth"}, description = "number of receives to post at a time (default ${DEFAULT-VALUE})")
    int rxDepth = 500;

    @Option(names = {"-n", "--iters"}, description = "number of exchanges (default ${DEFAULT-VALUE})")
    int iters = 1000;

    @Option(names = "--ud", description = "be ibv_ud_pingpong (libibverbs/examples/ud_pingpong.c): a UD QP with Q_Key "
            + "0x11111111, an address handle to the peer's GID, receive buffers of size + 40 (the GRH); -s at most "
            + "the port's active MTU (ud_pingpong's default 2048 needs a 4096 active MTU)")
    boolean ud;

    @Option(names = "--uc", description = "be ibv_uc_pingpong (libibverbs/examples/uc_pingpong.c): a UC QP (no "
            + "ACKs, no retries; RTR with the path, RTS with the PSN only)")
    boolean uc;

    @Option(names = "--srq", description = "be ibv_srq_pingpong (libibverbs/examples/srq_pingpong.c): -q RC QPs sharing "
            + "one SRQ of -r receives, 256 addresses exchanged each way, -n exchanges in all")
    boolean srqMode;

    @Option(names = {"-q", "--num-qp"}, description = "with --srq: the number of QPs (default ${DEFAULT-VALUE})")
    int numQp = 16;

    @Option(names = "--udp-port", description = "local UDP port (default ${DEFAULT-VALUE})")
    int udpPort = 4791;

    @Option(names = "--peer-udp-port", description = "the peer's UDP port (default ${DEFAULT-VALUE}; "
            + "another value only for an rxe4j peer on the same host)")
    int peerUdpPort = 4791;

    @Option(names = "--icrc-check", description = "check received ICRCs: AUTO (off for an IPv4 --ip, on for IPv6), "
            + "ON, OFF (default ${DEFAULT-VALUE})")
    IcrcMode icrcCheck = IcrcMode.AUTO;

    @Option(names = "--no-icrc-check", description = "same as --icrc-check OFF")
    boolean noIcrcCheck;

    @Option(names = "--pcap", paramLabel = "FILE", description = "write every packet this side sends and receives "
            + "to a pcap file (Wireshark, tshark; its ICRCs check out)")
    java.nio.file.Path pcap;

    @Option(names = "--faults", paramLabel = "<spec>", description = "inject faults into this side's packets, "
            + "FaultSpec syntax, e.g. drop=0.02,dir=out (a loss test: both sides must recover) (default: none)")
    String faults;

    @Option(names = "--fault-seed", description = "seed of the fault injector (default: ${DEFAULT-VALUE})")
    long faultSeed = 1;

    @Option(names = "--opfn", description = "turn OPFN and TID RDMA on: every packet carries BTH bit 24 (a kernel "
            + "rdma_rxe peer ignores it and is never sent an OPFN request)")
    boolean opfn;

    @Option(names = "--stall-timeout", description = "give up when no completion arrives for this many seconds "
            + "(default ${DEFAULT-VALUE})")
    long stallSeconds = 30;

    @Option(names = "--ack-timeout", description = "local ACK timeout exponent of the QP, 0..31, 4.096 us x 2^n "
            + "(default ${DEFAULT-VALUE}: 537 ms, 4.3 s with the 7 retries, as rdma_cm; ibv_rc_pingpong's 14, 67 ms, is "
            + "shorter than a fresh JVM takes to answer its first packet)")
    int ackTimeout = io.rxe4j.examples.perf.RxePerf.DEFAULT_ACK_TIMEOUT;

    @Option(names = "--tcp-timeout", description = "seconds to wait for the TCP peer (accept, connect, "
            + "each read; 0 = forever) (default ${DEFAULT-VALUE})")
    int tcpTimeoutSeconds = 60;

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RxePingpong()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if ((ud ? 1 : 0) + (uc ? 1 : 0) + (srqMode ? 1 : 0) > 1) {
            System.err.println("rxe-pingpong: --ud, --uc and --srq exclude each other");
            return 2;
        }
        if (srqMode && (numQp < 1 || numQp >= SRQ_MAX_QP || numQp > rxDepth)) {
            System.err.println("rxe-pingpong: with --srq, -q must be 1.." + (SRQ_MAX_QP - 1) + " and at most -r ("
                    + rxDepth + "), got " + numQp);
            return 2;
        }
        if (size < 1 || rxDepth < 2 || iters < 1) {
            System.err.println("rxe-pingpong: -s must be >= 1, -r >= 2 and -n >= 1");
            return 2;
        }
        if (ackTimeout < 0 || ackTimeout > 31) {
            System.err.println("rxe-pingpong: --ack-timeout must be 0..31, got " + ackTimeout);
            return 2;
        }
        Mtu asked = mtu == 0 ? null : Mtu.ofBytes(mtu);
        InetAddress local = InteropDevice.resolve(ip);
        IcrcMode mode = noIcrcCheck ? IcrcMode.OFF : icrcCheck;
        try (InteropDevice dev = new InteropDevice(local, udpPort, mode, false, opfn, pcap, faults, faultSeed)) {
            dev.printNotes(System.err, false);
            Mtu pathMtu = asked != null ? asked : smaller(Mtu.MTU_1024, dev.device().queryPort(1).activeMtu());
            int rc;
            try {
                rc = run(dev, pathMtu);
            } catch (InteropDevice.StallException | IOException | IllegalStateException | IllegalArgumentException e) {
                System.err.println("rxe-pingpong: " + e.getMessage());
                rc = 1;
            }
            System.err.println("rxe4j counters: " + dev.counters());
            return rc;
        }
    }

    /** @return the smaller of two MTUs */
    static Mtu smaller(Mtu a, Mtu b) {
        return a.bytes() <= b.bytes() ? a : b;
    }

    /** ud_pingpong's Q_Key. */
    static final int UD_QKEY = 0x11111111;
    /** The GRH at the head of every UD receive buffer, in bytes. */
    static final int GRH = 40;

    /** srq_pingpong's MAX_QP: the number of addresses each side sends, used or not. */
    static final int SRQ_MAX_QP = 256;

    private int run(InteropDevice dev, Mtu pathMtu) throws IOException {
        if (srqMode) {
            return runSrq(dev, pathMtu);
        }
        ProtectionDomain pd = dev.device().allocPd();
        MemoryRegion mr = pd.allocMr(ud ? size + GRH : size, Access.LOCAL_WRITE);
        CompletionQueue cq = dev.device().createCq(rxDepth + 1);
        QueuePair qp = pd.createQp(new QpInitAttr(cq, cq, new QpCaps(1, rxDepth, 1, 1, 0),
                ud ? QpType.UD : uc ? QpType.UC : QpType.RC, false));
        try {
            return pingpong(dev, pathMtu, pd, mr, cq, qp);
        } finally {
            qp.close();
            if (ah != null) {
                ah.close();
            }
            mr.close();
            cq.close();
            pd.close();
        }
    }

    /** The address handle to the peer (--ud), made when the peer's GID is known. */
    private io.rxe4j.verbs.AddressHandle ah;

    private int pingpong(InteropDevice dev, Mtu pathMtu, ProtectionDomain pd, MemoryRegion mr, CompletionQueue cq,
            QueuePair qp) throws IOException {
        MemorySegment buf = mr.segment();
        buf.fill(FILL);
        if (ud) {
            int active = dev.device().queryPort(1).activeMtu().bytes();
            if (size > active) {
                System.err.println("Requested size larger than port MTU (" + active + ")");
                return 1;
            }
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(UD_QKEY));
        } else {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
        }
        int grh = ud ? GRH : 0;
        RecvWr recv = new RecvWr().set(RECV_WRID, new Sge(mr.addr(), size + grh, mr.lkey()));
        int routs = postRecv(qp, recv, rxDepth);
        if (routs < rxDepth) {
            System.err.println("Couldn't post receive (" + routs + ")");
            return 1;
        }
        PingpongDest my = new PingpongDest(0, qp.qpNum(), new SecureRandom().nextInt(1 << 24), dev.gid());
        System.out.println(my.describe("local"));
        System.out.flush();

        PingpongDest[] mine = {my};
        PingpongDest rem = (servername != null ? clientExchange(mine, 1)
                : serverExchange(mine, 1, r -> connect(dev, pathMtu, qp, my, r[0], pd)))[0];
        System.out.println(rem.describe("remote"));
        System.out.flush();
        if (servername != null) {
            connect(dev, pathMtu, qp, my, rem, pd);
        }

        SendWr send = new SendWr().set(SEND_WRID, WrOpcode.SEND, SendFlags.SIGNALED,
                new Sge(mr.addr() + grh, size, mr.lkey()));
        if (ud) {
            send.ud(ah, rem.qpn(), UD_QKEY);
        }
        int pending = RECV_WRID;
        if (servername != null) {
            qp.postSend(send);
            pending |= SEND_WRID;
        }
        long start = System.nanoTime();
        int rcnt = 0;
        int scnt = 0;
        long badData = 0;
        WorkCompletion[] wc = {new WorkCompletion(), new WorkCompletion()};
        while (rcnt < iters || scnt < iters) {
            int ne = dev.awaitCompletions(cq, wc, stallSeconds);
            for (int i = 0; i < ne; i++) {
                WorkCompletion c = wc[i];
                if (c.status != WcStatus.SUCCESS) {
                    System.err.printf(Locale.ROOT, "Failed status %s (%d) for wr_id %d%s%n", statusString(c.status),
                            c.status.value(), (int) c.wrId,
                            c.vendorErr != 0 ? String.format(Locale.ROOT, " (vendor_err 0x%x)", c.vendorErr) : "");
                    System.err.println("parse WC failed " + ne);
                    return 1;
                }
                if (c.wrId == SEND_WRID) {
                    ++scnt;
                } else if (c.wrId == RECV_WRID) {
                    if (c.byteLen != size + grh || !isFilled(buf.asSlice(grh, size))
                            || (ud && ((c.wcFlags & WorkCompletion.WC_GRH) == 0 || c.srcQp != rem.qpn()))) {
                        badData++;
                    }
                    if (--routs <= 1) {
                        routs += postRecv(qp, recv, rxDepth - routs);
                        if (routs < rxDepth) {
                            System.err.println("Couldn't post receive (" + routs + ")");
                            return 1;
                        }
                    }
                    ++rcnt;
                } else {
                    System.err.println("Completion for unknown wr_id " + (int) c.wrId);
                    return 1;
                }
                pending &= ~(int) c.wrId;
                if (scnt < iters && pending == 0) {
                    qp.postSend(send);
                    pending = RECV_WRID | SEND_WRID;
                }
            }
        }
        return report(start, rcnt, badData);
    }

    /** Prints the tools' two result lines; @return 0, or 1 (said why) when a message arrived wrong */
    private int report(long start, int rcnt, long badData) {
        double usec = (System.nanoTime() - start) / 1000.0;
        long bytes = (long) size * iters * 2;
        System.out.printf(Locale.ROOT, "%d bytes in %.2f seconds = %.2f Mbit/sec%n", bytes, usec / 1_000_000.0,
                bytes * 8.0 / usec);
        System.out.printf(Locale.ROOT, "%d iters in %.2f seconds = %.2f usec/iter%n", iters, usec / 1_000_000.0,
                usec / iters);
        System.out.flush();
        if (badData > 0) {
            System.err.printf(Locale.ROOT, "rxe-pingpong: %d of %d received messages had a wrong length or bytes other"
                    + " than 0x%02x%n", badData, rcnt, fill() & 0xFF);
            return 1;
        }
        return 0;
    }

    /**
     * ibv_srq_pingpong: {@code -q} RC QPs on one SRQ of {@code -r} receives and one CQ; the client sends
     * on every QP first; per QP the next SEND goes when its last SEND and a RECV on it completed, until
     * {@code -n} SENDs and RECVs in all; receives are re-posted to the SRQ when {@code -q} or fewer remain.
     */
    private int runSrq(InteropDevice dev, Mtu pathMtu) throws IOException {
        io.rxe4j.verbs.RdmaDevice d = dev.device();
        ProtectionDomain pd = d.allocPd();
        MemoryRegion mr = pd.allocMr(size, Access.LOCAL_WRITE);
        CompletionQueue cq = d.createCq(rxDepth + numQp);
        io.rxe4j.verbs.SharedReceiveQueue srq = pd.createSrq(new io.rxe4j.verbs.SrqInitAttr(rxDepth, 1, 0));
        QueuePair[] qps = new QueuePair[numQp];
        try {
            for (int i = 0; i < numQp; i++) {
                qps[i] = pd.createQp(new QpInitAttr(cq, cq, new QpCaps(1, 1, 1, 1, 0), QpType.RC, false).withSrq(srq));
                qps[i].modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
            }
            MemorySegment buf = mr.segment();
            buf.fill(fill()); // srq_pingpong's buffer is zeros (pp_init_ctx), not rc_pingpong's 0x7b
            RecvWr recv = new RecvWr().set(RECV_WRID, new Sge(mr.addr(), size, mr.lkey()));
            int routs = postSrq(srq, recv, rxDepth);
            if (routs < rxDepth) {
                System.err.println("Couldn't post receive (" + routs + ")");
                return 1;
            }
            SecureRandom rnd = new SecureRandom();
            PingpongDest[] my = new PingpongDest[numQp];
            for (int i = 0; i < numQp; i++) {
                my[i] = new PingpongDest(0, qps[i].qpNum(), rnd.nextInt(1 << 24), dev.gid());
                System.out.println(my[i].describe("local"));
            }
            System.out.flush();
            PingpongDest[] rem = servername != null ? clientExchange(my, SRQ_MAX_QP) : serverExchange(my, SRQ_MAX_QP, r -> {
                for (int i = 0; i < numQp; i++) {
                    connect(dev, pathMtu, qps[i], my[i], r[i], pd);
                }
            });
            for (int i = 0; i < numQp; i++) {
                System.out.println(rem[i].describe("remote"));
            }
            System.out.flush();
            if (servername != null) {
                for (int i = 0; i < numQp; i++) {
                    connect(dev, pathMtu, qps[i], my[i], rem[i], pd);
                }
            }
            SendWr send = new SendWr().set(SEND_WRID, WrOpcode.SEND, SendFlags.SIGNALED,
                    new Sge(mr.addr(), size, mr.lkey()));
            int[] pending = new int[numQp];
            java.util.Map<Integer, Integer> byQpn = new java.util.HashMap<>();
            for (int i = 0; i < numQp; i++) {
                byQpn.put(qps[i].qpNum(), i);
                pending[i] = RECV_WRID;
                if (servername != null) {
                    qps[i].postSend(send);
                    pending[i] |= SEND_WRID;
                }
            }
            long start = System.nanoTime();
            int rcnt = 0;
            int scnt = 0;
            long badData = 0;
            WorkCompletion[] wc = new WorkCompletion[numQp + 1];
            for (int i = 0; i < wc.length; i++) {
                wc[i] = new WorkCompletion();
            }
            while (rcnt < iters || scnt < iters) {
                int ne = dev.awaitCompletions(cq, wc, stallSeconds);
                for (int k = 0; k < ne; k++) {
                    WorkCompletion c = wc[k];
                    if (c.status != WcStatus.SUCCESS) {
                        System.err.printf(Locale.ROOT, "Failed status %s (%d) for wr_id %d%n", statusString(c.status),
                                c.status.value(), (int) c.wrId);
                        return 1;
                    }
                    Integer q = byQpn.get(c.qpNum);
                    if (q == null) {
                        System.err.println("Couldn't find QPN " + Integer.toHexString(c.qpNum));
                        return 1;
                    }
                    if (c.wrId == SEND_WRID) {
                        ++scnt;
                    } else if (c.wrId == RECV_WRID) {
                        if (c.byteLen != size || !isFilled(buf)) {
                            badData++;
                        }
                        if (--routs <= numQp) {
                            routs += postSrq(srq, recv, rxDepth - routs);
                            if (routs < rxDepth) {
                                System.err.println("Couldn't post receive (" + routs + ")");
                                return 1;
                            }
                        }
                        ++rcnt;
                    } else {
                        System.err.println("Completion for unknown wr_id " + (int) c.wrId);
                        return 1;
                    }
                    pending[q] &= ~(int) c.wrId;
                    if (scnt < iters && pending[q] == 0) {
                        qps[q].postSend(send);
                        pending[q] = RECV_WRID | SEND_WRID;
                    }
                }
            }
            return report(start, rcnt, badData);
        } finally {
            for (QueuePair qp : qps) {
                if (qp != null) {
                    qp.close();
                }
            }
            srq.close();
            mr.close();
            cq.close();
            pd.close();
        }
    }

    private static int postSrq(io.rxe4j.verbs.SharedReceiveQueue srq, RecvWr wr, int n) {
        int i = 0;
        for (; i < n; i++) {
            if (!srq.tryPostRecv(wr)) {
                break;
            }
        }
        return i;
    }

    /**
     * pp_client_exch_dest: send ours ({@code count} addresses, those beyond {@code my} zero: 1 for
     * rc/uc/ud_pingpong, 256 for srq_pingpong), read theirs, send "done\0".
     */
    private PingpongDest[] clientExchange(PingpongDest[] my, int count) throws IOException {
        try (Socket s = connectRetrying()) {
            s.setSoTimeout(tcpTimeoutSeconds * 1000);
            OutputStream out = s.getOutputStream();
            writeDests(out, my, count);
            PingpongDest[] rem = readDests(s.getInputStream(), count);
            out.write(PingpongDest.DONE);
            out.flush();
            return rem;
        }
    }

    /** pp_server_exch_dest: read theirs ({@code count}), connect the QPs ({@code connect}), send ours, read "done\0". */
    private PingpongDest[] serverExchange(PingpongDest[] my, int count,
            java.util.function.Consumer<PingpongDest[]> connect) throws IOException {
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port), 1);
            ss.setSoTimeout(tcpTimeoutSeconds * 1000);
            System.err.println("rxe-pingpong: listening on TCP port " + ss.getLocalPort());
            try (Socket s = ss.accept()) {
                s.setSoTimeout(tcpTimeoutSeconds * 1000);
                PingpongDest[] rem = readDests(s.getInputStream(), count);
                connect.accept(rem);
                OutputStream out = s.getOutputStream();
                writeDests(out, my, count);
                byte[] done = s.getInputStream().readNBytes(PingpongDest.DONE.length);
                if (!Arrays.equals(done, PingpongDest.DONE)) {
                    throw new IOException("Couldn't send/recv local address (expected \"done\\0\", got "
                            + done.length + " bytes)");
                }
                return rem;
            }
        }
    }

    private static void writeDests(OutputStream out, PingpongDest[] my, int count) throws IOException {
        PingpongDest zero = new PingpongDest(0, 0, 0, Gid.of(new byte[16]));
        for (int i = 0; i < count; i++) {
            out.write((i < my.length ? my[i] : zero).encode());
        }
        out.flush();
    }

    private static PingpongDest[] readDests(InputStream in, int count) throws IOException {
        PingpongDest[] rem = new PingpongDest[count];
        for (int i = 0; i < count; i++) {
            rem[i] = PingpongDest.decode(readExactly(in, PingpongDest.WIRE_BYTES, "remote address [" + i + "]"));
        }
        return rem;
    }

    /**
     * Connects to the server, retrying a refused connection every 200 ms for up to --tcp-timeout
     * seconds (a server started at the same moment may not listen yet; rc_pingpong gives up at once).
     */
    private Socket connectRetrying() throws IOException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(Math.max(1, tcpTimeoutSeconds));
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(servername, port), tcpTimeoutSeconds * 1000);
                return s;
            } catch (java.net.ConnectException e) {
                s.close();
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /**
     * pp_connect_ctx: RTR then RTS with rc_pingpong's attributes; with --ud ud_pingpong's: RTR, RTS
     * with the PSN, and an address handle to the peer's GID with hop limit 1.
     */
    private void connect(InteropDevice dev, Mtu pathMtu, QueuePair qp, PingpongDest my, PingpongDest rem,
            ProtectionDomain pd) {
        InetSocketAddress av = dev.peerAddress(rem.gid(), peerUdpPort);
        System.err.println("rxe-pingpong: peer " + av);
        if (ud) {
            qp.modify(new QpAttr().state(QpState.RTR));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(my.psn()));
            ah = pd.createAh(new io.rxe4j.verbs.AhAttr(av, 1, 0, 0));
            return;
        }
        if (uc) { // uc_pingpong.c: no READ/atomic resources, no timers
            qp.modify(new QpAttr().state(QpState.RTR).av(av).pathMtu(pathMtu).destQpNum(rem.qpn()).rqPsn(rem.psn()));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(my.psn()));
            return;
        }
        qp.modify(new QpAttr().state(QpState.RTR).av(av).pathMtu(pathMtu).destQpNum(rem.qpn()).rqPsn(rem.psn())
                .maxDestRdAtomic(1).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(ackTimeout).retryCnt(7).rnrRetry(7).sqPsn(my.psn())
                .maxRdAtomic(1));
    }

    private static int postRecv(QueuePair qp, RecvWr wr, int n) {
        int i = 0;
        try {
            for (; i < n; i++) {
                qp.postRecv(wr);
            }
        } catch (IllegalStateException e) {
            // a full RQ: report how many were posted, as pp_post_recv does
        }
        return i;
    }

    /** @return the byte the buffer holds: 0x7b as rc/uc/ud_pingpong, 0 as srq_pingpong */
    private byte fill() {
        return srqMode ? 0 : FILL;
    }

    /** @return whether the {@code size} bytes of {@code buf} are all {@link #fill()} */
    private boolean isFilled(MemorySegment buf) {
        byte f = fill();
        long word = (f & 0xFFL) * 0x0101010101010101L;
        for (long i = 0; i + 8 <= size; i += 8) {
            if (buf.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != word) {
                return false;
            }
        }
        for (long i = size & ~7L; i < size; i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, i) != f) {
                return false;
            }
        }
        return true;
    }

    static byte[] readExactly(InputStream in, int n, String what) throws IOException {
        byte[] b = in.readNBytes(n);
        if (b.length != n) {
            throw new IOException("Couldn't read " + what + ": " + b.length + "/" + n + " bytes");
        }
        return b;
    }

    /** @return {@code ibv_wc_status_str} of {@code s} */
    static String statusString(WcStatus s) {
        return switch (s) {
            case SUCCESS -> "success";
            case LOC_LEN_ERR -> "local length error";
            case LOC_QP_OP_ERR -> "local QP operation error";
            case LOC_EEC_OP_ERR -> "local EE context operation error";
            case LOC_PROT_ERR -> "local protection error";
            case WR_FLUSH_ERR -> "Work Request Flushed Error";
            case MW_BIND_ERR -> "memory management operation error";
            case BAD_RESP_ERR -> "bad response error";
            case LOC_ACCESS_ERR -> "local access error";
            case REM_INV_REQ_ERR -> "remote invalid request error";
            case REM_ACCESS_ERR -> "remote access error";
            case REM_OP_ERR -> "remote operation error";
            case RETRY_EXC_ERR -> "transport retry counter exceeded";
            case RNR_RETRY_EXC_ERR -> "RNR retry counter exceeded";
            case LOC_RDD_VIOL_ERR -> "local RDD violation error";
            case REM_INV_RD_REQ_ERR -> "remote invalid RD request";
            case REM_ABORT_ERR -> "aborted error";
            case INV_EECN_ERR -> "invalid EE context number";
            case INV_EEC_STATE_ERR -> "invalid EE context state";
            case FATAL_ERR -> "fatal error";
            case RESP_TIMEOUT_ERR -> "response timeout error";
            case GENERAL_ERR -> "general error";
        };
    }
}
