package io.rxe4j.core.device;

import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Grh;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.provider.GsiOps;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;

/**
 * The device's GSI QP, QP1 ({@link GsiOps}; {@code verbs-surface-facts.md} §2.3, §2.9; {@code cm-facts.md}
 * §1.1): a UD QP on the first lane, created with the device, whose QPN is 1 and whose Q_Key is
 * 0x80010000 (the UD engine sends that key and source QP 1 whatever a WR says, and accepts only it).
 * It keeps {@link #RECV_SLOTS} receive buffers of {@link #SLOT_BYTES} bytes posted in a memory region
 * of its own; each datagram that completes one is copied out (the 40-byte GRH and the payload), its
 * buffer posted again, and the copy handed to the listener on the loop. Its PD, CQs and MR are the
 * device's own, outside every application's: QPN 1 is never a user QPN, and the MR takes an index of
 * its own above the application's {@code maxMr}.
 */
final class GsiQp implements GsiOps, RxeQp.DatagramListener {
    /** Receive buffers kept posted. */
    static final int RECV_SLOTS = 32;
    /** Bytes per receive buffer: the 40-byte GRH, a 256-byte MAD, room to spare (a longer datagram is dropped). */
    static final int SLOT_BYTES = 512;
    /**
     * Sends outstanding at most (inline: the MAD is copied into the WQE, 256 bytes each): room for a
     * DREQ to each of a few hundred connections a closing device disconnects at once.
     */
    static final int SEND_SLOTS = 512;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GsiQp.class);

    private final RxeLane lane;
    private final MrTable mrs;
    private final Arena arena;
    private final RxeMr mr;
    private final RxeCq sendCq;
    private final RxeCq recvCq;
    private final RxeQp qp;
    private final WorkCompletion[] polled = {new WorkCompletion()};
    private volatile MadListener listener;

    /** Creates QP1 on {@code lane} in RTS with its receive buffers posted; it is reachable once the caller publishes {@link #qp()}. */
    GsiQp(RxeLane lane, MrTable mrs) {
        this.lane = lane;
        this.mrs = mrs;
        RxePd pd = new RxePd(0); // the device's own PD: no application's PD is 0
        this.arena = Arena.ofShared();
        MemorySegment mem = arena.allocate((long) RECV_SLOTS * SLOT_BYTES, 4096);
        this.mr = mrs.register(key -> new RxeMr(pd, mem, null, Access.LOCAL_WRITE, key));
        this.sendCq = new RxeCq(0, SEND_SLOTS);
        this.recvCq = new RxeCq(0, RECV_SLOTS);
        sendCq.bindLane(lane.index());
        recvCq.bindLane(lane.index());
        this.qp = new RxeQp(lane, QPN, pd, sendCq, recvCq, new QpCaps(SEND_SLOTS, RECV_SLOTS, 1, 1, MAD_BYTES),
                false, QpType.UD, null, io.rxe4j.core.ud.UdEngine::new);
        qp.modifyUnpublished(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(QKEY));
        qp.modifyUnpublished(new QpAttr().state(QpState.RTR));
        qp.modifyUnpublished(new QpAttr().state(QpState.RTS).sqPsn(0));
        for (int slot = 0; slot < RECV_SLOTS; slot++) {
            post(slot);
        }
        qp.datagramListener(this);
    }

    /** @return the QP (QPN 1) */
    RxeQp qp() {
        return qp;
    }

    private void post(int slot) {
        qp.tryPostRecv(new RecvWr().set(slot, new Sge(mr.iova() + (long) slot * SLOT_BYTES, SLOT_BYTES, mr.lkey())));
    }

    @Override
    public io.rxe4j.verbs.spi.Scheduler scheduler() {
        return lane.scheduler();
    }

    @Override
    public void count(Counter counter) {
        qp.counters().inc(counter);
    }

    @Override
    public void listener(MadListener l) {
        this.listener = l;
    }

    @Override
    public boolean send(InetSocketAddress to, int remoteQpn, byte[] mad) {
        if (to == null || mad == null || mad.length < 1 || mad.length > MAD_BYTES) {
            throw new IllegalArgumentException("a MAD is 1.." + MAD_BYTES + " bytes to a peer, got "
                    + (mad == null ? "null" : mad.length + " bytes") + " to " + to);
        }
        if ((remoteQpn & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("remote QPN must be 24-bit, got 0x" + Integer.toHexString(remoteQpn));
        }
        SendWr wr = new SendWr().send(0).inline(mad).ud(null, remoteQpn, QKEY); // a control-plane allocation
        if (qp.tryPostDatagram(wr, to)) {
            return true;
        }
        if (!lane.scheduler().inLoop()) {
            return false;
        }
        // a burst posted in one loop turn (a thousand REQs, a closing device's DREQs) filled the queue
        // before its kick ran: send what is queued now, which frees the slots unless the transport is full
        qp.sendPendingNow();
        return qp.tryPostDatagram(wr, to);
    }

    /** A datagram completed one of the receive buffers: copy it out, post the buffer again, hand it on. Loop. */
    @Override
    public void received(InetSocketAddress sender) {
        while (recvCq.poll(polled, 1) == 1) {
            WorkCompletion wc = polled[0];
            int slot = (int) wc.wrId;
            if (wc.status != WcStatus.SUCCESS) {
                LOG.warn("GSI QP1 of {}: receive completion {}", lane, wc);
                if (wc.status != WcStatus.WR_FLUSH_ERR) {
                    post(slot);
                }
                continue;
            }
            MemorySegment s = mr.segment().asSlice((long) slot * SLOT_BYTES, SLOT_BYTES);
            byte[] grh = s.asSlice(0, Grh.LENGTH).toArray(ValueLayout.JAVA_BYTE);
            byte[] mad = s.asSlice(Grh.LENGTH, wc.byteLen - Grh.LENGTH).toArray(ValueLayout.JAVA_BYTE);
            int srcQp = wc.srcQp;
            post(slot);
            MadListener l = listener;
            if (l == null) {
                qp.counters().drop(DropReason.GSI_NO_LISTENER);
                continue;
            }
            qp.counters().inc(Counter.GSI_RCVD_MADS);
            try {
                l.onMad(sender, srcQp, grh, mad);
            } catch (RuntimeException e) {
                LOG.warn("GSI QP1 of {}: the MAD listener failed on a MAD from {}", lane, sender, e);
            }
        }
    }

    /** Stops QP1 (on its loop) and frees its memory; after the device's loops have stopped. */
    void release() {
        mrs.unregister(mr);
        arena.close();
    }
}
