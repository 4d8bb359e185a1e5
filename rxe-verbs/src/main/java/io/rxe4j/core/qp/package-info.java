/**
 * The RC queue pair engine: QP state machine and modify table, send and receive queues of WQEs,
 * and the requester, completer and responder state machines ({@code rxe-facts.md} §5, §6, §9).
 * Everything here runs on the owning device's event loop except the post and modify entry points
 * of {@link io.rxe4j.core.qp.RxeQp}, which hand work over.
 */
package io.rxe4j.core.qp;
