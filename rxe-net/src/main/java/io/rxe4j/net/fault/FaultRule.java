package io.rxe4j.net.fault;

import java.util.function.Predicate;

/**
 * One fault: packets in {@code direction} (null = both) that satisfy {@code match} get
 * {@code action}, with {@code probability} (drawn from the transport's seeded generator), or
 * exactly at the {@code nth} matching packet (1-based; 0 = every match, by probability).
 *
 * @param direction which way, or null for both
 * @param match which packets the rule considers
 * @param action what happens
 * @param probability 0..1, used when {@code nth == 0}
 * @param nth 1-based index among matching packets to hit exactly once, or 0
 * @param delayNanos for DELAY (and the REORDER release timeout), nanoseconds
 * @param holdPackets for REORDER: release after this many later packets in the same direction
 */
public record FaultRule(Direction direction, Predicate<PacketInfo> match, FaultAction action, double probability,
        int nth, long delayNanos, int holdPackets) {

    /** @throws IllegalArgumentException for a probability outside 0..1, negative nth/delay/hold, or null action */
    public FaultRule {
        if (action == null || match == null) {
            throw new IllegalArgumentException("action and match are required");
        }
        if (!(probability >= 0 && probability <= 1)) {
            throw new IllegalArgumentException("probability must be 0..1, got " + probability);
        }
        if (nth < 0 || delayNanos < 0 || holdPackets < 0) {
            throw new IllegalArgumentException("nth, delayNanos and holdPackets must be >= 0");
        }
    }

    /** Every packet in {@code dir} (null = both) with probability {@code p}. */
    public static FaultRule random(Direction dir, FaultAction action, double p) {
        return new FaultRule(dir, x -> true, action, p, 0, 200_000, 3);
    }

    /** Exactly the {@code nth} (1-based) packet in {@code dir} matching {@code match}. */
    public static FaultRule nth(Direction dir, Predicate<PacketInfo> match, FaultAction action, int nth) {
        if (nth < 1) {
            throw new IllegalArgumentException("nth is 1-based, got " + nth);
        }
        return new FaultRule(dir, match, action, 0, nth, 200_000, 3);
    }

    /** @return this rule with another delay (DELAY, and the REORDER release timeout), nanoseconds */
    public FaultRule withDelayNanos(long nanos) {
        return new FaultRule(direction, match, action, probability, nth, nanos, holdPackets);
    }

    /** @return this rule holding REORDERed packets behind {@code n} later packets */
    public FaultRule withHoldPackets(int n) {
        return new FaultRule(direction, match, action, probability, nth, delayNanos, n);
    }
}
