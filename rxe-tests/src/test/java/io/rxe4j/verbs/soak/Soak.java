package io.rxe4j.verbs.soak;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
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
import io.rxe4j.net.fault.Direction;
import io.rxe4j.net.fault.FaultAction;
import io.rxe4j.net.fault.FaultInjectingTransport;
import io.rxe4j.net.fault.FaultSpec;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A seeded soak of mixed RC operations over a lossy network: device A's QPs issue SEND, WRITE,
 * READ, CAS, FAA, masked CAS/FAA, ATOMIC WRITE and FLUSH against device B's memory while both
 * devices' outbound packets are dropped, duplicated, reordered and corrupted by a {@link
 * FaultInjectingTransport}. Every result is checked against a reference model applied in posting
 * order per QP (each QP owns a disjoint region of B's memory, so per-QP order is the whole truth).
 *
 * <p>Two networks ({@link Network}): {@link Network#SIM} (default) is an {@link InJvmFabric} on a
 * {@link VirtualScheduler}, single-threaded on virtual time, so a run is bit-for-bit reproducible
 * from its seed. {@link Network#UDP} binds two {@link UdpTransport}s on the loopback address, each
 * with its own Netty event loop, and waits for completions in real time; it is seeded (the same
 * workload generator and fault generators) but <em>not</em> reproducible, because which QP posts
 * next, and so which packet meets which random draw, depends on thread timing.
 */
public final class Soak {
    /** Which network the two devices talk over. */
    public enum Network {
        /** {@link InJvmFabric} on a {@link VirtualScheduler}: virtual time, reproducible from the seed. */
        SIM,
        /** Two {@link UdpTransport}s on the loopback address: real time, seeded but not reproducible. */
        UDP;

        /** @return the network named {@code sim} or {@code udp} (case-insensitive) */
        public static Network of(String name) {
            return switch (name.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "sim" -> SIM;
                case "udp" -> UDP;
                default -> throw new IllegalArgumentException("soak transport must be sim or udp, got '" + name + "'");
            };
        }
    }

    /** Result of a run; {@code virtualNanos} is -1 on {@link Network#UDP}. */
    public record Result(Network network, long seed, int ops, long virtualNanos, long realNanos, long faults,
            Map<String, Long> faultsByKind, Map<String, Long> countersA, Map<String, Long> countersB, UdStats ud) {
        @Override
        public String toString() {
            return "soak transport=" + network.name().toLowerCase(java.util.Locale.ROOT) + " seed=" + seed + " ops="
                    + ops + " virtual=" + (virtualNanos < 0 ? "n/a" : virtualNanos / 1_000_000 + " ms") + " real="
                    + realNanos / 1_000_000 + " ms faults=" + faults + " " + faultsByKind + "\n  A " + countersA
                    + "\n  B " + countersB + (ud.sent() > 0 ? "\n  " + ud : "");
        }
    }

    /**
     * The UD datagrams of a run with {@code srqAndUd}: sent, received (each whole and its own bytes, or
     * the run fails), the distinct ones among them, and how many receive completions the SRQ served.
     */
    public record UdStats(long sent, long received, long distinct, long srqReceives) {}

    static final int QPS = 4;
    static final int DEPTH = 32;
    static final int SLOT = 4096;
    static final int REGION = 64 << 10;
    static final int WORDS = 8;
    static final int RECV_SLOTS = 64;
    static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
            | Access.FLUSH_GLOBAL;
    /** SIM: virtual nanoseconds without any completion before the run is declared stuck. */
    static final long MAX_WAIT = 60_000_000_000L;
    /** UDP: real nanoseconds without any completion before the run is declared stuck. */
    static final long MAX_REAL_WAIT = 20_000_000_000L;
    /** Local ACK timeout exponent on SIM: 4.096 µs × 2^8 ≈ 1.05 ms of virtual time. */
    static final int SIM_ACK_TIMEOUT = 8;
    /**
     * Local ACK timeout exponent on UDP: 4.096 µs × 2^13 ≈ 33.6 ms, long enough not to fire on
     * every scheduling hiccup of a busy 2-core machine, short enough that hundreds of timeouts fit
     * in seconds.
     */
    static final int UDP_ACK_TIMEOUT = 13;
    /**
     * retry_cnt of every QP: finite (since rxe4j counts 7 as seven retries, any value is), and
     * below 7 so that a run in which retries pile up without progress fails instead of recovering
     * slowly. A WQE that runs out fails the soak ({@code retry_exceeded_err} must stay 0).
     */
    static final int RETRY_CNT = 6;
    /** TID mode: TID operations a QP may have in flight, each on a slot of its own. */
    static final int TID_SLOTS = 4;
    /** TID mode: bytes of one slot (local buffer and remote region each). */
    static final int TID_SLOT = 512 << 10;
    /** TID mode: each QP's local buffers for its TID operations in flight, bytes. */
    static final int TID_BUF = TID_SLOTS * TID_SLOT;
    /** TID mode: each QP's region of B's memory that only TID READs and WRITEs touch, bytes. */
    static final int TID_REGION = TID_SLOTS * TID_SLOT;
    /** TID mode: percentage of operations that are a large (TID-qualifying) READ or WRITE. */
    static final int TID_PERCENT = 6;

    private final long seed;
    private final int totalOps;
    private final String faultSpec;
    private final Network network;
    private final boolean tid;
    private final boolean srqAndUd;
    private final SplittableRandom rnd;
    /** TID mode: which slots of each QP have a TID operation in flight. */
    private final boolean[][] tidBusy = new boolean[QPS][TID_SLOTS];
    private MemoryRegion localTid;
    private MemoryRegion remoteTid;
    private byte[][] tidModel;
    private final java.util.ArrayDeque<String> trace = new java.util.ArrayDeque<>();
    private UdpTransport udpA;
    private UdpTransport udpB;

    /**
     * @param seed seeds the workload and the faults
     * @param totalOps operations to post
     * @param faultSpec {@link FaultSpec} applied to the outbound packets of both devices
     */
    public Soak(long seed, int totalOps, String faultSpec) {
        this(seed, totalOps, faultSpec, Network.SIM);
    }

    /**
     * @param seed seeds the workload and the faults
     * @param totalOps operations to post
     * @param faultSpec {@link FaultSpec} applied to the outbound packets of both devices
     * @param network the network to run over
     */
    public Soak(long seed, int totalOps, String faultSpec, Network network) {
        this(seed, totalOps, faultSpec, network, false);
    }

    /**
     * @param tid TID mode: both devices negotiate TID RDMA (OPFN, path MTU 4096) and {@value
     *     #TID_PERCENT}% of the operations are READs or WRITEs of 256 … 512 KiB, 4 KiB aligned, on a
     *     region of their own (up to {@value #TID_SLOTS} in flight per QP, on disjoint slots, so that
     *     several TID WRITEs share the responder's TID WRITE ring), carried as TID RDMA READ and
     *     WRITE; memory is checked against the model as for every other operation
     */
    public Soak(long seed, int totalOps, String faultSpec, Network network, boolean tid) {
        this(seed, totalOps, faultSpec, network, tid, false);
    }

    /**
     * @param srqAndUd B's RC QPs take their receives from one shared receive queue (each SEND's payload
     *     is checked wherever the SRQ put it), and a UD QP of A sends B's UD QP a datagram every {@value
     *     #UD_EVERY} operations (up to {@value #UD_OUTSTANDING} outstanding) through the same faults:
     *     every datagram that arrives must be whole and its own, none is ever retried
     */
    public Soak(long seed, int totalOps, String faultSpec, Network network, boolean tid, boolean srqAndUd) {
        this.seed = seed;
        this.totalOps = totalOps;
        this.faultSpec = faultSpec;
        this.network = network;
        this.tid = tid;
        this.srqAndUd = srqAndUd;
        this.rnd = new SplittableRandom(seed);
    }

    /** srqAndUd: one datagram per this many operations posted. */
    static final int UD_EVERY = 16;
    /** srqAndUd: datagrams outstanding at A at most. */
    static final int UD_OUTSTANDING = 8;
    /** srqAndUd: receive buffers B's UD QP keeps posted. */
    static final int UD_RECVS = 64;
    /** srqAndUd: the largest datagram payload, bytes (within every transport's active MTU). */
    static final int UD_MAX = 1024;
    static final int UD_QKEY = 0x11111111;

    /** The byte {@code i} of datagram {@code seq} (its first four bytes are {@code seq}, big-endian). */
    static byte udByte(long seq, int i) {
        return i < 4 ? (byte) (seq >>> (24 - 8 * i)) : (byte) (seq * 131 + i * 7);
    }

    static int udLength(long seq) {
        return 16 + (int) (seq * 37 % (UD_MAX - 16));
    }

    private final class Pending {
        long wrId;
        WrOpcode op;
        byte[] expectData; // READ
        int readOff; // READ: offset in the QP's region
        boolean tid; // a TID-qualifying READ/WRITE on the QP's TID region
        int tidSlot; // its slot

        long expectValue; // atomics: original value
        int qp;
        int slot;
    }

    /** Runs the soak; throws AssertionError (with the seed) on the first mismatch. */
    public Result run() {
        long t0 = System.nanoTime();
        boolean sim = network == Network.SIM;
        VirtualScheduler vs = sim ? new VirtualScheduler() : null;
        InJvmFabric fabric = sim ? InJvmFabric.withScheduler(vs) : null;
        FaultInjectingTransport ta;
        FaultInjectingTransport tb;
        if (sim) {
            ta = new FaultInjectingTransport(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)),
                    seed * 31 + 1, FaultSpec.parse(faultSpec));
            tb = new FaultInjectingTransport(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)),
                    seed * 31 + 2, FaultSpec.parse(faultSpec));
        } else {
            InetSocketAddress loopback = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
            udpA = UdpTransport.bind(loopback);
            udpB = UdpTransport.bind(loopback);
            ta = new FaultInjectingTransport(udpA, seed * 31 + 1, FaultSpec.parse(faultSpec));
            tb = new FaultInjectingTransport(udpB, seed * 31 + 2, FaultSpec.parse(faultSpec));
        }
        if (sim && Boolean.getBoolean("rxe4j.soak.trace")) {
            fabric.setFilter((buf, from, to) -> {
                int at = buf.readerIndex();
                int op = buf.getUnsignedByte(at);
                boolean tidOp = op >= 0xE0 && op <= 0xE7;
                trace.addLast(String.format("%s->%s op=%02x psn=%06x qp=%x len=%d syn=%s", from.getAddress().getHostAddress(),
                        to.getAddress().getHostAddress(), op, buf.getInt(at + 8) & 0xFFFFFF,
                        tidOp ? buf.getInt(at + 12 + 32) & 0xFFFFFF : buf.getInt(at + 4) & 0xFFFFFF, buf.readableBytes(),
                        tidOp ? String.format("k0=%08x a=%08x v=%08x f=%08x", buf.getIntLE(at + 12), buf.getInt(at + 20),
                                buf.getInt(at + 36), buf.getInt(at + 32))
                                : buf.readableBytes() >= 20 ? Integer.toHexString(buf.getUnsignedByte(at + 12)) : "-"));
                if (trace.size() > 100000) {
                    trace.removeFirst();
                }
                return true;
            });
        }
        boolean udpTrace = !sim && Boolean.getBoolean("rxe4j.soak.trace");
        DeviceConfig base = tid ? DeviceConfig.defaults().withTidRdma() : DeviceConfig.defaults();
        RdmaDevice da = RdmaDevice.open(udpTrace ? new TraceTransport(ta, trace, "A") : ta,
                base.withSeed(seed * 31 + 3));
        RdmaDevice db = RdmaDevice.open(udpTrace ? new TraceTransport(tb, trace, "B") : tb,
                base.withSeed(seed * 31 + 4));
        ProtectionDomain pa = da.allocPd();
        ProtectionDomain pb = db.allocPd();
        CompletionQueue cqa = da.createCq(QPS * DEPTH * 2);
        CompletionQueue cqb = db.createCq(QPS * RECV_SLOTS * 2);
        MemoryRegion local = pa.allocMr((long) QPS * DEPTH * SLOT, ACCESS);
        MemoryRegion remote = pb.allocMr((long) QPS * (REGION + WORDS * 8) + (long) QPS * RECV_SLOTS * SLOT, ACCESS);
        QueuePair[] qa = new QueuePair[QPS];
        QueuePair[] qb = new QueuePair[QPS];
        // the receive queue has room for twice the RECV_SLOTS posted: the engine pushes a receive
        // completion before it frees the WQE's slot (Responder: completeRecv, then consumeRecv; rxe
        // frees first), so on UDP a receive reposted right after polling its completion can find the
        // queue still full. The send queue (64 for 32 outstanding) has the same slack
        QpCaps caps = new QpCaps(DEPTH * 2, RECV_SLOTS * 2, 2, 1, 0);
        io.rxe4j.verbs.SharedReceiveQueue srq = srqAndUd
                ? pb.createSrq(new io.rxe4j.verbs.SrqInitAttr(QPS * RECV_SLOTS * 2, 1, 0)) : null;
        for (int i = 0; i < QPS; i++) {
            qa[i] = pa.createQp(new QpInitAttr(cqa, cqa, caps, QpType.RC, false));
            QpInitAttr b = new QpInitAttr(cqb, cqb, caps, QpType.RC, false);
            qb[i] = pb.createQp(srq != null ? b.withSrq(srq) : b);
        }
        UdPair ud = srqAndUd ? new UdPair(da, db, pa, pb) : null;
        for (int i = 0; i < QPS; i++) {
            int timeout = sim ? SIM_ACK_TIMEOUT : UDP_ACK_TIMEOUT;
            Mtu mtu = tid ? Mtu.MTU_4096 : Mtu.MTU_1024;
            connect(qa[i], qb[i], db.address(), 0xFFFF00 + i * 77, 0x100 + i, timeout, mtu);
            connect(qb[i], qa[i], da.address(), 0x100 + i, 0xFFFF00 + i * 77, timeout, mtu);
        }
        if (tid) {
            localTid = pa.allocMr((long) QPS * TID_BUF, ACCESS);
            remoteTid = pb.allocMr((long) QPS * TID_REGION, ACCESS);
            tidModel = new byte[QPS][TID_REGION];
            for (int q = 0; q < QPS; q++) {
                for (int j = 0; j < TID_REGION; j++) {
                    tidModel[q][j] = (byte) rnd.nextInt(256);
                }
                MemorySegment.copy(MemorySegment.ofArray(tidModel[q]), 0, remoteTid.segment(), (long) q * TID_REGION,
                        TID_REGION);
            }
            negotiate(qa, cqa, local, remote, vs);
        }
        MemorySegment rmem = remote.segment();
        MemorySegment lmem = local.segment();
        byte[][] model = new byte[QPS][REGION];
        long[][] words = new long[QPS][WORDS];
        // seed remote memory and the model identically
        for (int q = 0; q < QPS; q++) {
            for (int j = 0; j < REGION; j++) {
                byte v = (byte) rnd.nextInt(256);
                model[q][j] = v;
                rmem.set(ValueLayout.JAVA_BYTE, regionOff(q) + j, v);
            }
            for (int w = 0; w < WORDS; w++) {
                words[q][w] = rnd.nextLong();
                rmem.set(ValueLayout.JAVA_LONG, wordOff(q, w), words[q][w]);
            }
        }
        // receives for SENDs: B's QP q owns RECV_SLOTS slots, reposted as they complete
        List<List<byte[]>> sentPayloads = new ArrayList<>();
        int[] recvNext = new int[QPS];
        for (int q = 0; q < QPS; q++) {
            sentPayloads.add(new ArrayList<>());
            for (int s = 0; s < RECV_SLOTS; s++) {
                if (srq != null) {
                    postSrqRecv(srq, remote, q * RECV_SLOTS + s);
                } else {
                    postRecv(qb[q], remote, q, s);
                }
            }
        }
        Pending[][] pending = new Pending[QPS][DEPTH];
        int[] outstanding = new int[QPS];
        int[] nextSlot = new int[QPS];
        int posted = 0;
        int completed = 0;
        long sendsReceived = 0;
        long sendsPosted = 0;
        long srqReceives = 0;
        java.util.BitSet done = new java.util.BitSet(totalOps);
        WorkCompletion[] wcs = new WorkCompletion[64];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        SendWr wr = new SendWr();
        Sge sge = new Sge();
        while (completed < totalOps || sendsReceived < sendsPosted) {
            for (int q = 0; q < QPS && posted < totalOps; q++) {
                while (outstanding[q] < DEPTH && posted < totalOps) {
                    int slot = nextSlot[q];
                    while (pending[q][slot] != null) {
                        slot = (slot + 1) % DEPTH;
                    }
                    nextSlot[q] = (slot + 1) % DEPTH;
                    Pending p = new Pending();
                    p.wrId = posted;
                    p.qp = q;
                    p.slot = slot;
                    byte[] sent = prepare(p, wr, sge, local, lmem, remote, model[q], words[q], pending[q]);
                    if (sent != null) {
                        sentPayloads.get(q).add(sent);
                        sendsPosted++;
                    }
                    qa[q].postSend(wr);
                    pending[q][slot] = p;
                    outstanding[q]++;
                    posted++;
                    if (ud != null && posted % UD_EVERY == 0) {
                        ud.send();
                    }
                }
            }
            boolean progress;
            try {
                progress = sim ? vs.runUntil(() -> cqa.size() > 0 || cqb.size() > 0, MAX_WAIT)
                        : awaitEither(cqa, cqb, completed < totalOps);
            } catch (IllegalStateException e) {
                throw new AssertionError("soak seed " + seed + ": " + e.getMessage() + states(qa, qb), e);
            }
            if (!progress) {
                throw new AssertionError("soak seed " + seed + " (" + network + "): no completion within "
                        + (sim ? MAX_WAIT + " virtual" : MAX_REAL_WAIT + " real") + " ns; posted " + posted
                        + ", completed " + completed + "; " + states(qa, qb) + "; A " + da.counters() + " B "
                        + db.counters());
            }
            int n;
            if (ud != null) {
                ud.drain();
            }
            while ((n = cqa.poll(wcs)) > 0) {
                for (int i = 0; i < n; i++) {
                    WorkCompletion wc = wcs[i];
                    Pending p = find(pending, wc.wrId);
                    check(p != null, "completion for an unknown or already completed wr " + wc);
                    check(wc.status == WcStatus.SUCCESS, "wr " + wc.wrId + " " + p.op + " failed: " + wc
                            + "; A's QP: " + qa[p.qp].errorReason() + "; B's QP: " + qb[p.qp].errorReason()
                            + "\n A: " + qa[p.qp].debugState() + "\n B: " + qb[p.qp].debugState() + "\n A "
                            + da.counters() + "\n B " + db.counters());
                    check(!done.get((int) wc.wrId), "wr " + wc.wrId + " completed twice");
                    done.set((int) wc.wrId);
                    verify(p, wc, lmem);
                    pending[p.qp][p.slot] = null;
                    outstanding[p.qp]--;
                    completed++;
                }
            }
            while ((n = cqb.poll(wcs)) > 0) {
                for (int i = 0; i < n; i++) {
                    WorkCompletion wc = wcs[i];
                    int q = indexOf(qb, wc.qpNum);
                    check(wc.status == WcStatus.SUCCESS && wc.opcode == WcOpcode.RECV, "receive failed: " + wc
                            + "; B's QP: " + qb[q].errorReason() + "; A's QP: " + qa[q].errorReason() + "\n A: "
                            + qa[q].debugState() + "\n B: " + qb[q].debugState() + "\n all: " + states(qa, qb)
                            + "\n A counters " + nonZero(da.counters()) + "\n B counters " + nonZero(db.counters()));
                    int s = (int) wc.wrId;
                    byte[] expect = sentPayloads.get(q).get(recvNext[q]++);
                    check(wc.byteLen == expect.length, "SEND #" + (recvNext[q] - 1) + " on QP " + q + " byte_len "
                            + wc.byteLen + " != " + expect.length);
                    // with the SRQ, wr_id is the SRQ slot the SEND landed in, whichever QP's slot it was
                    long at = srq != null ? recvOff(s / RECV_SLOTS, s % RECV_SLOTS) : recvOff(q, s);
                    MemorySegment got = rmem.asSlice(at, expect.length);
                    check(got.mismatch(MemorySegment.ofArray(expect)) == -1, "SEND payload differs on QP " + q);
                    if (srq != null) {
                        postSrqRecv(srq, remote, s);
                        srqReceives++;
                    } else {
                        postRecv(qb[q], remote, q, s);
                    }
                    sendsReceived++;
                }
            }
        }
        // final memory equals the model
        for (int q = 0; tid && q < QPS; q++) {
            check(remoteTid.segment().asSlice((long) q * TID_REGION, TID_REGION)
                    .mismatch(MemorySegment.ofArray(tidModel[q])) == -1, "TID region of QP " + q + " differs from the model");
        }
        for (int q = 0; q < QPS; q++) {
            check(rmem.asSlice(regionOff(q), REGION).mismatch(MemorySegment.ofArray(model[q])) == -1,
                    "remote region of QP " + q + " differs from the model");
            for (int w = 0; w < WORDS; w++) {
                check(rmem.get(ValueLayout.JAVA_LONG, wordOff(q, w)) == words[q][w], "word " + w + " of QP " + q
                        + " is " + rmem.get(ValueLayout.JAVA_LONG, wordOff(q, w)) + ", model " + words[q][w]);
            }
        }
        check(done.cardinality() == totalOps, "completed " + done.cardinality() + " of " + totalOps);
        UdStats udStats = new UdStats(0, 0, 0, srqReceives);
        if (ud != null) {
            ud.finish(vs);
            udStats = new UdStats(ud.sent, ud.received, ud.seen.cardinality(), srqReceives);
        }
        long virtual = sim ? vs.nanoTime() : -1;
        long real = System.nanoTime() - t0;
        // device counters before the QPs go: on UDP a late retransmission reaching a closed QP would
        // count as a drop (the fault counts below are read after the loops stopped, so they are final)
        Map<String, Long> countersA = nonZero(da.counters());
        Map<String, Long> countersB = nonZero(db.counters());
        for (int i = 0; i < QPS; i++) {
            qa[i].close();
            qb[i].close();
        }
        if (ud != null) {
            ud.close();
        }
        if (srq != null) {
            srq.close();
        }
        local.close();
        remote.close();
        if (tid) {
            localTid.close();
            remoteTid.close();
        }
        cqa.close();
        cqb.close();
        pa.close();
        pb.close();
        da.close(); // closes the transports: on UDP their event loops stop, so the counters below are final
        db.close();
        Map<String, Long> faults = new java.util.LinkedHashMap<>();
        for (FaultAction a : FaultAction.values()) {
            faults.put(a.name().toLowerCase(java.util.Locale.ROOT),
                    ta.count(Direction.OUTBOUND, a) + tb.count(Direction.OUTBOUND, a)
                            + ta.count(Direction.INBOUND, a) + tb.count(Direction.INBOUND, a));
        }
        Result r = new Result(network, seed, totalOps, virtual, real, ta.faults() + tb.faults(), faults, countersA,
                countersB, udStats);
        if (sim) {
            vs.shutdown();
        }
        return r;
    }

    /**
     * UDP: waits in real time until either CQ holds a completion, parking on A's CQ while requests
     * are outstanding (a SEND completes at A only after B has queued its receive completion) and on
     * B's once only receives remain.
     *
     * @return false if nothing arrived within {@link #MAX_REAL_WAIT}
     */
    private static boolean awaitEither(CompletionQueue cqa, CompletionQueue cqb, boolean requestsOutstanding) {
        long deadline = System.nanoTime() + MAX_REAL_WAIT;
        CompletionQueue main = requestsOutstanding ? cqa : cqb;
        while (cqa.size() == 0 && cqb.size() == 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            main.await(Math.min(left, 10_000_000L));
        }
        return true;
    }

    private static String states(QueuePair[] qa, QueuePair[] qb) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < qa.length; i++) {
            sb.append("\n A: ").append(qa[i].debugState()).append("\n B: ").append(qb[i].debugState());
        }
        return sb.toString();
    }

    private static Map<String, Long> nonZero(Map<String, Long> m) {
        m.values().removeIf(v -> v == 0);
        return m;
    }

    private static int indexOf(QueuePair[] qps, int qpn) {
        for (int i = 0; i < qps.length; i++) {
            if (qps[i].qpNum() == qpn) {
                return i;
            }
        }
        throw new AssertionError("completion of unknown QP 0x" + Integer.toHexString(qpn));
    }

    private static Pending find(Pending[][] pending, long wrId) {
        for (Pending[] row : pending) {
            for (Pending p : row) {
                if (p != null && p.wrId == wrId) {
                    return p;
                }
            }
        }
        return null;
    }

    private static long regionOff(int q) {
        return (long) q * (REGION + WORDS * 8);
    }

    private static long wordOff(int q, int w) {
        return regionOff(q) + REGION + w * 8L;
    }

    private static long recvOff(int q, int s) {
        return (long) QPS * (REGION + WORDS * 8) + ((long) q * RECV_SLOTS + s) * SLOT;
    }

    private static long slotOff(int q, int slot) {
        return ((long) q * DEPTH + slot) * SLOT;
    }

    private static void postSrqRecv(io.rxe4j.verbs.SharedReceiveQueue srq, MemoryRegion remote, int g) {
        srq.postRecv(new RecvWr().set(g, new Sge(remote.addr() + recvOff(g / RECV_SLOTS, g % RECV_SLOTS), SLOT,
                remote.lkey())));
    }

    /**
     * srqAndUd: A's UD QP sending datagrams to B's. A datagram lost to the faults is lost (UD never
     * retries); every one that arrives is checked against its sequence number's pattern and length,
     * and its source QP; a duplicated one arrives twice.
     */
    private final class UdPair {
        final QueuePair a;
        final QueuePair b;
        final CompletionQueue cqa;
        final CompletionQueue cqb;
        final MemoryRegion out;
        final MemoryRegion in;
        final io.rxe4j.verbs.AddressHandle ah;
        final java.util.BitSet seen = new java.util.BitSet();
        final WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
            new WorkCompletion()};
        long sent;
        long received;
        int outstanding;

        UdPair(RdmaDevice da, RdmaDevice db, ProtectionDomain pa, ProtectionDomain pb) {
            cqa = da.createCq(UD_OUTSTANDING * 2);
            cqb = db.createCq(UD_RECVS * 2);
            a = pa.createQp(QpInitAttr.ud(cqa, cqa));
            b = pb.createQp(new QpInitAttr(cqb, cqb, new QpCaps(4, UD_RECVS, 1, 1, 0), QpType.UD, false));
            for (QueuePair q : new QueuePair[] {a, b}) {
                q.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(UD_QKEY));
                q.modify(new QpAttr().state(QpState.RTR));
                q.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            }
            out = pa.allocMr((long) UD_OUTSTANDING * UD_MAX, Access.LOCAL_WRITE);
            in = pb.allocMr((long) UD_RECVS * (40 + UD_MAX), Access.LOCAL_WRITE);
            ah = pa.createAh(io.rxe4j.verbs.AhAttr.of(db.address()));
            for (int s = 0; s < UD_RECVS; s++) {
                repost(s);
            }
        }

        void repost(int s) {
            b.postRecv(new RecvWr().set(s, new Sge(in.addr() + (long) s * (40 + UD_MAX), 40 + UD_MAX, in.lkey())));
        }

        void send() {
            if (outstanding >= UD_OUTSTANDING) {
                return;
            }
            long seq = sent++;
            int len = udLength(seq);
            long at = (seq % UD_OUTSTANDING) * UD_MAX;
            for (int i = 0; i < len; i++) {
                out.segment().set(ValueLayout.JAVA_BYTE, at + i, udByte(seq, i));
            }
            a.postSend(new SendWr().send(seq, new Sge(out.addr() + at, len, out.lkey())).ud(ah, b.qpNum(), UD_QKEY)
                    .signaled());
            outstanding++;
        }

        void drain() {
            int n;
            while ((n = cqa.poll(wcs)) > 0) {
                for (int i = 0; i < n; i++) {
                    check(wcs[i].status == WcStatus.SUCCESS, "UD send failed: " + wcs[i] + "; " + a.errorReason());
                    outstanding--;
                }
            }
            while ((n = cqb.poll(wcs)) > 0) {
                for (int i = 0; i < n; i++) {
                    WorkCompletion wc = wcs[i];
                    check(wc.status == WcStatus.SUCCESS && wc.opcode == WcOpcode.RECV, "UD receive failed: " + wc);
                    check(wc.srcQp == a.qpNum(), "UD datagram from QP 0x" + Integer.toHexString(wc.srcQp));
                    int s = (int) wc.wrId;
                    MemorySegment m = in.segment().asSlice((long) s * (40 + UD_MAX) + 40, UD_MAX);
                    long seq = Integer.toUnsignedLong(m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(
                            java.nio.ByteOrder.BIG_ENDIAN), 0));
                    check(seq < sent, "UD datagram with sequence number " + seq + " never sent");
                    int len = udLength(seq);
                    check(wc.byteLen == 40 + len, "UD datagram " + seq + " byte_len " + wc.byteLen + ", sent " + len);
                    for (int j = 0; j < len; j++) {
                        check(m.get(ValueLayout.JAVA_BYTE, j) == udByte(seq, j), "UD datagram " + seq + " differs at "
                                + j);
                    }
                    seen.set((int) seq);
                    received++;
                    repost(s);
                }
            }
        }

        /** Waits for A's last datagrams to complete and for what is still on the wire. */
        void finish(VirtualScheduler vs) {
            long deadline = System.nanoTime() + MAX_REAL_WAIT;
            while (outstanding > 0) {
                if (vs != null) {
                    vs.runUntil(() -> cqa.size() > 0, MAX_WAIT);
                } else if (System.nanoTime() > deadline) {
                    throw new AssertionError("soak seed " + seed + ": " + outstanding + " UD sends never completed");
                } else {
                    cqa.await(10_000_000L);
                }
                drain();
            }
            if (vs != null) {
                vs.runFor(1_000_000_000L);
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
            }
            drain();
        }

        void close() {
            a.close();
            b.close();
            ah.close();
            out.close();
            in.close();
            cqa.close();
            cqb.close();
        }
    }

    private void postRecv(QueuePair qp, MemoryRegion remote, int q, int s) {
        qp.postRecv(new RecvWr().set(s, new Sge(remote.addr() + recvOff(q, s), SLOT, remote.lkey())));
    }

    /**
     * TID mode: one small WRITE per QP, then waits until every QP negotiated TID RDMA through OPFN
     * (which runs on those packets and may need retries under the faults).
     */
    private void negotiate(QueuePair[] qa, CompletionQueue cqa, MemoryRegion local, MemoryRegion remote,
            VirtualScheduler vs) {
        for (int q = 0; q < QPS; q++) {
            qa[q].postSend(new SendWr().set(-1 - q, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                    new Sge(local.addr(), 8, local.lkey())).remote(remote.addr() + recvOff(q, 0), remote.rkey()));
        }
        WorkCompletion[] wc = {new WorkCompletion()};
        int got = 0;
        long deadline = System.nanoTime() + MAX_REAL_WAIT;
        while (got < QPS) { // the WRITEs complete (under the faults, possibly after retries)
            if (vs != null) {
                check(vs.runUntil(() -> cqa.size() > 0, MAX_WAIT), "negotiation WRITEs stalled: " + states(qa, qa));
            } else {
                check(System.nanoTime() < deadline, "negotiation WRITEs stalled: " + states(qa, qa));
                cqa.await(1_000_000L);
            }
            while (cqa.poll(wc) > 0) {
                check(wc[0].status == WcStatus.SUCCESS, "negotiation WRITE failed: " + wc[0]);
                got++;
            }
        }
        // then OPFN's answers (which may need retries too)
        if (vs != null) {
            vs.runUntil(() -> allNegotiated(qa), MAX_WAIT);
        } else {
            while (!allNegotiated(qa) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
        }
        check(allNegotiated(qa), "OPFN did not negotiate TID RDMA on every QP: " + states(qa, qa));
    }

    private static boolean allNegotiated(QueuePair[] qa) {
        for (QueuePair q : qa) {
            if (q.tidRdma() == null) {
                return false;
            }
        }
        return true;
    }

    /** Fills {@code wr} for the next random operation and applies it to the model; returns a SEND's payload. */
    private byte[] prepare(Pending p, SendWr wr, Sge sge, MemoryRegion local, MemorySegment lmem, MemoryRegion remote,
            byte[] model, long[] words, Pending[] outstanding) {
        int q = p.qp;
        if (tid && rnd.nextInt(100) < TID_PERCENT) {
            int slot = rnd.nextInt(TID_SLOTS);
            for (int i = 0; i < TID_SLOTS && tidBusy[q][slot]; i++) {
                slot = (slot + 1) % TID_SLOTS;
            }
            if (!tidBusy[q][slot]) {
                return prepareTid(p, wr, sge, slot);
            }
        }
        long lva = local.addr() + slotOff(q, p.slot);
        long lo = slotOff(q, p.slot);
        int k = rnd.nextInt(100);
        wr.reset();
        wr.wrId = p.wrId;
        wr.sendFlags = SendFlags.SIGNALED;
        wr.rkey = remote.rkey();
        if (k < 15) { // SEND
            int len = rnd.nextInt(0, 3001);
            byte[] data = randomBytes(len);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, lmem, lo, len);
            p.op = WrOpcode.SEND;
            wr.set(p.wrId, WrOpcode.SEND, SendFlags.SIGNALED, sge.set(lva, len, local.lkey()));
            return data;
        }
        if (k < 40) { // WRITE
            int len = rnd.nextInt(0, SLOT + 1);
            int off = rnd.nextInt(0, REGION - len + 1);
            byte[] data = randomBytes(len);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, lmem, lo, len);
            System.arraycopy(data, 0, model, off, len);
            p.op = WrOpcode.RDMA_WRITE;
            // A READ retried after a lost response re-reads memory as it is then (rxe-facts §5.5), so a
            // WRITE over the range of an outstanding READ must wait for it: IB_SEND_FENCE, as an
            // application would do
            int flags = SendFlags.SIGNALED | (overlapsRead(outstanding, off, len) ? SendFlags.FENCE : 0);
            wr.set(p.wrId, WrOpcode.RDMA_WRITE, flags, sge.set(lva, len, local.lkey()))
                    .remote(remote.addr() + regionOff(q) + off, remote.rkey());
            return null;
        }
        if (k < 60) { // READ
            int len = rnd.nextInt(0, SLOT + 1);
            int off = rnd.nextInt(0, REGION - len + 1);
            p.op = WrOpcode.RDMA_READ;
            p.expectData = java.util.Arrays.copyOfRange(model, off, off + len);
            p.readOff = off;
            wr.set(p.wrId, WrOpcode.RDMA_READ, SendFlags.SIGNALED, sge.set(lva, len, local.lkey()))
                    .remote(remote.addr() + regionOff(q) + off, remote.rkey());
            return null;
        }
        int w = rnd.nextInt(WORDS);
        long va = remote.addr() + wordOff(q, w);
        long old = words[w];
        p.expectValue = old;
        wr.set(p.wrId, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, sge.set(lva, 8, local.lkey()))
                .remote(va, remote.rkey());
        if (k < 70) {
            long cmp = rnd.nextBoolean() ? old : rnd.nextLong();
            long swap = rnd.nextLong();
            wr.opcode = WrOpcode.ATOMIC_CMP_AND_SWP;
            wr.atomic(cmp, swap);
            if (cmp == old) {
                words[w] = swap;
            }
        } else if (k < 82) {
            long add = rnd.nextLong();
            wr.opcode = WrOpcode.ATOMIC_FETCH_AND_ADD;
            wr.atomic(add, 0);
            words[w] = old + add;
        } else if (k < 87) {
            long cmp = rnd.nextBoolean() ? old : rnd.nextLong();
            long cmpMask = rnd.nextLong();
            long swap = rnd.nextLong();
            long swapMask = rnd.nextLong();
            wr.opcode = WrOpcode.MASKED_ATOMIC_CMP_AND_SWP;
            wr.atomic(cmp, swap).masks(cmpMask, swapMask);
            if (((cmp ^ old) & cmpMask) == 0) {
                words[w] = (old & ~swapMask) | (swap & swapMask);
            }
        } else if (k < 92) {
            long add = rnd.nextLong();
            long boundary = rnd.nextLong();
            wr.opcode = WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD;
            wr.atomic(add, 0).masks(boundary, 0);
            words[w] = io.rxe4j.core.memory.RxeMr.fieldAdd(old, add, boundary);
        } else if (k < 97) {
            long v = rnd.nextLong();
            wr.set(p.wrId, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(va, remote.rkey());
            wr.atomicWriteValue = v;
            words[w] = v;
        } else {
            wr.set(p.wrId, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(remote.addr() + regionOff(q), remote.rkey())
                    .flush(Flush.GLOBAL, rnd.nextBoolean() ? Flush.RANGE : Flush.MR, REGION);
        }
        p.op = wr.opcode;
        return null;
    }

    /** A TID-qualifying READ or WRITE of 256 … 512 KiB on slot {@code slot} of the QP's TID region. */
    private byte[] prepareTid(Pending p, SendWr wr, Sge sge, int slot) {
        int q = p.qp;
        int len = rnd.nextInt(64, TID_SLOT / 4096 + 1) * 4096;
        int off = slot * TID_SLOT + rnd.nextInt(0, (TID_SLOT - len) / 4096 + 1) * 4096;
        long lo = (long) q * TID_BUF + (long) slot * TID_SLOT;
        long lva = localTid.addr() + lo;
        long rva = remoteTid.addr() + (long) q * TID_REGION + off;
        wr.reset();
        p.tid = true;
        p.tidSlot = slot;
        p.readOff = off;
        tidBusy[q][slot] = true;
        if (rnd.nextBoolean()) {
            byte[] data = randomBytes(len);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, localTid.segment(), lo, len);
            System.arraycopy(data, 0, tidModel[q], off, len);
            p.op = WrOpcode.RDMA_WRITE;
            wr.set(p.wrId, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, sge.set(lva, len, localTid.lkey()))
                    .remote(rva, remoteTid.rkey());
        } else {
            p.op = WrOpcode.RDMA_READ;
            p.expectData = java.util.Arrays.copyOfRange(tidModel[q], off, off + len);
            wr.set(p.wrId, WrOpcode.RDMA_READ, SendFlags.SIGNALED, sge.set(lva, len, localTid.lkey()))
                    .remote(rva, remoteTid.rkey());
        }
        return null;
    }

    private static boolean overlapsRead(Pending[] outstanding, int off, int len) {
        for (Pending o : outstanding) {
            if (o != null && !o.tid && o.op == WrOpcode.RDMA_READ && off < o.readOff + o.expectData.length
                    && o.readOff < off + len) {
                return true;
            }
        }
        return false;
    }

    private void verify(Pending p, WorkCompletion wc, MemorySegment lmem) {
        if (p.tid) {
            tidBusy[p.qp][p.tidSlot] = false;
            long lo = (long) p.qp * TID_BUF + (long) p.tidSlot * TID_SLOT;
            check(wc.byteLen == (p.op == WrOpcode.RDMA_READ ? p.expectData.length : wc.byteLen), "TID READ byte_len");
            if (p.op == WrOpcode.RDMA_WRITE) {
                // TID ACKs come only after placement: B's memory holds the data once the WRITE completed
                long at = (long) p.qp * TID_REGION + p.readOff;
                int len = wc.byteLen;
                long diff = remoteTid.segment().asSlice(at, len).mismatch(localTid.segment().asSlice(lo, len));
                check(diff == -1, "TID WRITE wr " + p.wrId + " on QP " + p.qp + " of " + len + " bytes at +" + p.readOff
                        + " completed but B's memory differs from what was written at byte " + diff);
            }
            if (p.op == WrOpcode.RDMA_READ) {
                long got = localTid.segment().asSlice(lo, p.expectData.length)
                        .mismatch(MemorySegment.ofArray(p.expectData));
                long remoteDiff = remoteTid.segment().asSlice((long) p.qp * TID_REGION + p.readOff, p.expectData.length)
                        .mismatch(MemorySegment.ofArray(p.expectData));
                check(got == -1, "TID READ wr " + p.wrId + " of " + p.expectData.length + " bytes at +" + p.readOff
                        + " returned data that differs from the model at byte " + got + "; B's memory differs from the"
                        + " model at byte " + remoteDiff + " (-1: B is right, the READ placed wrong data)");
            }
            return;
        }
        long lo = slotOff(p.qp, p.slot);
        switch (p.op) {
            case RDMA_READ -> check(lmem.asSlice(lo, p.expectData.length).mismatch(MemorySegment.ofArray(p.expectData))
                    == -1, "READ wr " + p.wrId + " returned data that differs from the model");
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, MASKED_ATOMIC_CMP_AND_SWP, MASKED_ATOMIC_FETCH_AND_ADD ->
                    check(lmem.get(ValueLayout.JAVA_LONG, lo) == p.expectValue, p.op + " wr " + p.wrId + " returned "
                            + lmem.get(ValueLayout.JAVA_LONG, lo) + ", model " + p.expectValue);
            default -> { }
        }
    }

    private byte[] randomBytes(int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = (byte) rnd.nextInt(256);
        }
        return b;
    }

    private String traceText() {
        synchronized (trace) {
            String t = String.join("\n", trace);
            try {
                java.nio.file.Files.writeString(java.nio.file.Path.of("/tmp/dbg/trace-" + seed + ".txt"), t);
            } catch (java.io.IOException ignored) {
                // debug aid only
            }
            return t.length() > 2000 ? t.substring(t.length() - 2000) : t;
        }
    }

    private void check(boolean cond, String what) {
        if (!cond) {
            if (udpA != null) {
                what += "\nUDP A sent " + udpA.packetsSent() + " rcvd " + udpA.packetsReceived() + " chErr " + udpA.channelErrors() + " rcvErr " + udpA.receiveErrors()
                        + "\nUDP B sent " + udpB.packetsSent() + " rcvd " + udpB.packetsReceived() + " chErr " + udpB.channelErrors() + " rcvErr " + udpB.receiveErrors();
            }
            throw new AssertionError("soak seed " + seed + " (replay: -Drxe4j.soak.seed=" + seed + "): " + what
                    + (trace.isEmpty() ? "" : "\nlast packets:\n" + traceText()));
        }
    }

    private static void connect(QueuePair me, QueuePair peer, InetSocketAddress peerAddr, int myPsn, int peerPsn,
            int timeout, Mtu mtu) {
        me.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
        me.modify(new QpAttr().state(QpState.RTR).av(peerAddr).pathMtu(mtu).destQpNum(peer.qpNum())
                .rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.modify(new QpAttr().state(QpState.RTS).timeout(timeout).retryCnt(RETRY_CNT).rnrRetry(7).sqPsn(myPsn)
                .maxRdAtomic(16));
    }
}
