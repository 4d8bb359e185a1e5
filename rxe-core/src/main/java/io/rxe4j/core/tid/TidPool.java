package io.rxe4j.core.tid;

import io.rxe4j.core.qp.RxeQp;

import io.rxe4j.verbs.Counter;

import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.verbs.TidRdmaConfig;
import io.rxe4j.core.wire.FlowPsn;
import java.util.ArrayDeque;
import java.util.SplittableRandom;

/**
 * The TID RDMA resources of a device's one receive context ({@code tid-opfn-facts.md} §4, §9.4;
 * {@code extensions.md} §5): a pool of TID entries and a pool of hardware flows, each with a
 * queue of the QPs that wait for it ({@code rarr_queue}, {@code flow_queue}).
 *
 * <p>A <em>TID entry</em> is a device-local handle (0..1023, the 10-bit TID of KDETH) to a piece of
 * a registered buffer, (MR, address, length ≤ 2 MiB), programmed by the data destination for one
 * segment and named in the TID list it sends to the data source. A <em>hardware flow</em> is one of
 * 32 flow-table entries; each keeps a generation that advances (13 bits, skipping the reserved
 * 0x1FFF) every time the flow is released, starting from a seeded random value. When a QP cannot
 * get what it needs it joins the queue ({@code n_tidwait} counts it); when something is released
 * every waiting QP is woken, oldest first, and tries again. Loop only.
 */
public final class TidPool {
    /** Largest piece one TID entry maps: 2 MiB (KDETH OFFSET is 15 bits of 64-byte units). */
    static final int MAX_ENTRY_BYTES = 2 << 20;
    /** Most TID entries a device may have: 1024 (KDETH TID is 10 bits). */
    public static final int MAX_ENTRIES = 1024;

    // ---- TID entries ----
    private final RxeMr[] entryMr;
    private final long[] entryAddr;
    private final int[] entryLen;
    private final RxeQp[] entryOwner;
    private final int[] freeEntries;
    private int freeCount;
    private final ArrayDeque<RxeQp> entryWaiters = new ArrayDeque<>();
    // ---- hardware flows ----
    private final boolean[] flowUsed;
    private final int[] flowGeneration;
    private int flowsFree;
    private final ArrayDeque<RxeQp> flowWaiters = new ArrayDeque<>();

    /**
     * @param config the sizes ({@link TidRdmaConfig#tidEntries()} is capped at {@link #MAX_ENTRIES})
     * @param seed seed of the flows' first generations
     */
    public TidPool(TidRdmaConfig config, long seed) {
        int n = Math.min(config.tidEntries(), MAX_ENTRIES);
        entryMr = new RxeMr[n];
        entryAddr = new long[n];
        entryLen = new int[n];
        entryOwner = new RxeQp[n];
        freeEntries = new int[n];
        for (int i = 0; i < n; i++) {
            freeEntries[i] = n - 1 - i; // handed out from 0 upwards
        }
        freeCount = n;
        flowUsed = new boolean[config.flows()];
        flowGeneration = new int[config.flows()];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < flowGeneration.length; i++) {
            flowGeneration[i] = r.nextInt(FlowPsn.RESERVED_GENERATION); // never the reserved one
        }
        flowsFree = flowGeneration.length;
    }

    /** @return TID entries not in use */
    public int freeEntries() {
        return freeCount;
    }

    /** @return hardware flows not in use */
    public int freeFlows() {
        return flowsFree;
    }

    /** @return the number of TID entries of the device */
    public int entries() {
        return entryMr.length;
    }

    // ------------------------------------------------------------------ entries

    /**
     * Takes {@code n} entries for {@code qp}, all or none. On failure {@code qp} joins the wait
     * queue (once) and is woken when entries are released.
     *
     * @param out receives the handles
     * @return whether the entries were taken
     */
    boolean allocEntries(RxeQp qp, int n, int[] out) {
        if (n > freeCount) {
            waitFor(entryWaiters, qp);
            return false;
        }
        for (int i = 0; i < n; i++) {
            out[i] = freeEntries[--freeCount];
            entryOwner[out[i]] = qp;
        }
        return true;
    }

    /** Programs entry {@code h} with a buffer piece (the "RcvArray" write). */
    void program(int h, RxeMr mr, long addr, int len) {
        entryMr[h] = mr;
        entryAddr[h] = addr;
        entryLen[h] = len;
    }

    /** @return the owner QP of entry {@code h}, or null if {@code h} is out of range or free */
    RxeQp owner(int h) {
        return h >= 0 && h < entryOwner.length ? entryOwner[h] : null;
    }

    /** {@link #place} result: the payload was copied. */
    static final int PLACED = 0;
    /** {@link #place} result: the packet names no TID entry of this QP, or lies outside it (drop it). */
    static final int NOT_MINE = 1;
    /** {@link #place} result: the entry's memory no longer allows the access (deregistered MR). */
    static final int FAULT = 2;

    /**
     * The hardware's placement of a TID data packet ({@code tid-opfn-facts.md} §5.4, §9.4): the
     * payload goes to the TID entry named in KDETH at OFFSET × 64 bytes, if that entry belongs to
     * {@code qp} and holds the whole payload, and its memory still allows {@code access}.
     *
     * @param at absolute index of the packet's KDETH block
     * @return {@link #PLACED}, {@link #NOT_MINE} or {@link #FAULT}
     */
    int place(RxeQp qp, io.rxe4j.core.wire.PacketView pkt, int at, int access) {
        io.netty.buffer.ByteBuf b = pkt.buf();
        int h = io.rxe4j.core.wire.Kdeth.tid(b, at);
        long off = io.rxe4j.core.wire.Kdeth.offsetBytes(b, at);
        int n = pkt.payloadLength();
        if (owner(h) != qp || off + n > entryLen[h]) {
            return NOT_MINE;
        }
        RxeMr mr = entryMr[h];
        long va = entryAddr[h] + off;
        if (mr == null || !mr.allows(va, n, access)) {
            return FAULT;
        }
        try {
            io.rxe4j.core.memory.MemoryCopy.fromBuf(b, pkt.payloadIndex(), mr.segment(), mr.offset(va), n);
        } catch (IllegalStateException released) {
            return FAULT;
        }
        return PLACED;
    }

    /** Gives back entries {@code hs[0..n)} and wakes the first QP waiting for entries. */
    void releaseEntries(int[] hs, int n) {
        for (int i = 0; i < n; i++) {
            int h = hs[i];
            if (entryOwner[h] == null) {
                continue;
            }
            entryOwner[h] = null;
            entryMr[h] = null;
            freeEntries[freeCount++] = h;
        }
        wake(entryWaiters);
    }

    // ------------------------------------------------------------------ flows

    /**
     * Takes a hardware flow for {@code qp}: {@code preferred} if it is free, else the first free one.
     * On failure {@code qp} joins the flow queue and is woken when a flow is released.
     *
     * @return the flow index, or -1
     */
    int allocFlow(RxeQp qp, int preferred) {
        if (flowsFree == 0) {
            waitFor(flowWaiters, qp);
            return -1;
        }
        int idx = preferred >= 0 && preferred < flowUsed.length && !flowUsed[preferred] ? preferred : -1;
        for (int i = 0; idx < 0 && i < flowUsed.length; i++) {
            if (!flowUsed[i]) {
                idx = i;
            }
        }
        flowUsed[idx] = true;
        flowsFree--;
        return idx;
    }

    /** @return the generation flow {@code idx} runs with now */
    int generation(int idx) {
        return flowGeneration[idx];
    }

    /** Forces the generation of flow {@code idx} (a RESYNC). */
    void setGeneration(int idx, int gen) {
        flowGeneration[idx] = gen;
    }

    /** Releases flow {@code idx}: its generation advances, the first waiting QP is woken. */
    void releaseFlow(int idx) {
        if (idx < 0 || !flowUsed[idx]) {
            return;
        }
        flowUsed[idx] = false;
        flowsFree++;
        flowGeneration[idx] = FlowPsn.nextGeneration(flowGeneration[idx]);
        wake(flowWaiters);
    }

    /** Drops {@code qp} from both wait queues (QP reset, error or destroyed). */
    public void forget(RxeQp qp) {
        entryWaiters.remove(qp);
        flowWaiters.remove(qp);
    }

    private void waitFor(ArrayDeque<RxeQp> q, RxeQp qp) {
        if (!q.contains(qp)) {
            q.addLast(qp);
            qp.counters.inc(Counter.TID_WAIT); // n_tidwait (the device total sums its QPs)
        }
    }

    /** Wakes every waiting QP, oldest first; each tries again and queues again if it still finds nothing. */
    private static void wake(ArrayDeque<RxeQp> q) {
        RxeQp w;
        while ((w = q.pollFirst()) != null) {
            w.kickTid();
        }
    }
}
