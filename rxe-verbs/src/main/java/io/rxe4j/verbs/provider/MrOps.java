package io.rxe4j.verbs.provider;

import java.lang.foreign.MemorySegment;

/** A provider's memory region ({@code ibv_mr}). */
public interface MrOps {
    /** @return the local key */
    int lkey();

    /** @return the remote key */
    int rkey();

    /** @return the virtual address of the first byte */
    long iova();

    /** @return the length in bytes */
    long length();

    /** @return the {@link io.rxe4j.verbs.Access} bits */
    int access();

    /** @return the registered memory */
    MemorySegment segment();
}
