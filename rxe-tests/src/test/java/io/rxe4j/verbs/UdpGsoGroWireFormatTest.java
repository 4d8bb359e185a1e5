package io.rxe4j.verbs;

/**
 * {@link WireFormatSuite} over real UDP sockets on 127.0.0.1 on epoll with UDP GSO and GRO (the
 * packets are captured as the device hands them to the transport, before GSO coalesces them);
 * skipped where they are unavailable.
 */
class UdpGsoGroWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return udpEpollGsoGro();
    }
}
