package io.rxe4j.verbs;

/**
 * Device capability bits of {@code device_cap_flags_ex} ({@code ib_uverbs_device_cap_flags};
 * {@code rxe-facts.md} §7.1) and the atomic capability values ({@code enum ibv_atomic_cap}).
 */
public final class DeviceCap {
    /** IB_UVERBS_DEVICE_RC_RNR_NAK_GEN: the responder sends RNR NAKs. */
    public static final long RC_RNR_NAK_GEN = 1L << 12;
    /** IB_UVERBS_DEVICE_SRQ_RESIZE: {@code ibv_modify_srq} with IBV_SRQ_MAX_WR. */
    public static final long SRQ_RESIZE = 1L << 13;
    /** IB_UVERBS_DEVICE_MEM_WINDOW: memory windows (type 1). */
    public static final long MEM_WINDOW = 1L << 17;
    /** IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B: type 2B memory windows. */
    public static final long MEM_WINDOW_TYPE_2B = 1L << 24;
    /** IB_UVERBS_DEVICE_FLUSH_GLOBAL. */
    public static final long FLUSH_GLOBAL = 1L << 38;
    /** IB_UVERBS_DEVICE_FLUSH_PERSISTENT. */
    public static final long FLUSH_PERSISTENT = 1L << 39;
    /** IB_UVERBS_DEVICE_ATOMIC_WRITE. */
    public static final long ATOMIC_WRITE = 1L << 40;
    /** IBV_ATOMIC_NONE. */
    public static final int ATOMIC_NONE = 0;
    /** IBV_ATOMIC_HCA: atomic with respect to every atomic of the device. */
    public static final int ATOMIC_HCA = 1;
    /** IBV_ATOMIC_GLOB. */
    public static final int ATOMIC_GLOB = 2;

    private DeviceCap() {}
}
