package io.rxe4j.verbs;

import io.rxe4j.net.udp.UdpTransport;

/**
 * {@link VerbsConformanceSuite} on multi-core devices over real UDP: each device has 3 NIO sockets
 * sharing one port ({@code SO_REUSEPORT}), each on its own event loop. The kernel spreads datagrams
 * over the sockets by a hash of their addresses, so most packets arrive on a loop other than their
 * QP's and the device steers them.
 */
class UdpMultiLoopVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udpMultiLoop(UdpTransport.Io.NIO, 3);
    }
}
