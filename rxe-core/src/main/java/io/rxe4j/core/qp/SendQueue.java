package io.rxe4j.core.qp;

import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.TidRdmaParams;
import io.rxe4j.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The send queue of a QP ({@code rxe_queue.c} for the SQ): a ring of preallocated {@link
 * SendWqe} slots, one more than users may fill (rdmavt's reserved slot, which carries the hidden
 * OPFN request, {@code tid-opfn-facts.md} §1.2), the producer index that posting threads advance
 * and the consumer (completed) index that the loop advances.
 *
 * <p>Threading: posts ({@link #tryPost}, {@link #postAll}) may come from any thread: they copy the
 * WR into its slot under the producer lock and publish it with a release store of the producer
 * index. Everything else runs on the QP's loop, which reads the producer index with acquire and
 * publishes the consumer index with release (a posting thread reads it with acquire to find room).
 *
 * <p>Layout: the producer index (written by posting threads) and the consumer index (written by
 * the loop) sit on separate 64-byte cache lines, so that a thread posting and the loop completing
 * do not invalidate each other's line on every WR (issue 13). HotSpot lays out fields of one size
 * in declaration order, so the seven longs after each index are the padding ({@code
 * QueueIndexLayoutTest} checks the offsets).
 */
final class SendQueue {
    private static final VarHandle PROD;
    private static final VarHandle COMP;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PROD = l.findVarHandle(SendQueue.class, "prod", long.class);
            COMP = l.findVarHandle(SendQueue.class, "comp", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The QP this queue belongs to: its MR table, path MTU and TID RDMA state decide how a WR is filled. */
    private final RxeQp qp;
    private final SendWqe[] ring;
    /** How many WRs users may have outstanding (max_send_wr); the ring has one slot more. */
    private final int maxSendWr;
    private final Object lock = new Object();
    /** The reserved slot holds the hidden OPFN WQE (1) or not (0); guarded by {@link #lock}. */
    private int reservedInUse;

    @SuppressWarnings("unused")
    private long prod; // next slot users fill; published with release
    @SuppressWarnings("unused")
    private long padP1, padP2, padP3, padP4, padP5, padP6, padP7;
    @SuppressWarnings("unused")
    private long comp; // oldest uncompleted WQE (completer); published with release
    @SuppressWarnings("unused")
    private long padC1, padC2, padC3, padC4, padC5, padC6, padC7;

    SendQueue(RxeQp qp, QpCaps caps) {
        this.qp = qp;
        this.maxSendWr = caps.maxSendWr();
        // one slot more than users may fill: rdmavt's reserved operation (the hidden OPFN request)
        this.ring = new SendWqe[maxSendWr + 1];
        for (int i = 0; i < ring.length; i++) {
            ring[i] = new SendWqe(caps.maxSendSge(), caps.maxInlineData());
        }
    }

    /**
     * Queues a copy of {@code wr}, already validated ({@link WrValidator}). Any thread.
     *
     * @return false if the queue is full (max_send_wr outstanding); nothing was queued
     */
    boolean tryPost(SendWr wr) {
        return tryPost(wr, null);
    }

    /** As {@link #tryPost(SendWr)}; a UD WR goes to {@code peer} when it is not null (no address handle). */
    boolean tryPost(SendWr wr, java.net.InetSocketAddress peer) {
        synchronized (lock) {
            long p = (long) PROD.getOpaque(this);
            long c = (long) COMP.getAcquire(this);
            if (p - c - reservedInUse >= maxSendWr) {
                return false;
            }
            fill(ring[(int) (p % ring.length)], wr, peer);
            PROD.setRelease(this, p + 1);
        }
        return true;
    }

    /**
     * Queues {@code wrs[from, to)}, already validated, under one producer lock with one
     * publication of the producer index (a WR list of {@code ibv_post_send}). Any thread.
     *
     * @return how many were queued, from {@code from} on; fewer than {@code to - from} when the
     *     queue filled up
     */
    int postAll(List<SendWr> wrs, int from, int to) {
        int posted = 0;
        synchronized (lock) {
            long p = (long) PROD.getOpaque(this);
            long c = (long) COMP.getAcquire(this);
            for (int i = from; i < to; i++) {
                if (p - c - reservedInUse >= maxSendWr) {
                    break;
                }
                fill(ring[(int) (p % ring.length)], wrs.get(i), null);
                p++;
                posted++;
            }
            if (posted > 0) {
                PROD.setRelease(this, p);
            }
        }
        return posted;
    }

    /**
     * Queues the hidden OPFN request into the reserved slot ({@code IB_WR_OPFN}, {@code
     * RVT_OPERATION_USE_RESERVE}): a COMPARE_SWAP to VA 0xFFFFFFFFFFFFFFFF, rkey 0, swap 0, with
     * the negotiation word as compare data, behind the WQEs already queued; it never produces a
     * CQE ({@code tid-opfn-facts.md} §1.2). Loop only.
     *
     * @return false if the reserved slot is in use or the ring is full
     */
    boolean postOpfn(long word) {
        synchronized (lock) {
            long p = (long) PROD.getOpaque(this);
            long c = (long) COMP.getAcquire(this);
            if (reservedInUse != 0 || p - c >= ring.length) {
                return false;
            }
            SendWqe w = ring[(int) (p % ring.length)];
            w.wrId = 0;
            w.opcode = WrOpcode.ATOMIC_CMP_AND_SWP;
            w.sendFlags = 0;
            w.immData = 0;
            w.remoteAddr = -1L;
            w.rkey = 0;
            w.compareAdd = word;
            w.swap = 0;
            w.compareAddMask = 0;
            w.swapMask = 0;
            w.numSge = 0;
            w.inlineLength = 0;
            w.length = 8;
            w.tid = false;
            w.posted(true);
            reservedInUse = 1;
            PROD.setRelease(this, p + 1);
        }
        return true;
    }

    /** @return the producer index (acquire: every WQE before it is fully written). Loop. */
    long producer() {
        return (long) PROD.getAcquire(this);
    }

    /** @return the consumer index: the oldest WQE not yet completed. Loop. */
    long completed() {
        return (long) COMP.getOpaque(this);
    }

    /** Publishes the consumer index {@code v} (release: posting threads may reuse the slots before it). Loop. */
    void advanceCompleted(long v) {
        COMP.setRelease(this, v);
    }

    /**
     * Retires the WQE at the consumer index: advances it to {@code v}; for the hidden OPFN WQE
     * the reserved slot is freed in the same step, so a posting thread never counts it twice. Loop.
     */
    void retireHead(SendWqe w, long v) {
        if (w.opfn) {
            synchronized (lock) {
                reservedInUse = 0;
                COMP.setRelease(this, v);
            }
        } else {
            COMP.setRelease(this, v);
        }
    }

    /** @return the slot of ring index {@code index} (any index: taken modulo the ring size). Loop. */
    SendWqe at(long index) {
        return ring[(int) (index % ring.length)];
    }

    /**
     * Drops every queued WQE without completions (modify to RESET, {@code rxe-facts.md} §6.8):
     * the consumer index jumps to the producer index and the reserved slot is free. Loop.
     *
     * @return the new consumer index (where the requester starts again)
     */
    long reset() {
        synchronized (lock) {
            long p = (long) PROD.getAcquire(this);
            reservedInUse = 0;
            COMP.setRelease(this, p);
            return p;
        }
    }

    private void fill(SendWqe w, SendWr wr, java.net.InetSocketAddress peer) {
        w.wrId = wr.wrId;
        w.opcode = wr.opcode;
        w.sendFlags = wr.sendFlags;
        w.immData = wr.immData;
        w.remoteAddr = wr.remoteAddr;
        w.rkey = wr.rkey;
        w.compareAdd = wr.compareAdd;
        w.swap = wr.swap;
        w.compareAddMask = wr.compareAddMask;
        w.swapMask = wr.swapMask;
        w.atomicWriteValue = wr.atomicWriteValue;
        w.flushType = wr.flushType;
        w.flushLevel = wr.flushLevel;
        w.invalidateRkey = wr.invalidateRkey;
        if (wr.opcode == WrOpcode.BIND_MW) { // checked by the API: an open window and bind info
            io.rxe4j.verbs.MwBindInfo b = wr.bindInfo;
            w.bindMwRkey = wr.mw.rkey();
            w.bindMrLkey = b.mr() == null ? 0 : b.mr().lkey();
            w.bindAddr = b.addr();
            w.bindLength = b.length();
            w.bindAccess = b.mwAccessFlags();
        }
        if (qp.type == io.rxe4j.verbs.QpType.UD) { // checked by the API: an open AH of the QP's PD
            w.udPeer = peer != null ? peer : wr.ah.attr().peer();
            w.remoteQpn = wr.remoteQpn;
            w.remoteQkey = wr.remoteQkey;
        }
        long total = 0;
        boolean inline = (wr.sendFlags & SendFlags.INLINE) != 0 || wr.inlineData != null;
        w.inlineLength = 0;
        w.numSge = inline ? 0 : wr.numSge;
        if (wr.inlineData != null) { // checked by validateSend: numSge 0, within max_inline_data
            int n = (int) wr.inlineData.byteSize();
            if (n > 0) {
                MemorySegment.copy(wr.inlineData, ValueLayout.JAVA_BYTE, 0, w.inline, 0, n);
            }
            w.inlineLength = n;
            w.sendFlags |= SendFlags.INLINE;
            total = n;
        }
        for (int i = 0; i < wr.numSge; i++) {
            Sge sge = wr.sgList[i];
            if (inline) {
                if (sge.length > 0) {
                    RxeMr mr = qp.host().mrs().lookup(sge.lkey); // checked by validateSend
                    MemorySegment.copy(mr.segment(), ValueLayout.JAVA_BYTE, mr.offset(sge.addr),
                            w.inline, w.inlineLength, sge.length);
                }
                w.inlineLength += sge.length;
            } else {
                w.sgeAddr[i] = sge.addr;
                w.sgeLength[i] = sge.length;
                w.sgeLkey[i] = sge.lkey;
            }
            total += sge.length;
        }
        w.length = switch (WrOpcodeInfo.of(wr.opcode).length()) {
            case EIGHT -> 8;
            case FLUSH_LENGTH -> wr.flushLength;
            case SGE_TOTAL -> total;
        };
        w.tid = false;
        if (wr.opcode == WrOpcode.RDMA_WRITE && !inline) {
            // a qualifying WRITE (not WRITE_WITH_IMM) on a QP that negotiated TID RDMA is a TID WRITE
            TidRdmaParams remote = qp.opfn.tidWriteQualifies(total, wr.remoteAddr);
            if (remote != null) {
                TidSegment.toTidWrite(w, remote, qp.pmtu());
                qp.tidWritesPosted = true; // published to the loop by the release store of sqProd
            }
        }
        if (wr.opcode == WrOpcode.RDMA_READ && !inline) {
            // hfi1_setup_wqe: a qualifying READ on a QP that negotiated TID RDMA is carried as TID READ
            TidRdmaParams remote = qp.opfn.tidReadQualifies(total, w.sgeAddr, w.sgeLength, w.numSge);
            if (remote != null) {
                TidSegment.toTidRead(w, remote, qp.pmtu());
            }
        }
        w.posted(false);
    }
}
