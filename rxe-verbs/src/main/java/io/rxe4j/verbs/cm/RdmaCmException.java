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
        /** Nothing listens at the address (TCP connection refused). */
        REFUSED,
        /** The address cannot be reached (no route, host down, unknown host). */
        UNREACHABLE,
        /** The peer did not complete the exchange in time (a half-open or hung peer, or a slow network). */
        TIMEOUT,
        /** The peer rejected the request ({@link ConnectRequest#reject}); see {@link #privateData()}. */
        REJECTED,
        /** The peer sent something that is not the rxe4j connection protocol, or closed mid-exchange. */
        PROTOCOL,
        /** The listener was closed. */
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
