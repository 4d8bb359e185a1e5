package io.rxe4j.verbs.soak;

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
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Regression test of an engine race found by the UDP soak: once a completion has been polled, its
 * WQE's slot must be free, so an application that keeps its send and receive queues exactly full
 * can post again at once (rxe advances the consumer index before it posts the CQE; rxe4j copies
 * what the CQE needs, frees the slot, then publishes the CQE). Before the fix this failed within
 * a second on loopback UDP with "send/receive queue full".
 */
class CompletionSlotRaceTest {
    static final int ACCESS = Access.LOCAL_WRITE;

    @Test
    @org.junit.jupiter.api.Timeout(120)
    void aSlotIsFreeOnceItsCompletionWasPolled() {
        InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        RdmaDevice da = RdmaDevice.open(UdpTransport.bind(lo));
        RdmaDevice db = RdmaDevice.open(UdpTransport.bind(lo));
        ProtectionDomain pa = da.allocPd();
        ProtectionDomain pb = db.allocPd();
        CompletionQueue ca = da.createCq(64);
        CompletionQueue cb = db.createCq(64);
        MemoryRegion ma = pa.allocMr(4096, ACCESS);
        MemoryRegion mb = pb.allocMr(4096, ACCESS);
        int depth = 4;
        QpCaps caps = new QpCaps(depth, depth, 1, 1, 0);
        QueuePair qa = pa.createQp(new QpInitAttr(ca, ca, caps, QpType.RC, false));
        QueuePair qb = pb.createQp(new QpInitAttr(cb, cb, caps, QpType.RC, false));
        connect(qa, qb, db);
        connect(qb, qa, da);
        for (int i = 0; i < depth; i++) {
            qb.postRecv(new RecvWr().set(i, new Sge(mb.addr(), 64, mb.lkey())));
        }
        WorkCompletion[] wc = {new WorkCompletion()};
        SendWr wr = new SendWr();
        int sends = 40_000; // failed within ~0.8 s (a few thousand sends) before the fix
        int inFlight = 0;
        int posted = 0;
        int completed = 0;
        int received = 0;
        try {
            while (received < sends || completed < sends) {
                while (posted < sends && inFlight < depth) { // keep the send queue exactly full
                    qa.postSend(wr.set(posted++, WrOpcode.SEND, SendFlags.SIGNALED, new Sge(ma.addr(), 8, ma.lkey())));
                    inFlight++;
                }
                while (ca.poll(wc) > 0) {
                    assertThat(wc[0].status).as("send %s; %s", wc[0], qa.errorReason()).isEqualTo(WcStatus.SUCCESS);
                    assertThat(wc[0].opcode).isEqualTo(WcOpcode.SEND);
                    assertThat(wc[0].wrId).as("sends complete in order").isEqualTo(completed);
                    completed++;
                    inFlight--;
                }
                if (cb.poll(wc) > 0) { // keep the receive queue exactly full
                    assertThat(wc[0].status).as("receive %s; %s", wc[0], qb.errorReason()).isEqualTo(WcStatus.SUCCESS);
                    assertThat(wc[0].opcode).isEqualTo(WcOpcode.RECV);
                    assertThat(wc[0].byteLen).isEqualTo(8);
                    qb.postRecv(new RecvWr().set(wc[0].wrId, new Sge(mb.addr(), 64, mb.lkey())));
                    received++;
                }
            }
            assertThat(da.counter("retry_exceeded_err") + db.counter("retry_exceeded_err")).isZero();
        } finally {
            for (AutoCloseable c : new AutoCloseable[] {qa, qb, ma, mb, ca, cb, pa, pb, da, db}) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // best effort: the assertion above is what the test is about
                }
            }
        }
    }

    private static void connect(QueuePair me, QueuePair peer, RdmaDevice peerDev) {
        me.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ACCESS));
        me.modify(new QpAttr().state(QpState.RTR).av(peerDev.address()).pathMtu(Mtu.MTU_1024)
                .destQpNum(peer.qpNum()).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1));
        me.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(1));
    }
}
