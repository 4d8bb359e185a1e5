/**
 * RoCEv2 wire format: the opcode table, stateless header flyweights over Netty {@code ByteBuf}s,
 * 24-bit PSN arithmetic and the ICRC. All multi-byte fields are big-endian on the wire unless a
 * method says otherwise (the ICRC itself is written least-significant byte first).
 *
 * <p>Source: {@code ../shared/protocol/rxe-facts.md} §1–§3 and {@code extensions.md} §1–§2.
 *
 * <p><b>Engine internals, not API</b>: exported only to module {@code io.rxe4j.net}; applications use
 * {@code io.rxe4j.verbs}. Class names here never repeat an API name.
 */
package io.rxe4j.core.wire;
