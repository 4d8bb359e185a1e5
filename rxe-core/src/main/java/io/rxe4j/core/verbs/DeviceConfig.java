package io.rxe4j.core.verbs;

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
 */
public record DeviceConfig(long seed, int maxQp, int maxMr, int maxCqe, boolean checkIcrc, boolean rxeFlushCompat) {
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
    }

    /**
     * @return the defaults: a random key seed (from {@link java.security.SecureRandom}), 4096 QPs,
     *     65536 MRs, CQs of up to 32767 completions, ICRC checked, the standard FLUSH ICRC
     */
    public static DeviceConfig defaults() {
        return new DeviceConfig(SEEDS.nextLong(), 4096, 1 << 16, (1 << 15) - 1, true, false);
    }

    private static final java.security.SecureRandom SEEDS = new java.security.SecureRandom();

    /** @return a copy with another seed */
    public DeviceConfig withSeed(long s) {
        return new DeviceConfig(s, maxQp, maxMr, maxCqe, checkIcrc, rxeFlushCompat);
    }

    /** @return a copy with ICRC checking on or off */
    public DeviceConfig withCheckIcrc(boolean on) {
        return new DeviceConfig(seed, maxQp, maxMr, maxCqe, on, rxeFlushCompat);
    }
}
