package io.rxe4j.net.fault;

/** What a matching {@link FaultRule} does to a packet. */
public enum FaultAction {
    /** The packet is lost. */
    DROP,
    /** The packet is delivered twice. */
    DUPLICATE,
    /** The packet is held back and released after the next {@link FaultRule#holdPackets()} packets (or its timeout). */
    REORDER,
    /** The packet is delivered {@link FaultRule#delayNanos()} later. */
    DELAY,
    /** One byte is flipped (never BTH byte 4, which the ICRC does not cover), so the ICRC fails. */
    CORRUPT
}
