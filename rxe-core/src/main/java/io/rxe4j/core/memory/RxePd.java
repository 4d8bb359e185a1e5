package io.rxe4j.core.memory;

/**
 * A protection domain ({@code ibv_pd}): MRs and QPs of one PD may be used together; an lkey or
 * rkey of another PD is refused (local: LOC_PROT_ERR; remote: NAK 0x62).
 */
public final class RxePd implements io.rxe4j.verbs.provider.PdOps {
    private final int handle;

    /**
     * @param handle device-unique PD number
     */
    public RxePd(int handle) {
        this.handle = handle;
    }

    /** @return the device-unique PD number */
    public int handle() {
        return handle;
    }

    @Override
    public String toString() {
        return "PD#" + handle;
    }
}
