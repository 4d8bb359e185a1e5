/**
 * rxe4j transports: how RoCEv2 UDP payloads move between devices.
 *
 * <ul>
 *   <li>{@link io.rxe4j.net.udp.UdpTransport}: real UDP sockets (Netty NIO), RoCEv2 port 4791 by
 *       default, IPv4 and IPv6;
 *   <li>{@link io.rxe4j.net.inproc.InJvmFabric}: endpoints inside one JVM, no sockets;
 *   <li>{@link io.rxe4j.net.sim.VirtualScheduler}: a deterministic virtual-time loop for tests;
 *   <li>{@link io.rxe4j.net.NettyScheduler}: the {@link io.rxe4j.verbs.spi.Scheduler} view of a
 *       Netty event loop.
 * </ul>
 */
module io.rxe4j.net {
    requires transitive io.rxe4j.verbs;
    // the engine: its wire codec (FaultInjectingTransport peeks at BTHs), and, being required, it is
    // resolved on the module path, so RdmaDevice.open finds its provider
    requires io.rxe4j.core;
    requires transitive io.netty.transport; // EventLoopGroup in UdpTransport.Builder
    requires transitive io.netty.common; // EventExecutor in NettyScheduler
    requires io.netty.buffer;
    requires io.netty.transport.classes.epoll; // native epoll (UdpTransport.Io.EPOLL)
    // Netty's epoll JNI library, a resource of this module (netty-transport-native-epoll-*-linux-x86_64.jar):
    // on the module path a module that nothing requires is not resolved and its resources are invisible, so
    // without this Netty cannot load epoll there and IPv6 from kernel peers (zero UDP checksums) is dropped
    requires io.netty.transport.epoll.linux.x86_64;
    requires io.netty.transport.classes.io_uring; // io_uring (UdpTransport.Io.IO_URING)
    requires io.netty.transport.io_uring.linux.x86_64; // its JNI library, for the reason above
    requires io.netty.transport.unix.common;
    requires org.slf4j;
    requires jdk.net;

    exports io.rxe4j.net;
    exports io.rxe4j.net.udp;
    exports io.rxe4j.net.inproc;
    exports io.rxe4j.net.sim;
    exports io.rxe4j.net.fault;
    exports io.rxe4j.net.pcap;
}
