/**
 * The device: QP and MR tables, counters, capabilities, and the receive path that checks each
 * packet (structure, ICRC, P_Key, QP, state, peer) and dispatches it to its QP's engines.
 */
package io.rxe4j.core.device;
