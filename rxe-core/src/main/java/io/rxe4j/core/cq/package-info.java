/**
 * Completion queues with {@code ibv_poll_cq} semantics and {@code ibv_req_notify_cq} arming.
 *
 * <p><b>Engine internals, not API</b>: exported only to module {@code io.rxe4j.net}; applications use
 * {@code io.rxe4j.verbs}. Class names here never repeat an API name.
 */
package io.rxe4j.core.cq;
