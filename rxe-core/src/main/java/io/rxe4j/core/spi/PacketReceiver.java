package io.rxe4j.core.spi;

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
     * @param packet the UDP payload; readable bytes are the packet. The callee must not retain or
     *     release it: the transport releases it after this method returns.
     * @param sender the (IP, UDP port) the datagram came from
     * @param recipient the local (IP, UDP port) it was sent to, as the ICRC needs it
     */
    void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient);
}
