/**
 * The rxe4j verbs API ({@code ibv_*} and {@code rdma_*} in Java): every type an application
 * touches. Ownership follows libibverbs: a device owns PDs and CQs; a PD owns MRs and QPs. Every
 * resource is {@link java.lang.AutoCloseable}; closing a parent with live children throws
 * {@link java.lang.IllegalStateException} (libibverbs: EBUSY).
 *
 * <p>The value types (work requests, completions, enums, attribute objects) use rdma-core's
 * numeric values ({@code rxe-facts.md} §6); the mutable ones ({@link io.rxe4j.verbs.SendWr},
 * {@link io.rxe4j.verbs.RecvWr}, {@link io.rxe4j.verbs.WorkCompletion}, {@link
 * io.rxe4j.verbs.QpAttr}) are reusable, as {@code ibv_send_wr}, {@code ibv_recv_wr}, {@code ibv_wc}
 * and {@code ibv_qp_attr} are.
 */
package io.rxe4j.verbs;
