package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** 24-bit PSN arithmetic ({@code rxe-facts.md} §5.1: wrap at 2^24, serial comparison ±2^23). */
class PsnTest {
    private static final int HALF = 1 << 23;

    @Test
    void constants() {
        assertThat(Psn.MODULUS).isEqualTo(1 << 24);
        assertThat(Psn.MASK).isEqualTo(0xFFFFFF);
    }

    @Test
    void nextWrapsAt2To24() {
        assertThat(Psn.next(0)).isEqualTo(1);
        assertThat(Psn.next(0xFFFFFE)).isEqualTo(0xFFFFFF);
        assertThat(Psn.next(0xFFFFFF)).isEqualTo(0);
        int psn = 0xFFFFFE;
        int[] expected = {0xFFFFFF, 0x000000, 0x000001};
        for (int e : expected) {
            psn = Psn.next(psn);
            assertThat(psn).isEqualTo(e);
        }
    }

    @Test
    void addWrapsBothWays() {
        assertThat(Psn.add(0xFFFFFE, 3)).isEqualTo(0x000001);
        assertThat(Psn.add(0x000001, -3)).isEqualTo(0xFFFFFE);
        assertThat(Psn.add(0, -1)).isEqualTo(0xFFFFFF);
        assertThat(Psn.add(0x123456, Psn.MODULUS)).isEqualTo(0x123456);
        assertThat(Psn.add(0x123456, -Psn.MODULUS)).isEqualTo(0x123456);
        assertThat(Psn.add(0xFFFFFF, 0)).isEqualTo(0xFFFFFF);
        assertThat(Psn.add(0, Integer.MAX_VALUE)).isEqualTo(Integer.MAX_VALUE & 0xFFFFFF);
        // a READ of ceil(len / PMTU) packets advances the PSN across the wrap
        assertThat(Psn.add(0xFFFFFD, 5)).isEqualTo(2);
    }

    @Test
    void compareAcrossTheWrap() {
        assertThat(Psn.compare(0x000001, 0xFFFFFE)).isEqualTo(3).isPositive();
        assertThat(Psn.compare(0xFFFFFE, 0x000001)).isEqualTo(-3).isNegative();
        assertThat(Psn.after(0x000001, 0xFFFFFE)).isTrue();
        assertThat(Psn.before(0xFFFFFE, 0x000001)).isTrue();
        assertThat(Psn.before(0x000001, 0xFFFFFE)).isFalse();
        assertThat(Psn.after(0xFFFFFE, 0x000001)).isFalse();
        assertThat(Psn.compare(0, 0xFFFFFF)).isEqualTo(1);
        assertThat(Psn.diff(0x000001, 0xFFFFFE)).isEqualTo(3);
        for (int p : new int[] {0, 1, 0x7FFFFF, 0x800000, 0xFFFFFF}) {
            assertThat(Psn.compare(p, p)).isZero();
            assertThat(Psn.before(p, p)).isFalse();
            assertThat(Psn.after(p, p)).isFalse();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 0x123456, 0x7FFFFF, 0x800000, 0xFFFFFE, 0xFFFFFF})
    void windowIsPlusMinus2To23(int a) {
        // everything up to 2^23 - 1 ahead is "after", up to 2^23 - 1 behind is "before"
        for (int d : new int[] {1, 2, 1000, HALF - 2, HALF - 1}) {
            int ahead = Psn.add(a, d);
            int behind = Psn.add(a, -d);
            assertThat(Psn.compare(ahead, a)).as("%x + %d", a, d).isEqualTo(d);
            assertThat(Psn.compare(behind, a)).as("%x - %d", a, d).isEqualTo(-d);
            assertThat(Psn.after(ahead, a)).isTrue();
            assertThat(Psn.before(behind, a)).isTrue();
            assertThat(Psn.compare(a, ahead)).isEqualTo(-d);
        }
        // exactly half way round is ambiguous: rxe's psn_compare calls it "before" from both sides
        int opposite = Psn.add(a, HALF);
        assertThat(Psn.compare(opposite, a)).isEqualTo(-HALF);
        assertThat(Psn.compare(a, opposite)).isEqualTo(-HALF);
        // one step further round, the sign flips: 2^23 + 1 ahead is 2^23 - 1 behind
        assertThat(Psn.compare(Psn.add(a, HALF + 1), a)).isEqualTo(-(HALF - 1));
        assertThat(Psn.compare(Psn.add(a, -(HALF + 1)), a)).isEqualTo(HALF - 1);
    }

    @Test
    void compareMatchesRxePsnCompareOnRandomInputs() {
        SplittableRandom r = new SplittableRandom(0x5053_4E);
        for (int i = 0; i < 100_000; i++) {
            int a = r.nextInt(Psn.MODULUS);
            int b = r.nextInt(Psn.MODULUS);
            // rxe: (s32)((a - b) << 8), sign only; and the signed 24-bit distance as a reference
            int rxe = (a - b) << 8;
            int d = ((a - b) & Psn.MASK);
            int signed = d >= HALF ? d - Psn.MODULUS : d;
            assertThat(Integer.signum(Psn.compare(a, b))).isEqualTo(Integer.signum(rxe));
            assertThat(Psn.diff(a, b)).isEqualTo(signed);
            assertThat(Psn.add(b, Psn.diff(a, b))).isEqualTo(a);
        }
    }

    @Test
    void compareIgnoresBitsAbove24() {
        assertThat(Psn.compare(0x01000005, 5)).isZero();
        assertThat(Psn.compare(0xFF000001, 0x00FFFFFF)).isEqualTo(2);
    }

    @Test
    void checkAcceptsOnly24BitValues() {
        for (int ok : new int[] {0, 1, 0x7FFFFF, 0xFFFFFF}) {
            assertThat(Psn.check(ok, "sq_psn")).isEqualTo(ok);
        }
        for (int bad : new int[] {-1, 0x1000000, 0x1FFFFFF, Integer.MIN_VALUE, Integer.MAX_VALUE, 0x80000000}) {
            assertThatIllegalArgumentException().isThrownBy(() -> Psn.check(bad, "rq_psn"))
                    .withMessageContaining("rq_psn")
                    .withMessageContaining(Integer.toHexString(bad));
        }
    }
}
