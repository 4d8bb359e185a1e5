package io.rxe4j.core.qp;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.MemoryCopy;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxePd;

/**
 * Moves message bytes between a WQE's scatter/gather list and a packet buffer. Every SGE's lkey
 * is looked up again and checked (same PD, inside the MR, required access), so memory outside an
 * MR, of another PD, or deregistered since posting is never touched.
 */
public final class SgeCopy {
    private SgeCopy() {}

    /**
     * Copies {@code len} bytes at message offset {@code msgOffset}.
     *
     * @param toBuf true: SGEs → buffer (gather); false: buffer → SGEs (scatter)
     * @param required access bits each MR must grant
     * @return whether all {@code len} bytes were copied (false: a local protection fault)
     */
    public static boolean copy(MrTable mrs, RxePd pd, long[] addr, int[] length, int[] lkey, int numSge,
            long msgOffset, ByteBuf b, int index, int len, boolean toBuf, int required) {
        long skip = msgOffset;
        int done = 0;
        for (int i = 0; i < numSge && done < len; i++) {
            int sl = length[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, len - done);
            long va = addr[i] + skip;
            RxeMr mr = mrs.lookup(lkey[i]);
            if (mr == null || mr.pd() != pd || !mr.allows(va, n, required)) {
                return false;
            }
            try {
                if (toBuf) {
                    MemoryCopy.toBuf(mr.segment(), mr.offset(va), b, index + done, n);
                } else {
                    MemoryCopy.fromBuf(b, index + done, mr.segment(), mr.offset(va), n);
                }
            } catch (IllegalStateException released) {
                return false; // the MR's memory was released concurrently
            }
            done += n;
            skip = 0;
        }
        return done == len;
    }

    /**
     * Writes {@code len} bytes of {@code w}'s message from message offset {@code msgOffset} into
     * {@code b} at {@code index} (from its inline copy, or gathered through its SGEs, each lkey checked
     * again), then {@code pad} zero bytes: the payload of a request packet.
     *
     * @return false when the SGEs cannot be read (a local protection fault; nothing is written then
     *     beyond what was copied)
     */
    public static boolean payload(RxeQp qp, SendWqe w, long msgOffset, io.netty.buffer.ByteBuf b, int index, int len,
            int pad) {
        if (len > 0) {
            if (w.inlineLength > 0 || w.numSge == 0) {
                b.setBytes(index, w.inline, (int) msgOffset, len);
            } else if (!copy(qp.host().mrs(), qp.pd, w.sgeAddr, w.sgeLength, w.sgeLkey, w.numSge, msgOffset, b, index,
                    len, true, 0)) {
                return false;
            }
        }
        b.setZero(index + len, pad);
        return true;
    }
}
