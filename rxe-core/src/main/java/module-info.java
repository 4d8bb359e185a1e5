/**
 * rxe4j core: the RoCEv2 RC protocol (wire codec, memory regions, QP engine) with no sockets.
 *
 * <p>{@code io.rxe4j.core.verbs} (the libibverbs vocabulary: enums, work requests, completions,
 * attributes) and {@code io.rxe4j.core.spi} (transport and scheduler interfaces) are public; the
 * engine packages are exported only to the rxe4j modules that build on them.
 */
module io.rxe4j.core {
    requires transitive io.netty.buffer;
    requires io.netty.common;
    requires org.slf4j;

    exports io.rxe4j.core.verbs;
    exports io.rxe4j.core.spi;
    exports io.rxe4j.core.wire to io.rxe4j.net, io.rxe4j.verbs;
    exports io.rxe4j.core.memory to io.rxe4j.net, io.rxe4j.verbs;
    exports io.rxe4j.core.qp to io.rxe4j.net, io.rxe4j.verbs;
    exports io.rxe4j.core.cq to io.rxe4j.net, io.rxe4j.verbs;
    exports io.rxe4j.core.device to io.rxe4j.net, io.rxe4j.verbs;
}
