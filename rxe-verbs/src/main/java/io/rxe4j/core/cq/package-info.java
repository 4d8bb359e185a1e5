/** Completion queues with {@code ibv_poll_cq} semantics. */
package io.rxe4j.core.cq;
