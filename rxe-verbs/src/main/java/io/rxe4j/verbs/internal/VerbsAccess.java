package io.rxe4j.verbs.internal;

import io.rxe4j.verbs.AsyncEvent;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;

/**
 * What the connection manager ({@code io.rxe4j.verbs.cm}) needs of the verbs handles beyond their
 * public API: lifetime checks, the device's list of children closed first, the event dispatcher,
 * and a QP's move to ERR with the disconnect's reason. Package {@code io.rxe4j.verbs} installs the
 * one implementation when {@link RdmaDevice} is initialised (the JDK's {@code SharedSecrets}
 * pattern); this package is not exported, so applications cannot reach it on the module path.
 */
public interface VerbsAccess {
    /** @throws IllegalStateException if {@code pd} is closed */
    void checkOpen(ProtectionDomain pd);

    /** @throws IllegalStateException if {@code cq} is closed */
    void checkOpen(CompletionQueue cq);

    /** @return the device {@code cq} belongs to */
    RdmaDevice device(CompletionQueue cq);

    /** Registers a connection that {@link RdmaDevice#closeAll()} closes before the QPs. */
    void addConnection(RdmaDevice device, AutoCloseable connection);

    /** Removes a connection registered with {@link #addConnection}. */
    void removeConnection(RdmaDevice device, AutoCloseable connection);

    /** Hands {@code event} to the device's event listeners, on the device's event thread. */
    void raise(RdmaDevice device, AsyncEvent event);

    /** The provider's {@code disconnectToError}: ERR with {@code reason}; @return whether it moved */
    boolean disconnectToError(QueuePair qp, String reason);

    /**
     * @return the device's GSI QP, QP1: the connection manager's MAD transport
     * @throws IllegalStateException if the device is closed
     * @throws UnsupportedOperationException if its provider has none
     */
    io.rxe4j.verbs.provider.GsiOps gsi(RdmaDevice device);

    /** The provider's {@code localExtensions}: the extension bits {@code qp}'s device offers an rxe4j peer */
    int localExtensions(QueuePair qp);

    /** The provider's {@code setPeerExtensions}: the bits agreed with the peer, before RTR */
    void setPeerExtensions(QueuePair qp, int bits);

    /** @return the installed implementation */
    static VerbsAccess get() {
        VerbsAccess a = Holder.access;
        if (a == null) {
            try { // RdmaDevice's static initialiser installs it
                Class.forName(RdmaDevice.class.getName(), true, VerbsAccess.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            a = Holder.access;
        }
        return a;
    }

    /**
     * Installs the implementation; called once by {@code io.rxe4j.verbs}.
     *
     * @throws IllegalStateException when called a second time
     */
    static void install(VerbsAccess access) {
        synchronized (Holder.class) {
            if (Holder.access != null) {
                throw new IllegalStateException("VerbsAccess is installed already");
            }
            Holder.access = access;
        }
    }

    /** The installed implementation. */
    final class Holder {
        private static volatile VerbsAccess access;

        private Holder() {
        }
    }
}
