package io.rxe4j.verbs;

/**
 * {@link WireFormatSuite} over real UDP sockets on 127.0.0.1 on Netty's native epoll; skipped,
 * with the reason, where epoll cannot be loaded.
 */
class UdpEpollWireFormatTest extends WireFormatSuite {
    @Override
    Net createNet() {
        return udpEpoll();
    }
}
