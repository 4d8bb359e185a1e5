package io.rxe4j.verbs.reliability;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.verbs.Access;
import io.rxe4j.core.verbs.Mtu;
import io.rxe4j.core.verbs.QpAttr;
import io.rxe4j.core.verbs.QpState;
import io.rxe4j.core.verbs.WorkCompletion;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.net.inproc.InJvmFabric;
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
 * a packet log / loss hook on the fabric.
 */
final class VirtualRcPair implements AutoCloseable {
    static final int ALL_REMOTE = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    static final InetSocketAddress ADDR_A = new InetSocketAddress("10.0.0.1", 4791);
    static final InetSocketAddress ADDR_B = new InetSocketAddress("10.0.0.2", 4791);
    /** Most virtual time one wait may take: 10 s. */
    static final long MAX_WAIT = 10_000_000_000L;

    /** One packet seen by the fabric (before the drop decision). */
    record Pkt(boolean fromA, int opcode, int psn, long rethVa, long rethLen, boolean dropped) {}

    final VirtualScheduler vs = new VirtualScheduler();
    final InJvmFabric fabric = InJvmFabric.withScheduler(vs);
    final Side a;
    final Side b;
    final List<Pkt> log = new ArrayList<>();
    /** Drops a packet when it returns true; {@code null}: deliver everything. */
    Predicate<Pkt> dropper;
    /**
     * Called when a device hands a packet to its transport ({@code Transport.send}), before the
     * transport batches it; the fabric filter and {@link #log} only see it at the later flush.
     */
    java.util.function.Consumer<Pkt> onSend;

    /** Forwards to the fabric transport, reporting each packet to {@link #onSend} at send time. */
    private final class SendTap implements io.rxe4j.core.spi.Transport {
        private final io.rxe4j.core.spi.Transport delegate;

        SendTap(io.rxe4j.core.spi.Transport delegate) {
            this.delegate = delegate;
        }

        @Override
        public InetSocketAddress localAddress() {
            return delegate.localAddress();
        }

        @Override
        public io.rxe4j.core.spi.Scheduler scheduler() {
            return delegate.scheduler();
        }

        @Override
        public io.netty.buffer.ByteBufAllocator allocator() {
            return delegate.allocator();
        }

        @Override
        public void start(io.rxe4j.core.spi.PacketReceiver receiver) {
            delegate.start(receiver);
        }

        @Override
        public void send(ByteBuf packet, InetSocketAddress peer) {
            java.util.function.Consumer<Pkt> hook = onSend;
            if (hook != null) {
                int at = packet.readerIndex();
                hook.accept(new Pkt(delegate.localAddress().equals(ADDR_A), Bth.opcode(packet, at),
                        Bth.psn(packet, at), -1, -1, false));
            }
            delegate.send(packet, peer);
        }

        @Override
        public void flush() {
            delegate.flush();
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

    /** Connection parameters of one direction (the requester side's send PSN and retry settings). */
    record Params(Mtu mtu, int timeout, int retryCnt, int psnA, int psnB) {
        static Params defaults() {
            return new Params(Mtu.MTU_256, 14, 7, 0x100, 0x200);
        }
    }

    VirtualRcPair(long mrBytes, Params p) {
        this(mrBytes, p, ALL_REMOTE);
    }

    /** @param qpAccess the QP access flags of both QPs (e.g. with FLUSH_GLOBAL / FLUSH_PERSISTENT) */
    VirtualRcPair(long mrBytes, Params p, int qpAccess) {
        a = new Side(RdmaDevice.open(new SendTap(fabric.newTransport(ADDR_A))), mrBytes);
        b = new Side(RdmaDevice.open(new SendTap(fabric.newTransport(ADDR_B))), mrBytes);
        connect(a, b, p, p.psnA, p.psnB, qpAccess);
        connect(b, a, p, p.psnB, p.psnA, qpAccess);
        fabric.setFilter(this::filter);
    }

    private static void connect(Side me, Side peer, Params p, int myPsn, int peerPsn, int qpAccess) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(qpAccess));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(p.mtu)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.qp.modify(new QpAttr().state(QpState.RTS).timeout(p.timeout).retryCnt(p.retryCnt).rnrRetry(7)
                .sqPsn(myPsn).maxRdAtomic(16));
    }

    private boolean filter(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        int at = packet.readerIndex();
        int op = Bth.opcode(packet, at);
        int psn = Bth.psn(packet, at);
        long va = -1;
        long len = -1;
        if (op == 0x0C || op == 0x06 || op == 0x0A) { // READ request, WRITE FIRST/ONLY: RETH after the BTH
            va = Reth.va(packet, at + Bth.LENGTH);
            len = Reth.dmaLength(packet, at + Bth.LENGTH);
        }
        Pkt p = new Pkt(sender.equals(ADDR_A), op, psn, va, len, false);
        boolean drop = dropper != null && dropper.test(p);
        log.add(drop ? new Pkt(p.fromA, op, psn, va, len, true) : p);
        return !drop;
    }

    /** Runs virtual time until {@code s}'s CQ yields one completion (at most {@link #MAX_WAIT}). */
    WorkCompletion next(Side s) {
        WorkCompletion[] out = {new WorkCompletion()};
        boolean got = vs.runUntil(() -> s.cq.poll(out) == 1, MAX_WAIT);
        if (!got) {
            throw new AssertionError("no completion within " + MAX_WAIT + " virtual ns on " + s.qp + " counters "
                    + s.dev.counters() + " log " + log);
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
        for (Side s : new Side[] {a, b}) {
            s.qp.close();
            s.mr.close();
            s.cq.close();
            s.pd.close();
            s.dev.close();
        }
        vs.shutdown();
    }
}
