package io.rxe4j.verbs.soak;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The reliability soak ({@code docs/reliability.md}). Defaults: 100,000 operations, seed 1, 5%
 * loss, 5% duplication, 2% reordering and 0.1% corruption on every packet in both directions.
 * Replay or lengthen: {@code -Drxe4j.soak.seed=N -Drxe4j.soak.ops=N -Drxe4j.soak.faults=spec}.
 */
class SoakTest {
    static final String DEFAULT_FAULTS = "drop=0.05,dup=0.05,reorder=0.02,corrupt=0.001,dir=out";

    @Test
    void mixedOperationsSurviveLossDuplicationReorderingAndCorruption() {
        long seed = Long.getLong("rxe4j.soak.seed", 1);
        int ops = Integer.getInteger("rxe4j.soak.ops", 100_000);
        String faults = System.getProperty("rxe4j.soak.faults", DEFAULT_FAULTS);
        Soak.Result r = new Soak(seed, ops, faults).run();
        System.out.println(r);
        assertThat(r.faults()).as("faults were injected").isGreaterThan(0);
        assertThat(r.countersA().getOrDefault("rewinds", 0L)).as("the requester retried").isGreaterThan(0);
        assertThat(r.countersB().getOrDefault("duplicate_request", 0L)).as("the responder saw duplicates")
                .isGreaterThan(0);
    }
}
