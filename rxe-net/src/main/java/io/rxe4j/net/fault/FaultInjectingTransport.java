package io.rxe4j.net.fault;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Opcode;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Wraps any {@link Transport} and injects faults into the packets of the device bound to it:
 * drop, duplicate, reorder (hold back, release after later packets or a timeout), delay, and
 * corrupt (flip one bit, so the receiver's ICRC check fails). Rules fire by seeded probability or
 * at an exact n-th matching packet, in either direction; the first rule that fires wins.
 *
 * <p>Everything runs on the wrapped transport's loop (sends, receives, timers), so a run is
 * reproducible from its seed on a virtual-time scheduler. The transport does no protocol logic:
 * it only reads BTH fields to evaluate predicates.
 *
 * <p>Writability is the wrapped transport's: {@link #isWritable()} delegates, and the wrapped
 * transport's {@link PacketReceiver#onWritable()} is forwarded to this transport's receiver.
 * Packets held back or delayed by a rule are not counted.
 */
public final class FaultInjectingTransport implements Transport {
    private static final int BTH_MASKED_BYTE = 4; // FECN/BECN byte: not covered by the ICRC

    private final Transport inner;
    private final Scheduler scheduler;
    private final SplittableRandom random;
    private final List<FaultRule> rules = new CopyOnWriteArrayList<>();
    private final List<int[]> matchCounts = new CopyOnWriteArrayList<>();
    private final long[][] counts = new long[Direction.values().length][FaultAction.values().length];
    private final long[] passed = new long[Direction.values().length];
    private final PacketInfo info = new PacketInfo();
    private final ArrayDeque<Held> heldOut = new ArrayDeque<>();
    private final ArrayDeque<Held> heldIn = new ArrayDeque<>();
    private PacketReceiver downstream;

    private static final class Held {
        ByteBuf buf;
        InetSocketAddress a;
        InetSocketAddress b;
        int remaining;
        Scheduler.Cancellable timer;
    }

    /**
     * @param inner the transport to wrap (owned: closed with this one)
     * @param seed seed of every probabilistic choice (which packets, which byte to corrupt)
     * @param initialRules rules in priority order
     * @throws IllegalArgumentException if {@code inner} is multi-loop ({@link Transport#lanes()}):
     *     faults are injected on one loop, with one seeded random sequence
     */
    public FaultInjectingTransport(Transport inner, long seed, List<FaultRule> initialRules) {
        if (inner.lanes().size() != 1) {
            throw new IllegalArgumentException("fault injection wraps a single-loop transport; " + inner + " has "
                    + inner.lanes().size() + " loops (open it with one loop, e.g. UdpTransport.Builder.bind())");
        }
        this.inner = inner;
        this.scheduler = inner.scheduler();
        this.random = new SplittableRandom(seed);
        for (FaultRule r : initialRules) {
            addRule(r);
        }
    }

    /** Adds a rule after the existing ones. Safe from any thread. */
    public void addRule(FaultRule rule) {
        matchCounts.add(new int[1]);
        rules.add(rule);
    }

    /** Removes every rule: from now on packets pass untouched (held and delayed ones still arrive). */
    public void clearRules() {
        rules.clear();
        matchCounts.clear();
    }

    /** @return how many packets in {@code dir} got {@code action} */
    public long count(Direction dir, FaultAction action) {
        return counts[dir.ordinal()][action.ordinal()];
    }

    /** @return how many packets in {@code dir} passed untouched */
    public long passed(Direction dir) {
        return passed[dir.ordinal()];
    }

    /** @return total faults injected in both directions */
    public long faults() {
        long n = 0;
        for (long[] row : counts) {
            for (long c : row) {
                n += c;
            }
        }
        return n;
    }

    @Override
    public InetSocketAddress localAddress() {
        return inner.localAddress();
    }

    @Override
    public Scheduler scheduler() {
        return scheduler;
    }

    @Override
    public ByteBufAllocator allocator() {
        return inner.allocator();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Starts the wrapped transport with a receiver that applies the inbound rules and forwards
     * {@link PacketReceiver#onWritable()} and {@link PacketReceiver#onSendFailed} to {@code receiver}
     * unchanged.
     */
    @Override
    public void start(PacketReceiver receiver) {
        this.downstream = receiver;
        inner.start(new PacketReceiver() {
            @Override
            public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
                onInbound(packet, sender, recipient);
            }

            @Override
            public void onWritable() {
                downstream.onWritable();
            }

            @Override
            public void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {
                downstream.onSendFailed(packet, peer, cause);
            }
        });
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public int linkMtu() {
        return inner.linkMtu();
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public long inFlightBudgetHint() {
        return inner.inFlightBudgetHint();
    }

    /** {@inheritDoc} The wrapped transport's (faults injected here are not counted). */
    @Override
    public long receiveQueueDrops() {
        return inner.receiveQueueDrops();
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public long receiveBufferErrors() {
        return inner.receiveBufferErrors();
    }

    /** {@inheritDoc} The wrapped transport's. */
    @Override
    public long receiveChecksumErrors() {
        return inner.receiveChecksumErrors();
    }

    /**
     * {@inheritDoc}
     *
     * <p>The wrapped transport's writability (packets held back or delayed here are not counted).
     */
    @Override
    public boolean isWritable() {
        return inner.isWritable();
    }

    // ------------------------------------------------------------------ outbound

    @Override
    public void send(ByteBuf packet, InetSocketAddress peer) {
        FaultRule rule = decide(Direction.OUTBOUND, packet, peer);
        FaultAction action = rule == null ? null : rule.action();
        record(Direction.OUTBOUND, action);
        if (action == null) {
            inner.send(packet, peer);
        } else {
            switch (action) {
                case DROP -> packet.release();
                case DUPLICATE -> {
                    inner.send(packet.retainedDuplicate(), peer);
                    inner.send(packet, peer);
                }
                case CORRUPT -> {
                    corrupt(packet);
                    inner.send(packet, peer);
                }
                case DELAY -> scheduler.schedule(() -> {
                    inner.send(packet, peer);
                    inner.flush();
                }, rule.delayNanos());
                case REORDER -> {
                    hold(heldOut, packet, peer, null, rule, Direction.OUTBOUND);
                    return; // this packet does not advance the others' countdown
                }
            }
        }
        tick(heldOut, Direction.OUTBOUND);
    }

    @Override
    public void flush() {
        inner.flush();
    }

    // ------------------------------------------------------------------ inbound

    private void onInbound(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
        FaultRule rule = decide(Direction.INBOUND, packet, sender);
        FaultAction action = rule == null ? null : rule.action();
        record(Direction.INBOUND, action);
        if (action == null) {
            downstream.onPacket(packet, sender, recipient);
        } else {
            switch (action) {
                case DROP -> { }
                case DUPLICATE -> {
                    downstream.onPacket(packet.duplicate(), sender, recipient);
                    downstream.onPacket(packet, sender, recipient);
                }
                case CORRUPT -> {
                    corrupt(packet);
                    downstream.onPacket(packet, sender, recipient);
                }
                case DELAY -> {
                    ByteBuf kept = packet.retainedDuplicate(); // the inner transport releases the original
                    scheduler.schedule(() -> deliverInbound(kept, sender, recipient), rule.delayNanos());
                }
                case REORDER -> {
                    hold(heldIn, packet.retainedDuplicate(), sender, recipient, rule, Direction.INBOUND);
                    return;
                }
            }
        }
        tick(heldIn, Direction.INBOUND);
    }

    private void deliverInbound(ByteBuf kept, InetSocketAddress sender, InetSocketAddress recipient) {
        try {
            downstream.onPacket(kept, sender, recipient);
        } finally {
            kept.release();
        }
    }

    // ------------------------------------------------------------------ helpers

    private FaultRule decide(Direction dir, ByteBuf packet, InetSocketAddress peer) {
        if (rules.isEmpty()) {
            return null;
        }
        PacketInfo p = info;
        int at = packet.readerIndex();
        int len = packet.readableBytes();
        p.direction = dir;
        p.length = len;
        p.peer = peer;
        if (len >= Bth.LENGTH) {
            p.opcodeValue = Bth.opcode(packet, at);
            Opcode op = Opcode.of(p.opcodeValue);
            p.opcodeName = op == null ? null : op.name();
            p.psn = Bth.psn(packet, at);
            p.destQp = Bth.destQp(packet, at);
        } else {
            p.opcodeValue = -1;
            p.opcodeName = null;
            p.psn = -1;
            p.destQp = -1;
        }
        for (int i = 0; i < rules.size(); i++) {
            FaultRule r = rules.get(i);
            if (r.direction() != null && r.direction() != dir) {
                continue;
            }
            if (!r.match().test(p)) {
                continue;
            }
            if (r.nth() > 0) {
                int[] c = matchCounts.get(i);
                c[0]++;
                if (c[0] == r.nth()) {
                    return r;
                }
            } else if (r.probability() > 0 && random.nextDouble() < r.probability()) {
                return r;
            }
        }
        return null;
    }

    private void record(Direction dir, FaultAction action) {
        if (action == null) {
            passed[dir.ordinal()]++;
        } else {
            counts[dir.ordinal()][action.ordinal()]++;
        }
    }

    private void corrupt(ByteBuf packet) {
        int len = packet.readableBytes();
        if (len <= 1) {
            return;
        }
        int index;
        do {
            index = random.nextInt(len);
        } while (index == BTH_MASKED_BYTE);
        int at = packet.readerIndex() + index;
        packet.setByte(at, packet.getByte(at) ^ (1 << random.nextInt(8)));
    }

    private void hold(ArrayDeque<Held> queue, ByteBuf buf, InetSocketAddress a, InetSocketAddress b, FaultRule rule,
            Direction dir) {
        Held h = new Held();
        h.buf = buf;
        h.a = a;
        h.b = b;
        h.remaining = Math.max(1, rule.holdPackets());
        h.timer = scheduler.schedule(() -> {
            if (queue.remove(h)) {
                release(h, dir);
            }
        }, rule.delayNanos());
        queue.add(h);
    }

    private void tick(ArrayDeque<Held> queue, Direction dir) {
        if (queue.isEmpty()) {
            return;
        }
        List<Held> due = null;
        for (Held h : queue) {
            if (--h.remaining <= 0) {
                if (due == null) {
                    due = new ArrayList<>(2);
                }
                due.add(h);
            }
        }
        if (due != null) {
            for (Held h : due) {
                queue.remove(h);
                h.timer.cancel();
                release(h, dir);
            }
        }
    }

    private void release(Held h, Direction dir) {
        if (dir == Direction.OUTBOUND) {
            inner.send(h.buf, h.a);
            inner.flush();
        } else {
            deliverInbound(h.buf, h.a, h.b);
        }
    }

    /** Closes the wrapped transport; packets still held or delayed are released. */
    @Override
    public void close() {
        inner.close();
        for (ArrayDeque<Held> q : List.of(heldOut, heldIn)) {
            Held h;
            while ((h = q.poll()) != null) {
                h.timer.cancel();
                h.buf.release();
            }
        }
    }
}
