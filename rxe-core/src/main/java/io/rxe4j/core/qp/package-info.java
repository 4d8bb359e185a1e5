/**
 * The RC queue pair: QP state machine and modify table, send and receive queues of WQEs, and the
 * per-QP state the engines share (OPFN's negotiated parameters, the TID segments of a WQE). The
 * requester, completer and responder state machines are in {@code io.rxe4j.core.rc}, TID RDMA in
 * {@code io.rxe4j.core.tid} ({@code rxe-facts.md} §5, §6, §9); the QP drives them through one
 * {@link io.rxe4j.core.qp.QpEngine} and reaches its lane and device through {@link
 * io.rxe4j.core.qp.QpHost}, so this package names none of them.
 * Everything here runs on the owning device's event loop except the post and modify entry points
 * of {@link io.rxe4j.core.qp.RxeQp}, which hand work over.
 *
 * <p><b>Engine internals, not API</b>: exported only to module {@code io.rxe4j.net}; applications use
 * {@code io.rxe4j.verbs}. Class names here never repeat an API name.
 */
package io.rxe4j.core.qp;
