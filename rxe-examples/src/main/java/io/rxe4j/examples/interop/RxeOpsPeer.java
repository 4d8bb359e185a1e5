package io.rxe4j.examples.interop;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The kernel VM's {@code rxe_ops} ({@code kernel-rxe-vm/guest/rxe_ops.c}) on rxe4j: an RC verbs
 * exerciser that speaks its TCP protocol ({@link OpsDest}: one line each way, client first; {@code
 * "done\n"} from the client at the end) and uses its buffer layout, as client or server.
 *
 * <p>Both sides register an 8 KiB buffer for remote READ, WRITE, ATOMIC and FLUSH_GLOBAL and post
 * 8 receives of 256 bytes at +4096. The server's buffer starts as {@code 0x40 + i % 26} with
 * zeros at +2048..+2111; the client's as {@code 'a' + i % 26} over the first 4 KiB.
 *
 * <p>The <b>client</b> posts the operations named by {@code -o} one at a time, each signaled and
 * waited for ({@link Op} lists them), and checks each result: the completion's status, opcode and
 * length; for {@code read} and {@code read8} the bytes against what the server must hold by then;
 * for {@code cas}/{@code fadd} the returned original value; {@code write} and {@code writeimm} are
 * verified with an extra RDMA READ of the written range (unless {@code --no-verify}). The
 * <b>server</b> waits for {@code done}, then prints each receive completion and the words at +0,
 * +1024, +2048, +2056 and +2064 as {@code rxe_ops} does and, given {@code -o} (the ops the client
 * ran), checks them. Exit code 0 when everything passed, 1 otherwise.
 *
 * <p>Against a kernel {@code rdma_rxe}: FLUSH needs {@code --rxe-flush-compat} (rxe's FLUSH ICRC
 * variant, {@code extensions.md} §1), and over IPv4 ICRCs cannot be checked (automatic with the
 * default {@code --icrc-check AUTO}).
 */
@Command(name = "rxe-ops", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "rxe_ops on rxe4j: RC WRITE/READ/SEND/atomics/ATOMIC WRITE/FLUSH against a peer, with checks.")
public final class RxeOpsPeer implements Callable<Integer> {
    /** Size of each side's buffer. */
    static final int BUFSZ = 8192;
    /** Receive buffers: 8 × 256 bytes from here, wr_id 100 + i. */
    static final int RECV_OFF = 4096;
    /** Number of receives posted. */
    static final int RECVS = 8;
    /** Size of each receive buffer. */
    static final int RECV_LEN = 256;
    /** Where the client's verification READs land (not used by rxe_ops). */
    static final int VERIFY_OFF = 6144;
    /** WRITE_WITH_IMM's immediate (host value; on the wire big-endian, as rxe_ops' htonl). */
    static final int WRITE_IMM = 0x1234abcd;
    /** SEND_WITH_IMM's immediate. */
    static final int SEND_IMM = 0xcafe0001;
    /** CMP_AND_SWP swap value. */
    static final long CAS_SWAP = 0x1111222233334444L;
    /** FETCH_AND_ADD addend. */
    static final long FADD_ADD = 5;
    /** The bytes ATOMIC WRITE stores: 0x0123456789abcdef big-endian, as rxe_ops' htobe64. */
    static final byte[] AWRITE_BYTES = HexFormat.of().parseHex("0123456789abcdef");
    /** The client's default operation list ({@code rxe_ops -o all}). */
    static final String ALL = "write,writeimm,send,sendimm,read,cas,fadd,awrite,flush,read8";

    /** The operations of {@code rxe_ops -o}, by their names there. */
    enum Op {
        /** RDMA WRITE 600 bytes from +0 to remote +0. */
        WRITE("write"),
        /** RDMA WRITE WITH IMM 16 bytes from +26 to remote +1024, imm 0x1234abcd. */
        WRITEIMM("writeimm"),
        /** SEND 100 bytes from +0. */
        SEND("send"),
        /** SEND WITH IMM 8 bytes from +0, imm 0xcafe0001. */
        SENDIMM("sendimm"),
        /** RDMA READ 600 bytes from remote +0 to +4096. */
        READ("read"),
        /** CMP_AND_SWP at remote +2048: compare 0, swap 0x1111222233334444, original to +2048. */
        CAS("cas"),
        /** FETCH_AND_ADD 5 at remote +2056, original to +2056. */
        FADD("fadd"),
        /** ATOMIC WRITE of 01 23 45 67 89 ab cd ef at remote +2064. */
        AWRITE("awrite"),
        /** FLUSH global visibility, range remote +0, 4096 bytes. */
        FLUSH("flush"),
        /** FLUSH global visibility of the whole MR. */
        FLUSHMR("flushmr"),
        /** RDMA READ 8 bytes from remote +2064 to +3000. */
        READ8("read8");

        final String wireName;

        Op(String wireName) {
            this.wireName = wireName;
        }

        /**
         * @param list comma separated names, or {@code all}
         * @throws IllegalArgumentException naming an unknown operation
         */
        static List<Op> parseList(String list) {
            List<Op> ops = new ArrayList<>();
            for (String name : (list.equals("all") ? ALL : list).split(",")) {
                String n = name.strip();
                if (n.isEmpty()) {
                    continue;
                }
                Op op = Arrays.stream(values()).filter(o -> o.wireName.equals(n)).findFirst()
                        .orElseThrow(() -> new IllegalArgumentException("unknown op '" + n + "'; known: "
                                + Arrays.stream(values()).map(o -> o.wireName).toList()));
                ops.add(op);
            }
            return ops;
        }
    }

    @Parameters(arity = "0..1", paramLabel = "SERVER", description = "server host: be the client (else the server)")
    String peer;

    @Option(names = {"-p", "--port"}, description = "TCP port (default ${DEFAULT-VALUE})")
    int port = 18530;

    @Option(names = {"-g", "--ip"}, required = true,
            description = "local IP to bind the UDP transport to (its GID is advertised), e.g. 10.99.0.1 or fe80::1%%br0")
    String ip;

    @Option(names = {"-m", "--mtu"}, description = "path MTU (default: 256 as rxe_ops, which does not negotiate it; the"
            + " port's active MTU if that is smaller, which it never is)")
    int mtu;

    @Option(names = {"-o", "--ops"}, description = "client: the ops to run, comma separated (default: " + ALL
            + "); server: the ops the client runs, to check the buffer and receives against (default: no checks)")
    String ops;

    @Option(names = "--rxe-flush-compat", description = "send and accept rdma_rxe's FLUSH ICRC variant (needed for "
            + "FLUSH with a kernel rdma_rxe peer)")
    boolean rxeFlushCompat;

    @Option(names = "--icrc-check", description = "check received ICRCs: AUTO (off for an IPv4 --ip, on for IPv6), "
            + "ON, OFF (default ${DEFAULT-VALUE})")
    IcrcMode icrcCheck = IcrcMode.AUTO;

    @Option(names = "--no-icrc-check", description = "same as --icrc-check OFF")
    boolean noIcrcCheck;

    @Option(names = "--pcap", paramLabel = "FILE", description = "write every packet this side sends and receives "
            + "to a pcap file (Wireshark, tshark; its ICRCs check out)")
    java.nio.file.Path pcap;

    @Option(names = "--opfn", description = "turn OPFN and TID RDMA on: every packet carries BTH bit 24 (a kernel "
            + "rdma_rxe peer ignores it and is never sent an OPFN request)")
    boolean opfn;

    @Option(names = "--no-verify", description = "client: do not READ back what write/writeimm stored")
    boolean noVerify;

    @Option(names = "--udp-port", description = "local UDP port (default ${DEFAULT-VALUE})")
    int udpPort = 4791;

    @Option(names = "--peer-udp-port", description = "the peer's UDP port (default ${DEFAULT-VALUE})")
    int peerUdpPort = 4791;

    @Option(names = "--stall-timeout", description = "seconds to wait for one completion (default ${DEFAULT-VALUE})")
    long stallSeconds = 20;

    @Option(names = "--ack-timeout", description = "local ACK timeout exponent of the QP, 0..31, 4.096 us x 2^n "
            + "(default ${DEFAULT-VALUE}: 537 ms, 4.3 s with the 7 retries, as rdma_cm; ibv_rc_pingpong's 14, 67 ms, is "
            + "shorter than a fresh JVM takes to answer its first packet)")
    int ackTimeout = io.rxe4j.examples.perf.RxePerf.DEFAULT_ACK_TIMEOUT;

    @Option(names = "--tcp-timeout", description = "seconds to wait for the TCP peer: accept, connect, and the "
            + "server's wait for \"done\" (default ${DEFAULT-VALUE})")
    int tcpTimeoutSeconds = 120;

    private final List<String> failures = new ArrayList<>();

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RxeOpsPeer()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        boolean server = peer == null;
        List<Op> list;
        try {
            list = Op.parseList(ops == null ? (server ? "" : ALL) : ops);
            if (ackTimeout < 0 || ackTimeout > 31) {
                throw new IllegalArgumentException("--ack-timeout must be 0..31, got " + ackTimeout);
            }
        } catch (IllegalArgumentException e) {
            System.err.println("rxe-ops: " + e.getMessage());
            return 2;
        }
        Mtu asked = mtu == 0 ? null : Mtu.ofBytes(mtu);
        IcrcMode mode = noIcrcCheck ? IcrcMode.OFF : icrcCheck;
        try (InteropDevice dev = new InteropDevice(InteropDevice.resolve(ip), udpPort, mode, rxeFlushCompat, opfn, pcap)) {
            dev.printNotes(System.out, rxeFlushCompat);
            Mtu pathMtu = asked != null ? asked : RxePingpong.smaller(Mtu.MTU_256, dev.device().queryPort(1).activeMtu());
            try {
                run(dev, pathMtu, server, list);
            } catch (InteropDevice.StallException | IOException | IllegalStateException | IllegalArgumentException e) {
                failures.add(e.getMessage());
                System.out.println("rxe-ops: " + e.getMessage());
            }
            System.out.println("rxe4j counters: " + dev.counters());
        }
        if (server) {
            System.out.println(failures.isEmpty() ? "server: checks passed" : "server: FAILED " + failures);
        }
        return failures.isEmpty() ? 0 : 1;
    }

    private void run(InteropDevice dev, Mtu pathMtu, boolean server, List<Op> list) throws IOException {
        ProtectionDomain pd = dev.device().allocPd();
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        MemoryRegion mr = pd.allocMr(BUFSZ, access | Access.FLUSH_GLOBAL);
        CompletionQueue cq = dev.device().createCq(64);
        QueuePair qp = pd.createQp(new QpInitAttr(cq, cq, new QpCaps(16, 16, 1, 1, 0), QpType.RC, false));
        try {
            MemorySegment buf = mr.segment();
            for (int i = 0; i < BUFSZ; i++) {
                buf.set(ValueLayout.JAVA_BYTE, i, server ? (byte) (0x40 + i % 26) : 0);
            }
            buf.asSlice(2048, 64).fill((byte) 0);
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                    .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL));
            for (int i = 0; i < RECVS; i++) {
                qp.postRecv(new RecvWr().set(100 + i, new Sge(mr.addr() + RECV_OFF + RECV_LEN * i, RECV_LEN,
                        mr.lkey())));
            }
            OpsDest me = new OpsDest(qp.qpNum(), new SecureRandom().nextInt(1 << 24), mr.rkey(), mr.addr(), dev.gid());
            if (server) {
                serve(dev, pathMtu, qp, cq, buf, me, list);
            } else {
                client(dev, pathMtu, qp, cq, mr, me, list);
            }
        } finally {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
        }
    }

    private void connect(InteropDevice dev, Mtu pathMtu, QueuePair qp, OpsDest me, OpsDest rem) {
        System.out.println(me.describe("local"));
        System.out.println(rem.describe("remote"));
        InetSocketAddress av = dev.peerAddress(rem.gid(), peerUdpPort);
        System.out.println("peer " + av);
        System.out.flush();
        qp.modify(new QpAttr().state(QpState.RTR).av(av).pathMtu(pathMtu).destQpNum(rem.qpn()).rqPsn(rem.psn())
                .maxDestRdAtomic(4).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(ackTimeout).retryCnt(7).rnrRetry(7).sqPsn(me.psn())
                .maxRdAtomic(4));
    }

    // ------------------------------------------------------------------ client

    private void client(InteropDevice dev, Mtu pathMtu, QueuePair qp, CompletionQueue cq, MemoryRegion mr,
            OpsDest me, List<Op> list) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(peer, port), tcpTimeoutSeconds * 1000);
            s.setSoTimeout(tcpTimeoutSeconds * 1000);
            OutputStream out = s.getOutputStream();
            out.write(me.toLine().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            OpsDest rem = OpsDest.parse(readLine(s.getInputStream()));
            connect(dev, pathMtu, qp, me, rem);
            MemorySegment buf = mr.segment();
            for (int i = 0; i < 4096; i++) {
                buf.set(ValueLayout.JAVA_BYTE, i, (byte) ('a' + i % 26));
            }
            runOps(dev, qp, cq, mr, rem, list);
            out.write(OpsDest.DONE.getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }
        System.out.println("client: " + failures.size() + " failures" + (failures.isEmpty() ? "" : " " + failures));
    }

    private void runOps(InteropDevice dev, QueuePair qp, CompletionQueue cq, MemoryRegion mr, OpsDest rem,
            List<Op> list) {
        MemorySegment buf = mr.segment();
        long la = mr.addr();
        int lkey = mr.lkey();
        long ra = rem.vaddr();
        int rkey = rem.rkey();
        Model model = new Model();
        SendWr wr = new SendWr();
        WorkCompletion[] wc = {new WorkCompletion()};
        for (Op op : list) {
            wr.reset();
            WcOpcode expectOp;
            long expectLen;
            switch (op) {
                case WRITE -> {
                    wr.set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(la, 600, lkey)).remote(ra, rkey);
                    expectOp = WcOpcode.RDMA_WRITE;
                    expectLen = 600;
                }
                case WRITEIMM -> {
                    wr.set(1, WrOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED, new Sge(la + 26, 16, lkey))
                            .remote(ra + 1024, rkey).imm(WRITE_IMM);
                    expectOp = WcOpcode.RDMA_WRITE;
                    expectLen = 16;
                }
                case SEND -> {
                    wr.set(1, WrOpcode.SEND, SendFlags.SIGNALED, new Sge(la, 100, lkey));
                    expectOp = WcOpcode.SEND;
                    expectLen = 100;
                }
                case SENDIMM -> {
                    wr.set(1, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED, new Sge(la, 8, lkey)).imm(SEND_IMM);
                    expectOp = WcOpcode.SEND;
                    expectLen = 8;
                }
                case READ -> {
                    buf.asSlice(RECV_OFF, 600).fill((byte) 0);
                    wr.set(1, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(la + RECV_OFF, 600, lkey))
                            .remote(ra, rkey);
                    expectOp = WcOpcode.RDMA_READ;
                    expectLen = 600;
                }
                case CAS -> {
                    buf.set(ValueLayout.JAVA_LONG, 2048, 0x5a5a5a5a5a5a5a5aL);
                    wr.set(1, WrOpcode.ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED, new Sge(la + 2048, 8, lkey))
                            .remote(ra + 2048, rkey).atomic(0, CAS_SWAP);
                    expectOp = WcOpcode.COMP_SWAP;
                    expectLen = 8;
                }
                case FADD -> {
                    buf.set(ValueLayout.JAVA_LONG, 2056, 0x5a5a5a5a5a5a5a5aL);
                    wr.set(1, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, new Sge(la + 2056, 8, lkey))
                            .remote(ra + 2056, rkey).atomic(FADD_ADD, 0);
                    expectOp = WcOpcode.FETCH_ADD;
                    expectLen = 8;
                }
                case AWRITE -> {
                    wr.set(1, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(ra + 2064, rkey);
                    wr.atomicWriteValue = ByteBuffer.wrap(AWRITE_BYTES).order(ByteOrder.nativeOrder()).getLong();
                    expectOp = WcOpcode.ATOMIC_WRITE;
                    expectLen = -1;
                }
                case FLUSH -> {
                    wr.set(1, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(ra, rkey)
                            .flush(Flush.GLOBAL, Flush.RANGE, 4096);
                    expectOp = WcOpcode.FLUSH;
                    expectLen = -1;
                }
                case FLUSHMR -> {
                    wr.set(1, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(ra, rkey).flush(Flush.GLOBAL, Flush.MR, 0);
                    expectOp = WcOpcode.FLUSH;
                    expectLen = -1;
                }
                case READ8 -> {
                    buf.set(ValueLayout.JAVA_LONG, 3000, 0x5a5a5a5a5a5a5a5aL);
                    wr.set(1, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(la + 3000, 8, lkey))
                            .remote(ra + 2064, rkey);
                    expectOp = WcOpcode.RDMA_READ;
                    expectLen = 8;
                }
                default -> throw new IllegalStateException("unhandled op " + op);
            }
            long t0 = System.nanoTime();
            WorkCompletion c;
            try {
                qp.postSend(wr);
                dev.awaitCompletions(cq, wc, stallSeconds);
                c = wc[0];
            } catch (InteropDevice.StallException | IllegalArgumentException | IllegalStateException e) {
                System.out.printf(Locale.ROOT, "  %-9s FAILED: %s%n", op.wireName, e.getMessage());
                failures.add(op.wireName + ": " + e.getMessage());
                break;
            }
            printWc(op.wireName, c, (System.nanoTime() - t0) / 1e6);
            if (c.status != WcStatus.SUCCESS) {
                failures.add(op.wireName + ": " + c);
                break; // the QP is in ERR now, as in rxe_ops
            }
            List<String> bad = new ArrayList<>();
            if (c.opcode != expectOp) {
                bad.add("opcode " + c.opcode + ", expected " + expectOp);
            }
            if (expectLen >= 0 && c.byteLen != expectLen) {
                bad.add("byte_len " + c.byteLen + ", expected " + expectLen);
            }
            switch (op) {
                case WRITE -> {
                    model.write(buf.asSlice(0, 600).toArray(ValueLayout.JAVA_BYTE), 0);
                    if (!noVerify) {
                        verifyRead(dev, qp, cq, mr, rem, 0, model.range(0, 600), "WRITE", bad);
                    }
                }
                case WRITEIMM -> {
                    model.write(buf.asSlice(26, 16).toArray(ValueLayout.JAVA_BYTE), 1024);
                    if (!noVerify) {
                        verifyRead(dev, qp, cq, mr, rem, 1024, model.range(1024, 16), "WRITE_WITH_IMM", bad);
                    }
                }
                case READ -> {
                    byte[] got = buf.asSlice(RECV_OFF, 600).toArray(ValueLayout.JAVA_BYTE);
                    System.out.println("            read back: " + ascii(got, 16));
                    compare(got, model.range(0, 600), "READ", bad);
                }
                case CAS -> {
                    long got = buf.get(ValueLayout.JAVA_LONG, 2048);
                    System.out.printf(Locale.ROOT, "            original value: 0x%016x%n", got);
                    long expect = model.cas(0, CAS_SWAP);
                    if (got != expect) {
                        bad.add(String.format(Locale.ROOT, "CAS returned 0x%016x, expected 0x%016x", got, expect));
                    }
                }
                case FADD -> {
                    long got = buf.get(ValueLayout.JAVA_LONG, 2056);
                    System.out.printf(Locale.ROOT, "            original value: 0x%016x%n", got);
                    long expect = model.fadd(FADD_ADD);
                    if (got != expect) {
                        bad.add(String.format(Locale.ROOT, "FADD returned 0x%016x, expected 0x%016x", got, expect));
                    }
                }
                case AWRITE -> model.write(AWRITE_BYTES, 2064);
                case READ8 -> {
                    byte[] got = buf.asSlice(3000, 8).toArray(ValueLayout.JAVA_BYTE);
                    System.out.printf(Locale.ROOT, "            read back u64 (as stored): 0x%016x%n",
                            buf.get(ValueLayout.JAVA_LONG, 3000));
                    compare(got, model.range(2064, 8), "READ8", bad);
                }
                default -> {
                    // SEND, SEND_WITH_IMM, FLUSH: the completion is the result; the server checks sends
                }
            }
            if (bad.isEmpty()) {
                System.out.println("            check: OK");
            } else {
                System.out.println("            check: FAILED " + bad);
                failures.add(op.wireName + ": " + bad);
            }
        }
    }

    /** READs {@code expect.length} bytes at remote +{@code off} into the verify area and compares. */
    private void verifyRead(InteropDevice dev, QueuePair qp, CompletionQueue cq, MemoryRegion mr, OpsDest rem,
            int off, byte[] expect, String what, List<String> bad) {
        MemorySegment buf = mr.segment();
        buf.asSlice(VERIFY_OFF, expect.length).fill((byte) 0x5a);
        SendWr wr = new SendWr().set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                new Sge(mr.addr() + VERIFY_OFF, expect.length, mr.lkey())).remote(rem.vaddr() + off, rem.rkey());
        WorkCompletion[] wc = {new WorkCompletion()};
        qp.postSend(wr);
        dev.awaitCompletions(cq, wc, stallSeconds);
        if (wc[0].status != WcStatus.SUCCESS) {
            bad.add("verification READ of the " + what + ": " + wc[0]);
            return;
        }
        byte[] got = buf.asSlice(VERIFY_OFF, expect.length).toArray(ValueLayout.JAVA_BYTE);
        System.out.println("            verified by READ: " + ascii(got, 16));
        compare(got, expect, what + " (read back)", bad);
    }

    private static void compare(byte[] got, byte[] expect, String what, List<String> bad) {
        int i = Arrays.mismatch(got, expect);
        if (i >= 0) {
            bad.add(String.format(Locale.ROOT, "%s differs at byte %d: 0x%02x, expected 0x%02x", what, i,
                    i < got.length ? got[i] : 0, i < expect.length ? expect[i] : 0));
        }
    }

    private static void printWc(String what, WorkCompletion c, double millis) {
        System.out.printf(Locale.ROOT, "  %-9s wc: status=%s opcode=%d byte_len=%d%s  (%.1f ms)%n", what,
                RxePingpong.statusString(c.status), c.opcode.value(), c.byteLen,
                (c.wcFlags & WorkCompletion.WC_WITH_IMM) != 0 ? String.format(Locale.ROOT, " imm=0x%08x", c.immData) : "",
                millis);
        if (c.status != WcStatus.SUCCESS && c.vendorErr != 0) {
            System.out.printf(Locale.ROOT, "            vendor_err=0x%x%n", c.vendorErr);
        }
        System.out.flush();
    }

    // ------------------------------------------------------------------ server

    private void serve(InteropDevice dev, Mtu pathMtu, QueuePair qp, CompletionQueue cq, MemorySegment buf,
            OpsDest me, List<Op> expected) throws IOException {
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port), 1);
            ss.setSoTimeout(tcpTimeoutSeconds * 1000);
            System.out.println("rxe-ops: listening on TCP port " + ss.getLocalPort());
            System.out.flush();
            try (Socket s = ss.accept()) {
                s.setSoTimeout(tcpTimeoutSeconds * 1000);
                InputStream in = s.getInputStream();
                OpsDest rem = OpsDest.parse(readLine(in));
                connect(dev, pathMtu, qp, me, rem); // RTS before answering, so the client's first op finds us ready
                OutputStream out = s.getOutputStream();
                out.write(me.toLine().getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String done = readLine(in);
                if (!done.equals("done")) {
                    failures.add("expected \"done\" from the client, got '" + done + "'");
                }
            }
        }
        int expectRecvs = (int) expected.stream()
                .filter(o -> o == Op.WRITEIMM || o == Op.SEND || o == Op.SENDIMM).count();
        List<WorkCompletion> recvs = drain(cq, Math.min(expectRecvs, RECVS));
        for (WorkCompletion c : recvs) {
            System.out.printf(Locale.ROOT, "  recv wc: status=%s opcode=%d byte_len=%d imm=0x%08x%n",
                    RxePingpong.statusString(c.status), c.opcode.value(), c.byteLen,
                    (c.wcFlags & WorkCompletion.WC_WITH_IMM) != 0 ? c.immData : 0);
        }
        System.out.println("server buf[0..15]   = " + ascii(buf.asSlice(0, 16).toArray(ValueLayout.JAVA_BYTE), 16));
        System.out.printf(Locale.ROOT, "server u64@1024     = 0x%016x%n", buf.get(ValueLayout.JAVA_LONG, 1024));
        System.out.printf(Locale.ROOT, "server u64@2048 cas = 0x%016x%n", buf.get(ValueLayout.JAVA_LONG, 2048));
        System.out.printf(Locale.ROOT, "server u64@2056 fadd= 0x%016x%n", buf.get(ValueLayout.JAVA_LONG, 2056));
        System.out.printf(Locale.ROOT, "server u64@2064 aw  = 0x%016x%n", buf.get(ValueLayout.JAVA_LONG, 2064));
        System.out.println("server recv[0..15]  = "
                + ascii(buf.asSlice(RECV_OFF, 16).toArray(ValueLayout.JAVA_BYTE), 16));
        if (!expected.isEmpty()) {
            checkServer(buf, recvs, expected);
        }
    }

    /** Polls receive completions until {@code want} arrived or 2 s passed, then whatever else is there. */
    private static List<WorkCompletion> drain(CompletionQueue cq, int want) {
        List<WorkCompletion> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        WorkCompletion[] wc = {new WorkCompletion()};
        while (true) {
            if (cq.poll(wc) > 0) {
                WorkCompletion c = new WorkCompletion();
                c.copyFrom(wc[0]);
                got.add(c);
                continue;
            }
            if (got.size() >= want || System.nanoTime() > deadline) {
                return got;
            }
            cq.await(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    private void checkServer(MemorySegment buf, List<WorkCompletion> recvs, List<Op> expected) {
        byte[] initial = new byte[BUFSZ];
        for (int i = 0; i < BUFSZ; i++) {
            initial[i] = (byte) (0x40 + i % 26);
        }
        Arrays.fill(initial, 2048, 2048 + 64, (byte) 0);
        byte[] client = new byte[4096];
        for (int i = 0; i < client.length; i++) {
            client[i] = (byte) ('a' + i % 26);
        }
        Model model = new Model(initial);
        List<String> bad = new ArrayList<>();
        int next = 0;
        for (Op op : expected) {
            switch (op) {
                case WRITE -> model.write(Arrays.copyOfRange(client, 0, 600), 0);
                case WRITEIMM -> {
                    model.write(Arrays.copyOfRange(client, 26, 42), 1024);
                    next = checkRecv(recvs, next, WcOpcode.RECV_RDMA_WITH_IMM, 16, WRITE_IMM, null, buf, bad);
                }
                case SEND -> next = checkRecv(recvs, next, WcOpcode.RECV, 100, null,
                        Arrays.copyOfRange(client, 0, 100), buf, bad);
                case SENDIMM -> next = checkRecv(recvs, next, WcOpcode.RECV, 8, SEND_IMM,
                        Arrays.copyOfRange(client, 0, 8), buf, bad);
                case CAS -> model.cas(0, CAS_SWAP);
                case FADD -> model.fadd(FADD_ADD);
                case AWRITE -> model.write(AWRITE_BYTES, 2064);
                default -> {
                    // READ, READ8, FLUSH, FLUSHMR leave the buffer as it is
                }
            }
        }
        if (recvs.size() > next) {
            bad.add((recvs.size() - next) + " unexpected receive completion(s)");
        }
        compare(buf.asSlice(0, RECV_OFF).toArray(ValueLayout.JAVA_BYTE), model.range(0, RECV_OFF),
                "server buffer +0..+4095", bad);
        for (String b : bad) {
            System.out.println("server check FAILED: " + b);
        }
        failures.addAll(bad);
    }

    private static int checkRecv(List<WorkCompletion> recvs, int next, WcOpcode opcode, int len, Integer imm,
            byte[] data, MemorySegment buf, List<String> bad) {
        if (next >= recvs.size()) {
            bad.add("missing receive completion #" + next + " (" + opcode + ", " + len + " bytes)");
            return next + 1;
        }
        WorkCompletion c = recvs.get(next);
        List<String> why = new ArrayList<>();
        if (c.status != WcStatus.SUCCESS || c.opcode != opcode || c.byteLen != len || c.wrId != 100 + next) {
            why.add("got " + c);
        }
        boolean hasImm = (c.wcFlags & WorkCompletion.WC_WITH_IMM) != 0;
        if (imm == null ? hasImm : !hasImm || c.immData != imm) {
            why.add(String.format(Locale.ROOT, "imm %s, expected %s", hasImm ? String.format("0x%08x", c.immData)
                    : "none", imm == null ? "none" : String.format("0x%08x", imm)));
        }
        if (data != null && c.wrId >= 100 && c.wrId < 100 + RECVS) {
            byte[] got = buf.asSlice(RECV_OFF + RECV_LEN * (c.wrId - 100), data.length).toArray(ValueLayout.JAVA_BYTE);
            compare(got, data, "receive #" + next + " payload", why);
        }
        if (!why.isEmpty()) {
            bad.add("receive #" + next + " (" + opcode + "): " + why);
        }
        return next + 1;
    }

    // ------------------------------------------------------------------ helpers

    /** What the server's buffer holds after the ops so far, and what its atomics return. */
    static final class Model {
        private final byte[] mem;

        /** The server buffer of {@code rxe_ops} as its client sees it at the start. */
        Model() {
            this(serverInitial());
        }

        Model(byte[] initial) {
            mem = initial.clone();
        }

        static byte[] serverInitial() {
            byte[] b = new byte[BUFSZ];
            for (int i = 0; i < BUFSZ; i++) {
                b[i] = (byte) (0x40 + i % 26);
            }
            Arrays.fill(b, 2048, 2048 + 64, (byte) 0);
            return b;
        }

        void write(byte[] data, int off) {
            System.arraycopy(data, 0, mem, off, data.length);
        }

        byte[] range(int off, int len) {
            return Arrays.copyOfRange(mem, off, off + len);
        }

        long word(int off) {
            return ByteBuffer.wrap(mem, off, 8).order(ByteOrder.nativeOrder()).getLong();
        }

        void setWord(int off, long v) {
            ByteBuffer.wrap(mem, off, 8).order(ByteOrder.nativeOrder()).putLong(v);
        }

        /** @return the original word at +2048; swaps if it equals {@code compare} */
        long cas(long compare, long swap) {
            long old = word(2048);
            if (old == compare) {
                setWord(2048, swap);
            }
            return old;
        }

        /** @return the original word at +2056, then adds */
        long fadd(long add) {
            long old = word(2056);
            setWord(2056, old + add);
            return old;
        }
    }

    /** {@code %.16s}: up to {@code max} characters, stopping at a NUL. */
    private static String ascii(byte[] b, int max) {
        int n = 0;
        while (n < Math.min(max, b.length) && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
    }

    /** Reads up to and excluding '\n' (at most 256 bytes). */
    static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (line.size() < 256) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("peer closed the TCP connection after '" + line.toString(StandardCharsets.US_ASCII)
                        + "'");
            }
            if (c == '\n') {
                return line.toString(StandardCharsets.US_ASCII);
            }
            line.write(c);
        }
        throw new IOException("line too long: '" + line.toString(StandardCharsets.US_ASCII) + "'");
    }
}
