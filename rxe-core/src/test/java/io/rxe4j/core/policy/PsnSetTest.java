package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.wire.Psn;
import org.junit.jupiter.api.Test;

/** {@link PsnSet}: add, contains, clear, ranges across the 24-bit wrap, the window. */
class PsnSetTest {
    @Test
    void psnsAreAddedOnceAndClearedByRange() {
        PsnSet s = new PsnSet();
        int base = 0xFFFFFE;
        assertThat(s.add(Psn.add(base, 1))).isTrue();
        assertThat(s.add(Psn.add(base, 1))).isFalse();
        assertThat(s.add(Psn.add(base, 5))).isTrue();
        assertThat(s.contains(0xFFFFFF)).isTrue();
        assertThat(s.contains(3)).isTrue();
        s.clearRange(base, Psn.add(base, 4));
        assertThat(s.contains(0xFFFFFF)).isFalse();
        assertThat(s.size()).isEqualTo(1);
        assertThat(s.clear(3)).isTrue();
        assertThat(s.size()).isZero();
    }

    @Test
    void theWindowIsStrictlyAfterTheBase() {
        assertThat(PsnSet.inWindow(10, 10)).isFalse();
        assertThat(PsnSet.inWindow(11, 10)).isTrue();
        assertThat(PsnSet.inWindow(Psn.add(10, PsnSet.WINDOW), 10)).isFalse();
        assertThat(PsnSet.inWindow(Psn.add(10, PsnSet.WINDOW - 1), 10)).isTrue();
    }
}
