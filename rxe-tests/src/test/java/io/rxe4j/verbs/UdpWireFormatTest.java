package io.rxe4j.verbs;

/** {@link WireFormatSuite} over real UDP sockets on 127.0.0.1 with ephemeral ports, Java NIO. */
class UdpWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return udp();
    }
}
