/**
 * Fault injection: a {@link io.rxe4j.verbs.spi.Transport} wrapper that drops, duplicates, reorders,
 * delays and corrupts packets, by seeded probability or by exact predicate, in either direction.
 */
package io.rxe4j.net.fault;
