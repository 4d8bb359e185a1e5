package io.rxe4j.verbs;

/**
 * What a bind puts behind a memory window ({@code struct ibv_mw_bind_info};
 * {@code verbs-surface-facts.md} §5.3): the range {@code [addr, addr + length)} of {@code mr}, with
 * {@code mwAccessFlags}.
 *
 * @param mr the MR the window lies in, registered with {@link Access#MW_BIND}; null only with
 *     {@code addr} and {@code length} 0 (a type 1 window's unbind)
 * @param addr first virtual address of the window, inside {@code mr} (a window is never zero-based
 *     here: {@link Access#ZERO_BASED} is refused)
 * @param length bytes, {@code >= 0}; 0 unbinds a type 1 window (a type 2B window needs {@code > 0})
 * @param mwAccessFlags the {@link Access} bits peers get: REMOTE_READ, REMOTE_WRITE,
 *     REMOTE_ATOMIC, FLUSH_GLOBAL, FLUSH_PERSISTENT (REMOTE_WRITE and REMOTE_ATOMIC need
 *     LOCAL_WRITE on the MR; LOCAL_WRITE itself is accepted and means nothing)
 */
public record MwBindInfo(MemoryRegion mr, long addr, long length, int mwAccessFlags) {
    /**
     * @throws IllegalArgumentException for a negative length, an address or length without an MR
     *     (EINVAL, as {@code ibv_bind_mw})
     */
    public MwBindInfo {
        if (length < 0) {
            throw new IllegalArgumentException("window length must be >= 0 bytes, got " + length);
        }
        if (mr == null && (addr != 0 || length != 0)) {
            throw new IllegalArgumentException("a window bind with addr 0x" + Long.toHexString(addr) + " and length "
                    + length + " needs an MR (EINVAL)");
        }
    }

    /** @return the unbind of a type 1 window: no MR, length 0, no access */
    public static MwBindInfo unbind() {
        return new MwBindInfo(null, 0, 0, 0);
    }
}
