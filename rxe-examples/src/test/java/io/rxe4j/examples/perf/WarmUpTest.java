package io.rxe4j.examples.perf;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class WarmUpTest {
    /** A virtual clock and JIT: each phase advances the clock by its length and the JIT by the next compile figure. */
    private static final class Fake {
        long now = 1_000_000_000L;
        long compiled;
        final long[] compilePerPhase;
        final List<Long> phases = new ArrayList<>();

        Fake(long... compilePerPhase) {
            this.compilePerPhase = compilePerPhase;
        }

        void phase(long nanos) {
            int i = phases.size();
            phases.add(nanos);
            now += nanos;
            compiled += i < compilePerPhase.length ? compilePerPhase[i] : compilePerPhase[compilePerPhase.length - 1];
        }
    }

    @Test
    void aQuietJitEndsTheWarmUpAfterMinusW() throws Exception {
        Fake f = new Fake(10);
        long took = new WarmUp(() -> f.compiled, () -> f.now).run(1_000_000_000L, f::phase);
        assertThat(f.phases).containsExactly(1_000_000_000L);
        assertThat(took).isEqualTo(1_000_000_000L);
    }

    @Test
    void aBusyJitExtendsItInStepsUntilAStepIsQuiet() throws Exception {
        // -w 1 s compiled 400 ms (200 per step: busy), then 300, 120, 26 (still busy), 25 (quiet)
        Fake f = new Fake(400, 300, 120, 26, 25, 900);
        long took = new WarmUp(() -> f.compiled, () -> f.now).run(1_000_000_000L, f::phase);
        assertThat(f.phases).containsExactly(1_000_000_000L, WarmUp.STEP_NANOS, WarmUp.STEP_NANOS, WarmUp.STEP_NANOS,
                WarmUp.STEP_NANOS);
        assertThat(took).isEqualTo(3_000_000_000L);
    }

    @Test
    void aJitThatNeverSettlesIsCappedTenSecondsBeyondMinusW() throws Exception {
        Fake f = new Fake(1_000);
        long took = new WarmUp(() -> f.compiled, () -> f.now).run(1_000_000_000L, f::phase);
        assertThat(took).isEqualTo(1_000_000_000L + WarmUp.MAX_EXTRA_NANOS);
        assertThat(f.phases).hasSize(1 + (int) (WarmUp.MAX_EXTRA_NANOS / WarmUp.STEP_NANOS));
    }

    @Test
    void aFixedWarmUpRunsExactlyMinusWAndNoneRunsNothing() throws Exception {
        Fake f = new Fake(1_000);
        assertThat(new WarmUp(null, () -> f.now).run(700_000_000L, f::phase)).isEqualTo(700_000_000L);
        assertThat(f.phases).containsExactly(700_000_000L);
        assertThat(new WarmUp(() -> f.compiled, () -> f.now).run(0, f::phase)).isZero();
        assertThat(f.phases).hasSize(1);
    }

    @Test
    void aLongMinusWIsJudgedPerStepNotPerPhase() throws Exception {
        // -w 4 s compiled 160 ms: 20 ms per 0.5 s step is quiet, though more than 25 ms in all
        Fake f = new Fake(160, 900);
        new WarmUp(() -> f.compiled, () -> f.now).run(4_000_000_000L, f::phase);
        assertThat(f.phases).containsExactly(4_000_000_000L);
        // and 240 ms in those 4 s (30 per step) is not
        Fake g = new Fake(240, 0);
        new WarmUp(() -> g.compiled, () -> g.now).run(4_000_000_000L, g::phase);
        assertThat(g.phases).containsExactly(4_000_000_000L, WarmUp.STEP_NANOS);
        // -w 0.2 s with 20 ms of compilation is 50 ms per step: busy
        Fake h = new Fake(20, 0);
        new WarmUp(() -> h.compiled, () -> h.now).run(200_000_000L, h::phase);
        assertThat(h.phases).containsExactly(200_000_000L, WarmUp.STEP_NANOS);
    }
}
