package io.rxe4j.verbs;

/**
 * Device attributes ({@code struct ibv_device_attr} / {@code ibv_device_attr_ex}); values follow
 * {@code rdma_rxe}'s {@code rxe_param.h} ({@code rxe-facts.md} §6.1) where rxe4j has the limit.
 *
 * @param maxQp QPs the device holds
 * @param maxQpWr WRs per queue
 * @param maxSge SGEs per WR
 * @param maxCq CQs (unbounded here: {@link Integer#MAX_VALUE})
 * @param maxCqe completions per CQ
 * @param maxMr MRs the device holds
 * @param maxMrSize largest MR in bytes
 * @param maxQpRdAtom responder resources per QP (max_dest_rd_atomic)
 * @param maxQpInitRdAtom initiator depth per QP (max_rd_atomic)
 * @param atomicCap 1 = IBV_ATOMIC_HCA: atomic across the device
 * @param maskedAtomicCap 1 = IBV_ATOMIC_HCA: masked atomics with rxe4j's wire format ({@code extensions.md} §2)
 * @param deviceCapFlagsEx {@code device_cap_flags_ex} bits: {@link io.rxe4j.verbs.DeviceCap} FLUSH_GLOBAL,
 *     RC_RNR_NAK_GEN, SRQ_RESIZE, MEM_WINDOW, MEM_WINDOW_TYPE_2B, FLUSH_GLOBAL, FLUSH_PERSISTENT and
 *     ATOMIC_WRITE (not MEM_MGT_EXTENSIONS: no fast registration, {@code docs/verbs.md})
 * @param localCaAckDelay 15, as rxe
 * @param maxMsgSize bytes, 2^31 (a UD message: at most the port's active MTU)
 * @param maxAh address handles open at once, {@link #MAX_AH} ({@code RXE_MAX_AH})
 * @param maxSrqWr WRs per shared receive queue, 2^20 ({@code RXE_MAX_SRQ_WR})
 * @param maxSrqSge SGEs per shared receive queue WR, 27 ({@code RXE_MAX_SRQ_SGE})
 * @param maxMw memory windows the device holds: as many as MRs ({@link DeviceConfig#maxMr()}), at
 *     most 2^19 − 1 ({@code RXE_MAX_MW})
 */
public record DeviceAttr(int maxQp, int maxQpWr, int maxSge, int maxCq, int maxCqe, int maxMr, long maxMrSize,
        int maxQpRdAtom, int maxQpInitRdAtom, int atomicCap, int maskedAtomicCap, long deviceCapFlagsEx,
        int localCaAckDelay, long maxMsgSize, int maxAh, int maxSrqWr, int maxSrqSge, int maxMw) {
    /** Address handles a device may have open: 32767, {@code rdma_rxe}'s {@code RXE_MAX_AH} ({@code verbs-surface-facts.md} §1.1). */
    public static final int MAX_AH = 32767;
}
