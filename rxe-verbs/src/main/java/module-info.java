/**
 * rxe4j verbs: the public API, in libibverbs and librdmacm vocabulary, and the RoCEv2 RC engine
 * behind it.
 *
 * <p>Applications use two packages: {@code io.rxe4j.verbs} (devices, protection domains, memory
 * regions, completion queues, queue pairs, work requests, completions, events, the connection
 * manager) and {@code io.rxe4j.verbs.spi} (the transport interface a device runs on; the transports
 * themselves are in module {@code io.rxe4j.net}). The engine packages ({@code io.rxe4j.core.*}:
 * wire codec, memory, QP state machines, device loop) are not API: they are exported only to
 * {@code io.rxe4j.net}, and their class names ({@code RxeQp}, {@code RxeMr}, ...) never repeat an
 * API name.
 */
module io.rxe4j.verbs {
    requires transitive io.netty.buffer; // ByteBuf in the transport SPI
    requires io.netty.common;
    requires org.slf4j;
    requires transitive java.management; // RdmaDevice.mbeanName() returns an ObjectName
    requires jdk.net; // TCP keepalive options of the connection manager

    exports io.rxe4j.verbs;
    exports io.rxe4j.verbs.spi;
    exports io.rxe4j.core.wire to io.rxe4j.net;
    exports io.rxe4j.core.memory to io.rxe4j.net;
    exports io.rxe4j.core.qp to io.rxe4j.net;
    exports io.rxe4j.core.cq to io.rxe4j.net;
    exports io.rxe4j.core.device to io.rxe4j.net;
}
