/**
 * The RC engines of a queue pair, as rdma_rxe's {@code rxe_req.c}, {@code rxe_comp.c} and {@code
 * rxe_resp.c} ({@code rxe-facts.md} §5, §6, §9): the requester, the completer, the responder with
 * its responder resources. Everything here runs on the owning lane's event loop.
 *
 * <p>This package knows no TID RDMA: an extension takes WQEs and requests through the narrow hooks
 * defined here ({@code RequesterHook}, {@code ResponderHook},
 * {@code CompleterOps}). Engine internals, not API.
 */
package io.rxe4j.core.rc;
