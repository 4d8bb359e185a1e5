package io.rxe4j.verbs;

import java.net.InetSocketAddress;

/**
 * QP attributes for modify/query ({@code struct ibv_qp_attr} with its {@code attr_mask}). Each
 * fluent setter also sets the matching {@link QpAttrMask} bit, so {@link #mask()} names exactly
 * the attributes given. Units: {@code timeout} is the local ACK timeout exponent (4.096 µs ×
 * 2^timeout, 0 = infinite); {@code minRnrTimer} is an RNR timer code (0..31); PSNs are 24-bit.
 *
 * <p>The address vector is the peer's (IP, UDP port); rxe4j has no GIDs beyond that.
 */
public final class QpAttr {
    private int mask;
    QpState state = QpState.RESET;
    QpState curState = QpState.RESET;
    int accessFlags;
    int pkeyIndex;
    int port = 1;
    int qkey;
    InetSocketAddress av;
    Mtu pathMtu = Mtu.MTU_256;
    int timeout;
    int retryCnt;
    int rnrRetry;
    int rqPsn;
    int sqPsn;
    int maxRdAtomic;
    int maxDestRdAtomic;
    int minRnrTimer;
    int destQpNum;

    /** Creates an empty attribute set (mask 0). */
    public QpAttr() {}

    /** @return the {@link QpAttrMask} bits of the attributes set */
    public int mask() { return mask; }

    /** Clears the mask (values stay). @return this */
    public QpAttr clearMask() { mask = 0; return this; }

    /** Sets the target state (IBV_QP_STATE). @return this */
    public QpAttr state(QpState s) { state = s; mask |= QpAttrMask.STATE; return this; }
    /** Sets the asserted current state (IBV_QP_CUR_STATE). @return this */
    public QpAttr curState(QpState s) { curState = s; mask |= QpAttrMask.CUR_STATE; return this; }
    /** Sets remote access flags ({@link Access} bits; IBV_QP_ACCESS_FLAGS). @return this */
    public QpAttr accessFlags(int f) { accessFlags = f; mask |= QpAttrMask.ACCESS_FLAGS; return this; }
    /** Sets the P_Key index (only 0 exists; IBV_QP_PKEY_INDEX). @return this */
    public QpAttr pkeyIndex(int i) { pkeyIndex = i; mask |= QpAttrMask.PKEY_INDEX; return this; }
    /** Sets the port number (only 1 exists; IBV_QP_PORT). @return this */
    public QpAttr port(int p) { port = p; mask |= QpAttrMask.PORT; return this; }
    /** Sets the Q_Key (UD; IBV_QP_QKEY). @return this */
    public QpAttr qkey(int q) { qkey = q; mask |= QpAttrMask.QKEY; return this; }
    /** Sets the address vector: the peer device's (IP, UDP port) (IBV_QP_AV). @return this */
    public QpAttr av(InetSocketAddress peer) { av = peer; mask |= QpAttrMask.AV; return this; }
    /** Sets the path MTU (IBV_QP_PATH_MTU). @return this */
    public QpAttr pathMtu(Mtu m) { pathMtu = m; mask |= QpAttrMask.PATH_MTU; return this; }
    /**
     * Sets the local ACK timeout exponent 0..31 (4.096 µs × 2^t; 0 = infinite). A QP that never gets
     * one has 0, as with a zeroed {@code ibv_qp_attr}. 17 (≈ 537 ms; 4.3 s with retry_cnt 7) is what
     * rdma_cm sets for an rxe peer and {@link io.rxe4j.verbs.cm.ConnectionParams#defaults()} uses: values below about 16
     * make a peer JVM that has just started (100–200 ms to its first answer) look like packet loss.
     *
     * @return this
     */
    public QpAttr timeout(int t) { timeout = t; mask |= QpAttrMask.TIMEOUT; return this; }
    /** Sets retry_cnt 0..7 (7 = infinite, as rxe). @return this */
    public QpAttr retryCnt(int r) { retryCnt = r; mask |= QpAttrMask.RETRY_CNT; return this; }
    /** Sets rnr_retry 0..7 (7 = infinite). @return this */
    public QpAttr rnrRetry(int r) { rnrRetry = r; mask |= QpAttrMask.RNR_RETRY; return this; }
    /** Sets the expected receive PSN (24-bit; IBV_QP_RQ_PSN). @return this */
    public QpAttr rqPsn(int p) { rqPsn = p; mask |= QpAttrMask.RQ_PSN; return this; }
    /** Sets the initial send PSN (24-bit; IBV_QP_SQ_PSN). @return this */
    public QpAttr sqPsn(int p) { sqPsn = p; mask |= QpAttrMask.SQ_PSN; return this; }
    /** Sets max outstanding READ/atomic as initiator (IBV_QP_MAX_QP_RD_ATOMIC). @return this */
    public QpAttr maxRdAtomic(int n) { maxRdAtomic = n; mask |= QpAttrMask.MAX_QP_RD_ATOMIC; return this; }
    /** Sets responder resources (IBV_QP_MAX_DEST_RD_ATOMIC). @return this */
    public QpAttr maxDestRdAtomic(int n) { maxDestRdAtomic = n; mask |= QpAttrMask.MAX_DEST_RD_ATOMIC; return this; }
    /** Sets the RNR timer code 0..31 sent in RNR NAKs (IBV_QP_MIN_RNR_TIMER). @return this */
    public QpAttr minRnrTimer(int code) { minRnrTimer = code; mask |= QpAttrMask.MIN_RNR_TIMER; return this; }
    /** Sets the peer QPN (24-bit; IBV_QP_DEST_QPN). @return this */
    public QpAttr destQpNum(int qpn) { destQpNum = qpn; mask |= QpAttrMask.DEST_QPN; return this; }

    /** @return target / current state */
    public QpState state() { return state; }
    /** @return asserted current state */
    public QpState curState() { return curState; }
    /** @return access flags */
    public int accessFlags() { return accessFlags; }
    /** @return P_Key index */
    public int pkeyIndex() { return pkeyIndex; }
    /** @return port number */
    public int port() { return port; }
    /** @return Q_Key */
    public int qkey() { return qkey; }
    /** @return the peer's (IP, UDP port), or null */
    public InetSocketAddress av() { return av; }
    /** @return path MTU */
    public Mtu pathMtu() { return pathMtu; }
    /** @return local ACK timeout exponent */
    public int timeout() { return timeout; }
    /** @return retry count */
    public int retryCnt() { return retryCnt; }
    /** @return RNR retry count */
    public int rnrRetry() { return rnrRetry; }
    /** @return expected receive PSN */
    public int rqPsn() { return rqPsn; }
    /** @return send PSN */
    public int sqPsn() { return sqPsn; }
    /** @return initiator depth */
    public int maxRdAtomic() { return maxRdAtomic; }
    /** @return responder resources */
    public int maxDestRdAtomic() { return maxDestRdAtomic; }
    /** @return RNR timer code */
    public int minRnrTimer() { return minRnrTimer; }
    /** @return peer QPN */
    public int destQpNum() { return destQpNum; }

    @Override
    public String toString() {
        return "QpAttr{mask=" + QpAttrMask.toString(mask) + ", state=" + state + ", av=" + av + ", pathMtu=" + pathMtu
                + ", destQpNum=0x" + Integer.toHexString(destQpNum) + ", sqPsn=0x" + Integer.toHexString(sqPsn)
                + ", rqPsn=0x" + Integer.toHexString(rqPsn) + ", access=" + Access.toString(accessFlags)
                + ", timeout=" + timeout + ", retryCnt=" + retryCnt + ", rnrRetry=" + rnrRetry
                + ", maxRdAtomic=" + maxRdAtomic + ", maxDestRdAtomic=" + maxDestRdAtomic
                + ", minRnrTimer=" + minRnrTimer + '}';
    }
}
