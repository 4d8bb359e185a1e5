/**
 * The RC engines of a queue pair, as rdma_rxe's {@code rxe_req.c}, {@code rxe_comp.c} and {@code
 * rxe_resp.c} ({@code rxe-facts.md} §5, §6, §9): the requester, the completer, the responder with
 * its responder resources. Everything here runs on the owning lane's event loop.
 *
 * <p>This package knows no TID RDMA: an extension takes WQEs and requests through the narrow hooks
 * defined here ({@link io.rxe4j.core.rc.RequesterHook}, {@link io.rxe4j.core.rc.ResponderHook},
 * {@link io.rxe4j.core.rc.CompleterOps}) and uses the engines through {@link io.rxe4j.core.rc.ResponderOps}
 * and the requester's hook-facing methods. Engine internals, not API.
 */
package io.rxe4j.core.rc;
