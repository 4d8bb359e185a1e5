/**
 * An in-JVM network: {@link io.rxe4j.net.inproc.InJvmFabric} connects {@link
 * io.rxe4j.net.inproc.InJvmTransport} endpoints addressed by {@link java.net.InetSocketAddress}
 * without any socket, optionally all on one shared (for example virtual-time) scheduler.
 */
package io.rxe4j.net.inproc;
