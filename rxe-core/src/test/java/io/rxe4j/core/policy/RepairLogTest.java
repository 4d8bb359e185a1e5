package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link RepairLog}: a repair is recent for the guard time, per PSN; slots are shared; clear forgets. */
class RepairLogTest {
    @Test
    void aRepairIsRecentForTheGuardTimeOnly() {
        RepairLog log = new RepairLog();
        assertThat(log.recentlyRepaired(7, 0, 1000)).isFalse();
        log.onRepair(7, 100);
        assertThat(log.recentlyRepaired(7, 500, 1000)).isTrue();
        assertThat(log.recentlyRepaired(7, 1100, 1000)).as("a round trip later").isFalse();
        assertThat(log.recentlyRepaired(8, 500, 1000)).as("another PSN").isFalse();
    }

    @Test
    void aPsnSharingASlotWithANewerRepairIsForgotten() {
        RepairLog log = new RepairLog();
        log.onRepair(5, 100);
        log.onRepair(5 + RepairLog.SLOTS, 200);
        assertThat(log.recentlyRepaired(5, 300, 1000)).isFalse();
        assertThat(log.recentlyRepaired(5 + RepairLog.SLOTS, 300, 1000)).isTrue();
        log.clear();
        assertThat(log.recentlyRepaired(5 + RepairLog.SLOTS, 300, 1000)).isFalse();
    }

    @Test
    void timesAcrossTheClockWrapCompareBySubtraction() {
        RepairLog log = new RepairLog();
        log.onRepair(1, Long.MAX_VALUE - 10);
        assertThat(log.recentlyRepaired(1, Long.MIN_VALUE + 10, 100)).isTrue();
    }
}
