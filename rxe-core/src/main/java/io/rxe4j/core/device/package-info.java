/**
 * The device: the provider entry, the QP table ({@code QpTable}) and MR table, counters,
 * capabilities, and its lanes (one event loop each). A lane's parts are the receive checks ({@code
 * ReceiveChecks}: structure, ICRC, P_Key, QP, transport, peer, state, then the dispatch on the opcode
 * table's handler column), the cross-lane steering ({@code LaneSteering}) and the round-robin
 * service turns ({@code ServiceQueue}). A lane is the {@code QpHost} of its QPs; each QP's engines
 * (RC and TID RDMA) are built and owned by its {@code QpRunner}, the QP's {@code QpEngine}.
 *
 * <p><b>Engine internals, not API</b>: applications use {@code io.rxe4j.verbs}. Class names here
 * never repeat an API name.
 */
package io.rxe4j.core.device;
