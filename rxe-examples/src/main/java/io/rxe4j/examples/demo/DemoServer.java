package io.rxe4j.examples.demo;

import static io.rxe4j.examples.demo.DemoLayout.CTRL_LEN;
import static io.rxe4j.examples.demo.DemoLayout.CTRL_OFF;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_LEN;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_OFF;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_SEED;
import static io.rxe4j.examples.demo.DemoLayout.MR_BYTES;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_BLOCK_LEN;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_BLOCK_OFF;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_BYTES;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_SEED;
import static io.rxe4j.examples.demo.DemoLayout.RECV_LEN;
import static io.rxe4j.examples.demo.DemoLayout.RECV_OFF;
import static io.rxe4j.examples.demo.DemoLayout.SEND_IMM;
import static io.rxe4j.examples.demo.DemoLayout.SEND_LEN;
import static io.rxe4j.examples.demo.DemoLayout.SEND_SEED;
import static io.rxe4j.examples.demo.DemoLayout.WRITE_IMM;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.examples.RcEndpoint;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The demo's server process: exposes a 4 MiB MR and a 1 MiB persistent MR backed by a
 * memory-mapped file (by default in a fresh temporary directory, deleted on exit), accepts one
 * connection (IB CM), posts the receives the client's SEND and WRITE_WITH_IMM consume, and checks
 * them when the client is done, together with the block the client wrote into the persistent MR
 * and FLUSHed (in the mapping and, through a separate file read, in the file). Prints {@code
 * LISTENING <cmPort> <udpPort>} once it accepts connections (the rdma_cm port and its device's UDP port). Exit code 0 when every check passed.
 */
@Command(name = "server", mixinStandardHelpOptions = true,
        versionProvider = io.rxe4j.examples.VersionProvider.class, description = "Run the demo server side.")
public final class DemoServer implements Callable<Integer> {
    @Option(names = "--bind", description = "IP to bind the device (UDP) to (default: ${DEFAULT-VALUE})")
    String bind = "127.0.0.1";

    @Option(names = "--udp-port", description = "UDP port of the device; 0 = any (default: ${DEFAULT-VALUE})")
    int udpPort = 0;

    @Option(names = {"--cm-port", "--tcp-port"}, description = "rdma_cm port the connection manager listens on "
            + "(TCP port space, IB CM on QP1); 0 = any (default: ${DEFAULT-VALUE})")
    int cmPort = 0;

    @Option(names = "--pcap", paramLabel = "FILE", description = "write every packet this process sends and receives "
            + "to a pcap file (Wireshark, tshark; its ICRCs check out)")
    java.nio.file.Path pcap;

    @Option(names = "--faults", paramLabel = "<spec>", description = "inject faults into this side's packets, "
            + "FaultSpec syntax, e.g. drop=0.02,dup=0.01,reorder=0.01,corrupt=0.001,dir=out (default: none)")
    String faults;

    @Option(names = "--fault-seed", description = "seed of the fault injector (default: ${DEFAULT-VALUE})")
    long faultSeed = 1;

    @Option(names = "--ack-timeout", description = "local ACK timeout attribute 0..31, 4.096 us x 2^n "
            + "(default: 17, about 537 ms, which survives a cold JVM; with --faults 14, about 67 ms, "
            + "so that each lost tail packet costs less)")
    Integer ackTimeout;

    /** @return the local ACK timeout to use: --ack-timeout, else 14 with faults, else 17 */
    int ackTimeout() {
        return io.rxe4j.examples.RcEndpoint.ackTimeoutFor(ackTimeout, faults != null);
    }

    @Option(names = "--mtu", description = "path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default, or 0: the port's"
            + " active MTU, from the interface's MTU: 1024 on a 1500-byte Ethernet, 4096 on loopback; TID RDMA needs 4096)")
    int mtu;

    /** @return the path MTU asked for, or null (no --mtu, or 0): the port's active MTU */
    private Mtu askedMtu() {
        return mtu == 0 ? null : Mtu.ofBytes(mtu);
    }

    @Option(names = "--pmem-file", description = "file backing the persistent MR (created or grown to 1 MiB; "
            + "default: a file in a new temporary directory, deleted on exit)")
    Path pmemFile;

    @Override
    public Integer call() throws Exception {
        Path tempDir = null;
        Path file = pmemFile;
        if (file == null) {
            tempDir = Files.createTempDirectory("rxe4j-demo-pmem");
            file = tempDir.resolve("pmem.bin");
        }
        try {
            return serve(file);
        } finally {
            if (tempDir != null) {
                Files.deleteIfExists(file);
                Files.deleteIfExists(tempDir);
            }
        }
    }

    private Integer serve(Path file) throws Exception {
        InetAddress ip = InetAddress.getByName(bind);
        try (RcEndpoint ep = new RcEndpoint(new InetSocketAddress(ip, udpPort), MR_BYTES, faults,
                        faultSeed * 31 + 2, pcap);
                RdmaListener listener = ep.listen(cmPort)) {
            ep.registerPmem(file, PMEM_BYTES);
            if (ep.injectsFaults()) {
                System.out.println("fault injection: " + faults + " (seed " + faultSeed + ")");
            }
            System.out.println("persistent MR: " + PMEM_BYTES + " bytes of " + file);
            System.out.println("LISTENING " + listener.port() + " " + ep.address().getPort());
            System.out.flush();
            long base = ep.addr();
            int lkey = ep.lkey();
            // the connection manager creates the QP; its receives are posted before the client is
            // answered, and consumed in order: first by the client's WRITE_WITH_IMM (which needs no
            // buffer), then by its SEND_WITH_IMM, then by its DONE message
            ep.accept(listener, askedMtu(), ackTimeout(), qp -> {
                qp.postRecv(new RecvWr().set(2, new Sge(base + RECV_OFF + RECV_LEN, 16, lkey)));
                qp.postRecv(new RecvWr().set(1, new Sge(base + RECV_OFF, RECV_LEN, lkey)));
                qp.postRecv(new RecvWr().set(3, new Sge(base + CTRL_OFF, CTRL_LEN, lkey)));
            });
            System.out.println("connected: " + ep.connection());
            System.out.println("port active MTU " + ep.activeMtu().bytes() + " (link MTU " + ep.linkMtu() + "), path MTU "
                    + ep.connection().pathMtu().bytes());
            List<String> failures = new ArrayList<>();
            checkReceives(ep, failures);
            // the client's second connection, served from a shared receive queue, and its UD datagrams
            SrqAndUd.serve(ep, listener, ackTimeout(), failures);
            String done = receiveControl(ep);
            if (!done.equals("DONE")) {
                failures.add("expected DONE, got " + done);
            }
            checkPmem(ep.pmem().segment(), file, failures);
            sendVerdict(ep, failures.isEmpty() ? "OK" : "FAIL " + String.join("; ", failures));
            System.out.println(failures.isEmpty() ? "server checks passed: SEND_WITH_IMM and WRITE_WITH_IMM received, "
                    + "flushed block found in the persistent MR and its file, SENDs taken from the SRQ, UD datagrams "
                    + "echoed"
                    : "server checks FAILED: " + failures);
            // the client disconnects once it has read the verdict
            if (!ep.connection().awaitDisconnect(java.time.Duration.ofSeconds(60))) {
                failures.add("the client did not disconnect");
            }
            System.out.println("server: " + ep.connection().disconnectReason());
            System.out.println("server counters: " + ep.counters());
            if (ep.injectsFaults()) {
                System.out.println("server faults injected: " + ep.faultCounts());
            }
            return failures.isEmpty() ? 0 : 1;
        }
    }

    /** Waits for the client's control message (receive WR 3) and returns its text. */
    private static String receiveControl(RcEndpoint ep) {
        WorkCompletion wc = ep.awaitCompletion(60);
        if (wc.status != WcStatus.SUCCESS || wc.wrId != 3 || wc.opcode != WcOpcode.RECV) {
            return "(control receive failed: " + wc + ")";
        }
        byte[] b = new byte[wc.byteLen];
        MemorySegment.copy(ep.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, CTRL_OFF, b, 0, b.length);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** SENDs the verdict (from the MR: it may exceed the inline limit) and waits for its completion. */
    private static void sendVerdict(RcEndpoint ep, String verdict) {
        byte[] b = verdict.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int n = Math.min(b.length, CTRL_LEN);
        MemorySegment.copy(b, 0, ep.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, CTRL_OFF + CTRL_LEN, n);
        ep.postSend(new SendWr().send(4, new Sge(ep.addr() + CTRL_OFF + CTRL_LEN, n, ep.lkey())).signaled());
        WorkCompletion wc = ep.awaitCompletion(60);
        if (wc.status != WcStatus.SUCCESS) {
            System.out.println("verdict SEND failed: " + wc);
        }
    }

    private static void checkReceives(RcEndpoint ep, List<String> failures) {
        boolean sawSend = false;
        boolean sawWriteImm = false;
        for (int i = 0; i < 2; i++) {
            WorkCompletion wc = ep.awaitCompletion(30);
            if (wc.status != WcStatus.SUCCESS) {
                failures.add("receive completion " + wc);
                continue;
            }
            if (wc.opcode == WcOpcode.RECV) {
                sawSend = true;
                if (wc.wrId != 1 || wc.byteLen != SEND_LEN || (wc.wcFlags & WorkCompletion.WC_WITH_IMM) == 0
                        || wc.immData != SEND_IMM) {
                    failures.add("SEND_WITH_IMM completion wrong: " + wc);
                }
                if (!Pattern.matches(ep.segment(), RECV_OFF, SEND_LEN, SEND_SEED)) {
                    failures.add("SEND payload differs from what the client sent");
                }
            } else if (wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
                sawWriteImm = true;
                if (wc.byteLen != IMM_WRITE_LEN || wc.immData != WRITE_IMM) {
                    failures.add("WRITE_WITH_IMM completion wrong: " + wc);
                }
                if (!Pattern.matches(ep.segment(), IMM_WRITE_OFF, IMM_WRITE_LEN, IMM_WRITE_SEED)) {
                    failures.add("WRITE_WITH_IMM data differs from what the client wrote");
                }
            } else {
                failures.add("unexpected receive completion " + wc);
            }
        }
        if (!sawSend || !sawWriteImm) {
            failures.add("missing receive completions (SEND " + sawSend + ", WRITE_WITH_IMM " + sawWriteImm + ")");
        }
    }

    /** The block the client wrote and FLUSHed: in the mapped MR, and in the file read on its own. */
    private static void checkPmem(MemorySegment pmem, Path file, List<String> failures) {
        if (!Pattern.matches(pmem, PMEM_BLOCK_OFF, PMEM_BLOCK_LEN, PMEM_SEED)) {
            failures.add("persistent MR block differs from what the client wrote");
            return;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocate(PMEM_BLOCK_LEN);
            while (buf.hasRemaining() && ch.read(buf, PMEM_BLOCK_OFF + buf.position()) >= 0) {
                // read until full or end of file
            }
            if (buf.hasRemaining() || !Pattern.matches(MemorySegment.ofBuffer(buf.flip()), 0, PMEM_BLOCK_LEN,
                    PMEM_SEED)) {
                failures.add("file " + file + " does not hold the flushed block");
            }
        } catch (IOException e) {
            failures.add("cannot read " + file + ": " + e);
        }
    }
}
