package io.rxe4j.examples.interop;

import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.MemoryWindow;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.MwBind;
import io.rxe4j.verbs.MwBindInfo;
import io.rxe4j.verbs.MwType;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Memory windows and invalidation against a peer, rxe4j's side of {@code scripts/interop/rxe_mw.c}
 * (same TCP lines, same buffer layout, same tests; that file's header is the protocol's definition).
 * The <b>server</b> binds a type 1 window over the first 4 KiB of its 16 KiB buffer with {@link
 * QueuePair#bindMw} and a type 2B window over the next 4 KiB with a BIND_MW work request, and reports
 * its receive completion; the <b>client</b> runs one test through the server's windows:
 * <ul>
 *   <li>{@code windows}: WRITE and READ back through each window, READ all of window 1, SEND_WITH_INV of
 *       window 2 (the server's receive must carry IBV_WC_WITH_INV and that rkey), then a WRITE through
 *       window 2 must fail with REM_ACCESS_ERR;
 *   <li>{@code localinv}: a WRITE through window 2, then the server's LOCAL_INV of it (asked for with {@code
 *       "inv"}, answered with {@code "INV status"}), then a WRITE through it must fail with REM_ACCESS_ERR;
 *   <li>{@code outside}: a WRITE half outside window 1, inside the MR; its status must be {@code
 *       --expect-outside};
 *   <li>{@code badinv}: SEND_WITH_INV of window 1 (type 1 cannot be invalidated): the sender's
 *       status must be {@code --expect-badinv-send}, the server's receive {@code --expect-badinv-recv}.
 * </ul>
 * Exit code 0 when every check passed.
 */
@Command(name = "rxe-mw", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "Memory windows (type 1 and 2B) and SEND_WITH_INV against a peer running rxe_mw, with checks.")
public final class RxeMwPeer implements Callable<Integer> {
    static final int BUFSZ = 16384;
    static final int WIN = 4096;
    static final int LEN = 600;
    /** IBV_WC_WITH_INV in the server's RECV line (libibverbs' value). */
    static final int IBV_WC_WITH_INV = 1 << 3;
    /**
     * The same flag from a kernel rdma_rxe server: rxe hands user space the kernel's {@code wc_flags},
     * whose IB_WC_WITH_INVALIDATE is bit 2 (libibverbs' IBV_WC_IP_CSUM_OK); pinned by case i1.
     */
    static final int KERNEL_WC_WITH_INVALIDATE = 1 << 2;

    @Parameters(arity = "0..1", paramLabel = "SERVER", description = "server host: be the client (else the server)")
    String peer;

    @Option(names = {"-p", "--port"}, description = "TCP port (default ${DEFAULT-VALUE})")
    int port = 18560;

    @Option(names = {"-g", "--ip"}, required = true, description = "local IP to bind the UDP transport to")
    String ip;

    @Option(names = {"-m", "--mtu"}, description = "path MTU in bytes (default ${DEFAULT-VALUE})")
    int mtu = 1024;

    @Option(names = {"-t", "--test"}, description = "client: windows, localinv, outside or badinv (default ${DEFAULT-VALUE})")
    String test = "windows";

    @Option(names = "--expect-outside", description = "client, test outside: the WRITE's status (default "
            + "${DEFAULT-VALUE}: rdma_rxe checks the MR's bounds only; an rxe4j server refuses it: REM_ACCESS_ERR)")
    WcStatus expectOutside = WcStatus.SUCCESS;

    @Option(names = "--expect-badinv-send", description = "client, test badinv: the SEND_WITH_INV's status "
            + "(default ${DEFAULT-VALUE}: the responder acknowledges it)")
    WcStatus expectBadinvSend = WcStatus.SUCCESS;

    @Option(names = "--expect-badinv-recv", description = "client, test badinv: the server's receive status "
            + "(default ${DEFAULT-VALUE})")
    WcStatus expectBadinvRecv = WcStatus.REM_INV_REQ_ERR;

    @Option(names = "--icrc-check", description = "AUTO (off for IPv4, on for IPv6), ON, OFF (default ${DEFAULT-VALUE})")
    IcrcMode icrcCheck = IcrcMode.AUTO;

    @Option(names = "--stall-timeout", description = "seconds to wait for one completion (default ${DEFAULT-VALUE})")
    long stallSeconds = 20;

    @Option(names = "--tcp-timeout", description = "seconds to wait for the TCP peer (default ${DEFAULT-VALUE})")
    int tcpTimeoutSeconds = 120;

    @Option(names = "--ack-timeout", description = "local ACK timeout exponent, 0..31 (default ${DEFAULT-VALUE})")
    int ackTimeout = io.rxe4j.examples.perf.RxePerf.DEFAULT_ACK_TIMEOUT;

    private final List<String> failures = new ArrayList<>();
    private InteropDevice dev;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemoryRegion mr;
    private MemoryRegion lmr;

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RxeMwPeer()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (!List.of("windows", "localinv", "outside", "badinv").contains(test)) {
            System.err.println("rxe-mw: --test must be windows, localinv, outside or badinv, got " + test);
            return 2;
        }
        try (InteropDevice d = new InteropDevice(InteropDevice.resolve(ip), 4791, icrcCheck, false)) {
            dev = d;
            ProtectionDomain pd = d.device().allocPd();
            mr = pd.allocMr(BUFSZ, Access.LOCAL_WRITE | Access.MW_BIND);
            lmr = pd.allocMr(BUFSZ, Access.LOCAL_WRITE);
            cq = d.device().createCq(16);
            qp = pd.createQp(new QpInitAttr(cq, cq, new QpCaps(8, 8, 1, 1, 0), QpType.RC, false));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                    .accessFlags(Access.REMOTE_READ | Access.REMOTE_WRITE | Access.LOCAL_WRITE));
            try {
                if (peer == null) {
                    server();
                } else {
                    client();
                }
            } catch (InteropDevice.StallException | IOException | IllegalStateException | IllegalArgumentException e) {
                failures.add(e.getMessage());
                System.out.println("rxe-mw: " + e.getMessage());
            } finally {
                System.out.println("rxe4j counters: " + d.counters());
                d.device().closeAll();
            }
        }
        System.out.println((peer == null ? "server" : "client") + ": " + failures.size() + " failures"
                + (failures.isEmpty() ? "" : " " + failures));
        return failures.isEmpty() ? 0 : 1;
    }

    private void toRts(int dqpn, int dpsn, int myPsn, Gid gid) {
        qp.modify(new QpAttr().state(QpState.RTR).av(dev.peerAddress(gid, 4791)).pathMtu(Mtu.ofBytes(mtu))
                .destQpNum(dqpn).rqPsn(dpsn).maxDestRdAtomic(4).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(ackTimeout).retryCnt(7).rnrRetry(7).sqPsn(myPsn)
                .maxRdAtomic(4));
    }

    private WorkCompletion next() {
        WorkCompletion[] out = {new WorkCompletion()};
        dev.awaitCompletions(cq, out, stallSeconds);
        return out[0];
    }

    private void check(boolean ok, String what) {
        if (!ok) {
            failures.add(what);
            System.out.println("FAILED: " + what);
        }
    }

    // ------------------------------------------------------------------ server

    private void server() throws IOException {
        MemorySegment buf = mr.segment();
        for (int i = 0; i < BUFSZ; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) (0x40 + i % 26));
        }
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port));
            ss.setSoTimeout(tcpTimeoutSeconds * 1000);
            System.out.println("listening on TCP " + port);
            System.out.flush();
            try (Socket s = ss.accept()) {
                s.setSoTimeout(tcpTimeoutSeconds * 1000);
                serve(s.getInputStream(), s.getOutputStream());
            }
        }
    }

    private void serve(InputStream in, OutputStream out) throws IOException {
        String[] f = RxeOpsPeer.readLine(in).strip().split(":");
        if (f.length != 4) {
            throw new IOException("malformed client line " + String.join(":", f));
        }
        String clientTest = f[3];
        System.out.println("client QPN 0x" + f[0] + " PSN 0x" + f[1] + " test " + clientTest);
        int myPsn = new SecureRandom().nextInt(1 << 24);
        toRts(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), myPsn, Gid.parseHex(f[2]));
        MemoryWindow mw1 = qp.pd().allocMw(MwType.TYPE_1);
        MemoryWindow mw2 = qp.pd().allocMw(MwType.TYPE_2B);
        int rw = Access.REMOTE_READ | Access.REMOTE_WRITE;
        int rkey1 = qp.bindMw(mw1, new MwBind(1, SendFlags.SIGNALED, new MwBindInfo(mr, mr.addr(), WIN, rw)));
        WorkCompletion wc = next();
        check(wc.status == WcStatus.SUCCESS && wc.opcode == WcOpcode.BIND_MW, "type 1 bind: " + wc);
        int rkey2 = MemoryWindow.incRkey(mw2.rkey());
        qp.postSend(new SendWr().bindMw(2, mw2, rkey2, new MwBindInfo(mr, mr.addr() + WIN, WIN, rw)).signaled());
        wc = next();
        check(wc.status == WcStatus.SUCCESS && wc.opcode == WcOpcode.BIND_MW, "type 2B bind: " + wc);
        qp.postRecv(new RecvWr().set(9, new Sge(lmr.addr(), 4096, lmr.lkey())));
        System.out.printf(Locale.ROOT, "server QPN 0x%06x windows 0x%08x (type 1) 0x%08x (type 2B) over 0x%x%n",
                qp.qpNum(), rkey1, rkey2, mr.addr());
        out.write(String.format(Locale.ROOT, "%06x:%06x:%016x:%08x:%08x:%s%n", qp.qpNum(), myPsn, mr.addr(), rkey1,
                rkey2, dev.gid().toHex()).getBytes(StandardCharsets.US_ASCII));
        out.flush();
        if (clientTest.equals("localinv")) {
            String ask = RxeOpsPeer.readLine(in);
            qp.postSend(new SendWr().localInv(3, rkey2).signaled());
            WorkCompletion inv = next();
            System.out.println("client said '" + ask + "'; LOCAL_INV of 0x" + Integer.toHexString(rkey2) + ": " + inv);
            check(inv.status == WcStatus.SUCCESS && inv.opcode == WcOpcode.LOCAL_INV, "LOCAL_INV: " + inv);
            out.write(String.format(Locale.ROOT, "INV %x%n", inv.status.ordinal()).getBytes(StandardCharsets.US_ASCII));
            out.flush();
        } else if (!clientTest.equals("outside")) {
            WorkCompletion r = next();
            int flags = (r.wcFlags & WorkCompletion.WC_GRH) | ((r.wcFlags & WorkCompletion.WC_WITH_INV) != 0
                    ? IBV_WC_WITH_INV : 0);
            System.out.println("receive: " + r);
            out.write(String.format(Locale.ROOT, "RECV %x %x %08x%n", r.status.ordinal(), flags, r.invalidatedRkey)
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            if (clientTest.equals("windows")) {
                check(r.status == WcStatus.SUCCESS && (r.wcFlags & WorkCompletion.WC_WITH_INV) != 0
                        && r.invalidatedRkey == rkey2, "the receive carries WITH_INV and window 2's rkey: " + r);
            }
        }
        String done = RxeOpsPeer.readLine(in);
        System.out.println("client said '" + done + "'; QP " + qp.state() + (qp.errorReason() != null ? " ("
                + qp.errorReason() + ")" : ""));
        if (clientTest.equals("windows")) {
            for (int i = 0; i < LEN; i++) {
                byte want = (byte) ('a' + i % 26);
                if (mr.segment().get(ValueLayout.JAVA_BYTE, 100 + i) != want
                        || mr.segment().get(ValueLayout.JAVA_BYTE, WIN + 200 + i) != want) {
                    check(false, "the client's WRITEs through the windows are not in the buffer at byte " + i);
                    break;
                }
            }
        }
        mw1.close();
        mw2.close();
    }

    // ------------------------------------------------------------------ client

    private void client() throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(peer, port), tcpTimeoutSeconds * 1000);
            s.setSoTimeout(tcpTimeoutSeconds * 1000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            int myPsn = new SecureRandom().nextInt(1 << 24);
            out.write(String.format(Locale.ROOT, "%06x:%06x:%s:%s%n", qp.qpNum(), myPsn, dev.gid().toHex(), test)
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String[] f = RxeOpsPeer.readLine(in).strip().split(":");
            if (f.length != 6) {
                throw new IOException("malformed server line " + String.join(":", f));
            }
            long va = Long.parseUnsignedLong(f[2], 16);
            int rkey1 = Integer.parseUnsignedInt(f[3], 16);
            int rkey2 = Integer.parseUnsignedInt(f[4], 16);
            System.out.printf(Locale.ROOT, "server QPN 0x%s VADDR 0x%016x windows 0x%08x 0x%08x%n", f[0], va, rkey1, rkey2);
            toRts(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), myPsn, Gid.parseHex(f[5]));
            MemorySegment l = lmr.segment();
            for (int i = 0; i < LEN; i++) {
                l.set(ValueLayout.JAVA_BYTE, i, (byte) ('a' + i % 26));
            }
            switch (test) {
                case "windows" -> windows(in, va, rkey1, rkey2);
                case "localinv" -> {
                    check(op(new SendWr().rdmaWrite(1, va + WIN, rkey2, sge(0, LEN))) == WcStatus.SUCCESS,
                            "WRITE through window 2");
                    out.write("inv\n".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    String line = RxeOpsPeer.readLine(in);
                    System.out.println("server: " + line);
                    check(line.equals("INV 0"), "the server's LOCAL_INV: " + line);
                    WcStatus st = op(new SendWr().rdmaWrite(2, va + WIN, rkey2, sge(0, 16)));
                    check(st == WcStatus.REM_ACCESS_ERR, "a WRITE through the locally invalidated window 2 ended " + st
                            + ", expected REM_ACCESS_ERR");
                }
                case "outside" -> {
                    WcStatus st = op(new SendWr().rdmaWrite(1, va + WIN - 32, rkey1, sge(0, 64)));
                    System.out.println("outside-window WRITE: " + st);
                    check(st == expectOutside, "a WRITE half outside window 1 ended " + st + ", expected " + expectOutside);
                }
                default -> {
                    WcStatus st = op(new SendWr().sendWithInv(1, rkey1, sge(0, 64)));
                    String line = RxeOpsPeer.readLine(in);
                    System.out.println("SEND_WITH_INV of the type 1 window: sender " + st + "; server: " + line);
                    check(st == expectBadinvSend, "the SEND_WITH_INV ended " + st + ", expected " + expectBadinvSend);
                    check(recvStatus(line) == expectBadinvRecv.ordinal(), "the server's receive: " + line + ", expected "
                            + expectBadinvRecv);
                }
            }
            out.write("done\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }
    }

    private void windows(InputStream in, long va, int rkey1, int rkey2) throws IOException {
        MemorySegment l = lmr.segment();
        check(op(new SendWr().rdmaWrite(1, va + 100, rkey1, sge(0, LEN))) == WcStatus.SUCCESS, "WRITE through window 1");
        check(op(new SendWr().rdmaRead(2, va + 100, rkey1, sge(4096, LEN))) == WcStatus.SUCCESS
                && l.asSlice(0, LEN).mismatch(l.asSlice(4096, LEN)) < 0, "READ back through window 1");
        check(op(new SendWr().rdmaWrite(3, va + WIN + 200, rkey2, sge(0, LEN))) == WcStatus.SUCCESS,
                "WRITE through window 2");
        check(op(new SendWr().rdmaRead(4, va + WIN + 200, rkey2, sge(4096, LEN))) == WcStatus.SUCCESS
                && l.asSlice(0, LEN).mismatch(l.asSlice(4096, LEN)) < 0, "READ back through window 2");
        check(op(new SendWr().rdmaRead(5, va, rkey1, sge(8192, WIN))) == WcStatus.SUCCESS, "READ all of window 1");
        for (int i = 0; i < WIN; i++) {
            byte want = (byte) (i >= 100 && i < 100 + LEN ? 'a' + (i - 100) % 26 : 0x40 + i % 26);
            if (l.get(ValueLayout.JAVA_BYTE, 8192 + i) != want) {
                check(false, "window 1 byte " + i + " is " + l.get(ValueLayout.JAVA_BYTE, 8192 + i) + ", expected " + want);
                break;
            }
        }
        check(op(new SendWr().sendWithInv(6, rkey2, sge(0, 64))) == WcStatus.SUCCESS, "SEND_WITH_INV");
        String line = RxeOpsPeer.readLine(in);
        System.out.println("server: " + line);
        String[] r = line.split(" ");
        check(r.length == 4 && recvStatus(line) == 0
                && (Integer.parseInt(r[2], 16) & (IBV_WC_WITH_INV | KERNEL_WC_WITH_INVALIDATE)) != 0
                && Integer.parseUnsignedInt(r[3], 16) == rkey2,
                "the server's receive must carry IBV_WC_WITH_INV with window 2's rkey: " + line);
        WcStatus st = op(new SendWr().rdmaWrite(7, va + WIN, rkey2, sge(0, 16)));
        check(st == WcStatus.REM_ACCESS_ERR, "a WRITE through the invalidated window 2 ended " + st
                + ", expected REM_ACCESS_ERR");
    }

    private static int recvStatus(String line) {
        String[] r = line.split(" ");
        return r.length == 4 && r[0].equals("RECV") ? Integer.parseInt(r[1], 16) : -1;
    }

    private Sge sge(long off, int len) {
        return new Sge(lmr.addr() + off, len, lmr.lkey());
    }

    /** Posts {@code wr} signaled and returns its completion's status. */
    private WcStatus op(SendWr wr) {
        qp.postSend(wr.signaled());
        WorkCompletion wc = next();
        System.out.printf(Locale.ROOT, "  %-13s rkey 0x%08x: %s%s%n", wr.opcode, wr.opcode == io.rxe4j.verbs.WrOpcode
                .SEND_WITH_INV ? wr.invalidateRkey : wr.rkey, wc.status, wc.vendorErr != 0 ? " (NAK 0x"
                + Integer.toHexString(wc.vendorErr) + ")" : "");
        return wc.status;
    }
}
