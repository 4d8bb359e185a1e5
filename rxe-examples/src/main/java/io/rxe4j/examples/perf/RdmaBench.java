package io.rxe4j.examples.perf;

import io.rxe4j.verbs.spi.Transport;
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
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.examples.BufferAdvert;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaCmException;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import java.net.InetSocketAddress;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/** The rxe4j side of rxe-perf: one device with {@code q} RC QPs, one CQ and one MR. */
final class RdmaBench {
    static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

    private RdmaBench() {}

    /** One end: device, PD, CQ, MR and QPs. */
    static final class Side implements AutoCloseable {
        final RdmaDevice device;
        final ProtectionDomain pd;
        /** The first CQ (the only one of a single-loop device). */
        final CompletionQueue cq;
        /** One CQ per completion vector (event loop) of the device; QP i uses {@code cqs[i % cqs.length]}. */
        final CompletionQueue[] cqs;
        private int nextCq;
        final MemoryRegion mr;
        final QueuePair[] qps;
        /** The connections the connection manager made, one per QP. */
        final RdmaConnection[] conns;
        final int sqDepth;
        final int rqDepth;
        /** Block in {@code cq.await} when idle (perftest {@code -e}) instead of busy polling. */
        boolean events;
        /**
         * When set, idle waits follow this backoff (spin, then yield, then park with a growing
         * sleep) instead of busy polling or blocking; {@link #worked()} resets it.
         */
        org.agrona.concurrent.IdleStrategy backoff;

        Side(Transport transport, long mrBytes, int qpCount, int sqDepth, int rqDepth,
                io.rxe4j.verbs.DeviceConfig config) {
            this.sqDepth = sqDepth;
            this.rqDepth = rqDepth;
            device = RdmaDevice.open(transport, config);
            pd = device.allocPd();
            int cqe = Math.min(device.queryDevice().maxCqe(), qpCount * (sqDepth + rqDepth) + 16);
            // one CQ per event loop, so that QPs spread over the loops (a QP runs on its send CQ's loop)
            cqs = new CompletionQueue[Math.max(1, Math.min(qpCount, device.numCompVectors()))];
            for (int i = 0; i < cqs.length; i++) {
                cqs[i] = device.createCq(cqe, i);
            }
            cq = cqs[0];
            mr = pd.allocMr(mrBytes, ACCESS);
            qps = new QueuePair[qpCount];
            conns = new RdmaConnection[qpCount];
        }

        /** Our MR, for the peer (connection private data). */
        BufferAdvert advert() {
            return new BufferAdvert(mr.rkey(), mr.addr(), mr.length());
        }

        /**
         * What the connection manager sets up: these queue sizes, this MTU (null: the port's active
         * MTU, the connection manager's default) and ACK timeout, our MR advertised.
         */
        ConnectionParams params(Mtu mtu, int timeout) {
            ConnectionParams p = ConnectionParams.defaults();
            if (mtu != null) {
                p = p.withPathMtu(mtu);
            }
            return p.withAckTimeout(timeout).withAccessFlags(ACCESS)
                    .withCaps(new QpCaps(sqDepth, rqDepth, 1, 1, 0)).withPrivateData(advert().toBytes());
        }

        /**
         * Connects every QP to the listener on rdma_cm port {@code port} of the device at {@code
         * serverDevice} through the connection manager (IB CM).
         *
         * @return the peer's MR, one advert per QP
         */
        BufferAdvert[] connectAll(InetSocketAddress serverDevice, int port, Mtu mtu, int timeout)
                throws RdmaCmException {
            BufferAdvert[] peers = new BufferAdvert[qps.length];
            for (int i = 0; i < qps.length; i++) {
                conns[i] = RdmaConnection.connect(pd, cqOf(i), cqOf(i), serverDevice, port, params(mtu, timeout),
                        qp -> { });
                qps[i] = conns[i].qp();
                peers[i] = BufferAdvert.parse(conns[i].remotePrivateData());
            }
            return peers;
        }

        /** Accepts one connection per QP from {@code listener}, in order. */
        void acceptAll(RdmaListener listener, Mtu mtu, int timeout) throws RdmaCmException, InterruptedException {
            for (int i = 0; i < qps.length; i++) {
                conns[i] = listener.accept(pd, cqOf(i), cqOf(i), params(mtu, timeout));
                qps[i] = conns[i].qp();
            }
        }

        /**
         * OPFN: one small WRITE per QP, whose packets carry BTH bit 24, then waits (at most 5 s) until
         * every QP negotiated TID RDMA with its peer.
         *
         * @throws IllegalStateException if a QP did not
         */
        void negotiateTid(BufferAdvert[] peers) {
            WorkCompletion[] wc = {new WorkCompletion()};
            for (int i = 0; i < qps.length; i++) {
                qps[i].postSend(new SendWr().set(-1 - i, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED,
                        new Sge(mr.addr(), 8, mr.lkey())).remote(peers[i].va(), peers[i].rkey()));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            int done = 0;
            while (done < qps.length || !allTid()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("TID RDMA not negotiated within 5 s (path MTU 4096 and --tid on both sides?)");
                }
                while (poll(wc) > 0) {
                    check(wc[0]);
                    done++;
                }
                Thread.onSpinWait();
            }
        }

        private boolean allTid() {
            for (QueuePair qp : qps) {
                if (qp.tidRdma() == null) {
                    return false;
                }
            }
            return true;
        }

        int qpIndex(int qpNum) {
            for (int i = 0; i < qps.length; i++) {
                if (qps[i].qpNum() == qpNum) {
                    return i;
                }
            }
            throw new IllegalStateException("completion of unknown QP 0x" + Integer.toHexString(qpNum));
        }

        /** @return the CQ of QP {@code i} */
        CompletionQueue cqOf(int i) {
            return cqs[i % cqs.length];
        }

        /**
         * Polls the CQs round robin, starting after the one that last had completions.
         *
         * @return the completions written to {@code wcs} (from one CQ), 0 if every CQ was empty
         */
        int poll(WorkCompletion[] wcs) {
            if (cqs.length == 1) {
                return cq.poll(wcs);
            }
            for (int k = 0; k < cqs.length; k++) {
                int c = nextCq + k;
                if (c >= cqs.length) {
                    c -= cqs.length;
                }
                int n = cqs[c].poll(wcs);
                if (n > 0) {
                    nextCq = c + 1 == cqs.length ? 0 : c + 1;
                    return n;
                }
            }
            return 0;
        }

        /** @return whether any CQ holds a completion */
        boolean pending() {
            for (CompletionQueue c : cqs) {
                if (c.size() > 0) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Waits briefly for a completion: busy polling, as perftest does by default; with
         * {@link #events}, a short spin and then a blocking wait (a thread wake-up per completion).
         */
        void idle() {
            if (backoff != null) {
                backoff.idle();
                return;
            }
            for (int i = 0; i < 64; i++) {
                if (pending()) {
                    return;
                }
                Thread.onSpinWait();
            }
            if (events) {
                if (cqs.length == 1) {
                    cq.await(TimeUnit.MILLISECONDS.toNanos(1));
                } else {
                    java.util.concurrent.locks.LockSupport.parkNanos(20_000); // several CQs: no single one to block on
                }
            }
        }

        /** A poll found completions: the backoff starts again from spinning. */
        void worked() {
            if (backoff != null) {
                backoff.reset();
            }
        }

        void check(WorkCompletion wc) {
            if (wc.status != WcStatus.SUCCESS) {
                int i = qpIndex(wc.qpNum);
                throw new IllegalStateException("completion " + wc + " on QP " + i + ": " + qps[i].errorReason()
                        + "; counters " + device.counters());
            }
        }

        @Override
        public void close() {
            for (RdmaConnection c : conns) {
                if (c != null) {
                    c.close();
                }
            }
            mr.close();
            for (CompletionQueue c : cqs) {
                c.close();
            }
            pd.close();
            device.close();
        }
    }

    /**
     * The passive end's application: keeps receives posted and, for send_lat, echoes each received
     * message. Runs on its own thread until closed. WRITE, READ and atomics need no application.
     */
    static final class Responder implements AutoCloseable {
        private final Side side;
        private final Thread thread;
        private volatile boolean echo;
        private volatile boolean running = true;
        private volatile Throwable failure;

        Responder(Side side, int recvBytes) {
            this.side = side;
            RecvWr rwr = new RecvWr().set(0, new Sge(side.mr.addr(), recvBytes, side.mr.lkey()));
            for (QueuePair qp : side.qps) {
                for (int j = 0; j < side.rqDepth; j++) {
                    qp.postRecv(rwr);
                }
            }
            thread = Thread.ofPlatform().name("rxe-perf-responder").daemon().start(() -> loop(rwr));
        }

        void echo(boolean on) {
            echo = on;
        }

        private void loop(RecvWr rwr) {
            WorkCompletion[] wcs = new WorkCompletion[32];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            Sge sge = new Sge(side.mr.addr(), 0, side.mr.lkey());
            SendWr swr = new SendWr().set(0, WrOpcode.SEND, SendFlags.SIGNALED, sge);
            try {
                while (running) {
                    int n = side.poll(wcs);
                    if (n == 0) {
                        side.idle();
                        continue;
                    }
                    side.worked();
                    for (int k = 0; k < n; k++) {
                        WorkCompletion wc = wcs[k];
                        if (wc.status == WcStatus.WR_FLUSH_ERR && !running) {
                            return;
                        }
                        side.check(wc);
                        if (wc.opcode == WcOpcode.RECV) {
                            QueuePair qp = side.qps[side.qpIndex(wc.qpNum)];
                            qp.postRecv(rwr);
                            if (echo) {
                                sge.length = wc.byteLen;
                                qp.postSend(swr);
                            }
                        }
                    }
                }
            } catch (Throwable t) {
                if (running) {
                    failure = t;
                    System.err.println("rxe-perf responder failed: " + t);
                }
            }
        }

        Throwable failure() {
            return failure;
        }

        @Override
        public void close() {
            running = false;
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The active end's loop. */
    static final class Requester {
        private final Side side;
        private final BufferAdvert[] peers;
        private final WorkCompletion[] wcs = new WorkCompletion[64];
        private final SendWr[] wrs;
        private final RecvWr rwr;
        /** Bandwidth tests: every this many WRs of a QP one is signaled (perftest's {@code --cq-mod}). */
        private int cqMod = 1;

        Requester(Side side, BufferAdvert[] peers) {
            this.side = side;
            this.peers = peers;
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            wrs = new SendWr[side.qps.length];
            for (int i = 0; i < wrs.length; i++) {
                wrs[i] = new SendWr();
            }
            rwr = new RecvWr();
        }

        private void prepare(PerfTest test, int size, AtomicType atomic) {
            MemoryRegion mr = side.mr;
            for (int i = 0; i < wrs.length; i++) {
                SendWr wr = wrs[i].reset();
                BufferAdvert p = peers[i];
                switch (test.op()) {
                    case WRITE -> wr.set(0, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(mr.addr(), size, mr.lkey()))
                            .remote(p.va(), p.rkey());
                    case READ -> wr.set(0, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(mr.addr(), size, mr.lkey()))
                            .remote(p.va(), p.rkey());
                    case SEND -> wr.set(0, WrOpcode.SEND, SendFlags.SIGNALED, new Sge(mr.addr(), size, mr.lkey()));
                    case ATOMIC -> {
                        wr.set(0, atomic.opcode(), SendFlags.SIGNALED, new Sge(mr.addr(), 8, mr.lkey()))
                                .remote(p.va(), p.rkey()).atomic(1, 2);
                        if (atomic == AtomicType.MCAS) {
                            wr.masks(0xFFFFL, 0xFFFFL);
                        } else if (atomic == AtomicType.MFAA) {
                            wr.masks(1L << 32, 0);
                        }
                    }
                }
            }
            rwr.set(1, new Sge(mr.addr() + Math.max(size, 8), Math.max(size, 8), mr.lkey()));
        }

        /**
         * @param n signal one WR of every {@code n} per QP in bandwidth tests (perftest's {@code
         *     --cq-mod}; 1 signals every WR); capped at the depth of the phase
         * @return this requester
         */
        Requester cqMod(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("cq-mod must be at least 1, got " + n);
            }
            cqMod = n;
            return this;
        }

        /** Runs one phase: {@code iterations} messages, or for {@code durationNanos}. */
        Result run(PerfTest test, int size, AtomicType atomic, int depth, long iterations, long durationNanos) {
            prepare(test, size, atomic);
            return test.latency() ? latency(test, size, iterations, durationNanos)
                    : bandwidth(test, size, depth, iterations, durationNanos);
        }

        /**
         * Runs a bandwidth phase as perftest's {@code run_iter_bw} does: at most {@code depth} WRs
         * outstanding per QP, and only every {@link #cqMod}-th WR of a QP signaled ({@code
         * --cq-mod}, perftest's default 100, capped at {@code depth}), so that the application polls
         * one CQE per that many messages. A signaled CQE retires the WRs before it on its QP (an RC send
         * queue completes in order; a failed unsignaled WR still completes, with its error status,
         * which {@link Side#check} reports). With {@code iterations}, each QP runs its share and signals
         * its last WR; when a timed phase ends, a QP whose last posted WR is unsignaled posts one more
         * WR, signaled, so that every WR is accounted for before the next phase.
         */
        private Result bandwidth(PerfTest test, int size, int depth, long iterations, long durationNanos) {
            QueuePair[] qps = side.qps;
            int every = Math.max(1, Math.min(cqMod, depth));
            long limit = iterations > 0 ? iterations : Long.MAX_VALUE;
            long start = System.nanoTime();
            long deadline = durationNanos > 0 ? start + durationNanos : Long.MAX_VALUE;
            long[] posted = new long[qps.length];
            long[] completed = new long[qps.length];
            boolean[] lastSignaled = new boolean[qps.length];
            long total = 0;
            long done = 0;
            long end = start;
            // -n: each QP's share of the iterations, its last WR signaled (perftest signals scnt == iters - 1)
            long[] quota = new long[qps.length];
            for (int i = 0; i < qps.length; i++) {
                quota[i] = limit == Long.MAX_VALUE ? Long.MAX_VALUE : limit / qps.length + (i < limit % qps.length ? 1 : 0);
            }
            for (int d = 0; d < depth; d++) {
                for (int i = 0; i < qps.length; i++) {
                    if (posted[i] < quota[i]) {
                        post(i, posted, lastSignaled, every, posted[i] + 1 == quota[i]);
                        total++;
                    }
                }
            }
            boolean stop = total >= limit;
            long lastCompletion = start;
            while (done < total) {
                int n = side.poll(wcs);
                if (n == 0) {
                    side.idle();
                    long now = System.nanoTime();
                    if (now - lastCompletion > STALL_NANOS) {
                        throw stalled(posted, completed, total - done, now - lastCompletion);
                    }
                } else {
                    side.worked();
                    end = System.nanoTime();
                    lastCompletion = end;
                    stop |= end >= deadline;
                }
                for (int k = 0; k < n; k++) {
                    WorkCompletion wc = wcs[k];
                    side.check(wc);
                    int i = side.qpIndex(wc.qpNum);
                    long retired = wc.wrId + 1 - completed[i];
                    if (retired <= 0 || wc.wrId >= posted[i]) {
                        throw new IllegalStateException("completion of WR " + wc.wrId + " on QP " + i + " out of order: "
                                + completed[i] + " of " + posted[i] + " WRs completed before it");
                    }
                    completed[i] = wc.wrId + 1;
                    done += retired;
                    while (!stop && posted[i] < quota[i] && posted[i] - completed[i] < depth) {
                        post(i, posted, lastSignaled, every, posted[i] + 1 == quota[i]);
                        total++;
                    }
                }
                if (n == 0 && System.nanoTime() >= deadline) {
                    stop = true;
                }
                stop |= total >= limit;
                if (stop) { // close each QP's last group with a signaled WR, where one is missing and there is room
                    for (int i = 0; i < qps.length; i++) {
                        if (!lastSignaled[i] && posted[i] > completed[i] && posted[i] - completed[i] < depth) {
                            post(i, posted, lastSignaled, every, true);
                            total++;
                        }
                    }
                }
            }
            return new Result(test, false, size, done, (end - start) / 1e9, null, 0);
        }

        /** Posts QP {@code i}'s next WR, its wr_id the QP's sequence number, signaled every {@code every}-th or if {@code last}. */
        private void post(int i, long[] posted, boolean[] lastSignaled, int every, boolean last) {
            SendWr wr = wrs[i];
            long seq = posted[i]++;
            boolean signaled = last || (seq + 1) % every == 0;
            wr.wrId = seq;
            wr.sendFlags = signaled ? wr.sendFlags | SendFlags.SIGNALED : wr.sendFlags & ~SendFlags.SIGNALED;
            lastSignaled[i] = signaled;
            side.qps[i].postSend(wr);
        }

        /**
         * No completion for this long while WRs are outstanding ends a bandwidth run with an error
         * that names the QPs still waiting: 30 s, in nanoseconds, longer than any retry budget of the
         * tool's timeouts (perftest's -u 14 with retry_cnt 7 gives up after 4.3 s), so a WR that
         * neither completes nor fails is reported instead of hanging the tool.
         */
        static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(30);

        private IllegalStateException stalled(long[] posted, long[] completed, long outstanding, long silentNanos) {
            StringBuilder sb = new StringBuilder("no completion for ").append(silentNanos / 1_000_000)
                    .append(" ms with ").append(outstanding).append(" WRs outstanding; QPs still waiting:");
            int shown = 0;
            for (int i = 0; i < posted.length; i++) {
                long open = posted[i] - completed[i];
                if (open > 0 && shown++ < 8) {
                    sb.append("\n  QP ").append(i).append(" (").append(open).append(" WRs): ")
                            .append(side.qps[i].debugState());
                }
            }
            if (shown > 8) {
                sb.append("\n  … and ").append(shown - 8).append(" more QPs");
            }
            sb.append("\n  counters ").append(side.device.counters());
            return new IllegalStateException(sb.toString());
        }

        private Result latency(PerfTest test, int size, long iterations, long durationNanos) {
            QueuePair qp = side.qps[0];
            SendWr wr = wrs[0];
            boolean pingPong = test.op() == PerfTest.Op.SEND;
            Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
            long limit = iterations > 0 ? iterations : Long.MAX_VALUE;
            long start = System.nanoTime();
            long deadline = durationNanos > 0 ? start + durationNanos : Long.MAX_VALUE;
            long done = 0;
            long now = start;
            while (done < limit && now < deadline) {
                if (pingPong) {
                    qp.postRecv(rwr);
                }
                long t0 = System.nanoTime();
                qp.postSend(wr);
                int need = pingPong ? 2 : 1;
                long t1 = 0;
                while (need > 0) {
                    int n = side.poll(wcs);
                    if (n == 0) {
                        Thread.onSpinWait();
                        if (!side.pending()) {
                            side.idle();
                        }
                        continue;
                    }
                    side.worked();
                    for (int k = 0; k < n; k++) {
                        side.check(wcs[k]);
                        need--;
                        if (!pingPong || wcs[k].opcode == WcOpcode.RECV) {
                            t1 = System.nanoTime();
                        }
                    }
                }
                h.recordValue(Math.max(0, t1 - t0));
                done++;
                now = t1;
            }
            return new Result(test, false, size, done, (now - start) / 1e9, h, 0);
        }
    }
}
