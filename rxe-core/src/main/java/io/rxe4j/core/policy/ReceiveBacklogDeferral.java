package io.rxe4j.core.policy;

import java.util.function.BooleanSupplier;

/**
 * The receive-backlog rule shared by {@link RetransmitTimer} and {@link LossProbe}: a deadline that
 * passes while received datagrams may still wait to be read (the transport's last read batch was
 * full) waits, re-checked every {@link RetransmitTimer#DEFER_NANOS}, until the backlog is read or a
 * bound in nanoseconds has passed since the first deferral; one deferral is reported per expiry.
 * Loop only.
 */
final class ReceiveBacklogDeferral {
    private BooleanSupplier backlogged = () -> false;
    private Runnable onDeferred = () -> { };
    /** When the current expiry was first deferred ({@link Long#MIN_VALUE}: it was not). */
    private long since = Long.MIN_VALUE;

    void set(BooleanSupplier receiveBacklogged, Runnable onDeferred) {
        this.backlogged = receiveBacklogged;
        this.onDeferred = onDeferred;
    }

    /**
     * @param now the expiry's time, scheduler nanoseconds
     * @param boundNanos the longest an expiry may wait in all
     * @return whether the expiry waits (the caller re-arms for {@link RetransmitTimer#DEFER_NANOS})
     */
    boolean defer(long now, long boundNanos) {
        if (backlogged.getAsBoolean() && (since == Long.MIN_VALUE || now - since < boundNanos)) {
            if (since == Long.MIN_VALUE) {
                since = now;
                onDeferred.run();
            }
            return true;
        }
        since = Long.MIN_VALUE;
        return false;
    }

    /** Progress or a stop: the next expiry starts afresh. */
    void reset() {
        since = Long.MIN_VALUE;
    }
}
