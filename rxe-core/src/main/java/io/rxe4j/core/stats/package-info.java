/**
 * Counters: one {@code long} per {@link io.rxe4j.verbs.Counter}, written by the event loop that
 * owns them (a lane or a QP) and summed into a device's totals.
 */
package io.rxe4j.core.stats;
