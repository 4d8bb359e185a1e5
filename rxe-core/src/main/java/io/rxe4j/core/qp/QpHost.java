package io.rxe4j.core.qp;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.MrTable;
import io.rxe4j.core.policy.PeerBudget;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;

/**
 * What a QP and its engines need of the event loop (lane) and the device they run on: packet
 * buffers and the output path, the loop itself, the per-peer byte budgets, the MR table, the
 * configuration and the failure reports. Implemented by the device's lane ({@code
 * io.rxe4j.core.device.RxeLane}), which delegates the device-wide parts to its device; the QP keeps
 * one for its whole life ({@link RxeQp#host()}). Declared here so that {@code qp}, {@code rc} and
 * {@code tid} never name the device ({@code docs/architecture.md}, "Packages and what may import
 * what"; {@code design/redesign.md} §3).
 *
 * <p>Threading: every method runs on the lane's loop, except {@link #callOnLoop}, {@link #scheduler},
 * {@link #config}, {@link #activeMtu} and {@link #mrs} (any thread).
 */
public interface QpHost {
    /**
     * @param length the packet's length in bytes, ICRC included
     * @return a buffer for one outgoing packet of {@code length} bytes (pooled, direct); the caller
     *     writes it and hands it to {@link #transmit} or releases it
     */
    ByteBuf allocPacket(int length);

    /**
     * A buffer for one outgoing packet of {@code qp} that the caller hands to {@link #transmit}
     * (to the QP's peer) or releases: where the transport builds trains of packets in place
     * ({@code Transport.packetBuffer}, the UDP transport with GSO), a slot of the QP's current
     * train, so that a message's packets are built once, where they are sent from.
     *
     * @param length the packet's length in bytes, ICRC included
     * @return by default {@link #allocPacket(int)}
     */
    default ByteBuf allocPacket(RxeQp qp, int length) {
        return allocPacket(length);
    }

    /** Sends {@code packet} (owned by the callee from here on) for {@code qp}; flushed at the end of the loop task. */
    void transmit(RxeQp qp, ByteBuf packet);

    /**
     * Sends the UD datagram {@code packet} (owned by the callee from here on) of {@code qp} to {@code
     * peer}, its WR's address handle; flushed at the end of the loop task.
     */
    void transmitTo(RxeQp qp, ByteBuf packet, InetSocketAddress peer);

    /** Flushes the packets written so far in this loop task to the transport. */
    void flushTransport();

    /** @return whether the transport takes more output now (else wait for {@link #awaitWritable}) */
    boolean transportWritable();

    /**
     * @return whether received datagrams may still wait to be read ({@link
     *     io.rxe4j.verbs.spi.Transport#receiveBacklogged()}): timers that would act on the peer's
     *     silence wait for the next read batch first
     */
    default boolean receiveBacklogged() {
        return false;
    }

    /** {@code qp} waits for the transport to become writable again; it is then served ({@link #requestService}). */
    void awaitWritable(RxeQp qp);

    /** Queues {@code qp} for a turn on the lane's service queue ({@link RxeQp#onService()}). */
    void requestService(RxeQp qp);

    /**
     * Runs {@code task} on the loop and returns its result; runs it directly when called on the
     * loop. Any thread.
     */
    <T> T callOnLoop(Callable<T> task);

    /** @return the loop the QP runs on (its timers and tasks). Any thread. */
    Scheduler scheduler();

    /**
     * An unexpected exception in the engine while working for {@code qp} ({@code what}): counted
     * ({@code drop_internal_error}), logged rate-limited at WARN, and the QP enters ERR.
     */
    void internalError(RxeQp qp, String what, RuntimeException e);

    /** @return the byte budget of the peer {@code peer} ({@code io.rxe4j.core.policy.PeerBudget}), shared by its QPs */
    PeerBudget peerBudget(InetSocketAddress peer);

    /** @return the device's MR key table (lkey and rkey lookups). Any thread. */
    MrTable mrs();

    /** @return the device's configuration. Any thread. */
    DeviceConfig config();

    /** @return the port's active MTU (the largest path MTU the link carries). Any thread. */
    Mtu activeMtu();

    /**
     * {@code qp} enters ERR for a reason of its own ({@code reason}): logged rate-limited, and the
     * QP_FATAL listener is told ({@code IBV_EVENT_QP_FATAL}).
     */
    void onQpError(RxeQp qp, String reason);

    /**
     * SRQ-attached {@code qp} entered ERR ({@code reason}): it takes no more WQEs from its SRQ ({@code
     * IBV_EVENT_QP_LAST_WQE_REACHED}, {@code verbs-surface-facts.md} §4.3).
     */
    default void onLastWqeReached(RxeQp qp, String reason) {
    }
}
