package io.rxe4j.verbs;

import io.rxe4j.verbs.internal.VerbsAccess;

/** The {@link VerbsAccess} of this package, for the connection manager ({@code io.rxe4j.verbs.cm}). */
final class CmAccess implements VerbsAccess {
    @Override
    public void checkOpen(ProtectionDomain pd) {
        pd.checkOpen();
    }

    @Override
    public void checkOpen(CompletionQueue cq) {
        cq.checkOpen();
    }

    @Override
    public RdmaDevice device(CompletionQueue cq) {
        return cq.device;
    }

    @Override
    public void addConnection(RdmaDevice device, AutoCloseable connection) {
        device.connections.add(connection);
    }

    @Override
    public void removeConnection(RdmaDevice device, AutoCloseable connection) {
        device.connections.remove(connection);
    }

    @Override
    public void raise(RdmaDevice device, AsyncEvent event) {
        device.events.raise(event);
    }

    @Override
    public boolean disconnectToError(QueuePair qp, String reason) {
        return qp.core.disconnectToError(reason);
    }

    @Override
    public io.rxe4j.verbs.provider.GsiOps gsi(RdmaDevice device) {
        device.checkOpen();
        return device.core.gsi();
    }

    @Override
    public int localExtensions(QueuePair qp) {
        return qp.core.localExtensions();
    }

    @Override
    public void setPeerExtensions(QueuePair qp, int bits) {
        qp.core.setPeerExtensions(bits);
    }
}
