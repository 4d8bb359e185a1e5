/**
 * Interoperability tools for a real Linux {@code rdma_rxe} peer: {@link
 * io.rxe4j.examples.interop.RxePingpong} (rdma-core's {@code ibv_rc_pingpong} protocol) and {@link
 * io.rxe4j.examples.interop.RxeOpsPeer} (the kernel VM's {@code rxe_ops} protocol), with the pure
 * parts of their TCP exchanges ({@link io.rxe4j.examples.interop.PingpongDest}, {@link
 * io.rxe4j.examples.interop.OpsDest}, {@link io.rxe4j.examples.interop.Gid}). {@code
 * scripts/interop-live.sh} runs them against the VM of {@code ../shared/kernel-rxe-vm}.
 */
package io.rxe4j.examples.interop;
