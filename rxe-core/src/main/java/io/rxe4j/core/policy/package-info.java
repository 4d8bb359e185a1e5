/**
 * Policies of the engine, each testable alone on a fake {@link io.rxe4j.verbs.spi.Scheduler}: the
 * retransmit timer and the unacknowledged packets it watches, the RNR backoff, the per-peer byte
 * budget with its congestion window, and the {@link io.rxe4j.core.policy.BudgetWaiter} through
 * which the budget knows its waiters.
 *
 * <p>Floor 3 of {@code redesign.md} §3: imports only {@code wire}, {@code stats} and the API; knows no
 * QP and no lane. <b>Engine internals, not API.</b>
 */
package io.rxe4j.core.policy;
