/**
 * The engines of UD queue pairs ({@code verbs-surface-facts.md} §2): the datagram sender (one SEND
 * ONLY packet with a DETH per work request, completed when handed to the network, no
 * acknowledgement, no retry) and the datagram receiver (Q_Key, a receive WQE, the 40-byte GRH,
 * {@code src_qp}). Above {@code qp}, beside {@code rc}; only {@code device} uses it.
 */
package io.rxe4j.core.ud;
