package io.rxe4j.examples.demo;

import static io.rxe4j.examples.demo.DemoLayout.ATOMIC_WRITE_OFF;
import static io.rxe4j.examples.demo.DemoLayout.CTRL_LEN;
import static io.rxe4j.examples.demo.DemoLayout.CTRL_OFF;
import static io.rxe4j.examples.demo.DemoLayout.BULK;
import static io.rxe4j.examples.demo.DemoLayout.BULK_SEED;
import static io.rxe4j.examples.demo.DemoLayout.CAS_OFF;
import static io.rxe4j.examples.demo.DemoLayout.FAA_OFF;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_LEN;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_OFF;
import static io.rxe4j.examples.demo.DemoLayout.IMM_WRITE_SEED;
import static io.rxe4j.examples.demo.DemoLayout.MASKED_CAS_OFF;
import static io.rxe4j.examples.demo.DemoLayout.MASKED_FAA_OFF;
import static io.rxe4j.examples.demo.DemoLayout.MR_BYTES;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_BLOCK_LEN;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_BLOCK_OFF;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_SEED;
import static io.rxe4j.examples.demo.DemoLayout.PMEM_SRC_OFF;
import static io.rxe4j.examples.demo.DemoLayout.READ_BACK_OFF;
import static io.rxe4j.examples.demo.DemoLayout.SCRATCH_OFF;
import static io.rxe4j.examples.demo.DemoLayout.SEND_IMM;
import static io.rxe4j.examples.demo.DemoLayout.SEND_LEN;
import static io.rxe4j.examples.demo.DemoLayout.SEND_SEED;
import static io.rxe4j.examples.demo.DemoLayout.WRITE_IMM;
import static io.rxe4j.examples.demo.DemoLayout.WRITE_OFF;

import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.examples.BufferAdvert;
import io.rxe4j.examples.RcEndpoint;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The demo's client process: connects to {@link DemoServer}, runs every RC operation against the
 * server's MR, checks each result (data byte for byte, atomic return values, the final counter),
 * then the extended operations (masked CAS and field-wise masked FAA, ATOMIC WRITE, and a WRITE
 * into the server's persistent MR made durable with RDMA FLUSH), and prints a table. Exit code 0
 * when every check passed, here and on the server.
 */
@Command(name = "client", mixinStandardHelpOptions = true,
        versionProvider = io.rxe4j.examples.VersionProvider.class, description = "Run the demo client side.")
public final class DemoClient implements Callable<Integer> {
    @Option(names = "--connect", required = true, description = "the server: host:cmPort (its IP and rdma_cm port)")
    String connect;

    @Option(names = "--server-udp-port", description = "UDP port of the server's device (default: ${DEFAULT-VALUE}, "
            + "RoCEv2's)")
    int serverUdpPort = 4791;

    @Option(names = "--bind", description = "IP to bind UDP to (default: ${DEFAULT-VALUE})")
    String bind = "127.0.0.1";

    @Option(names = "--udp-port", description = "UDP port of the device; 0 = any (default: ${DEFAULT-VALUE})")
    int udpPort = 0;

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

    @Option(names = "--atomics", description = "FETCH_AND_ADDs on one counter (default: ${DEFAULT-VALUE})")
    int atomics = 1000;

    private record Row(String op, int count, long bytes, String status, double millis) {}

    private final List<Row> rows = new ArrayList<>();
    private final List<String> failures = new ArrayList<>();
    private RcEndpoint ep;
    private BufferAdvert peer;
    /** The server's TID RDMA parameters once OPFN negotiated them, else null. */
    private io.rxe4j.verbs.TidRdmaParams tid;

    @Override
    public Integer call() throws Exception {
        int colon = connect.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("--connect must be host:port, got " + connect);
        }
        InetAddress ip = InetAddress.getByName(bind);
        try (RcEndpoint e = new RcEndpoint(new InetSocketAddress(ip, udpPort), MR_BYTES, faults, faultSeed * 31 + 1, pcap)) {
            ep = e;
            if (ep.injectsFaults()) {
                System.out.println("fault injection: " + faults + " (seed " + faultSeed + ")");
            }
            // the connection manager creates and connects the QP; the receive for the server's
            // verdict is posted before the server is asked
            InetSocketAddress serverDevice = new InetSocketAddress(connect.substring(0, colon), serverUdpPort);
            int cmPort = Integer.parseInt(connect.substring(colon + 1));
            peer = ep.connect(serverDevice, cmPort, askedMtu(), ackTimeout(),
                    qp -> qp.postRecv(new RecvWr().set(VERDICT_WR, new Sge(ep.addr() + CTRL_OFF, CTRL_LEN, ep.lkey()))));
            System.out.println("connected: " + ep.connection());
            mtu = ep.connection().pathMtu().bytes(); // what the two sides agreed on
            System.out.println("port active MTU " + ep.activeMtu().bytes() + " (link MTU " + ep.linkMtu() + "), path MTU "
                    + mtu);
            runOperations();
            runExtendedOperations();
            int[] udTries = {0};
            op("SEND via server's SRQ", SrqAndUd.SENDS, (long) SrqAndUd.SENDS * SrqAndUd.SEND_LEN, () -> {
                String why = SrqAndUd.run(ep, serverDevice, cmPort, ackTimeout(), udTries);
                return check(why == null, "second connection: " + why);
            });
            rows.add(new Row("UD datagram echo", SrqAndUd.DATAGRAMS, (long) SrqAndUd.DATAGRAMS * SrqAndUd.DATAGRAM_LEN,
                    rows.get(rows.size() - 1).status(), 0));
            System.out.println("second connection: " + SrqAndUd.SENDS + " SENDs into the server's SRQ; "
                    + SrqAndUd.DATAGRAMS + " UD datagrams echoed (" + udTries[0] + " sent)");
            String verdict = exchangeDone();
            rows.add(new Row("server-side checks", 3, 0, verdict.equals("OK") ? "OK" : "FAIL", 0));
            if (!verdict.equals("OK")) {
                failures.add("server: " + verdict);
            }
            printTable();
            ep.connection().disconnect();
            System.out.println("client counters: " + ep.counters());
            if (ep.injectsFaults()) {
                System.out.println("client faults injected: " + ep.faultCounts());
            }
        }
        if (failures.isEmpty()) {
            System.out.println("all checks passed");
            return 0;
        }
        System.out.println("FAILED: " + failures);
        return 1;
    }

    /** wr_id of the receive for the server's verdict. */
    private static final long VERDICT_WR = 90;

    /**
     * SENDs "DONE" (inline from a byte array: no MR needed) and waits for the server's verdict, a
     * SEND into the receive posted at connect time; the two completions may come in either order.
     */
    private String exchangeDone() {
        ep.postSend(new SendWr().send(91).inline("DONE".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                .signaled());
        String verdict = null;
        for (int i = 0; i < 2; i++) {
            WorkCompletion wc = ep.awaitCompletion(120);
            if (wc.status != WcStatus.SUCCESS) {
                return "(control message failed: " + wc + ")";
            }
            if (wc.wrId == VERDICT_WR) {
                byte[] b = new byte[wc.byteLen];
                MemorySegment.copy(ep.segment(), ValueLayout.JAVA_BYTE, CTRL_OFF, b, 0, b.length);
                verdict = new String(b, java.nio.charset.StandardCharsets.UTF_8);
            }
        }
        return verdict != null ? verdict : "(no verdict received)";
    }

    private void runOperations() {
        MemorySegment mem = ep.segment();
        long local = ep.addr();
        int lkey = ep.lkey();
        long remote = peer.va();
        int rkey = peer.rkey();
        SendWr wr = new SendWr();

        // OPFN: the first packets carry BTH bit 24; both sides exchange their TID RDMA parameters
        // (hidden COMPARE_SWAPs, no completions) when the path MTU is 4096
        op("WRITE 8 B + OPFN", 1, 8, () -> {
            mem.set(ValueLayout.JAVA_LONG, SCRATCH_OFF, 0L);
            boolean ok = post(wr.set(20, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(local + SCRATCH_OFF, 8, lkey)).remote(remote + SCRATCH_OFF, rkey), WcOpcode.RDMA_WRITE, 8);
            long deadline = System.nanoTime() + 5_000_000_000L;
            boolean tidPossible = mtu == 4096 && ep.activeMtu().bytes() == 4096;
            while (ok && ep.tidRdma() == null && System.nanoTime() < deadline && tidPossible) {
                Thread.onSpinWait();
            }
            tid = ep.tidRdma();
            System.out.println(tid != null ? "OPFN: TID RDMA negotiated with the server: " + tid
                    : "OPFN: TID RDMA not negotiated (path MTU " + mtu + ", port active MTU " + ep.activeMtu().bytes()
                            + "; it needs 4096 for both)");
            return ok && (!tidPossible || check(tid != null, "OPFN did not negotiate TID RDMA within 5 s"));
        });
        // RDMA WRITE 1 MiB, then READ it back and compare byte for byte (with TID RDMA negotiated
        // they are a TID WRITE and a TID READ of 4 segments each: one WRITE_REQ, 4 WRITE_RESPs, 256
        // data packets and 4 TID ACKs; 4 READ_REQs and 256 READ_RESPs)
        long tidWrites = ep.counter("tid_write_segments_acked");
        long tidReads = ep.counter("tid_read_segments_done");
        Pattern.fill(mem, WRITE_OFF, BULK, BULK_SEED);
        op("RDMA_WRITE", 1, BULK, () -> post(wr.set(1, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                new Sge(local + WRITE_OFF, BULK, lkey)).remote(remote + WRITE_OFF, rkey), WcOpcode.RDMA_WRITE, BULK));
        op("RDMA_READ", 1, BULK, () -> {
            boolean ok = post(wr.set(2, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(local + READ_BACK_OFF, BULK, lkey)).remote(remote + WRITE_OFF, rkey), WcOpcode.RDMA_READ, BULK);
            return ok && check(Pattern.matches(mem, READ_BACK_OFF, BULK, BULK_SEED),
                    "READ returned different bytes than WRITE stored");
        });
        if (tid != null) {
            long w = ep.counter("tid_write_segments_acked") - tidWrites;
            long r = ep.counter("tid_read_segments_done") - tidReads;
            op("check: went as TID RDMA", 2, 2L * BULK, () -> {
                System.out.println("TID RDMA: the 1 MiB WRITE went as " + w + " TID WRITE segments, the READ as " + r
                        + " TID READ segments (tid_write_segments_acked, tid_read_segments_done; the 256 KiB"
                        + " WRITE and READ of the persistent MR below go as TID RDMA too, one segment each)");
                return check(w == BULK / (256 << 10) && r == BULK / (256 << 10),
                        "expected 4 TID WRITE and 4 TID READ segments, got " + w + " and " + r);
            });
        }
        // zero-length WRITE and READ (no rkey check, C9-88)
        op("RDMA_WRITE 0 B", 1, 0, () -> post(wr.set(3, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED).remote(0, 0),
                WcOpcode.RDMA_WRITE, 0));
        op("RDMA_READ 0 B", 1, 0, () -> post(wr.set(4, WrOpcode.RDMA_READ, SendFlags.SIGNALED).remote(0, 0),
                WcOpcode.RDMA_READ, 0));
        // WRITE_WITH_IMM: the server checks its RECV_RDMA_WITH_IMM completion and the data
        Pattern.fill(mem, IMM_WRITE_OFF, IMM_WRITE_LEN, IMM_WRITE_SEED);
        op("RDMA_WRITE_WITH_IMM", 1, IMM_WRITE_LEN, () -> post(wr.set(5, WrOpcode.RDMA_WRITE_WITH_IMM,
                SendFlags.SIGNALED, new Sge(local + IMM_WRITE_OFF, IMM_WRITE_LEN, lkey))
                .remote(remote + IMM_WRITE_OFF, rkey).imm(WRITE_IMM), WcOpcode.RDMA_WRITE, IMM_WRITE_LEN));
        // SEND_WITH_IMM: the server checks the payload and the immediate
        Pattern.fill(mem, SCRATCH_OFF - SEND_LEN, SEND_LEN, SEND_SEED);
        op("SEND_WITH_IMM", 1, SEND_LEN, () -> post(wr.set(6, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED,
                new Sge(local + SCRATCH_OFF - SEND_LEN, SEND_LEN, lkey)).imm(SEND_IMM), WcOpcode.SEND, SEND_LEN));
        // CMP_AND_SWP: set the word to 42 with a WRITE, swap 42 -> 7, then a failing compare
        op("ATOMIC_CMP_AND_SWP", 2, 16, () -> {
            mem.set(ValueLayout.JAVA_LONG, SCRATCH_OFF, 42L);
            boolean ok = post(wr.set(7, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(local + SCRATCH_OFF, 8, lkey)).remote(remote + CAS_OFF, rkey), WcOpcode.RDMA_WRITE, 8);
            ok &= post(atomic(wr, 8, WrOpcode.ATOMIC_CMP_AND_SWP, local + SCRATCH_OFF, lkey, remote + CAS_OFF, rkey,
                    42, 7), WcOpcode.COMP_SWAP, 8);
            ok &= check(mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) == 42, "CAS did not return the old value 42");
            ok &= post(atomic(wr, 9, WrOpcode.ATOMIC_CMP_AND_SWP, local + SCRATCH_OFF, lkey, remote + CAS_OFF, rkey,
                    42, 9), WcOpcode.COMP_SWAP, 8);
            ok &= check(mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) == 7, "failed CAS did not return the current 7");
            ok &= post(wr.set(10, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(local + SCRATCH_OFF, 8, lkey))
                    .remote(remote + CAS_OFF, rkey), WcOpcode.RDMA_READ, 8);
            return ok && check(mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) == 7, "word after CAS is not 7");
        });
        // FETCH_AND_ADD x N on one counter: each returns the running total
        long add = 3;
        op("ATOMIC_FETCH_AND_ADD", atomics, 8L * atomics, () -> {
            boolean ok = true;
            for (int i = 0; i < atomics && ok; i++) {
                ok = post(atomic(wr, 100 + i, WrOpcode.ATOMIC_FETCH_AND_ADD, local + SCRATCH_OFF, lkey,
                        remote + FAA_OFF, rkey, add, 0), WcOpcode.FETCH_ADD, 8);
                ok = ok && check(mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) == add * i,
                        "FETCH_AND_ADD #" + i + " returned " + mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF));
            }
            ok = ok && post(wr.set(11, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(local + SCRATCH_OFF, 8, lkey))
                    .remote(remote + FAA_OFF, rkey), WcOpcode.RDMA_READ, 8);
            if (ok) {
                System.out.println("final counter after " + atomics + " FETCH_AND_ADDs of " + add + ": "
                        + mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) + " (expected " + add * atomics + ")");
            }
            return ok && check(mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) == add * atomics,
                    "final counter " + mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF) + " != " + add * atomics);
        });
    }

    /**
     * The extended operations ({@code docs/extended-ops.md}): masked atomics and ATOMIC WRITE on
     * the server's ordinary MR, WRITE + FLUSH on its persistent MR. Each result is read back with
     * an RDMA READ rather than trusted from the completion alone.
     */
    private void runExtendedOperations() {
        MemorySegment mem = ep.segment();
        long local = ep.addr();
        int lkey = ep.lkey();
        long remote = peer.va();
        int rkey = peer.rkey();
        SendWr wr = new SendWr();

        // Masked CAS: compare only the low 16 bits, swap only the high 16 bits. The first compare
        // value differs from the word in unmasked bits (ignored), so it swaps; the second differs
        // in a masked bit, so it does not. Both return the original word.
        op("MASKED_CMP_AND_SWP", 2, 16, () -> {
            long initial = 0x1111_2222_3333_4444L;
            long swapped = 0xAAAA_2222_3333_4444L;
            boolean ok = writeWord(wr, 20, initial, remote + MASKED_CAS_OFF, rkey);
            wr.reset().set(21, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED,
                    new Sge(local + SCRATCH_OFF, 8, lkey)).remote(remote + MASKED_CAS_OFF, rkey)
                    .atomic(0xDEAD_BEEF_0000_4444L, 0xAAAA_FFFF_FFFF_FFFFL).masks(0xFFFFL, 0xFFFF_0000_0000_0000L);
            ok = ok && post(wr, WcOpcode.MASKED_COMP_SWAP, 8)
                    && checkWord(mem, initial, "masked CAS (match) returned");
            ok = ok && readWord(wr, 22, remote + MASKED_CAS_OFF, rkey)
                    && checkWord(mem, swapped, "word after the matching masked CAS is");
            wr.reset().set(23, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED,
                    new Sge(local + SCRATCH_OFF, 8, lkey)).remote(remote + MASKED_CAS_OFF, rkey)
                    .atomic(0xAAAA_2222_3333_4445L, 0L).masks(0xFFFFL, -1L);
            ok = ok && post(wr, WcOpcode.MASKED_COMP_SWAP, 8)
                    && checkWord(mem, swapped, "masked CAS (mismatch) returned");
            ok = ok && readWord(wr, 24, remote + MASKED_CAS_OFF, rkey)
                    && checkWord(mem, swapped, "word after the failing masked CAS is");
            if (ok) {
                System.out.printf(Locale.ROOT, "masked CAS: %016x -> %016x (compare mask 0xffff, swap mask "
                        + "0xffff000000000000); mismatch left it unchanged%n", initial, swapped);
            }
            return ok;
        });

        // Masked FAA on four fields of 8, 8, 16 and 32 bits (boundary bits 7, 15, 31, 63 mark each
        // field's top bit). Every field overflows on the first add; no carry may reach the next field.
        op("MASKED_FETCH_AND_ADD", 2, 16, () -> {
            long boundary = (1L << 7) | (1L << 15) | (1L << 31) | (1L << 63);
            long initial = 0x0000_0001_FFFE_7FFFL; // fields: 0x00000001 | 0xfffe | 0x7f | 0xff
            long add = 0xFFFF_FFFF_0003_8101L;     // fields: 0xffffffff | 0x0003 | 0x81 | 0x01
            long once = 0x0000_0000_0001_0000L;    // 0x00000000 | 0x0001 | 0x00 | 0x00
            long twice = 0xFFFF_FFFF_0004_8101L;   // 0xffffffff | 0x0004 | 0x81 | 0x01
            boolean ok = check(rippleFieldAdd(initial, add, boundary) == once
                    && rippleFieldAdd(once, add, boundary) == twice, "reference field add disagrees with the table");
            ok = ok && writeWord(wr, 30, initial, remote + MASKED_FAA_OFF, rkey);
            long expectOriginal = initial;
            for (int i = 0; i < 2 && ok; i++) {
                wr.reset().set(31 + i, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                        new Sge(local + SCRATCH_OFF, 8, lkey)).remote(remote + MASKED_FAA_OFF, rkey)
                        .atomic(add, 0).masks(boundary, 0);
                ok = post(wr, WcOpcode.MASKED_FETCH_ADD, 8)
                        && checkWord(mem, expectOriginal, "masked FAA #" + i + " returned");
                expectOriginal = rippleFieldAdd(expectOriginal, add, boundary);
                ok = ok && readWord(wr, 33 + i, remote + MASKED_FAA_OFF, rkey)
                        && checkWord(mem, expectOriginal, "word after masked FAA #" + i + " is");
            }
            if (ok) {
                System.out.printf(Locale.ROOT, "masked FAA (boundary %016x): %016x -> %016x -> %016x "
                        + "(a plain add would give %016x)%n", boundary, initial, once, twice, initial + add);
            }
            return ok;
        });

        // ATOMIC WRITE: one untorn 64-bit store of the WR's 8 bytes, then READ it back.
        op("ATOMIC_WRITE", 1, 8, () -> {
            long value = 0x0123_4567_89AB_CDEFL;
            boolean ok = writeWord(wr, 40, 0, remote + ATOMIC_WRITE_OFF, rkey);
            wr.reset().set(41, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(remote + ATOMIC_WRITE_OFF, rkey);
            wr.atomicWriteValue = value;
            ok = ok && post(wr, WcOpcode.ATOMIC_WRITE, 8);
            return ok && readWord(wr, 42, remote + ATOMIC_WRITE_OFF, rkey)
                    && checkWord(mem, value, "word after ATOMIC WRITE is");
        });

        if (!check(peer.hasPmem(), "the server advertised no persistent MR")) {
            rows.add(new Row("FLUSH (no pmem MR)", 0, 0, "FAIL", 0));
            return;
        }
        long pmem = peer.pmemVa();
        int pmemRkey = peer.pmemRkey();
        // WRITE a seeded block into the persistent MR; the server checks the MR and its file at the end
        Pattern.fill(mem, PMEM_SRC_OFF, PMEM_BLOCK_LEN, PMEM_SEED);
        op("RDMA_WRITE pmem", 1, PMEM_BLOCK_LEN, () -> post(wr.reset().set(50, WrOpcode.RDMA_WRITE,
                SendFlags.SIGNALED, new Sge(local + PMEM_SRC_OFF, PMEM_BLOCK_LEN, lkey))
                .remote(pmem + PMEM_BLOCK_OFF, pmemRkey), WcOpcode.RDMA_WRITE, PMEM_BLOCK_LEN));
        // FLUSH that range with persistence and global visibility: acknowledged only once forced to the file
        op("FLUSH PERSIST|GLOBAL RANGE", 1, PMEM_BLOCK_LEN, () -> post(wr.reset().set(51, WrOpcode.FLUSH,
                SendFlags.SIGNALED).remote(pmem + PMEM_BLOCK_OFF, pmemRkey)
                .flush(Flush.PERSISTENT | Flush.GLOBAL, Flush.RANGE, PMEM_BLOCK_LEN), WcOpcode.FLUSH, PMEM_BLOCK_LEN));
        // FLUSH level MR: the whole MR named by the rkey (address and length ignored by the responder)
        op("FLUSH PERSIST|GLOBAL MR", 1, peer.pmemLength(), () -> post(wr.reset().set(52, WrOpcode.FLUSH,
                SendFlags.SIGNALED).remote(pmem, pmemRkey)
                .flush(Flush.PERSISTENT | Flush.GLOBAL, Flush.MR, peer.pmemLength()), WcOpcode.FLUSH,
                peer.pmemLength()));
        // and READ the block back from the persistent MR
        op("RDMA_READ pmem", 1, PMEM_BLOCK_LEN, () -> {
            boolean ok = post(wr.reset().set(53, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                    new Sge(local + READ_BACK_OFF, PMEM_BLOCK_LEN, lkey)).remote(pmem + PMEM_BLOCK_OFF, pmemRkey),
                    WcOpcode.RDMA_READ, PMEM_BLOCK_LEN);
            return ok && check(Pattern.matches(mem, READ_BACK_OFF, PMEM_BLOCK_LEN, PMEM_SEED),
                    "READ from the persistent MR returned different bytes than WRITE stored");
        });
    }

    /** Sets the remote word at {@code remoteVa} to {@code value} with an 8-byte RDMA WRITE. */
    private boolean writeWord(SendWr wr, long id, long value, long remoteVa, int rkey) {
        ep.segment().set(ValueLayout.JAVA_LONG, SCRATCH_OFF + 8, value);
        return post(wr.reset().set(id, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                new Sge(ep.addr() + SCRATCH_OFF + 8, 8, ep.lkey())).remote(remoteVa, rkey), WcOpcode.RDMA_WRITE, 8);
    }

    /** READs the remote word at {@code remoteVa} into the scratch word. */
    private boolean readWord(SendWr wr, long id, long remoteVa, int rkey) {
        ep.segment().set(ValueLayout.JAVA_LONG, SCRATCH_OFF, 0x5A5A_5A5A_5A5A_5A5AL); // poison
        return post(wr.reset().set(id, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                new Sge(ep.addr() + SCRATCH_OFF, 8, ep.lkey())).remote(remoteVa, rkey), WcOpcode.RDMA_READ, 8);
    }

    /** Checks the scratch word (an atomic's returned value or a READ's result). */
    private boolean checkWord(MemorySegment mem, long expect, String what) {
        long got = mem.get(ValueLayout.JAVA_LONG, SCRATCH_OFF);
        return check(got == expect, String.format(Locale.ROOT, "%s %016x, expected %016x", what, got, expect));
    }

    /**
     * The masked FETCH_AND_ADD definition ({@code extensions.md} §2) written as the bit-serial
     * ripple add it describes, independent of the engine's implementation: the carry out of bit i
     * goes into bit i + 1 only if bit i of {@code boundary} is clear.
     */
    static long rippleFieldAdd(long a, long b, long boundary) {
        long sum = 0;
        long carry = 0;
        for (int i = 0; i < 64; i++) {
            long s = ((a >>> i) & 1) + ((b >>> i) & 1) + carry;
            sum |= (s & 1) << i;
            carry = ((boundary >>> i) & 1) == 0 ? s >>> 1 : 0;
        }
        return sum;
    }

    private static SendWr atomic(SendWr wr, long id, WrOpcode op, long local, int lkey, long remote, int rkey,
            long compareAdd, long swap) {
        wr.set(id, op, SendFlags.SIGNALED, new Sge(local, 8, lkey)).remote(remote, rkey);
        wr.compareAdd = compareAdd;
        wr.swap = swap;
        return wr;
    }

    @FunctionalInterface
    private interface Step {
        boolean run() throws Exception;
    }

    private void op(String name, int count, long bytes, Step step) {
        long t0 = System.nanoTime();
        boolean ok;
        try {
            ok = step.run();
        } catch (Exception e) {
            failures.add(name + ": " + e);
            ok = false;
        }
        rows.add(new Row(name, count, bytes, ok ? "OK" : "FAIL", (System.nanoTime() - t0) / 1e6));
    }

    private boolean post(SendWr wr, WcOpcode expect, long byteLen) {
        ep.postSend(wr);
        WorkCompletion wc = ep.awaitCompletion(60);
        if (wc.status != WcStatus.SUCCESS || wc.opcode != expect || wc.byteLen != byteLen || wc.wrId != wr.wrId) {
            failures.add("wr " + wr.wrId + " " + wr.opcode + ": " + wc);
            return false;
        }
        return true;
    }

    private boolean check(boolean cond, String what) {
        if (!cond) {
            failures.add(what);
        }
        return cond;
    }

    private void printTable() {
        System.out.printf(Locale.ROOT, "%-26s %8s %10s %-6s %10s%n", "operation", "count", "bytes", "status", "time(ms)");
        for (Row r : rows) {
            System.out.printf(Locale.ROOT, "%-26s %8d %10d %-6s %10.2f%n", r.op, r.count, r.bytes, r.status, r.millis);
        }
    }
}
