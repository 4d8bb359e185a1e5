/**
 * Protection domains and memory regions over off-heap {@link java.lang.foreign.MemorySegment}s:
 * keys ({@code index << 8 | key8}), access rights, overflow-safe range checks, and the atomic
 * accessors used by remote atomics ({@code rxe-facts.md} §6.2–§6.4, §8.2).
 *
 * <p><b>Engine internals, not API</b>: exported only to module {@code io.rxe4j.net}; applications use
 * {@code io.rxe4j.verbs}. Class names here never repeat an API name.
 */
package io.rxe4j.core.memory;
