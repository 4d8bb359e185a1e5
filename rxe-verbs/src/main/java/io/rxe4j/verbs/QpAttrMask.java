package io.rxe4j.verbs;

/** {@code enum ibv_qp_attr_mask} bits ({@code rxe-facts.md} §6.1), an int bit set. */
public final class QpAttrMask {
    /** IBV_QP_STATE. */ public static final int STATE = 1;
    /** IBV_QP_CUR_STATE. */ public static final int CUR_STATE = 1 << 1;
    /** IBV_QP_EN_SQD_ASYNC_NOTIFY. */ public static final int EN_SQD_ASYNC_NOTIFY = 1 << 2;
    /** IBV_QP_ACCESS_FLAGS. */ public static final int ACCESS_FLAGS = 1 << 3;
    /** IBV_QP_PKEY_INDEX. */ public static final int PKEY_INDEX = 1 << 4;
    /** IBV_QP_PORT. */ public static final int PORT = 1 << 5;
    /** IBV_QP_QKEY. */ public static final int QKEY = 1 << 6;
    /** IBV_QP_AV: the peer's (IP, UDP port). */ public static final int AV = 1 << 7;
    /** IBV_QP_PATH_MTU. */ public static final int PATH_MTU = 1 << 8;
    /** IBV_QP_TIMEOUT. */ public static final int TIMEOUT = 1 << 9;
    /** IBV_QP_RETRY_CNT. */ public static final int RETRY_CNT = 1 << 10;
    /** IBV_QP_RNR_RETRY. */ public static final int RNR_RETRY = 1 << 11;
    /** IBV_QP_RQ_PSN. */ public static final int RQ_PSN = 1 << 12;
    /** IBV_QP_MAX_QP_RD_ATOMIC. */ public static final int MAX_QP_RD_ATOMIC = 1 << 13;
    /** IBV_QP_ALT_PATH. */ public static final int ALT_PATH = 1 << 14;
    /** IBV_QP_MIN_RNR_TIMER. */ public static final int MIN_RNR_TIMER = 1 << 15;
    /** IBV_QP_SQ_PSN. */ public static final int SQ_PSN = 1 << 16;
    /** IBV_QP_MAX_DEST_RD_ATOMIC. */ public static final int MAX_DEST_RD_ATOMIC = 1 << 17;
    /** IBV_QP_PATH_MIG_STATE. */ public static final int PATH_MIG_STATE = 1 << 18;
    /** IBV_QP_CAP. */ public static final int CAP = 1 << 19;
    /** IBV_QP_DEST_QPN. */ public static final int DEST_QPN = 1 << 20;

    private static final String[] NAMES = {"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS",
        "PKEY_INDEX", "PORT", "QKEY", "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN",
        "MAX_QP_RD_ATOMIC", "ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE",
        "CAP", "DEST_QPN"};

    private QpAttrMask() {}

    /** @return the names of the bits in {@code mask}, e.g. {@code [AV, PATH_MTU]} */
    public static String toString(int mask) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < 32; i++) {
            if ((mask & (1 << i)) != 0) {
                if (sb.length() > 1) {
                    sb.append(", ");
                }
                sb.append(i < NAMES.length ? NAMES[i] : "bit" + i);
            }
        }
        return sb.append(']').toString();
    }
}
