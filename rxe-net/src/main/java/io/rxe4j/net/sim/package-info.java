/**
 * Simulation support for deterministic tests: {@link io.rxe4j.net.sim.VirtualScheduler}, a
 * single-threaded {@link io.rxe4j.verbs.spi.Scheduler} whose clock only moves when the test runs
 * it.
 */
package io.rxe4j.net.sim;
