package io.rxe4j.verbs;

/** {@link VerbsConformanceSuite} over real UDP sockets on 127.0.0.1 with ephemeral ports, Java NIO. */
class UdpVerbsConformanceTest extends VerbsConformanceSuite {
    @Override
    Net createNet() {
        return udp();
    }
}
