/**
 * Small, complete programs that use only the public API ({@code io.rxe4j.verbs} and the
 * transports of {@code io.rxe4j.net}); {@code docs/verbs.md} walks through them, and the
 * rxe-examples tests run each one.
 *
 * <ul>
 *   <li>{@link io.rxe4j.examples.quickstart.OneJvm}: two devices in one JVM, connected by the
 *       connection manager; SEND, RDMA WRITE, RDMA READ and FETCH_AND_ADD.
 *   <li>{@link io.rxe4j.examples.quickstart.TwoProcess}: a server and a client process over
 *       RoCEv2/UDP; the server advertises a buffer as private data, the client WRITEs into it.
 *   <li>{@link io.rxe4j.examples.quickstart.Events}: a completion channel with solicited-only
 *       arming, a completion future, and the asynchronous events of a disconnect.
 *   <li>{@link io.rxe4j.examples.quickstart.Persistence}: a file-backed MR, an RDMA WRITE made
 *       durable with RDMA FLUSH, and the file read back.
 * </ul>
 */
package io.rxe4j.examples.quickstart;
