package io.rxe4j.examples.perf;

import io.rxe4j.verbs.WrOpcode;

/** {@code --atomic-type}: the atomic operation of atomic_bw / atomic_lat. */
public enum AtomicType {
    /** Compare-and-swap. */
    CAS(WrOpcode.ATOMIC_CMP_AND_SWP, 28),
    /** Fetch-and-add (perftest's default). */
    FAA(WrOpcode.ATOMIC_FETCH_AND_ADD, 28),
    /** Masked compare-and-swap (rxe4j wire format: 44-byte header). */
    MCAS(WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, 44),
    /** Masked fetch-and-add (AtomicETH; the field boundary travels in the compare-mask field). */
    MFAA(WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, 28);

    private final WrOpcode opcode;
    private final int extHeaderBytes;

    AtomicType(WrOpcode opcode, int extHeaderBytes) {
        this.opcode = opcode;
        this.extHeaderBytes = extHeaderBytes;
    }

    /** @return the work-request opcode */
    public WrOpcode opcode() {
        return opcode;
    }

    /** @return the extended transport header after the BTH, in bytes */
    public int extHeaderBytes() {
        return extHeaderBytes;
    }
}
