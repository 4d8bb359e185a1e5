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

    /** One QP type's table: for each legal (from, to), the required and optional attributes. */
    private static final class Table {
        final boolean[][] legal = new boolean[N][N];
        final int[][] required = new int[N][N];
        final int[][] optional = new int[N][N];

        void rule(QpState from, QpState to, int req, int opt) {
            legal[from.ordinal()][to.ordinal()] = true;
            required[from.ordinal()][to.ordinal()] = req;
            optional[from.ordinal()][to.ordinal()] = opt;
        }
    }

    private static final Table RC = new Table();
    private static final Table UC = new Table();
    private static final Table UD = new Table();

    static {
        // UC: core/verbs.c qp_state_table's IB_QPT_UC columns (verbs-surface-facts.md §3.5)
        UC.rule(QpState.RESET, QpState.RESET, 0, 0);
        UC.rule(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0);
        UC.rule(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS);
        UC.rule(QpState.INIT, QpState.RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN, ALT_PATH | ACCESS_FLAGS | PKEY_INDEX);
        UC.rule(QpState.RTR, QpState.RTS, SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE);
        UC.rule(QpState.RTS, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE);
        UC.rule(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        UC.rule(QpState.SQD, QpState.RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE);
        UC.rule(QpState.SQD, QpState.SQD, 0, PORT | AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE);
        UC.rule(QpState.SQE, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS);
        // UD (and the GSI QP): core/verbs.c qp_state_table's IB_QPT_UD columns
        UD.rule(QpState.RESET, QpState.RESET, 0, 0);
        UD.rule(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | QKEY, 0);
        UD.rule(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | QKEY);
        UD.rule(QpState.INIT, QpState.RTR, 0, PKEY_INDEX | QKEY);
        UD.rule(QpState.RTR, QpState.RTS, SQ_PSN, QKEY);
        UD.rule(QpState.RTS, QpState.RTS, 0, CUR_STATE | QKEY);
        UD.rule(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        UD.rule(QpState.SQD, QpState.RTS, 0, CUR_STATE | QKEY);
        UD.rule(QpState.SQD, QpState.SQD, 0, PKEY_INDEX | QKEY);
        UD.rule(QpState.SQE, QpState.RTS, 0, CUR_STATE | QKEY);

        RC.rule(QpState.RESET, QpState.RESET, 0, 0);
        RC.rule(QpState.RESET, QpState.INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0);
        RC.rule(QpState.INIT, QpState.INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS);
        RC.rule(QpState.INIT, QpState.RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX);
        RC.rule(QpState.RTR, QpState.RTS, TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        RC.rule(QpState.RTS, QpState.RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER);
        RC.rule(QpState.RTS, QpState.SQD, 0, EN_SQD_ASYNC_NOTIFY);
        RC.rule(QpState.SQD, QpState.RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE);
        RC.rule(QpState.SQD, QpState.SQD, 0, PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
                | MAX_DEST_RD_ATOMIC | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE);
        for (Table t : new Table[] {RC, UC, UD}) {
            for (QpState s : new QpState[] {QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD, QpState.SQE,
                QpState.ERR}) {
                t.rule(s, QpState.RESET, 0, 0);
                t.rule(s, QpState.ERR, 0, 0);
            }
        }
    }

    private ModifyTable() {}

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
        Table t = switch (type) {
            case RC -> RC;
            case UC -> UC;
            case UD -> UD;
        };
        if (!t.legal[from.ordinal()][to.ordinal()]) {
            throw new IllegalArgumentException("illegal QP state transition " + from + " -> " + to + " for " + type);
        }
        if ((mask & ~((1 << 21) - 1)) != 0) {
            throw new IllegalArgumentException("unknown attribute mask bits 0x" + Integer.toHexString(mask & ~((1 << 21) - 1)));
        }
        int required = t.required[from.ordinal()][to.ordinal()];
        int allowed = required | t.optional[from.ordinal()][to.ordinal()] | STATE;
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
