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
}
