/**
 * The engine of UC queue pairs ({@code verbs-surface-facts.md} §3): SEND and RDMA WRITE (with or
 * without immediate) segmented by the path MTU as RC, with no acknowledgement and no retry; the
 * responder's PSN rule (after a gap, drop until the next FIRST or ONLY) and op-sequence rules.
 * Above {@code qp}, beside {@code rc}; only {@code device} uses it.
 */
package io.rxe4j.core.uc;
