package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.BitSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link FlowPsn} against {@code extensions.md} §5 (13-bit generation, 0x1FFF reserved; 11-bit
 * sequence, 0x7FF reserved for RESYNC) and {@code tid-opfn-facts.md} §4, §6.8 (generation advance
 * skipping the reserved value; RESYNC PSN = (next generation << 11) - 1; the receiver's
 * generation = (PSN + 1) >> 11).
 */
class FlowPsnTest {

    @Test
    void constants() {
        assertThat(FlowPsn.SEQUENCE_BITS).isEqualTo(11);
        assertThat(FlowPsn.SEQUENCE_MASK).isEqualTo(0x7FF);
        assertThat(FlowPsn.SEQUENCES).isEqualTo(2048);
        assertThat(FlowPsn.RESYNC_SEQUENCE).isEqualTo(0x7FF);
        assertThat(FlowPsn.USABLE_SEQUENCES).isEqualTo(2047);
        assertThat(FlowPsn.GENERATION_BITS).isEqualTo(13);
        assertThat(FlowPsn.GENERATION_MASK).isEqualTo(0x1FFF);
        assertThat(FlowPsn.RESERVED_GENERATION).isEqualTo(0x1FFF);
        assertThat(FlowPsn.MASK).as("a flow PSN fits the 24-bit BTH PSN").isEqualTo(0xFFFFFF).isEqualTo(Psn.MASK);
    }

    @Test
    void ofSplitsIntoGenerationAndSequence() {
        assertThat(FlowPsn.of(0, 0)).isZero();
        assertThat(FlowPsn.of(0x123, 0x45)).isEqualTo(0x091845);
        assertThat(FlowPsn.of(1, 0)).isEqualTo(0x800);
        assertThat(FlowPsn.of(0x1FFE, 0)).isEqualTo(0xFFF000);
        assertThat(FlowPsn.of(0x1FFF, 0x7FF)).isEqualTo(0xFFFFFF);
        assertThat(FlowPsn.of(0x2000 | 3, 0x800 | 9)).as("fields masked").isEqualTo(FlowPsn.of(3, 9));
        for (int gen : new int[] {0, 1, 0x123, 0x1000, 0x1FFE, 0x1FFF}) {
            for (int seq : new int[] {0, 1, 0x45, 0x400, 0x7FE, 0x7FF}) {
                int psn = FlowPsn.of(gen, seq);
                assertThat(psn & ~0xFFFFFF).isZero();
                assertThat(FlowPsn.generation(psn)).isEqualTo(gen);
                assertThat(FlowPsn.sequence(psn)).isEqualTo(seq);
            }
        }
        assertThat(FlowPsn.generation(0xFF00_0000 | 0x091845)).as("bits above 23 ignored").isEqualTo(0x123);
    }

    @Test
    void nextGenerationWrapsAndSkipsTheReservedValue() {
        assertThat(FlowPsn.nextGeneration(0)).isEqualTo(1);
        assertThat(FlowPsn.nextGeneration(0x123)).isEqualTo(0x124);
        assertThat(FlowPsn.nextGeneration(0x1FFD)).isEqualTo(0x1FFE);
        assertThat(FlowPsn.nextGeneration(0x1FFE)).as("skips 0x1FFF").isZero();
        assertThat(FlowPsn.nextGeneration(0x1FFF)).as("out of the reserved generation").isZero();
        // walking from 0 visits every usable generation once and comes back after 8191 steps
        BitSet seen = new BitSet();
        int g = 0;
        for (int i = 0; i < 0x1FFF; i++) {
            assertThat(seen.get(g)).as("generation 0x%x twice", g).isFalse();
            seen.set(g);
            g = FlowPsn.nextGeneration(g);
            assertThat(g).isNotEqualTo(FlowPsn.RESERVED_GENERATION).isBetween(0, 0x1FFE);
        }
        assertThat(g).isZero();
        assertThat(seen.cardinality()).isEqualTo(0x1FFF);
    }

    @Test
    void resyncPsnIsTheReservedSequenceBeforeTheNextGeneration() {
        assertThat(FlowPsn.resyncPsn(0)).isEqualTo(0x0007FF);
        assertThat(FlowPsn.resyncPsn(0x123)).isEqualTo(0x091FFF);
        assertThat(FlowPsn.resyncPsn(0x1FFD)).isEqualTo(0xFFEFFF);
        // next generation after 0x1FFE is 0: (0 << 11) - 1 wraps within 24 bits (as hfi1's mask_psn)
        assertThat(FlowPsn.resyncPsn(0x1FFE)).isEqualTo(0xFFFFFF);
        for (int g = 0; g <= 0x1FFF; g++) {
            int psn = FlowPsn.resyncPsn(g);
            assertThat(psn & ~0xFFFFFF).isZero();
            assertThat(FlowPsn.isResync(psn)).isTrue();
            assertThat(FlowPsn.resyncGeneration(psn)).as("gen 0x%x", g).isEqualTo(FlowPsn.nextGeneration(g));
            if (g < 0x1FFE) {
                assertThat(psn).isEqualTo(((g + 1) << 11) - 1);
                assertThat(FlowPsn.generation(psn)).as("sequence 0x7FF of the current generation").isEqualTo(g);
            }
        }
    }

    @Test
    void isResyncLooksAtTheLowElevenBitsOnly() {
        assertThat(FlowPsn.isResync(0x7FF)).isTrue();
        assertThat(FlowPsn.isResync(0xFFFFFF)).isTrue();
        assertThat(FlowPsn.isResync(FlowPsn.of(0x123, 0x7FF))).isTrue();
        assertThat(FlowPsn.isResync(FlowPsn.of(0x123, 0x7FE))).isFalse();
        assertThat(FlowPsn.isResync(0)).isFalse();
        assertThat(FlowPsn.isResync(0x800)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 16, 64, 2047})
    void segmentsFitInAGenerationUpToSequence2046(int npkts) {
        int segments = FlowPsn.USABLE_SEQUENCES / npkts;
        int seq = 0;
        for (int i = 0; i < segments; i++) {
            assertThat(FlowPsn.fitsInGeneration(seq, npkts)).as("segment %d", i).isTrue();
            seq += npkts;
        }
        assertThat(FlowPsn.fitsInGeneration(seq, npkts)).as("segment %d reaches the sync point", segments).isFalse();
        assertThat(seq - 1).isLessThanOrEqualTo(0x7FE);
    }

    @Test
    void thirtyOneSegmentsOf64PacketsPerGeneration() {
        // "With 4 KiB MTU a 256 KiB segment is 64 packets, so 31 segments fit per generation" (§4)
        assertThat(FlowPsn.USABLE_SEQUENCES / 64).isEqualTo(31);
        assertThat(FlowPsn.fitsInGeneration(30 * 64, 64)).isTrue();
        assertThat(FlowPsn.fitsInGeneration(31 * 64, 64)).isFalse();
        assertThat(FlowPsn.fitsInGeneration(0, 2047)).isTrue();
        assertThat(FlowPsn.fitsInGeneration(0, 2048)).as("would use the RESYNC sequence").isFalse();
        assertThat(FlowPsn.fitsInGeneration(2046, 1)).isTrue();
        assertThat(FlowPsn.fitsInGeneration(2047, 0)).isTrue();
        assertThat(FlowPsn.fitsInGeneration(-1, 1)).isFalse();
    }
}
