package io.rxe4j.verbs.spi;

import java.io.IOException;

/**
 * The cause a transport gives {@link PacketReceiver#onSendFailed} when a packet can never be sent as
 * it is: its datagram is larger than the link carries (the kernel's {@code EMSGSIZE}, "Message too
 * long", for a UDP datagram above the interface MTU with don't-fragment set). The engine then fails
 * the sending QP at once with {@code LOC_QP_OP_ERR} ({@code rxe-facts.md} §6.5), since resending the
 * same packet cannot succeed. Any other cause (e.g. "Network is unreachable" while a link is down,
 * "No buffer space available") is taken as a transient loss: the packet counts as sent and lost,
 * and the QP's retransmit timer recovers it or, when the outage outlasts the retry budget, names the
 * local failure in its RETRY_EXC_ERR reason.
 */
public final class DatagramTooLargeException extends IOException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was refused, e.g. "Message too long: 4156-byte IP datagram, link MTU 1500"
     * @param cause the transport's or the kernel's own exception, or null
     */
    public DatagramTooLargeException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * @return whether {@code cause} or one of its causes means "larger than the link carries": a
     *     {@code DatagramTooLargeException}, or an exception whose message names {@code EMSGSIZE}
     *     ("Message too long", as Linux's {@code strerror} and Netty's native transport word it)
     */
    public static boolean isTooLarge(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof DatagramTooLargeException) {
                return true;
            }
            String m = t.getMessage();
            if (m != null && (m.contains("Message too long") || m.contains("EMSGSIZE") || m.contains("error(-90)"))) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }
}
