package io.rxe4j.verbs;

/**
 * Device options.
 *
 * @param seed seed of the generator that draws the 8-bit part of every MR key ({@code rxe-facts.md}
 *     §6.4): {@link #defaults()} draws it at random, so keys differ from device to device and run
 *     to run as in rdma_rxe; a test that wants reproducible keys sets it ({@link #withSeed})
 * @param maxQp QPs the device can hold (QPNs 16..16+maxQp-1)
 * @param maxMr MRs the device can hold
 * @param maxCqe largest CQ in completions ({@code rxe_param.h}: 2^15 − 1)
 * @param checkIcrc check the ICRC of received packets (turn off only for peers whose ICRC cannot
 *     be rebuilt, e.g. a kernel peer over IPv4; {@code extensions.md} §1)
 * @param rxeFlushCompat send and accept {@code rdma_rxe}'s FLUSH ICRC variant
 * @param congestionControl whether each QP's requester runs a loss-driven congestion window (AIMD;
 *     {@code docs/reliability.md}); it changes only when packets are sent, never the wire
 * @param peerBudgetBytes the most bytes the device keeps in flight towards one peer, over all its
 *     QPs: {@link #DERIVE_BUDGET} (0, the default) takes the transport's hint (for UDP a quarter of the
 *     smaller of the granted socket buffers; with congestion control and adaptive recovery on, 4 ×
 *     that, since the window then keeps the peer's buffer from overflowing and a long path needs its
 *     bandwidth-delay product in flight), {@link Long#MAX_VALUE} means no budget
 * @param ecn whether responders send a congestion notification (CNP, opcode 0x81) when a request
 *     arrives marked CE (Congestion Experienced) by the network, and requesters reduce their window
 *     on a CNP (RoCEv2 ECN; off by default, for interop)
 * @param opfn OPFN (Omni-Path feature negotiation, {@code tid-opfn-facts.md} §1): every RC packet
 *     the device sends carries BTH DW1 bit 24, and a QP in RTS that sees the bit from its peer
 *     negotiates the capabilities the device enables (TID RDMA) with a hidden COMPARE_SWAP to VA
 *     0xFFFFFFFFFFFFFFFF. Off by default; peers that never set the bit (kernel {@code rdma_rxe},
 *     RoCE NICs) never receive an OPFN request
 * @param tid the TID RDMA capability ({@link TidRdmaConfig}); used only with {@code opfn}
 * @param adaptiveRecovery RC recovery for lossy, reordering and long networks ({@code
 *     docs/reliability.md}, "Recovery on real networks"; on by default): retransmission driven by the
 *     measured round-trip time (tail-loss probes and an RTT-derived retransmit timeout, while the
 *     local ACK timeout × (retry_cnt + 1) stays the failure budget), a responder that holds
 *     out-of-order requests and sends its PSN-sequence NAK only when a gap outlives the path's
 *     reordering window, selective repair of a NAKed packet once the peer is seen to hold, READ
 *     responses placed by offset with at most one re-request of a missing part per round trip, and a
 *     per-QP window sized by the congestion window instead of 64 packets. Every packet stays RC on
 *     the wire. Off: {@code rdma_rxe}'s recovery (the fixed ACK timeout, a NAK and go-back-N at the
 *     first gap, 64 packets per QP), for differential tests against the kernel
 */
public record DeviceConfig(long seed, int maxQp, int maxMr, int maxCqe, boolean checkIcrc, boolean rxeFlushCompat,
        boolean congestionControl, long peerBudgetBytes, boolean ecn, boolean opfn, TidRdmaConfig tid,
        boolean adaptiveRecovery) {
    /** {@link #peerBudgetBytes()} value: derive the budget from the transport. */
    public static final long DERIVE_BUDGET = 0;

    /**
     * @throws IllegalArgumentException naming a value out of range
     */
    public DeviceConfig {
        if (maxQp < 1 || maxQp > (1 << 20) - 16) {
            throw new IllegalArgumentException("maxQp must be 1..2^20-16, got " + maxQp);
        }
        if (maxMr < 1 || maxMr > (1 << 19)) {
            throw new IllegalArgumentException("maxMr must be 1..2^19, got " + maxMr);
        }
        if (maxCqe < 1) {
            throw new IllegalArgumentException("maxCqe must be >= 1, got " + maxCqe);
        }
        if (tid == null) {
            throw new IllegalArgumentException("tid must not be null (TidRdmaConfig.disabled() turns TID RDMA off)");
        }
        if (peerBudgetBytes < 0) {
            throw new IllegalArgumentException("peerBudgetBytes must be >= 0 (0 = from the transport), got "
                    + peerBudgetBytes);
        }
    }

    /**
     * @return the defaults: a random key seed (from {@link java.security.SecureRandom}), 4096 QPs,
     *     65536 MRs, CQs of up to 32767 completions, ICRC checked, the standard FLUSH ICRC,
     *     congestion control on, the per-peer budget from the transport, ECN off, OPFN and TID RDMA off,
     *     adaptive recovery on
     */
    public static DeviceConfig defaults() {
        return new DeviceConfig(SEEDS.nextLong(), 4096, 1 << 16, (1 << 15) - 1, true, false, true, DERIVE_BUDGET,
                false, false, TidRdmaConfig.disabled(), true);
    }

    private static final java.security.SecureRandom SEEDS = new java.security.SecureRandom();

    /** @return a copy with another seed */
    public DeviceConfig withSeed(long s) {
        return new DeviceConfig(s, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl,
                peerBudgetBytes, ecn, opfn, tid, adaptiveRecovery);
    }

    /** @return a copy with the rdma_rxe FLUSH ICRC variant on or off */
    public DeviceConfig withRxeFlushCompat(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, on, congestionControl, peerBudgetBytes,
                ecn, opfn, tid, adaptiveRecovery);
    }

    /** @return a copy with congestion control (the per-QP AIMD window) on or off */
    public DeviceConfig withCongestionControl(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, on, peerBudgetBytes, ecn, opfn,
                tid, adaptiveRecovery);
    }

    /**
     * @param bytes the per-peer budget in bytes ({@link #DERIVE_BUDGET}: from the transport;
     *     {@link Long#MAX_VALUE}: none)
     * @return a copy with that budget
     */
    public DeviceConfig withPeerBudgetBytes(long bytes) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl, bytes,
                ecn, opfn, tid, adaptiveRecovery);
    }

    /** @return a copy with ECN (CNP on CE-marked requests, window reduction on CNP) on or off */
    public DeviceConfig withEcn(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl,
                peerBudgetBytes, on, opfn, tid, adaptiveRecovery);
    }

    /** @return a copy with ICRC checking on or off */
    public DeviceConfig withCheckIcrc(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, on, rxeFlushCompat, congestionControl, peerBudgetBytes,
                ecn, opfn, tid, adaptiveRecovery);
    }

    /** @return a copy with OPFN on or off */
    public DeviceConfig withOpfn(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl,
                peerBudgetBytes, ecn, on, tid, adaptiveRecovery);
    }

    /**
     * @return a copy with this TID RDMA capability; an enabled one turns OPFN on too (TID RDMA is
     *     negotiated through OPFN), a disabled one leaves OPFN as it is
     */
    public DeviceConfig withTidRdma(TidRdmaConfig t) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl,
                peerBudgetBytes, ecn, opfn || (t != null && t.enabled()), t, adaptiveRecovery);
    }

    /**
     * @return a copy with OPFN on and TID RDMA on with hfi1's sizes: QPs with path MTU 4096 negotiate
     *     TID RDMA and carry qualifying RDMA READs and WRITEs (≥ 256 KiB, 4 KiB aligned) as TID RDMA
     */
    public DeviceConfig withTidRdma() {
        return withOpfn(true).withTidRdma(TidRdmaConfig.on());
    }

    /**
     * @return a copy with adaptive recovery on (the default) or off ({@code rdma_rxe}'s fixed-timeout
     *     go-back-N; see {@link #adaptiveRecovery()})
     */
    public DeviceConfig withAdaptiveRecovery(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat, congestionControl,
                peerBudgetBytes, ecn, opfn, tid, on);
    }
}
