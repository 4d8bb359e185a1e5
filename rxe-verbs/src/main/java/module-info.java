/**
 * rxe4j verbs: the public API, in libibverbs and librdmacm vocabulary (the libibverbs of rxe4j).
 *
 * <p>Applications use {@code io.rxe4j.verbs} (devices, protection domains, memory regions,
 * completion queues, queue pairs, work requests, completions, events), {@code io.rxe4j.verbs.cm}
 * (the connection manager, librdmacm's part) and {@code io.rxe4j.verbs.spi} (the transport
 * interface a device runs on; the transports are in module {@code io.rxe4j.net}). {@code
 * io.rxe4j.verbs.provider} is what a verbs provider implements: the soft-RoCE engine is one, in
 * module {@code io.rxe4j.core}, found at run time with {@link java.util.ServiceLoader}. This module
 * names no provider class.
 */
module io.rxe4j.verbs {
    requires transitive io.netty.buffer; // ByteBuf in the transport SPI
    requires org.slf4j;
    requires transitive java.management; // RdmaDevice.mbeanName() returns an ObjectName

    exports io.rxe4j.verbs;
    exports io.rxe4j.verbs.cm;
    exports io.rxe4j.verbs.spi;
    exports io.rxe4j.verbs.provider;

    uses io.rxe4j.verbs.provider.VerbsProvider;
}
