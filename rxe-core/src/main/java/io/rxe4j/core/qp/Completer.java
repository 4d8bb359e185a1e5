package io.rxe4j.core.qp;

import io.rxe4j.core.wire.DropReason;
import io.netty.buffer.ByteBuf;
import io.rxe4j.core.device.DeviceCounters;
import io.rxe4j.core.memory.MemoryRegion;
import io.rxe4j.core.verbs.Access;
import io.rxe4j.core.verbs.WcStatus;
import io.rxe4j.core.verbs.WrOpcode;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import java.lang.foreign.ValueLayout;

/**
 * The completer ({@code rxe_comp.c}; {@code rxe-facts.md} §5.2–§5.3, §5.8, §9.2): matches ACKs,
 * NAKs, READ responses and ATOMIC ACKs to send WQEs in order, scatters READ data and atomic
 * results, posts send completions, and starts retries. Loop only.
 */
final class Completer {
    private final QueuePair qp;
    private final DeviceCounters counters;

    /** Next expected response PSN (comp.psn). */
    int compPsn;

    Completer(QueuePair qp) {
        this.qp = qp;
        this.counters = qp.counters;
    }

    void reset() {
        compPsn = qp.requester.psn;
    }

    /** @return the oldest uncompleted WQE that the requester has started, or null */
    SendWqe head() {
        long comp = qp.sqCompleted();
        if (comp == qp.sqProducer()) {
            return null;
        }
        SendWqe w = qp.sqAt(comp);
        return w.state == SendWqe.State.POSTED && comp == qp.sqReq ? null : w;
    }

    void onResponse(PacketView pkt) {
        Opcode op = pkt.opcode();
        int p = pkt.psn();
        switch (op.operation()) {
            case ACKNOWLEDGE -> onAcknowledge(pkt, p);
            case READ_RESPONSE -> onReadResponse(pkt, op, p);
            case ATOMIC_ACKNOWLEDGE -> onAtomicAck(pkt, p);
            default -> counters.drop(DropReason.OTHER);
        }
    }

    private void onAcknowledge(PacketView pkt, int p) {
        int syndrome = Aeth.syndrome(pkt.buf(), pkt.index(Header.AETH));
        if (Psn.diff(p, qp.requester.psn) >= 0) {
            counters.drop(DropReason.OTHER); // acknowledges a PSN never sent
            return;
        }
        switch (Aeth.type(syndrome)) {
            case Aeth.TYPE_ACK -> onAck(p);
            case Aeth.TYPE_RNR_NAK -> {
                implicitAck(p);
                acknowledgeUpTo(p);
                qp.requester.onRnrNak(syndrome & 0x1F);
            }
            case Aeth.TYPE_NAK -> {
                if (syndrome == Aeth.NAK_PSN_SEQ_ERROR) {
                    counters.rcvdSeqErr++;
                    implicitAck(p);
                    acknowledgeUpTo(p);
                    qp.requester.retry(false);
                } else {
                    implicitAck(p);
                    SendWqe head = head();
                    if (head != null) {
                        WcStatus st = switch (syndrome) {
                            case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
                            case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                            default -> WcStatus.REM_OP_ERR;
                        };
                        failHead(head, st, syndrome);
                    }
                }
            }
            default -> counters.drop(DropReason.OTHER);
        }
    }

    /** A positive ACK for PSN {@code p}: completes every SEND/WRITE WQE whose last PSN is ≤ p. */
    private void onAck(int p) {
        if (Psn.diff(p, compPsn) < 0) {
            counters.duplicateResponse++;
            return;
        }
        SendWqe w;
        while ((w = head()) != null) {
            if (w.isReadOrAtomic()) {
                if (Psn.diff(p, w.lastPsn) > 0 && w.state == SendWqe.State.PENDING) {
                    // an ACK past a READ/ATOMIC's last PSN: its response was lost (rxe-facts §5.2, §5.8);
                    // comp.psn moves up to (not past) its first missing response, then retry from there
                    acknowledgeUpTo(Psn.next(p));
                    qp.requester.retry(false);
                    return;
                }
                break;
            }
            if (w.state == SendWqe.State.PENDING && Psn.diff(p, w.lastPsn) >= 0) {
                if (!finish(w, WcStatus.SUCCESS, 0)) {
                    return;
                }
                continue;
            }
            break;
        }
        acknowledgeUpTo(Psn.next(p));
        progress();
    }

    /**
     * Moves comp.psn forward to {@code next} (the first PSN not acknowledged), but never past the
     * first missing response of a pending READ or ATOMIC: only its own responses acknowledge it
     * ({@code rxe-facts.md} §5.2), and a retry must re-request it at the PSNs it was given, or
     * every later PSN would shift against the responder's.
     */
    private void acknowledgeUpTo(int next) {
        SendWqe h = head();
        if (h != null && h.isReadOrAtomic() && h.state == SendWqe.State.PENDING) {
            int cap = Psn.diff(compPsn, h.firstPsn) >= 0 ? compPsn : h.firstPsn;
            if (Psn.diff(next, cap) > 0) {
                next = cap;
            }
        }
        if (Psn.diff(next, compPsn) > 0) {
            compPsn = next;
        }
    }

    /** Completes SEND/WRITE WQEs whose last PSN is before {@code p} (an implicit ACK). */
    private boolean implicitAck(int p) {
        SendWqe w;
        while ((w = head()) != null && !w.isReadOrAtomic() && w.state == SendWqe.State.PENDING
                && Psn.diff(w.lastPsn, p) < 0) {
            if (Psn.diff(Psn.next(w.lastPsn), compPsn) > 0) {
                compPsn = Psn.next(w.lastPsn);
            }
            if (!finish(w, WcStatus.SUCCESS, 0)) {
                return false;
            }
        }
        return true;
    }

    private void onReadResponse(PacketView pkt, Opcode op, int p) {
        if (!implicitAck(p)) {
            return;
        }
        int d = Psn.diff(p, compPsn);
        if (d != 0) {
            if (d < 0) {
                counters.duplicateResponse++;
            } else {
                counters.outOfSeqResponse++; // a response packet is missing: wait for the retry
            }
            return;
        }
        SendWqe w = head();
        if (w != null && (w.opcode == WrOpcode.ATOMIC_WRITE || w.opcode == WrOpcode.FLUSH)) {
            // both are answered by a zero-length READ RESPONSE ONLY (rxe-facts §1.3, §5.8)
            if (w.state != SendWqe.State.PENDING || w.firstPsn != p || op != Opcode.RC_RDMA_READ_RESPONSE_ONLY
                    || pkt.payloadLength() != 0) {
                counters.drop(DropReason.OTHER);
                return;
            }
            compPsn = Psn.next(p);
            if (finish(w, WcStatus.SUCCESS, 0)) {
                progress();
            }
            return;
        }
        if (w == null || w.opcode != WrOpcode.RDMA_READ || w.state != SendWqe.State.PENDING
                || Psn.diff(p, w.firstPsn) < 0 || Psn.diff(p, w.lastPsn) > 0) {
            counters.drop(DropReason.OTHER);
            return;
        }
        int pmtu = qp.pmtu();
        long remaining = w.length - w.readBytes;
        int n = pkt.payloadLength();
        boolean ok = op.isLast() ? n == remaining : (n == pmtu && remaining > pmtu);
        if (!ok) {
            counters.drop(DropReason.OTHER);
            return;
        }
        if (!scatter(w, w.readBytes, pkt.buf(), pkt.payloadIndex(), n)) {
            failHead(w, WcStatus.LOC_PROT_ERR, 0);
            return;
        }
        w.readBytes += n;
        compPsn = Psn.next(p);
        if (op.isLast()) {
            if (!finish(w, WcStatus.SUCCESS, 0)) {
                return;
            }
        }
        progress();
    }

    private void onAtomicAck(PacketView pkt, int p) {
        if (!implicitAck(p)) {
            return;
        }
        if (Psn.diff(p, compPsn) != 0) {
            counters.duplicateResponse++;
            return;
        }
        SendWqe w = head();
        if (w == null || !w.opcode.isAtomic() || w.state != SendWqe.State.PENDING || w.firstPsn != p) {
            counters.drop(DropReason.OTHER);
            return;
        }
        long original = AtomicAckEth.originalData(pkt.buf(), pkt.index(Header.ATOMIC_ACK_ETH));
        MemoryRegion mr = qp.device.mrs().lookup(w.sgeLkey[0]);
        if (mr == null || mr.pd() != qp.pd || !mr.allows(w.sgeAddr[0], 8, Access.LOCAL_WRITE)) {
            failHead(w, WcStatus.LOC_PROT_ERR, 0);
            return;
        }
        try {
            // host byte order, as rxe stores the original value into the local SGE
            mr.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, mr.offset(w.sgeAddr[0]), original);
        } catch (IllegalStateException closed) {
            failHead(w, WcStatus.LOC_PROT_ERR, 0);
            return;
        }
        compPsn = Psn.next(p);
        if (!finish(w, WcStatus.SUCCESS, 0)) {
            return;
        }
        progress();
    }

    private boolean scatter(SendWqe w, long msgOffset, ByteBuf b, int index, int len) {
        return SgeCopy.copy(qp.device.mrs(), qp.pd, w.sgeAddr, w.sgeLength, w.sgeLkey, w.numSge, msgOffset, b, index,
                len, false, Access.LOCAL_WRITE);
    }

    /** Valid response progress: reset retry counters, refresh the timer, let the requester go on. */
    private void progress() {
        qp.requester.resetRetryCounters();
        if (qp.requester.outstanding()) {
            qp.requester.armRetransmit(true);
        }
        qp.requester.run();
    }

    /** Completes {@code w} (the head) and advances the SQ consumer index. */
    private boolean finish(SendWqe w, WcStatus status, int vendorErr) {
        if (w.creditHeld) {
            w.creditHeld = false;
            qp.requester.returnCredit();
        }
        w.state = SendWqe.State.DONE;
        // copy what the CQE needs, free the slot, then publish the CQE (see QueuePair.completeSend)
        long wrId = w.wrId;
        WrOpcode op = w.opcode;
        int sendFlags = w.sendFlags;
        long length = w.length;
        int imm = w.immData;
        long comp = qp.sqCompleted() + 1;
        qp.advanceSqCompleted(comp);
        if (qp.sqReq - comp < 0) {
            qp.sqReq = comp;
        }
        if (!qp.completeSend(wrId, op, sendFlags, length, imm, status, vendorErr)) {
            qp.moveToError("send CQ overflow");
            return false;
        }
        return true;
    }

    /**
     * Completes the head WQE with an error status and moves the QP to ERR, which flushes every
     * later WQE ({@code rxe-facts.md} §6.8).
     */
    void failHead(SendWqe w, WcStatus status, int vendorErr) {
        finish(w, status, vendorErr);
        qp.moveToError("send WQE " + w.wrId + " (" + w.opcode + ") failed: " + status
                + (vendorErr != 0 ? ", NAK 0x" + Integer.toHexString(vendorErr) : ""));
    }
}
