package io.rxe4j.verbs.cm;


import java.io.IOException;

/**
 * A connection could not be made or was lost ({@code RDMA_CM_EVENT_REJECTED}, {@code
 * _UNREACHABLE}, {@code _CONNECT_ERROR}, {@code _ADDR_ERROR}). {@link #reason()} says which.
 */
public final class RdmaCmException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Why the connection manager failed. */
    public enum Reason {
        /** Nothing listens on the port at the address: the peer's CM answered REJ 8 (invalid service ID). */
        REFUSED,
        /** The address cannot be reached (no route, host down, unknown host). */
        UNREACHABLE,
        /**
         * The exchange did not complete in time: no answer after the CM's retries, the {@linkplain
         * ConnectionParams#withTimeout deadline} passed, or the peer gave up (REJ 4, timeout).
         */
        TIMEOUT,
        /**
         * The peer rejected the request ({@link ConnectRequest#reject}: REJ 28, consumer defined; see
         * {@link #privateData()}) or rejected it for another reason the message names (REJ 3 no
         * resources, REJ 10 stale connection).
         */
        REJECTED,
        /** The exchange failed otherwise: the local QP could not be moved to RTR/RTS, or an unexpected error (the cause names it). */
        PROTOCOL,
        /** The listener, the device or its connection manager was closed, or the call was cancelled or interrupted. */
        CLOSED
    }

    private final Reason reason;
    private final transient byte[] privateData;

    RdmaCmException(Reason reason, String message, Throwable cause) {
        this(reason, message, cause, new byte[0]);
    }

    RdmaCmException(Reason reason, String message, Throwable cause, byte[] privateData) {
        super(reason + ": " + message, cause);
        this.reason = reason;
        this.privateData = privateData;
    }

    /** @return why */
    public Reason reason() {
        return reason;
    }

    /** @return the private data of a rejection (a copy), empty otherwise */
    public byte[] privateData() {
        return privateData.clone();
    }
}
