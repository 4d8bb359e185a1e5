/**
 * The provider interface: what a verbs provider implements so that the API's handles ({@link
 * io.rxe4j.verbs.RdmaDevice}, {@link io.rxe4j.verbs.ProtectionDomain}, {@link
 * io.rxe4j.verbs.MemoryRegion}, {@link io.rxe4j.verbs.CompletionQueue}, {@link
 * io.rxe4j.verbs.QueuePair}) can run on it, as rdma-core's {@code providers/rxe} fills libibverbs'
 * {@code verbs_context_ops} table and registers itself with {@code PROVIDER_DRIVER}.
 *
 * <p>{@link io.rxe4j.verbs.RdmaDevice#open} finds a {@link io.rxe4j.verbs.provider.VerbsProvider}
 * with {@link java.util.ServiceLoader} (module {@code io.rxe4j.core}, artifact {@code rxe-core}, is
 * the soft-RoCE one). The API checks arguments and object lifetimes (a closed handle, a CQ of
 * another device, EBUSY) before it calls a provider; the provider checks what only it knows (table
 * sizes, QP state, work-request contents) and throws the same exceptions the API documents.
 *
 * <p>Applications do not call these interfaces; they are public so that a provider module can
 * implement them.
 */
package io.rxe4j.verbs.provider;
