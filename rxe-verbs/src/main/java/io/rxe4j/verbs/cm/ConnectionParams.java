package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.RdmaDevice;

import java.time.Duration;

/**
 * How the connection manager ({@link RdmaConnection#connect}, {@link ConnectRequest#accept})
 * creates and connects a QP ({@code struct rdma_conn_param} plus the QP attributes librdmacm
 * chooses). Immutable; every {@code with...} returns a copy. The defaults are safe between two
 * freshly started JVMs and detect a dead peer in a few seconds:
 *
 * <table class="striped">
 * <caption>Defaults</caption>
 * <tr><th>parameter</th><th>default</th><th>why</th></tr>
 * <tr><td>{@link #pathMtu}</td><td>the port's active MTU ({@link RdmaDevice#queryPort}: 1024 on a
 *     1500-byte Ethernet, 4096 on loopback and jumbo-frame links)</td><td>the largest that the local
 *     link carries, as rdma_rxe's active MTU; the two sides agree on the smaller of their values.
 *     An explicit {@link #withPathMtu} wins, even above the active MTU (modify_qp accepts up to 4096):
 *     its packets are then refused by the link and the QP fails with LOC_QP_OP_ERR</td></tr>
 * <tr><td>{@link #ackTimeout}</td><td>17 (4.096 µs × 2^17 ≈ 537 ms)</td><td>a fresh JVM took
 *     about 110 ms to answer its first packet (class loading, interpreted code); 14 (≈ 67 ms, as
 *     {@code ibv_rc_pingpong}) caused spurious retransmissions of whole windows</td></tr>
 * <tr><td>{@link #retryCnt}</td><td>7 (seven retries, then RETRY_EXC_ERR)</td><td>a dead peer is
 *     detected after about (1 + 7) × 537 ms ≈ 4.3 s. As in rdma_cm, the client's value (sent in the
 *     REQ) is used by both QPs; a server's is not used</td></tr>
 * <tr><td>{@link #rnrRetry}</td><td>7 (IBTA: retry forever)</td><td>as librdmacm's examples and
 *     {@code ibv_rc_pingpong}: RNR NAKs come only from a live peer that has not posted a receive
 *     yet; a dead peer is caught by {@code retryCnt}. As in rdma_cm, each side's value travels in
 *     its REQ or REP and is used by the <em>peer's</em> QP</td></tr>
 * <tr><td>{@link #minRnrTimer}</td><td>12 (0.64 ms)</td><td>the RNR delay this side asks
 *     for</td></tr>
 * <tr><td>{@link #initiatorDepth}, {@link #responderResources}</td><td>16, 16</td><td>READ and
 *     atomic operations in flight each way; each side uses the smaller of its and the peer's
 *     value</td></tr>
 * <tr><td>{@link #caps}</td><td>256 send and receive WRs, 4 SGEs, 64 bytes inline</td><td>as
 *     {@link QpInitAttr#rc}</td></tr>
 * <tr><td>{@link #accessFlags}</td><td>LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC,
 *     FLUSH_GLOBAL, FLUSH_PERSISTENT</td><td>what the peer may do on this QP; each MR's own
 *     access still applies</td></tr>
 * <tr><td>{@link #timeout}</td><td>10 s</td><td>for the whole exchange on this side (REQ to REP,
 *     or REP to RTU), on the device's clock; the IB CM resends a lost REQ or REP after 4.6 s (rdma_cm's
 *     response timeout, 2^20 × 4.096 µs, plus twice the packet life time), so the default survives one
 *     loss</td></tr>
 * </table>
 */
public final class ConnectionParams {
    /** Most private data a connect request carries, bytes (librdmacm, RDMA_PS_TCP over IB: 56). */
    public static final int MAX_CONNECT_PRIVATE_DATA = 56;
    /**
     * Most private data an accept carries (the REP's), bytes (librdmacm over IB: 196); a reject
     * carries at most {@link #MAX_REJECT_PRIVATE_DATA}.
     */
    public static final int MAX_ACCEPT_PRIVATE_DATA = 196;
    /** Most private data a reject carries, bytes (the IB CM REJ's field: 148). */
    public static final int MAX_REJECT_PRIVATE_DATA = 148;

    private static final ConnectionParams DEFAULTS = new ConnectionParams(null, 17, 7, 7, 12, 16, 16,
            new QpCaps(256, 256, 4, 4, 64), false, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
                    | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT,
            new byte[0], Duration.ofSeconds(10), null);

    private final Mtu pathMtu;
    private final int ackTimeout;
    private final int retryCnt;
    private final int rnrRetry;
    private final int minRnrTimer;
    private final int initiatorDepth;
    private final int responderResources;
    private final QpCaps caps;
    private final boolean sqSigAll;
    private final int accessFlags;
    private final byte[] privateData;
    private final Duration timeout;
    private final io.rxe4j.verbs.SharedReceiveQueue srq;

    private ConnectionParams(Mtu pathMtu, int ackTimeout, int retryCnt, int rnrRetry, int minRnrTimer,
            int initiatorDepth, int responderResources, QpCaps caps, boolean sqSigAll, int accessFlags,
            byte[] privateData, Duration timeout, io.rxe4j.verbs.SharedReceiveQueue srq) {
        this.pathMtu = pathMtu;
        this.ackTimeout = ackTimeout;
        this.retryCnt = retryCnt;
        this.rnrRetry = rnrRetry;
        this.minRnrTimer = minRnrTimer;
        this.initiatorDepth = initiatorDepth;
        this.responderResources = responderResources;
        this.caps = caps;
        this.sqSigAll = sqSigAll;
        this.accessFlags = accessFlags;
        this.privateData = privateData;
        this.timeout = timeout;
        this.srq = srq;
    }

    /** @return the defaults (see the class comment) */
    public static ConnectionParams defaults() {
        return DEFAULTS;
    }

    private ConnectionParams copy(Mtu mtu, int ack, int retry, int rnr, int minRnr, int init, int resp, QpCaps c,
            boolean sig, int access, byte[] priv, Duration t) {
        return new ConnectionParams(mtu, ack, retry, rnr, minRnr, init, resp, c, sig, access, priv, t, srq);
    }

    private static int range(String name, int v, int lo, int hi) {
        if (v < lo || v > hi) {
            throw new IllegalArgumentException(name + " must be " + lo + ".." + hi + ", got " + v);
        }
        return v;
    }

    /**
     * @param mtu the largest path MTU this side accepts, instead of the port's active MTU (the
     *     default); the connection uses the smaller of the two sides'. A value above the port's
     *     active MTU is used as given, and the first packet the link cannot carry fails the QP
     *     (LOC_QP_OP_ERR, counter {@code send_err})
     * @throws IllegalArgumentException if {@code mtu} is null
     */
    public ConnectionParams withPathMtu(Mtu mtu) {
        if (mtu == null) {
            throw new IllegalArgumentException("path MTU is null");
        }
        return copy(mtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param timeout local ACK timeout exponent, 0..31 (4.096 µs × 2^timeout; 0 = wait forever) */
    public ConnectionParams withAckTimeout(int timeout) {
        return copy(pathMtu, range("ackTimeout", timeout, 0, 31), retryCnt, rnrRetry, minRnrTimer, initiatorDepth,
                responderResources, caps, sqSigAll, accessFlags, privateData, this.timeout);
    }

    /** @param n transport retries after a timeout or NAK, 0..7 */
    public ConnectionParams withRetryCnt(int n) {
        return copy(pathMtu, ackTimeout, range("retryCnt", n, 0, 7), rnrRetry, minRnrTimer, initiatorDepth,
                responderResources, caps, sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param n RNR retries, 0..7 (7 = forever, IBTA) */
    public ConnectionParams withRnrRetry(int n) {
        return copy(pathMtu, ackTimeout, retryCnt, range("rnrRetry", n, 0, 7), minRnrTimer, initiatorDepth,
                responderResources, caps, sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param code the RNR timer code this side advertises, 0..31 (IBTA table 45; 12 = 0.64 ms) */
    public ConnectionParams withMinRnrTimer(int code) {
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, range("minRnrTimer", code, 0, 31), initiatorDepth,
                responderResources, caps, sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param n READ/atomic requests this side may have outstanding (max_rd_atomic), 0..128 */
    public ConnectionParams withInitiatorDepth(int n) {
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, range("initiatorDepth", n, 0, 128),
                responderResources, caps, sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param n READ/atomic requests of the peer this side serves at once (max_dest_rd_atomic), 0..128 */
    public ConnectionParams withResponderResources(int n) {
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth,
                range("responderResources", n, 0, 128), caps, sqSigAll, accessFlags, privateData, timeout);
    }

    /** @param caps queue sizes of the QP the connection manager creates */
    public ConnectionParams withCaps(QpCaps caps) {
        if (caps == null) {
            throw new IllegalArgumentException("caps is null");
        }
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sqSigAll, accessFlags, privateData, timeout);
    }

    /**
     * @param srq the shared receive queue the connection's QP takes its receives from ({@code
     *     qp_init_attr.srq} of {@code rdma_create_qp}), of the PD the QP is created in, or null for
     *     a receive queue of its own (the default); {@code docs/verbs.md} "Shared receive queues"
     */
    public ConnectionParams withSrq(io.rxe4j.verbs.SharedReceiveQueue srq) {
        return new ConnectionParams(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth,
                responderResources, caps, sqSigAll, accessFlags, privateData, timeout, srq);
    }

    /** @return the shared receive queue of the connection's QP, or null */
    public io.rxe4j.verbs.SharedReceiveQueue srq() {
        return srq;
    }

    /** @param sigAll whether every send WR produces a completion ({@code sq_sig_all}) */
    public ConnectionParams withSqSigAll(boolean sigAll) {
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sigAll, accessFlags, privateData, timeout);
    }

    /** @param access {@link Access} bits the peer may use on this QP (MR access still applies) */
    public ConnectionParams withAccessFlags(int access) {
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sqSigAll, access, privateData, timeout);
    }

    /**
     * Private data for either side: the connect request or the accept.
     *
     * @param data bytes handed to the peer with the connect request or the accept (e.g. the rkey,
     *     address and length of a buffer); copied; at most {@value #MAX_CONNECT_PRIVATE_DATA} bytes,
     *     what a connect request carries (an accept carries up to {@value #MAX_ACCEPT_PRIVATE_DATA}:
     *     use {@link #withAcceptPrivateData} for more than {@value #MAX_CONNECT_PRIVATE_DATA})
     * @throws IllegalArgumentException if {@code data} is null or longer than {@value
     *     #MAX_CONNECT_PRIVATE_DATA} bytes
     */
    public ConnectionParams withPrivateData(byte[] data) {
        return privateData(data, MAX_CONNECT_PRIVATE_DATA, "a connect request carries at most "
                + MAX_CONNECT_PRIVATE_DATA + " bytes of private data (use withAcceptPrivateData for up to "
                + MAX_ACCEPT_PRIVATE_DATA + " bytes on an accept)");
    }

    /**
     * Private data for an accept only ({@link ConnectRequest#accept}, {@link RdmaListener#accept}):
     * up to {@value #MAX_ACCEPT_PRIVATE_DATA} bytes, as librdmacm's {@code rdma_accept} over IB.
     * {@link RdmaConnection#connect} refuses these parameters if they carry more than {@value
     * #MAX_CONNECT_PRIVATE_DATA} bytes.
     *
     * @param data bytes handed to the client with the accept; copied
     * @throws IllegalArgumentException if {@code data} is null or longer than {@value
     *     #MAX_ACCEPT_PRIVATE_DATA} bytes
     */
    public ConnectionParams withAcceptPrivateData(byte[] data) {
        return privateData(data, MAX_ACCEPT_PRIVATE_DATA, "an accept carries at most " + MAX_ACCEPT_PRIVATE_DATA
                + " bytes of private data");
    }

    private ConnectionParams privateData(byte[] data, int max, String limit) {
        if (data == null) {
            throw new IllegalArgumentException("private data is null (use an empty array)");
        }
        if (data.length > max) {
            throw new IllegalArgumentException(limit + ", got " + data.length);
        }
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sqSigAll, accessFlags, data.clone(), timeout);
    }

    /**
     * @param timeout the deadline of the whole exchange (REQ to RTU), on the device's clock (virtual
     *     time included); past it the active side sends REJ 4 (timeout), the passive side REJ 28, and
     *     the call fails with {@link RdmaCmException.Reason#TIMEOUT}; positive
     */
    public ConnectionParams withTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return copy(pathMtu, ackTimeout, retryCnt, rnrRetry, minRnrTimer, initiatorDepth, responderResources, caps,
                sqSigAll, accessFlags, privateData, timeout);
    }

    /**
     * @return the largest path MTU this side accepts, as given to {@link #withPathMtu}; null (the
     *     default) for the port's active MTU ({@link #pathMtu(RdmaDevice)})
     */
    public Mtu pathMtu() {
        return pathMtu;
    }

    /**
     * @param device the device the connection's QP is on
     * @return the largest path MTU this side offers on {@code device}: {@link #pathMtu()} if given,
     *     else the device port's active MTU ({@link RdmaDevice#queryPort})
     */
    public Mtu pathMtu(RdmaDevice device) {
        return pathMtu != null ? pathMtu : device.queryPort(1).activeMtu();
    }

    /** @return the local ACK timeout exponent */
    public int ackTimeout() {
        return ackTimeout;
    }

    /** @return transport retries */
    public int retryCnt() {
        return retryCnt;
    }

    /** @return RNR retries (7 = forever) */
    public int rnrRetry() {
        return rnrRetry;
    }

    /** @return the RNR timer code this side advertises */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    /** @return READ/atomic requests this side may have outstanding */
    public int initiatorDepth() {
        return initiatorDepth;
    }

    /** @return peer READ/atomic requests this side serves at once */
    public int responderResources() {
        return responderResources;
    }

    /** @return the QP's queue sizes */
    public QpCaps caps() {
        return caps;
    }

    /** @return whether every send WR is signaled */
    public boolean sqSigAll() {
        return sqSigAll;
    }

    /** @return the QP's access flags */
    public int accessFlags() {
        return accessFlags;
    }

    /** @return a copy of the private data */
    public byte[] privateData() {
        return privateData.clone();
    }

    byte[] privateDataUnsafe() {
        return privateData;
    }

    /** @return the connection timeout */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public String toString() {
        return "ConnectionParams{pathMtu=" + pathMtu + ", ackTimeout=" + ackTimeout + ", retryCnt=" + retryCnt
                + ", rnrRetry=" + rnrRetry + ", minRnrTimer=" + minRnrTimer + ", initiatorDepth=" + initiatorDepth
                + ", responderResources=" + responderResources + ", caps=" + caps + ", privateData="
                + privateData.length + " B, timeout=" + timeout + '}';
    }
}
