package io.rxe4j.core.device;

import io.rxe4j.core.qp.RxeQp;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The QPs of a device by QPN ({@code rxe_pool} of QPs in {@code rdma_rxe}): slot {@code qpn -
 * FIRST_QPN}. Lanes find a packet's QP here without going through {@link RxeDevice} ({@code
 * redesign.md} §3). Slots are published and cleared atomically: any thread reads, {@link
 * RxeDevice#createQp} and {@link RxeDevice#destroyQp} write.
 */
final class QpTable {
    /** The first QPN handed out ({@code rxe-facts.md} §6.4: QPNs are pool indices from 16). */
    static final int FIRST_QPN = 16;

    private final AtomicReferenceArray<RxeQp> slots;
    /** The device's GSI QP (QPN 1), outside the slots: never a user QPN. */
    private volatile RxeQp gsi;

    /** @param capacity the most QPs at once ({@code DeviceConfig.maxQp}) */
    QpTable(int capacity) {
        this.slots = new AtomicReferenceArray<>(capacity);
    }

    /** @return the number of slots */
    int capacity() {
        return slots.length();
    }

    /** @return the QP in slot {@code index} (0-based), or null; for scans */
    RxeQp at(int index) {
        return slots.get(index);
    }

    /** @return whether slot {@code index} is free */
    boolean isFree(int index) {
        return slots.get(index) == null;
    }

    /** Puts {@code qp} (whose QPN is {@code FIRST_QPN + index}) into its slot. */
    void put(int index, RxeQp qp) {
        slots.set(index, qp);
    }

    /** @return whether {@code qp} was in the table (and is removed now) */
    boolean remove(RxeQp qp) {
        int idx = qp.qpn() - FIRST_QPN;
        return idx >= 0 && idx < slots.length() && slots.compareAndSet(idx, qp, null);
    }

    /** Publishes the device's GSI QP: packets to QPN 1 reach it from now on. */
    void gsi(RxeQp qp) {
        this.gsi = qp;
    }

    /** @return the device's GSI QP (QPN 1), or null before it is published */
    RxeQp gsi() {
        return gsi;
    }

    /** @return the QP with this QPN, or null. Any thread. */
    RxeQp get(int qpn) {
        if (qpn == 1) {
            return gsi;
        }
        int idx = qpn - FIRST_QPN;
        return idx >= 0 && idx < slots.length() ? slots.get(idx) : null;
    }

    /**
     * @return the RC QP of {@code lane} whose peer is {@code peer} and whose destination QPN is
     *     {@code destQpn} (the QP that sent a packet so addressed), or null. A scan: for error paths
     *     only. Any thread.
     */
    RxeQp sendingTo(InetSocketAddress peer, int destQpn, RxeLane lane) {
        for (int i = 0; i < slots.length(); i++) {
            RxeQp qp = slots.get(i);
            if (qp != null && qp.host() == lane && !qp.isDestroyed() && qp.destQpn() == destQpn
                    && peer.equals(qp.av())) {
                return qp;
            }
        }
        return null;
    }
}
