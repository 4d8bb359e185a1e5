/**
 * The device: QP and MR tables, counters, capabilities, and the receive path that checks each
 * packet (structure, ICRC, P_Key, QP, state, peer) and dispatches it to its QP's engines.
 *
 * <p><b>Engine internals, not API</b>: exported only to module {@code io.rxe4j.net}; applications use
 * {@code io.rxe4j.verbs}. Class names here never repeat an API name.
 */
package io.rxe4j.core.device;
