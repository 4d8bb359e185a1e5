/**
 * The libibverbs vocabulary shared by the engine and the public API: work-request and
 * work-completion opcodes, completion status, QP states and attribute masks, access flags,
 * MTUs, and the mutable, reusable work request / completion objects (as {@code ibv_send_wr},
 * {@code ibv_recv_wr}, {@code ibv_wc}). Numeric values are rdma-core's ({@code rxe-facts.md} §6).
 */
package io.rxe4j.core.verbs;
