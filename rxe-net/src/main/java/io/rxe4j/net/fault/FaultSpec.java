package io.rxe4j.net.fault;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Parses a fault specification for CLIs and tests: comma-separated {@code key=value} pairs, e.g.
 * {@code drop=0.05,dup=0.05,reorder=0.02,delay=0.01,corrupt=0.001,dir=both,delay-us=200,hold=3}.
 * Probabilities are 0..1 per packet; {@code dir} is {@code out}, {@code in} or {@code both}
 * (default); {@code delay-us} is the DELAY time and REORDER release timeout in microseconds
 * (default 200); {@code hold} is how many later packets a reordered one waits behind (default 3).
 */
public final class FaultSpec {
    private FaultSpec() {}

    /**
     * @return the rules, in the order drop, corrupt, duplicate, reorder, delay
     * @throws IllegalArgumentException naming a bad key or value
     */
    public static List<FaultRule> parse(String spec) {
        double drop = 0, dup = 0, reorder = 0, delay = 0, corrupt = 0;
        Direction dir = null;
        long delayNanos = 200_000;
        int hold = 3;
        if (spec != null && !spec.isBlank()) {
            for (String part : spec.split(",")) {
                String[] kv = part.trim().split("=", 2);
                if (kv.length != 2) {
                    throw new IllegalArgumentException("fault spec item must be key=value, got '" + part + "'");
                }
                String k = kv[0].trim().toLowerCase(Locale.ROOT);
                String v = kv[1].trim();
                try {
                    switch (k) {
                        case "drop" -> drop = Double.parseDouble(v);
                        case "dup", "duplicate" -> dup = Double.parseDouble(v);
                        case "reorder" -> reorder = Double.parseDouble(v);
                        case "delay" -> delay = Double.parseDouble(v);
                        case "corrupt" -> corrupt = Double.parseDouble(v);
                        case "delay-us" -> delayNanos = Long.parseLong(v) * 1000;
                        case "hold" -> hold = Integer.parseInt(v);
                        case "dir" -> dir = switch (v.toLowerCase(Locale.ROOT)) {
                            case "out" -> Direction.OUTBOUND;
                            case "in" -> Direction.INBOUND;
                            case "both" -> null;
                            default -> throw new IllegalArgumentException("dir must be out, in or both, got " + v);
                        };
                        default -> throw new IllegalArgumentException("unknown fault spec key '" + k
                                + "' (known: drop, dup, reorder, delay, corrupt, dir, delay-us, hold)");
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad number for " + k + ": '" + v + "'", e);
                }
            }
        }
        List<FaultRule> rules = new ArrayList<>();
        add(rules, dir, FaultAction.DROP, drop, delayNanos, hold);
        add(rules, dir, FaultAction.CORRUPT, corrupt, delayNanos, hold);
        add(rules, dir, FaultAction.DUPLICATE, dup, delayNanos, hold);
        add(rules, dir, FaultAction.REORDER, reorder, delayNanos, hold);
        add(rules, dir, FaultAction.DELAY, delay, delayNanos, hold);
        return rules;
    }

    private static void add(List<FaultRule> rules, Direction dir, FaultAction a, double p, long delayNanos, int hold) {
        if (p > 0) {
            rules.add(FaultRule.random(dir, a, p).withDelayNanos(delayNanos).withHoldPackets(hold));
        }
    }
}
