/**
 * TID RDMA ({@code tid-opfn-facts.md} §2–§7; hfi1's {@code tid_rdma.c}): the READ and WRITE
 * requester and responder halves, the receive context's TID entries and hardware flows ({@link
 * io.rxe4j.core.tid.TidPool}, {@link io.rxe4j.core.tid.HwFlow}). An extension of the RC engines of
 * {@code io.rxe4j.core.rc}: it plugs into them through their hooks once OPFN has negotiated TID RDMA.
 * Engine internals, not API.
 */
package io.rxe4j.core.tid;
