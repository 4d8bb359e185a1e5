/**
 * rxe4j verbs: the public API, in libibverbs vocabulary. Open an {@link io.rxe4j.verbs.RdmaDevice}
 * on a transport (see {@code io.rxe4j.net}), then allocate protection domains, register memory
 * regions, create completion queues and queue pairs, post work requests and poll completions.
 * The value types (work requests, completions, enums, attributes) live in
 * {@code io.rxe4j.core.verbs}, which this module re-exports.
 */
module io.rxe4j.verbs {
    requires transitive io.rxe4j.core;
    requires org.slf4j;

    exports io.rxe4j.verbs;
}
