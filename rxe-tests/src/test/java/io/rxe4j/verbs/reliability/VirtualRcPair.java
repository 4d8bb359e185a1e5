package io.rxe4j.verbs.reliability;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.inproc.InJvmTransport;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Test fixture: two devices on one {@link InJvmFabric} driven by one {@link VirtualScheduler}
 * (deterministic virtual time), each with a PD, CQ, MR and an RC QP connected to the other, and
 * a packet log / loss hook on the fabric. Extras: a one-way link latency, copies of chosen packets
 * that a test can inject again later ({@link #replay}), a writability switch per device, a
 * transport that fails on its next send, and further connected QP pairs on the same devices.
 */
final class VirtualRcPair implements AutoCloseable {
    static final int ALL_REMOTE = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    static final InetSocketAddress ADDR_A = new InetSocketAddress("10.0.0.1", 4791);
    static final InetSocketAddress ADDR_B = new InetSocketAddress("10.0.0.2", 4791);
    /** Most virtual time one wait may take: 10 s. */
    static final long MAX_WAIT = 10_000_000_000L;

    /**
     * One packet seen by the fabric (before the drop decision): its sender, opcode, PSN, destination
     * QPN, AckReq bit, AETH syndrome (-1 without an AETH), RETH VA and length (-1 without a RETH),
     * UDP payload length, and the virtual time it crossed the fabric.
     */
    record Pkt(boolean fromA, int opcode, int psn, int destQp, boolean ackReq, int syndrome, long rethVa,
            long rethLen, int length, long time, boolean dropped) {}

    final VirtualScheduler vs = new VirtualScheduler();
    final InJvmFabric fabric;
    final Side a;
    final Side b;
    final List<Pkt> log = new ArrayList<>();
    /** Drops a packet when it returns true; {@code null}: deliver everything. */
    Predicate<Pkt> dropper;
    /**
     * Extra one-way delay of a packet in virtual nanoseconds (0: none), on top of the fabric's
     * latency, as netem's delay with reordering: a packet delayed more than the ones after it is
     * overtaken. {@code null}: none.
     */
    java.util.function.ToLongFunction<Pkt> delayer;
    private boolean replaying;
    /** Keeps a copy of a packet (in {@link #captured}) when it returns true; {@code null}: none. */
    Predicate<Pkt> capturer;
    /** Copies kept by {@link #capturer}, in order; released by {@link #close()}. */
    final List<ByteBuf> captured = new ArrayList<>();
    /** Called for every packet that crosses the fabric (after {@link #log}). */
    java.util.function.Consumer<Pkt> onFabric;
    /**
     * Called when a device hands a packet to its transport ({@code Transport.send}), before the
     * transport batches it; the fabric filter and {@link #log} only see it at the later flush.
     */
    java.util.function.Consumer<Pkt> onSend;
    private final SendTap tapA;
    private final SendTap tapB;

    /** Forwards to the fabric transport; reports sends, counts what is held between flushes, can refuse. */
    final class SendTap implements Transport {
        private final InJvmTransport delegate;
        private PacketReceiver receiver;
        private boolean writable = true;
        /** Throw from the next {@link #send} (an engine fault in the transport path). */
        boolean failNextSend;
        /** Packets sent since the last flush, and the most ever. */
        int held;
        int maxHeld;
        /** Packets sent while {@link #isWritable()} was false. */
        int sentWhileNotWritable;
        /**
         * When set, every packet sent is refused instead of crossing the fabric: reported at the next
         * {@link #flush} with this cause ({@code PacketReceiver.onSendFailed}), as a socket reports a
         * failed write (e.g. "Network is unreachable" while the link is down).
         */
        java.io.IOException refuseWith;
        private final List<ByteBuf> refused = new ArrayList<>();
        private final List<InetSocketAddress> refusedTo = new ArrayList<>();

        SendTap(InJvmTransport delegate) {
            this.delegate = delegate;
        }

        @Override
        public InetSocketAddress localAddress() {
            return delegate.localAddress();
        }

        @Override
        public io.rxe4j.verbs.spi.Scheduler scheduler() {
            return delegate.scheduler();
        }

        @Override
        public io.netty.buffer.ByteBufAllocator allocator() {
            return delegate.allocator();
        }

        @Override
        public void start(PacketReceiver r) {
            receiver = r;
            delegate.start(r);
        }

        @Override
        public boolean isWritable() {
            return writable;
        }

        /** Turns writability on or off; turning it on tells the device ({@code onWritable}). */
        void writable(boolean on) {
            writable = on;
            if (on) {
                receiver.onWritable();
            }
        }

        @Override
        public void send(ByteBuf packet, InetSocketAddress peer) {
            if (failNextSend) {
                failNextSend = false;
                packet.release();
                throw new IllegalStateException("injected transport fault");
            }
            if (!writable) {
                sentWhileNotWritable++;
            }
            java.util.function.Consumer<Pkt> hook = onSend;
            if (hook != null) {
                hook.accept(describe(packet, delegate.localAddress().equals(ADDR_A), false));
            }
            if (refuseWith != null) {
                refused.add(packet);
                refusedTo.add(peer);
                return;
            }
            held++;
            maxHeld = Math.max(maxHeld, held);
            delegate.send(packet, peer);
        }

        @Override
        public void flush() {
            held = 0;
            delegate.flush();
            for (int i = 0; i < refused.size(); i++) {
                ByteBuf b = refused.get(i);
                try {
                    receiver.onSendFailed(b, refusedTo.get(i), refuseWith);
                } finally {
                    b.release();
                }
            }
            refused.clear();
            refusedTo.clear();
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    static final class Side {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemoryRegion mr;

        Side(RdmaDevice dev, long mrBytes) {
            this.dev = dev;
            this.pd = dev.allocPd();
            this.cq = dev.createCq(1024);
            this.qp = pd.createQp(QpInitAttr.rc(cq, cq));
            this.mr = pd.allocMr(mrBytes, ALL_REMOTE);
        }
    }

    /** A further pair of connected QPs on the two devices, each with a CQ of its own. */
    record Conn(QueuePair qa, CompletionQueue cqa, QueuePair qb, CompletionQueue cqb) {}

    /** Connection parameters of one direction (the requester side's send PSN and retry settings). */
    record Params(Mtu mtu, int timeout, int retryCnt, int psnA, int psnB) {
        static Params defaults() {
            return new Params(Mtu.MTU_256, 14, 7, 0x100, 0x200);
        }
    }

    private final Params params;
    private final int qpAccess;
    private final List<Conn> extra = new ArrayList<>();

    VirtualRcPair(long mrBytes, Params p) {
        this(mrBytes, p, ALL_REMOTE);
    }

    /** @param qpAccess the QP access flags of both QPs (e.g. with FLUSH_GLOBAL / FLUSH_PERSISTENT) */
    VirtualRcPair(long mrBytes, Params p, int qpAccess) {
        this(mrBytes, p, qpAccess, 0);
    }

    /** @param latencyNanos one-way delay of every packet on the fabric, in virtual nanoseconds */
    VirtualRcPair(long mrBytes, Params p, int qpAccess, long latencyNanos) {
        this(mrBytes, p, qpAccess, latencyNanos, DeviceConfig.defaults());
    }

    /** @param config both devices' configuration (each gets its own key seed) */
    VirtualRcPair(long mrBytes, Params p, int qpAccess, long latencyNanos, DeviceConfig config) {
        this(mrBytes, p, qpAccess, latencyNanos, config, config);
    }

    /** @param configA A's configuration, {@code configB} B's (each gets its own key seed) */
    VirtualRcPair(long mrBytes, Params p, int qpAccess, long latencyNanos, DeviceConfig configA,
            DeviceConfig configB) {
        this.params = p;
        this.qpAccess = qpAccess;
        this.fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(latencyNanos).build();
        tapA = new SendTap(fabric.newTransport(ADDR_A));
        tapB = new SendTap(fabric.newTransport(ADDR_B));
        a = new Side(RdmaDevice.open(tapA, configA.withSeed(1)), mrBytes);
        b = new Side(RdmaDevice.open(tapB, configB.withSeed(2)), mrBytes);
        connect(a.qp, b.qp, b.dev, p, p.psnA, p.psnB, qpAccess);
        connect(b.qp, a.qp, a.dev, p, p.psnB, p.psnA, qpAccess);
        fabric.setFilter(this::filter);
    }

    /** @return the transport tap of A ({@code true}) or B */
    SendTap tap(boolean ofA) {
        return ofA ? tapA : tapB;
    }

    /** @return a new pair of connected QPs (A's and B's), with the same parameters as the first */
    Conn newConnection() {
        CompletionQueue cqa = a.dev.createCq(256);
        CompletionQueue cqb = b.dev.createCq(256);
        QueuePair qa = a.pd.createQp(QpInitAttr.rc(cqa, cqa));
        QueuePair qb = b.pd.createQp(QpInitAttr.rc(cqb, cqb));
        connect(qa, qb, b.dev, params, params.psnA, params.psnB, qpAccess);
        connect(qb, qa, a.dev, params, params.psnB, params.psnA, qpAccess);
        Conn c = new Conn(qa, cqa, qb, cqb);
        extra.add(c);
        return c;
    }

    /**
     * Agrees on the extensions both devices offer, as the connection manager does for two rxe4j
     * peers (REQ offers, REP answers with the intersection; {@code docs/wire.md}).
     *
     * @return the bits agreed
     */
    int negotiateExtensions() {
        io.rxe4j.verbs.internal.VerbsAccess access = io.rxe4j.verbs.internal.VerbsAccess.get();
        int agreed = access.localExtensions(a.qp) & access.localExtensions(b.qp);
        access.setPeerExtensions(a.qp, agreed);
        access.setPeerExtensions(b.qp, agreed);
        return agreed;
    }

    /** Moves {@code me} RESET → INIT → RTR → RTS towards {@code peer} with the pair's parameters. */
    void reconnect(QueuePair me, QueuePair peer, RdmaDevice peerDev, int myPsn, int peerPsn) {
        connect(me, peer, peerDev, params, myPsn, peerPsn, qpAccess);
    }

    private static void connect(QueuePair me, QueuePair peer, RdmaDevice peerDev, Params p, int myPsn, int peerPsn,
            int qpAccess) {
        me.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(qpAccess));
        me.modify(new QpAttr().state(QpState.RTR).av(peerDev.address()).pathMtu(p.mtu)
                .destQpNum(peer.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.modify(new QpAttr().state(QpState.RTS).timeout(p.timeout).retryCnt(p.retryCnt).rnrRetry(7)
                .sqPsn(myPsn).maxRdAtomic(16));
    }

    private Pkt describe(ByteBuf packet, boolean fromA, boolean dropped) {
        int at = packet.readerIndex();
        int op = Bth.opcode(packet, at);
        long va = -1;
        long len = -1;
        if (op == 0x0C || op == 0x06 || op == 0x0A || op == 0x0B) { // READ request, WRITE FIRST/ONLY(+IMM): RETH after the BTH
            va = Reth.va(packet, at + Bth.LENGTH);
            len = Reth.dmaLength(packet, at + Bth.LENGTH);
        }
        boolean aeth = op == 0x0D || op == 0x0F || op == 0x10 || op == 0x11 || op == 0x12;
        int syndrome = aeth ? Aeth.syndrome(packet, at + Bth.LENGTH) : -1;
        return new Pkt(fromA, op, Bth.psn(packet, at), Bth.destQp(packet, at), Bth.ackReq(packet, at), syndrome, va,
                len, packet.readableBytes(), vs.nanoTime(), dropped);
    }

    private boolean filter(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        if (replaying) {
            return true; // a delayed packet, logged when it was first sent
        }
        Pkt p = describe(packet, sender.equals(ADDR_A), false);
        boolean drop = dropper != null && dropper.test(p);
        if (drop) {
            p = new Pkt(p.fromA, p.opcode, p.psn, p.destQp, p.ackReq, p.syndrome, p.rethVa, p.rethLen, p.length,
                    p.time, true);
        }
        log.add(p);
        if (capturer != null && capturer.test(p)) {
            captured.add(Unpooled.copiedBuffer(packet));
        }
        if (onFabric != null) {
            onFabric.accept(p);
        }
        long extra = drop || delayer == null ? 0 : delayer.applyAsLong(p);
        if (extra > 0) {
            ByteBuf copy = Unpooled.copiedBuffer(packet);
            boolean fromA = p.fromA;
            vs.schedule(() -> {
                replaying = true;
                try {
                    if (fabric.endpoint(fromA ? ADDR_A : ADDR_B) != null) { // not closed yet
                        replay(copy, fromA);
                    }
                } finally {
                    replaying = false;
                    copy.release();
                }
            }, extra);
            return false; // sent again later
        }
        return !drop;
    }

    /**
     * Sends a copy of a captured packet again, from the endpoint that first sent it, as the network
     * would deliver a late duplicate. Call between {@code vs.run*} calls (the test thread is then
     * the loop).
     */
    void replay(ByteBuf copy, boolean fromA) {
        InJvmTransport from = fabric.endpoint(fromA ? ADDR_A : ADDR_B);
        from.send(copy.retainedDuplicate(), fromA ? ADDR_B : ADDR_A);
        from.flush();
    }

    /** Runs virtual time until {@code s}'s CQ yields one completion (at most {@link #MAX_WAIT}). */
    WorkCompletion next(Side s) {
        return next(s.cq, s.qp.toString());
    }

    /** Runs virtual time until {@code cq} yields one completion (at most {@link #MAX_WAIT}). */
    WorkCompletion next(CompletionQueue cq, String what) {
        WorkCompletion[] out = {new WorkCompletion()};
        boolean got = vs.runUntil(() -> cq.poll(out) == 1, MAX_WAIT);
        if (!got) {
            throw new AssertionError("no completion within " + MAX_WAIT + " virtual ns on " + what + " counters A "
                    + a.dev.counters() + " B " + b.dev.counters() + " A " + a.qp.debugState() + " B "
                    + b.qp.debugState() + " log tail " + log.subList(Math.max(0, log.size() - 40), log.size()));
        }
        return out[0];
    }

    /** @return whether {@code s}'s CQ stays empty after running every task due within {@code nanos} */
    boolean quiet(Side s, long nanos) {
        WorkCompletion[] out = {new WorkCompletion()};
        vs.runFor(nanos);
        return s.cq.poll(out) == 0;
    }

    List<Pkt> sent(boolean fromA, int opcode) {
        return log.stream().filter(p -> p.fromA == fromA && p.opcode == opcode).toList();
    }

    @Override
    public void close() {
        fabric.setFilter(null);
        captured.forEach(ByteBuf::release);
        for (Conn c : extra) {
            c.qa.close();
            c.qb.close();
            c.cqa.close();
            c.cqb.close();
        }
        for (Side s : new Side[] {a, b}) {
            s.qp.close();
            s.mr.close();
            s.cq.close();
            s.pd.close();
            s.dev.close();
        }
        // packets still on the fabric's delayed link are scheduled deliveries: let them land on the closed
        // endpoints, which release them, instead of discarding the tasks (and leaking the buffers) at shutdown
        vs.runFor(fabric.latencyNanos() + 1_000_000_000L);
        vs.shutdown();
    }
}
