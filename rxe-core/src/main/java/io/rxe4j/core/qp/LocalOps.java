package io.rxe4j.core.qp;

import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxeMw;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WrOpcode;

/**
 * The send queue's local operations ({@code rxe_req.c:rxe_do_local_ops}; {@code
 * verbs-surface-facts.md} §5.2–§5.6): BIND_MW and LOCAL_INV execute when the requester reaches
 * them, in order with the QP's other WQEs, and take no PSN; and the invalidation a received
 * SEND_WITH_INV asks for. No I/O; runs on the QP's loop.
 */
public final class LocalOps {
    private LocalOps() {}

    /**
     * Executes local WQE {@code w} of {@code qp}.
     *
     * @return null when done, else why it failed (the WQE completes with {@link #failureStatus})
     */
    public static String execute(RxeQp qp, SendWqe w) {
        return switch (w.opcode) {
            case BIND_MW -> bind(qp, w);
            case LOCAL_INV -> invalidate(qp, w.invalidateRkey);
            default -> throw new IllegalStateException("not a local operation: " + w.opcode);
        };
    }

    /** @return the completion status of a failed local WQE: MW_BIND_ERR for a bind, else LOC_QP_OP_ERR (§7) */
    public static WcStatus failureStatus(WrOpcode op) {
        return op == WrOpcode.BIND_MW ? WcStatus.MW_BIND_ERR : WcStatus.LOC_QP_OP_ERR;
    }

    private static String bind(RxeQp qp, SendWqe w) {
        MrTable mrs = qp.host().mrs();
        RxeMw mw = mrs.windows().lookup(w.bindMwRkey);
        if (mw == null) {
            return "no memory window with rkey 0x" + Integer.toHexString(w.bindMwRkey);
        }
        RxeMr mr = w.bindLength == 0 ? null : mrs.lookup(w.bindMrLkey);
        return mw.bind(w.bindMwRkey, w.rkey, mr, w.bindMrLkey, w.bindAddr, w.bindLength, w.bindAccess, qp.pd,
                qp.qpn());
    }

    /**
     * Invalidates {@code rkey} for {@code qp}: LOCAL_INV posted on it, or a SEND_WITH_INV it received
     * ({@code rxe_invalidate_mw}, §5.6). Only type 2B windows can be invalidated: an MR's rkey fails,
     * as rxe fails every MR but a fast-registration one (rxe4j has none).
     *
     * @return null when invalidated (or FREE already), else why not
     */
    public static String invalidate(RxeQp qp, int rkey) {
        RxeMw mw = qp.host().mrs().windows().lookup(rkey);
        if (mw == null) {
            return "rkey 0x" + Integer.toHexString(rkey) + " names no memory window (an MR registered with reg_mr "
                    + "cannot be invalidated)";
        }
        return mw.invalidate(rkey, qp.pd, qp.qpn());
    }
}
