package io.rxe4j.verbs.spi;

import java.lang.foreign.MemorySegment;

/**
 * How a persistent MR makes a byte range durable: rxe4j's stand-in for {@code arch_wb_cache_pmem}
 * ({@code rxe-facts.md} §7.3, {@code extensions.md} §4). The responder calls it for a FLUSH with
 * the persistence placement type and sends the response only after it returns.
 */
@FunctionalInterface
public interface Persistence {
    /** Forces a memory-mapped segment to its file ({@link MemorySegment#force()}). */
    Persistence MAPPED_FILE = (segment, offset, length) -> {
        if (length > 0) {
            segment.asSlice(offset, length).force();
        }
    };

    /**
     * Makes {@code [offset, offset + length)} of {@code segment} durable, returning only when it is.
     *
     * @param segment the MR's memory
     * @param offset byte offset in the segment
     * @param length bytes, {@code >= 0}
     * @throws java.io.UncheckedIOException if the storage device reports an error (the responder
     *     then answers NAK 0x62)
     */
    void force(MemorySegment segment, long offset, long length);
}
