package io.rxe4j.verbs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Test fixture: two devices, each with a PD, CQ, MR and an RC QP connected to the other. */
final class RcPair implements AutoCloseable {
    static final int ALL_REMOTE = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

    final Side a;
    final Side b;

    static final class Side {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemoryRegion mr;

        Side(RdmaDevice dev, long mrBytes, int mrAccess) {
            this.dev = dev;
            this.pd = dev.allocPd();
            this.cq = dev.createCq(1024);
            this.qp = pd.createQp(QpInitAttr.rc(cq, cq));
            this.mr = pd.allocMr(mrBytes, mrAccess);
        }

        /** Waits (real time, bounded) for exactly one completion. */
        WorkCompletion next() {
            return RcPair.next(cq, () -> qp + " counters " + dev.counters());
        }

        List<WorkCompletion> drain(int n) {
            List<WorkCompletion> l = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                l.add(next());
            }
            return l;
        }

        void close() {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            dev.close();
        }
    }

    /**
     * Waits (real time, at most 20 s) for exactly one completion on {@code cq}.
     *
     * @param context what to name in the failure message
     */
    static WorkCompletion next(CompletionQueue cq, java.util.function.Supplier<String> context) {
        WorkCompletion[] out = {new WorkCompletion()};
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (cq.poll(out) == 1) {
                return out[0];
            }
            cq.await(Duration.ofMillis(50).toNanos());
        }
        throw new AssertionError("no completion within 20 s on " + context.get());
    }

    RcPair(RdmaDevice da, RdmaDevice db, long mrBytes, int qpAccess, int mrAccess, Mtu mtu) {
        a = new Side(da, mrBytes, mrAccess);
        b = new Side(db, mrBytes, mrAccess);
        connect(a, b, qpAccess, mtu, 0x100);
        connect(b, a, qpAccess, mtu, 0x200);
    }

    private static void connect(Side me, Side peer, int access, Mtu mtu, int myPsn) {
        int peerPsn = myPsn == 0x100 ? 0x200 : 0x100;
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(access));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(mtu)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1));
        me.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(myPsn)
                .maxRdAtomic(16));
    }

    @Override
    public void close() {
        a.close();
        b.close();
    }
}
