package io.rxe4j.net.fault;

/** Which way a packet goes through a {@link FaultInjectingTransport}. */
public enum Direction {
    /** Sent by the local device. */
    OUTBOUND,
    /** Received for the local device. */
    INBOUND
}
