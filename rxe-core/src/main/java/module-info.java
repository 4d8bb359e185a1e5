/**
 * rxe4j core: the soft-RoCE verbs provider, the RoCEv2 engine behind the API of module {@code
 * io.rxe4j.verbs} (as rdma-core's {@code providers/rxe} is behind libibverbs).
 *
 * <p>Applications never name this module's packages; they add it to the module or class path, and
 * {@link io.rxe4j.verbs.RdmaDevice#open} finds its {@link io.rxe4j.verbs.provider.VerbsProvider}
 * through {@link java.util.ServiceLoader}. The packages and what may import what are described in
 * {@code docs/architecture.md}; one package is exported, the wire codec, and only to {@code
 * io.rxe4j.net} (its fault-injecting transport peeks at the BTH).
 */
module io.rxe4j.core {
    requires transitive io.rxe4j.verbs;
    requires io.netty.buffer;
    requires io.netty.common;
    requires org.slf4j;

    exports io.rxe4j.core.wire to io.rxe4j.net;

    provides io.rxe4j.verbs.provider.VerbsProvider with io.rxe4j.core.device.RxeProvider;
}
