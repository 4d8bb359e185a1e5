package io.rxe4j.verbs.provider;

import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.TidRdmaParams;
import java.util.List;
import java.util.Map;

/**
 * A provider's queue pair ({@code ibv_qp} with the post and modify entries of {@code
 * verbs_context_ops}). Thread-safe: posts and modifies may come from any thread.
 */
public interface QpOps {
    /** @return the 24-bit QP number */
    int qpn();

    /** @return the current state */
    QpState state();

    /**
     * {@code ibv_modify_qp}.
     *
     * @throws IllegalArgumentException for an illegal transition or a bad attribute, named
     */
    void modify(QpAttr attr);

    /** {@code ibv_query_qp} into {@code out}; @return {@code out} */
    QpAttr query(QpAttr out);

    /**
     * Checks one send WR without posting it.
     *
     * @throws IllegalArgumentException for an invalid WR (named, as {@code bad_wr})
     * @throws IllegalStateException if the QP's state forbids posting
     */
    void validatePost(SendWr wr);

    /**
     * Posts {@code wrs[from..to)}, already validated, as one batch.
     *
     * @return how many were posted ({@code to - from} unless the send queue filled)
     */
    int postValidated(List<SendWr> wrs, int from, int to);

    /**
     * {@code ibv_post_send} of one WR.
     *
     * @return false if the send queue is full
     * @throws IllegalArgumentException for an invalid WR
     * @throws IllegalStateException if the QP's state forbids posting
     */
    boolean tryPostSend(SendWr wr);

    /**
     * {@code ibv_post_recv} of one WR.
     *
     * @return false if the receive queue is full
     * @throws IllegalArgumentException for an invalid WR
     * @throws IllegalStateException in RESET
     */
    boolean tryPostRecv(RecvWr wr);

    /** @return why the QP last entered ERR, or null if it never did */
    String errorReason();

    /** @return this QP's counters by rxe-style name, a fresh snapshot */
    Map<String, Long> counterSnapshot();

    /** @return the TID RDMA parameters the peer sent through OPFN, or null while TID RDMA is off */
    TidRdmaParams tidRdmaRemote();

    /** @return the OPFN state, for diagnostics */
    String opfnState();

    /** @return a one-line snapshot of the engine state, for diagnostics */
    String debugState();

    /**
     * Moves the QP to ERR because its connection ended ({@code rdma_disconnect}), flushing
     * outstanding work requests with WR_FLUSH_ERR; {@link #errorReason()} then says {@code reason}.
     *
     * @return whether the QP was not in ERR before
     */
    boolean disconnectToError(String reason);

    /**
     * Extension bit (rxe4j peers only, {@code docs/wire.md} "Extensions negotiated at connection
     * setup"): this side's responder holds out-of-order requests and processes them when the gap
     * fills (adaptive recovery), so a requester that knows it may repair a PSN-sequence NAK by
     * resending only the missing packet and may keep more than 128 READ/atomic PSNs outstanding.
     */
    int EXT_HOLDS_OUT_OF_ORDER = 1;

    /**
     * Extension bit (rxe4j peers only, {@code docs/wire.md} "Selective NAK"): this side's responder
     * sends, right after a PSN-sequence NAK, an rxe4j selective NAK (opcode 0xF2) naming every PSN
     * range it misses, and its requester resends exactly those; without the bit neither sends nor
     * accepts the opcode.
     */
    int EXT_SELECTIVE_NAK = 2;

    /**
     * @return the extension bits this QP's device offers to an rxe4j peer ({@code EXT_*}; 0 for a
     *     provider without extensions)
     */
    default int localExtensions() {
        return 0;
    }

    /**
     * The connection manager agreed with an rxe4j peer on {@code bits} ({@code EXT_*}, the
     * intersection of both sides' {@link #localExtensions()}), before RTR. Never called for a peer
     * that did not offer them (kernel {@code rdma_rxe}, RoCE NICs): without it a QP assumes nothing
     * of its peer. Reset clears it.
     *
     * @throws IllegalArgumentException if {@code bits} holds a bit this side does not offer
     */
    default void setPeerExtensions(int bits) {
        if (bits != 0) {
            throw new IllegalArgumentException("no extensions offered, got 0x" + Integer.toHexString(bits));
        }
    }

    /** @return the extension bits agreed with the peer (0 unless {@link #setPeerExtensions} set them) */
    default int peerExtensions() {
        return 0;
    }
}
