package io.rxe4j.core.qp;

import static io.rxe4j.verbs.QpAttrMask.ACCESS_FLAGS;
import static io.rxe4j.verbs.QpAttrMask.ALT_PATH;
import static io.rxe4j.verbs.QpAttrMask.AV;
import static io.rxe4j.verbs.QpAttrMask.CUR_STATE;
import static io.rxe4j.verbs.QpAttrMask.DEST_QPN;
import static io.rxe4j.verbs.QpAttrMask.EN_SQD_ASYNC_NOTIFY;
import static io.rxe4j.verbs.QpAttrMask.MAX_DEST_RD_ATOMIC;
import static io.rxe4j.verbs.QpAttrMask.MAX_QP_RD_ATOMIC;
import static io.rxe4j.verbs.QpAttrMask.MIN_RNR_TIMER;
import static io.rxe4j.verbs.QpAttrMask.PATH_MIG_STATE;
import static io.rxe4j.verbs.QpAttrMask.PATH_MTU;
import static io.rxe4j.verbs.QpAttrMask.PKEY_INDEX;
import static io.rxe4j.verbs.QpAttrMask.PORT;
import static io.rxe4j.verbs.QpAttrMask.QKEY;
import static io.rxe4j.verbs.QpAttrMask.RETRY_CNT;
import static io.rxe4j.verbs.QpAttrMask.RNR_RETRY;
import static io.rxe4j.verbs.QpAttrMask.RQ_PSN;
import static io.rxe4j.verbs.QpAttrMask.SQ_PSN;
import static io.rxe4j.verbs.QpAttrMask.STATE;
import static io.rxe4j.verbs.QpAttrMask.TIMEOUT;

import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;

/**
 * The {@code modify_qp} transition tables ({@code qp_state_table} / {@code ib_modify_qp_is_ok}):
 * for each QP type and legal (from, to), the required and optional attributes. RC: {@code
 * rxe-facts.md} §6.1; UC: {@code verbs-surface-facts.md} §3.5 (RC's without the timeout, retry and
 * READ/atomic attributes); UD: §2.10 (Q_Key instead of the path, no ACCESS_FLAGS, no peer).
 */
public final class ModifyTable {
    private static final int N = QpState.values().length;
    private static final boolean[][] LEGAL = new boolean[N][N];
    private static final int[][] REQUIRED = new int[N][N];
    private static final int[][] OPTIONAL = new int[N][N];
    private static final boolean[][] UC_LEGAL = new boolean[N][N];
    private static final int[][] UC_REQUIRED = new int[N][N];
    private static final int[][] UC_OPTIONAL = new int[N][N];
    private static final boolean[][] UD_LEGAL = new boolean[N][N];
    private static final int[][] UD_REQUIRED = new int[N][N];
    private static final int[][] UD_OPTIONAL = new int[N][N];

    static {
        // UC: core/verbs.c qp_state_table's IB_QPT_UC columns (verbs-surface-facts.md §3.5)
        uc(QpState.RESET, QpState.RESET, 0, 0);
        uc(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0);
        uc(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS);
        uc(QpState.INIT, QpState.RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN, ALT_PATH | ACCESS_FLAGS | PKEY_INDEX);
        uc(QpState.RTR, QpState.RTS, SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE);
        uc(QpState.RTS, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE);
        uc(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        uc(QpState.SQD, QpState.RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE);
        uc(QpState.SQD, QpState.SQD, 0, PORT | AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE);
        uc(QpState.SQE, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS);
        for (QpState s : new QpState[] {QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD, QpState.SQE, QpState.ERR}) {
            uc(s, QpState.RESET, 0, 0);
            uc(s, QpState.ERR, 0, 0);
        }
        // UD (and the GSI QP): core/verbs.c qp_state_table's IB_QPT_UD columns
        ud(QpState.RESET, QpState.RESET, 0, 0);
        ud(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | QKEY, 0);
        ud(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | QKEY);
        ud(QpState.INIT, QpState.RTR, 0, PKEY_INDEX | QKEY);
        ud(QpState.RTR, QpState.RTS, SQ_PSN, QKEY);
        ud(QpState.RTS, QpState.RTS, 0, CUR_STATE | QKEY);
        ud(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        ud(QpState.SQD, QpState.RTS, 0, CUR_STATE | QKEY);
        ud(QpState.SQD, QpState.SQD, 0, PKEY_INDEX | QKEY);
        ud(QpState.SQE, QpState.RTS, 0, CUR_STATE | QKEY);
        for (QpState s : new QpState[] {QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD, QpState.SQE, QpState.ERR}) {
            ud(s, QpState.RESET, 0, 0);
            ud(s, QpState.ERR, 0, 0);
        }

        rule(QpState.RESET, QpState.RESET, 0, 0);
        rule(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0);
        rule(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS);
        rule(QpState.INIT, QpState.RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX);
        rule(QpState.RTR, QpState.RTS, TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        rule(QpState.RTS, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER);
        rule(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        rule(QpState.SQD, QpState.RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        rule(QpState.SQD, QpState.SQD, 0, PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
                | MAX_DEST_RD_ATOMIC | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE);
        for (QpState s : new QpState[] {QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD, QpState.SQE, QpState.ERR}) {
            rule(s, QpState.RESET, 0, 0);
            rule(s, QpState.ERR, 0, 0);
        }
    }

    private ModifyTable() {}

    private static void uc(QpState from, QpState to, int required, int optional) {
        UC_LEGAL[from.ordinal()][to.ordinal()] = true;
        UC_REQUIRED[from.ordinal()][to.ordinal()] = required;
        UC_OPTIONAL[from.ordinal()][to.ordinal()] = optional;
    }

    private static void ud(QpState from, QpState to, int required, int optional) {
        UD_LEGAL[from.ordinal()][to.ordinal()] = true;
        UD_REQUIRED[from.ordinal()][to.ordinal()] = required;
        UD_OPTIONAL[from.ordinal()][to.ordinal()] = optional;
    }

    private static void rule(QpState from, QpState to, int required, int optional) {
        LEGAL[from.ordinal()][to.ordinal()] = true;
        REQUIRED[from.ordinal()][to.ordinal()] = required;
        OPTIONAL[from.ordinal()][to.ordinal()] = optional;
    }

    /**
     * Checks a modify request.
     *
     * @param from current state
     * @param to target state (the current state if the mask has no STATE bit)
     * @param mask {@link QpAttrMask} bits given
     * @throws IllegalArgumentException naming the illegal transition, the missing required
     *     attributes or the attributes not allowed for this transition
     */
    public static void check(QpState from, QpState to, int mask) {
        check(QpType.RC, from, to, mask);
    }

    /**
     * Checks a modify request of a QP of {@code type} (RC, UC or UD).
     *
     * @throws IllegalArgumentException as {@link #check(QpState, QpState, int)}
     */
    public static void check(QpType type, QpState from, QpState to, int mask) {
        boolean[][] legal = type == QpType.UD ? UD_LEGAL : type == QpType.UC ? UC_LEGAL : LEGAL;
        int[][] req = type == QpType.UD ? UD_REQUIRED : type == QpType.UC ? UC_REQUIRED : REQUIRED;
        int[][] opt = type == QpType.UD ? UD_OPTIONAL : type == QpType.UC ? UC_OPTIONAL : OPTIONAL;
        if (!legal[from.ordinal()][to.ordinal()]) {
            throw new IllegalArgumentException("illegal QP state transition " + from + " -> " + to + " for " + type);
        }
        if ((mask & ~((1 << 21) - 1)) != 0) {
            throw new IllegalArgumentException("unknown attribute mask bits 0x" + Integer.toHexString(mask & ~((1 << 21) - 1)));
        }
        int required = req[from.ordinal()][to.ordinal()];
        int allowed = required | opt[from.ordinal()][to.ordinal()] | STATE;
        int missing = required & ~mask;
        if (missing != 0) {
            throw new IllegalArgumentException("modify_qp " + from + " -> " + to + " (" + type + ") is missing required attributes "
                    + QpAttrMask.toString(missing));
        }
        int extra = mask & ~allowed;
        if (extra != 0) {
            throw new IllegalArgumentException("modify_qp " + from + " -> " + to + " (" + type + ") does not accept attributes "
                    + QpAttrMask.toString(extra));
        }
        if ((mask & CUR_STATE) != 0 && from != QpState.RTR && from != QpState.RTS && from != QpState.SQD
                && from != QpState.SQE) {
            throw new IllegalArgumentException("CUR_STATE is only allowed from RTR, RTS, SQD or SQE, not " + from);
        }
    }
}
