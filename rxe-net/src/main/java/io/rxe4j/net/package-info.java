/**
 * Transport support shared by the rxe4j transports: {@link io.rxe4j.net.NettyScheduler}, the
 * {@link io.rxe4j.verbs.spi.Scheduler} adapter over a Netty event loop.
 *
 * <p>The transports themselves are in {@link io.rxe4j.net.udp} (UDP sockets) and {@link
 * io.rxe4j.net.inproc} (in-JVM fabric); {@link io.rxe4j.net.sim} holds a virtual-time scheduler for
 * deterministic tests.
 */
package io.rxe4j.net;
