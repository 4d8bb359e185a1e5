package io.rxe4j.verbs.spi;

import io.netty.buffer.ByteBuf;
import java.net.InetSocketAddress;

/**
 * Receives RoCEv2 packets from a {@link Transport}. Called on the device's {@link Scheduler} loop.
 */
@FunctionalInterface
public interface PacketReceiver {

    /**
     * Handles one received UDP payload (BTH through ICRC).
     *
     * @param packet the UDP payload; readable bytes are the packet. The transport releases it
     *     after this method returns; a callee that keeps it longer (e.g. to process it after an
     *     earlier packet) must {@link ByteBuf#retain()} it and release it itself later, and must not
     *     change its reader or writer index.
     * @param sender the (IP, UDP port) the datagram came from
     * @param recipient the local (IP, UDP port) it was sent to, as the ICRC needs it
     */
    void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient);

    /**
     * Handles one received UDP payload that the network marked CE (Congestion Experienced: the ECN
     * bits of its IP header were 11, RoCEv2 ECN). A transport that can see the mark (the in-JVM
     * fabric's link model) calls this instead of {@link #onPacket(ByteBuf, InetSocketAddress,
     * InetSocketAddress)}; the default ignores the mark.
     *
     * @param ceMarked whether the packet arrived marked CE
     */
    default void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient, boolean ceMarked) {
        onPacket(packet, sender, recipient);
    }

    /**
     * Called on the loop when the transport, after {@link Transport#isWritable()} returned
     * {@code false}, can take packets again (its queued output fell below its low-water mark).
     * The default does nothing.
     */
    default void onWritable() {}

    /**
     * Called on the loop when the transport (or the network stack under it) refused to send a
     * packet given to {@link Transport#send}: for example a UDP datagram larger than the interface
     * MTU, which don't-fragment forbids splitting ({@code EMSGSIZE}, "Message too long"), or any
     * other write error of the socket. The call may come during {@link Transport#flush()} or later
     * (an asynchronous write), always on the transport's loop, once per refused packet; never for a
     * packet dropped because the transport was closed. A transport that cannot tell which packet
     * failed does not call it. The default does nothing.
     *
     * @param packet the refused packet (readable bytes: the UDP payload, BTH through ICRC), valid only
     *     during the call: the transport releases it afterwards; a callee must not keep it or change its
     *     indices
     * @param peer the (IP, UDP port) it was addressed to
     * @param cause what the transport or the kernel said (e.g. an {@code IOException} "Message too
     *     long")
     */
    default void onSendFailed(ByteBuf packet, InetSocketAddress peer, Throwable cause) {}

    /**
     * Called on the loop after the transport delivered the packets of one read (a batch of {@code
     * onPacket} calls, Netty's {@code channelReadComplete}), by transports whose {@link
     * Transport#signalsReadComplete()} is {@code true}. A receiver may defer work that it would
     * otherwise do after each packet, such as flushing the replies it queued, to this call, so that
     * one batch of received packets costs one flush. The default does nothing.
     */
    default void onReadComplete() {}
}
