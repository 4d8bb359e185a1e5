package io.rxe4j.core.qp;

import io.rxe4j.core.wire.Psn;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import java.net.InetSocketAddress;

/**
 * The attributes of an RC QP that {@code modify_qp} sets and {@code query_qp} reports ({@code
 * struct rxe_qp} attributes / {@code rxe_qp_from_attr}), and the checks of a modify request
 * against the transition table ({@link ModifyTable}, {@code rxe-facts.md} §6.1) and rxe's value
 * ranges. Knows no engine: the QP tells its engines about the new values after {@link #apply}.
 *
 * <p>Threading: written on the QP's loop only (modify runs there); read on the loop by the
 * engines. The QP state itself is not here: it belongs to {@link RxeQp}.
 */
public final class QpAttributes {
    /** IBV_QP_ACCESS_FLAGS ({@link Access} REMOTE_* and FLUSH_* bits the responder allows). */
    int accessFlags;
    /** The peer's (IP, UDP port), or null before RTR. */
    InetSocketAddress av;
    /** IBV_QP_PATH_MTU (256 until modify_qp sets it). */
    Mtu pathMtu = Mtu.MTU_256;
    /** Local ACK timeout exponent, 0..31 (4.096 µs × 2^timeout; 0 = infinite). */
    int timeout;
    /** Transport retries, 0..7. */
    int retryCnt;
    /** RNR retries, 0..7 (7 = infinite). */
    int rnrRetry;
    /** Expected PSN of the first request (24-bit). */
    int rqPsn;
    /** PSN of the first request sent (24-bit). */
    int sqPsn;
    /** Outstanding READ/atomic requests this QP may have, rounded up to a power of two. */
    int maxRdAtomic;
    /** READ/atomic requests the responder keeps resources for, rounded up to a power of two. */
    int maxDestRdAtomic;
    /** RNR NAK timer code, 0..31 ({@code rxe-facts.md} §5.3). */
    int minRnrTimer;
    /** The peer QPN (24-bit). */
    int destQpn;
    /** UD: IBV_QP_QKEY, the Q_Key received datagrams must carry ({@code verbs-surface-facts.md} §2.4). */
    int qkey;

    /**
     * Checks a modify request: the transition and the attributes it gives.
     *
     * @param a the attributes
     * @param mask {@link QpAttrMask} bits of {@code a} that are set
     * @param from the QP's current state
     * @return the target state ({@code from} when the mask has no STATE bit)
     * @throws IllegalArgumentException for an illegal transition, a missing required attribute,
     *     a disallowed attribute, or a value out of range (each named)
     */
    static QpState check(QpAttr a, int mask, QpState from) {
        return check(io.rxe4j.verbs.QpType.RC, a, mask, from);
    }

    /** As {@link #check(QpAttr, int, QpState)} for a QP of {@code type} (its {@link ModifyTable}). */
    static QpState check(io.rxe4j.verbs.QpType type, QpAttr a, int mask, QpState from) {
        QpState to = (mask & QpAttrMask.STATE) != 0 ? a.state() : from;
        if ((mask & QpAttrMask.CUR_STATE) != 0 && a.curState() != from) {
            throw new IllegalArgumentException("CUR_STATE " + a.curState() + " does not match the QP state " + from);
        }
        ModifyTable.check(type, from, to, mask);
        if ((mask & QpAttrMask.PKEY_INDEX) != 0 && a.pkeyIndex() != 0) {
            throw new IllegalArgumentException("pkey_index must be 0 (the P_Key table has one entry), got " + a.pkeyIndex());
        }
        if ((mask & QpAttrMask.PORT) != 0 && a.port() != 1) {
            throw new IllegalArgumentException("port must be 1, got " + a.port());
        }
        if ((mask & QpAttrMask.TIMEOUT) != 0 && (a.timeout() < 0 || a.timeout() > 31)) {
            throw new IllegalArgumentException("timeout must be 0..31, got " + a.timeout());
        }
        if ((mask & QpAttrMask.RETRY_CNT) != 0 && (a.retryCnt() < 0 || a.retryCnt() > 7)) {
            throw new IllegalArgumentException("retry_cnt must be 0..7, got " + a.retryCnt());
        }
        if ((mask & QpAttrMask.RNR_RETRY) != 0 && (a.rnrRetry() < 0 || a.rnrRetry() > 7)) {
            throw new IllegalArgumentException("rnr_retry must be 0..7, got " + a.rnrRetry());
        }
        if ((mask & QpAttrMask.MIN_RNR_TIMER) != 0 && (a.minRnrTimer() < 0 || a.minRnrTimer() > 31)) {
            throw new IllegalArgumentException("min_rnr_timer must be 0..31, got " + a.minRnrTimer());
        }
        if ((mask & QpAttrMask.MAX_QP_RD_ATOMIC) != 0 && (a.maxRdAtomic() < 0 || a.maxRdAtomic() > 128)) {
            throw new IllegalArgumentException("max_rd_atomic must be 0..128, got " + a.maxRdAtomic());
        }
        if ((mask & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0 && (a.maxDestRdAtomic() < 0 || a.maxDestRdAtomic() > 128)) {
            throw new IllegalArgumentException("max_dest_rd_atomic must be 0..128, got " + a.maxDestRdAtomic());
        }
        if ((mask & QpAttrMask.AV) != 0 && (a.av() == null || a.av().isUnresolved())) {
            throw new IllegalArgumentException("AV must be a resolved (IP, UDP port), got " + a.av());
        }
        if ((mask & QpAttrMask.PATH_MTU) != 0 && a.pathMtu() == null) {
            throw new IllegalArgumentException("path_mtu must not be null");
        }
        if ((mask & QpAttrMask.DEST_QPN) != 0 && (a.destQpNum() & ~Psn.MASK) != 0) {
            throw new IllegalArgumentException("dest_qp_num must be 24-bit, got 0x" + Integer.toHexString(a.destQpNum()));
        }
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            Psn.check(a.sqPsn(), "sq_psn");
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            Psn.check(a.rqPsn(), "rq_psn");
        }
        if ((mask & QpAttrMask.ACCESS_FLAGS) != 0 && (a.accessFlags() & ~(Access.LOCAL_WRITE | Access.REMOTE_WRITE
                | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.MW_BIND | Access.FLUSH_GLOBAL
                | Access.FLUSH_PERSISTENT | Access.OPTIONAL_RANGE)) != 0) {
            throw new IllegalArgumentException("unsupported QP access flags " + Access.toString(a.accessFlags()));
        }
        return to;
    }

    /** Stores the attributes of {@code a} named by {@code mask}, already {@link #check checked}. */
    void apply(QpAttr a, int mask) {
        if ((mask & QpAttrMask.ACCESS_FLAGS) != 0) {
            accessFlags = a.accessFlags();
        }
        if ((mask & QpAttrMask.AV) != 0) {
            av = a.av();
        }
        if ((mask & QpAttrMask.PATH_MTU) != 0) {
            pathMtu = a.pathMtu();
        }
        if ((mask & QpAttrMask.TIMEOUT) != 0) {
            timeout = a.timeout();
        }
        if ((mask & QpAttrMask.RETRY_CNT) != 0) {
            retryCnt = a.retryCnt();
        }
        if ((mask & QpAttrMask.RNR_RETRY) != 0) {
            rnrRetry = a.rnrRetry();
        }
        if ((mask & QpAttrMask.MIN_RNR_TIMER) != 0) {
            minRnrTimer = a.minRnrTimer();
        }
        if ((mask & QpAttrMask.MAX_QP_RD_ATOMIC) != 0) {
            maxRdAtomic = roundUpPow2(a.maxRdAtomic());
        }
        if ((mask & QpAttrMask.MAX_DEST_RD_ATOMIC) != 0) {
            maxDestRdAtomic = roundUpPow2(a.maxDestRdAtomic());
        }
        if ((mask & QpAttrMask.DEST_QPN) != 0) {
            destQpn = a.destQpNum();
        }
        if ((mask & QpAttrMask.SQ_PSN) != 0) {
            sqPsn = a.sqPsn();
        }
        if ((mask & QpAttrMask.RQ_PSN) != 0) {
            rqPsn = a.rqPsn();
        }
        if ((mask & QpAttrMask.QKEY) != 0) {
            qkey = a.qkey();
        }
    }

    /**
     * {@code ibv_query_qp}: copies the attributes and {@code state} into {@code out}, whose mask is
     * then every attribute written.
     *
     * @return {@code out}
     */
    QpAttr copyTo(QpAttr out, QpState state) {
        out.clearMask();
        out.state(state).curState(state).accessFlags(accessFlags).pkeyIndex(0).port(1).pathMtu(pathMtu)
                .timeout(timeout).retryCnt(retryCnt).rnrRetry(rnrRetry).rqPsn(rqPsn).sqPsn(sqPsn)
                .maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic).minRnrTimer(minRnrTimer)
                .destQpNum(destQpn).qkey(qkey);
        if (av != null) {
            out.av(av);
        }
        return out;
    }

    /** rxe rounds max_rd_atomic and max_dest_rd_atomic up to a power of two ({@code rxe_qp_from_attr}). */
    static int roundUpPow2(int n) {
        return n <= 1 ? n : Integer.highestOneBit(n - 1) << 1;
    }

    /** @return {@code accessFlags} (read on the loop; written only by modify_qp) */
    public int accessFlags() {
        return accessFlags;
    }

    /** @return {@code av} (read on the loop; written only by modify_qp) */
    public InetSocketAddress av() {
        return av;
    }

    /** @return {@code pathMtu} (read on the loop; written only by modify_qp) */
    public Mtu pathMtu() {
        return pathMtu;
    }

    /** @return {@code timeout} (read on the loop; written only by modify_qp) */
    public int timeout() {
        return timeout;
    }

    /** @return {@code retryCnt} (read on the loop; written only by modify_qp) */
    public int retryCnt() {
        return retryCnt;
    }

    /** @return {@code rnrRetry} (read on the loop; written only by modify_qp) */
    public int rnrRetry() {
        return rnrRetry;
    }

    /** @return {@code rqPsn} (read on the loop; written only by modify_qp) */
    public int rqPsn() {
        return rqPsn;
    }

    /** @return {@code sqPsn} (read on the loop; written only by modify_qp) */
    public int sqPsn() {
        return sqPsn;
    }

    /** @return {@code maxRdAtomic} (read on the loop; written only by modify_qp) */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    /** @return {@code maxDestRdAtomic} (read on the loop; written only by modify_qp) */
    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }

    /** @return {@code minRnrTimer} (read on the loop; written only by modify_qp) */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    /** @return {@code qkey} (read on the loop; written only by modify_qp) */
    public int qkey() {
        return qkey;
    }

    /** @return {@code destQpn} (read on the loop; written only by modify_qp) */
    public int destQpn() {
        return destQpn;
    }
}
