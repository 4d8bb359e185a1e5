/**
 * rxe4j's JUnit 5 test kit: {@link io.rxe4j.test.RxeTest} on a test class or method gives each
 * test an {@link io.rxe4j.test.RxeFabric} of devices (virtual time by default), connected pairs
 * through the connection manager ({@link io.rxe4j.test.ConnectedPair}), faults by {@code FaultSpec}
 * and seed, a clock-agnostic await, and a leak check after the test ({@code docs/testing.md}).
 */
package io.rxe4j.test;
