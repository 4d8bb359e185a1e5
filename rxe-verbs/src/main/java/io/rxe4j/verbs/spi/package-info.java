/**
 * The transport interface a device runs on ({@link io.rxe4j.verbs.spi.Transport}, {@link
 * io.rxe4j.verbs.spi.PacketReceiver}, {@link io.rxe4j.verbs.spi.Scheduler}) and the persistence hook
 * of file-backed memory regions ({@link io.rxe4j.verbs.spi.Persistence}). Applications pick a
 * transport from module {@code io.rxe4j.net} ({@code UdpTransport}, {@code InJvmFabric}) and pass it to
 * {@link io.rxe4j.verbs.RdmaDevice#open}; they implement these interfaces only to plug in a transport
 * of their own (a wrapper such as {@code FaultInjectingTransport} or {@code CapturingTransport}, or
 * another network).
 */
package io.rxe4j.verbs.spi;
