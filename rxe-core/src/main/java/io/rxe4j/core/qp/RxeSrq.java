package io.rxe4j.core.qp;

import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SrqAttr;
import io.rxe4j.verbs.SrqInitAttr;

/**
 * A shared receive queue ({@code rxe_srq.c}; {@code verbs-surface-facts.md} §4): a ring of receive
 * WQEs that the QPs attached to it take from, in posting order. A QP takes (copies and removes) the
 * head WQE when a message that needs one begins ({@link #takeInto}), so the WQE is the QP's from then
 * on, whatever becomes of the message (§4.2 rule 5). The armed limit: when a take leaves fewer WQEs
 * than it, the limit disarms and the listener runs, once (§4.2 rule 6).
 *
 * <p>Threading: posts come from any thread (producer lock); takes from the loops of the attached QPs,
 * which may be several (consumer side under the same lock: an SRQ is shared by definition, and the
 * lock is held for one copy of a WQE). Resizing keeps the queued WQEs.
 */
public final class RxeSrq implements io.rxe4j.verbs.provider.SrqOps {
    private final int handle;
    private final RxePd pd;
    private final MrTable mrs;
    private final int maxSge;
    private final Object lock = new Object();
    private RecvWqe[] ring;
    private long prod;
    private long cons;
    private int limit;
    private volatile Runnable onLimit = () -> { };

    /** An SRQ of {@code pd}, checked by {@link SrqInitAttr}; {@code handle} names it in its device. */
    public RxeSrq(int handle, RxePd pd, MrTable mrs, int maxWr, int maxSge, int limit) {
        if (maxWr < 1 || maxWr > SrqInitAttr.MAX_WR || maxSge < 1 || maxSge > SrqInitAttr.MAX_SGE || limit < 0
                || limit > maxWr) {
            throw new IllegalArgumentException("SRQ max_wr " + maxWr + " (1.." + SrqInitAttr.MAX_WR + "), max_sge "
                    + maxSge + " (1.." + SrqInitAttr.MAX_SGE + "), srq_limit " + limit + " (0..max_wr)");
        }
        this.handle = handle;
        this.pd = pd;
        this.mrs = mrs;
        this.maxSge = maxSge;
        this.limit = limit;
        this.ring = slots(maxWr);
    }

    private RecvWqe[] slots(int n) {
        RecvWqe[] r = new RecvWqe[n];
        for (int i = 0; i < n; i++) {
            r[i] = new RecvWqe(maxSge);
        }
        return r;
    }

    /** @return the SRQ's PD */
    public RxePd pd() {
        return pd;
    }

    /** @return the most SGEs a WQE may have (a QP's slot for a taken WQE has this many) */
    public int maxSge() {
        return maxSge;
    }

    @Override
    public boolean tryPost(RecvWr wr) {
        long total = WrValidator.validateRecvSges(wr, maxSge, pd, mrs);
        synchronized (lock) {
            if (prod - cons >= ring.length) {
                return false;
            }
            ring[(int) (prod % ring.length)].fill(wr, total);
            prod++;
        }
        return true;
    }

    /**
     * Takes the head WQE: copies it into {@code dst} (which has room for {@link #maxSge()} SGEs) and
     * removes it; fires the limit listener when fewer than the armed limit remain. Loop of the taking QP.
     *
     * @return false if the SRQ is empty
     */
    public boolean takeInto(RecvWqe dst) {
        boolean fire;
        synchronized (lock) {
            if (cons == prod) {
                return false;
            }
            dst.copyFrom(ring[(int) (cons % ring.length)]);
            cons++;
            fire = limit != 0 && prod - cons < limit;
            if (fire) {
                limit = 0; // fires once per arming
            }
        }
        if (fire) {
            onLimit.run();
        }
        return true;
    }

    @Override
    public void modify(int maxWr, int srqLimit, int mask) {
        synchronized (lock) {
            int newMax = (mask & SrqAttr.MAX_WR) != 0 ? maxWr : ring.length;
            int newLimit = (mask & SrqAttr.LIMIT) != 0 ? srqLimit : limit;
            if ((mask & SrqAttr.MAX_WR) != 0) {
                if (maxWr < 1 || maxWr > SrqInitAttr.MAX_WR) {
                    throw new IllegalArgumentException("SRQ max_wr must be 1.." + SrqInitAttr.MAX_WR + ", got " + maxWr);
                }
                if (newLimit != 0 && maxWr < newLimit) {
                    throw new IllegalArgumentException("SRQ max_wr " + maxWr + " is below the armed srq_limit " + newLimit);
                }
                if (maxWr < prod - cons) {
                    throw new IllegalArgumentException("SRQ max_wr " + maxWr + " is below the " + (prod - cons)
                            + " WRs queued now");
                }
            }
            if ((mask & SrqAttr.LIMIT) != 0 && (srqLimit < 0 || srqLimit > newMax)) {
                throw new IllegalArgumentException("srq_limit must be 0..max_wr (" + newMax + "), got " + srqLimit);
            }
            if (newMax != ring.length) {
                RecvWqe[] r = slots(newMax);
                long n = prod - cons;
                for (long i = 0; i < n; i++) {
                    r[(int) i].copyFrom(ring[(int) ((cons + i) % ring.length)]);
                }
                ring = r;
                cons = 0;
                prod = n;
            }
            limit = newLimit;
        }
    }

    @Override
    public int[] query() {
        synchronized (lock) {
            return new int[] {ring.length, maxSge, limit};
        }
    }

    @Override
    public void onLimitReached(Runnable listener) {
        this.onLimit = listener == null ? () -> { } : listener;
    }

    @Override
    public int queued() {
        synchronized (lock) {
            return (int) (prod - cons);
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "SRQ#" + handle + "(" + pd + ", " + (prod - cons) + "/" + ring.length + " queued, limit " + limit + ")";
        }
    }
}
