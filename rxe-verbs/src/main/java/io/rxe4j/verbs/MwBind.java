package io.rxe4j.verbs;

/**
 * A type 1 window's bind request ({@code struct ibv_mw_bind}) for {@link QueuePair#bindMw}.
 *
 * @param wrId the cookie of the bind's completion (opcode {@link WcOpcode#BIND_MW})
 * @param sendFlags {@link SendFlags} bits: SIGNALED for a completion, FENCE to wait for earlier
 *     READs and atomics
 * @param bindInfo what to put behind the window
 */
public record MwBind(long wrId, int sendFlags, MwBindInfo bindInfo) {
    /** @throws IllegalArgumentException if {@code bindInfo} is null */
    public MwBind {
        if (bindInfo == null) {
            throw new IllegalArgumentException("bind info is null");
        }
    }
}
