package io.rxe4j.core.wire;

/**
 * KDETH flow PSN arithmetic for TID RDMA over RoCE ({@code extensions.md} §5;
 * {@code tid-opfn-facts.md} §3.2, §4, §6.8, §9.3).
 *
 * <p>A flow PSN is {@code generation << 11 | sequence}. hfi1 uses a 20-bit generation in a
 * 31-bit PSN; the RoCE BTH has only 24 PSN bits, so rxe4j cuts the generation to <b>13 bits</b>
 * and the whole value fits the BTH PSN:
 * <pre>
 *  23:11 generation (13 bits; 0x1FFF reserved)   10:0 sequence (11 bits; 0x7FF reserved for RESYNC)
 * </pre>
 * Sequences 0..2046 number the data packets of one generation; 2047 is only ever the PSN of a
 * RESYNC and of the ACK answering it. Generation 0x1FFF is never used for data (hfi1 programs it
 * into unused hardware flows); advancing a generation skips it.
 *
 * <p>Verbs PSNs are unaffected: they stay ordinary 24-bit RoCE PSNs ({@link Psn}).
 */
public final class FlowPsn {
    /** Width of the sequence part, bits ({@code HFI1_KDETH_BTH_SEQ_SHIFT}). */
    public static final int SEQUENCE_BITS = 11;
    /** Shift of the generation inside a flow PSN. */
    public static final int GENERATION_SHIFT = SEQUENCE_BITS;
    /** Mask of the sequence part, 0x7FF. */
    public static final int SEQUENCE_MASK = (1 << SEQUENCE_BITS) - 1;
    /** Sequence values per generation, 2048 ({@code MAX_TID_FLOW_PSN}). */
    public static final int SEQUENCES = 1 << SEQUENCE_BITS;
    /** The sequence reserved for RESYNC, 0x7FF; data packets use 0..0x7FE. */
    public static final int RESYNC_SEQUENCE = SEQUENCE_MASK;
    /** Data packets per generation, 2047 (every sequence but {@link #RESYNC_SEQUENCE}). */
    public static final int USABLE_SEQUENCES = SEQUENCES - 1;
    /** Width of the generation in rxe4j, bits (hfi1: 20). */
    public static final int GENERATION_BITS = 13;
    /** Mask of the generation, 0x1FFF. */
    public static final int GENERATION_MASK = (1 << GENERATION_BITS) - 1;
    /** The reserved generation, 0x1FFF ({@code KERN_GENERATION_RESERVED} cut to 13 bits). */
    public static final int RESERVED_GENERATION = GENERATION_MASK;
    /** Mask of a whole flow PSN, 24 bits (= the BTH PSN mask). */
    public static final int MASK = (GENERATION_MASK << GENERATION_SHIFT) | SEQUENCE_MASK;

    private FlowPsn() {}

    /** @return the 13-bit generation of flow PSN {@code psn} */
    public static int generation(int psn) {
        return (psn >>> GENERATION_SHIFT) & GENERATION_MASK;
    }

    /** @return the 11-bit sequence of flow PSN {@code psn} */
    public static int sequence(int psn) {
        return psn & SEQUENCE_MASK;
    }

    /**
     * @param generation 13-bit generation (masked)
     * @param sequence 11-bit sequence (masked)
     * @return the 24-bit flow PSN {@code generation << 11 | sequence}
     */
    public static int of(int generation, int sequence) {
        return ((generation & GENERATION_MASK) << GENERATION_SHIFT) | (sequence & SEQUENCE_MASK);
    }

    /**
     * The generation after {@code generation}, as hfi1's {@code kern_flow_generation_next}: + 1,
     * wrapping within 13 bits and skipping the reserved 0x1FFF (so 0x1FFE and 0x1FFF both go to 0).
     *
     * @return the next usable generation, never {@link #RESERVED_GENERATION}
     */
    public static int nextGeneration(int generation) {
        int g = (generation + 1) & GENERATION_MASK;
        return g == RESERVED_GENERATION ? (g + 1) & GENERATION_MASK : g;
    }

    /**
     * The BTH PSN of the RESYNC that moves a flow from {@code generation} to the next one
     * ({@code tid-opfn-facts.md} §6.8, {@code hfi1_build_tid_rdma_resync}):
     * {@code ((nextGeneration(generation) << 11) - 1)} within 24 bits. For every generation but
     * 0x1FFE this is {@code (generation + 1) << 11 - 1}, i.e. sequence 0x7FF of {@code generation};
     * after 0x1FFE the next generation is 0 and the value wraps to 0xFFFFFF. The ACK to the RESYNC
     * carries the same PSN.
     *
     * @param generation the flow's current generation
     * @return a PSN whose low 11 bits are all ones ({@link #isResync})
     */
    public static int resyncPsn(int generation) {
        return ((nextGeneration(generation) << GENERATION_SHIFT) - 1) & MASK;
    }

    /**
     * The generation a RESYNC (or the ACK to it) moves the flow to, as the receiver of a RESYNC
     * computes it: {@code ((psn + 1) & 0xFFFFFF) >> 11}. Inverse of {@link #resyncPsn}:
     * {@code resyncGeneration(resyncPsn(g)) == nextGeneration(g)}.
     */
    public static int resyncGeneration(int psn) {
        return (((psn + 1) & MASK) >>> GENERATION_SHIFT) & GENERATION_MASK;
    }

    /** @return whether the low 11 bits of {@code psn} are all ones: a RESYNC PSN (or the ACK to one) */
    public static boolean isResync(int psn) {
        return (psn & SEQUENCE_MASK) == RESYNC_SEQUENCE;
    }

    /**
     * Whether {@code npkts} more data packets starting at sequence {@code nextSequence} fit in the
     * current generation without touching the reserved sequence 0x7FF ({@code tid-opfn-facts.md}
     * §4: otherwise the flow reaches a sync point and continues in the next generation from 0).
     */
    public static boolean fitsInGeneration(int nextSequence, int npkts) {
        return nextSequence >= 0 && npkts >= 0 && nextSequence + npkts <= USABLE_SEQUENCES;
    }
}
