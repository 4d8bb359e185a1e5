package io.rxe4j.verbs.provider;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.spi.Persistence;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.Map;

/**
 * One open device of a provider ({@code ibv_context} with its {@code verbs_context_ops}). Methods
 * may be called from any thread. Objects passed in ({@link PdOps}, {@link CqOps}, ...) are ones
 * this device returned; a provider may throw {@link IllegalArgumentException} for others.
 */
public interface DeviceOps {
    /** @return the (IP, UDP port) peers use to reach this device */
    InetSocketAddress address();

    /** @return the options the device was opened with */
    DeviceConfig config();

    /** @return the port's active MTU (from the link's IP MTU, {@code rxe-facts.md} §4.2) */
    Mtu activeMtu();

    /** @return the link's IP MTU in bytes, or -1 when the transport knows no limit */
    int linkMtu();

    /** @return the number of completion vectors ({@code ibv_context.num_comp_vectors}), at least 1 */
    int numCompVectors();

    /** @return the device counters by rxe-style name, a fresh snapshot */
    Map<String, Long> counterSnapshot();

    /** @return a new protection domain ({@code ibv_alloc_pd}) */
    PdOps allocPd();

    /**
     * {@code ibv_reg_mr}.
     *
     * @param pd the PD
     * @param segment native memory
     * @param arena the arena that owns {@code segment} and is closed at deregistration, or null
     * @param access {@link io.rxe4j.verbs.Access} bits
     * @param persistence how the MR's ranges are made durable, or null for ordinary memory
     * @return the MR
     * @throws IllegalArgumentException for a heap segment or a bad access combination
     * @throws IllegalStateException when the MR table is full
     */
    MrOps registerMr(PdOps pd, MemorySegment segment, Arena arena, int access, Persistence persistence);

    /** {@code ibv_dereg_mr}: later accesses fail; owned memory is freed. */
    void deregisterMr(MrOps mr);

    /**
     * {@code ibv_create_cq}.
     *
     * @param cqe capacity in completions
     * @param compVector 0..{@link #numCompVectors()}{@code  - 1}, or -1 for round robin
     * @throws IllegalArgumentException if {@code cqe} or {@code compVector} is out of range
     */
    CqOps createCq(int cqe, int compVector);

    /**
     * {@code ibv_create_qp} of an RC QP in RESET.
     *
     * @throws IllegalArgumentException for bad capacities
     * @throws IllegalStateException when no QPN is free
     */
    QpOps createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll);

    /**
     * {@code ibv_create_qp} of a QP of {@code type} in RESET; a provider without other types than RC
     * keeps this default.
     *
     * @throws IllegalArgumentException for a type the provider does not implement, or bad capacities
     * @throws IllegalStateException when no QPN is free
     */
    default QpOps createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll,
            io.rxe4j.verbs.QpType type) {
        if (type != io.rxe4j.verbs.QpType.RC) {
            throw new IllegalArgumentException("this provider implements RC QPs only, got " + type);
        }
        return createQp(pd, sendCq, recvCq, caps, sqSigAll);
    }

    /**
     * {@code ibv_create_srq}; a provider without SRQs keeps this default.
     *
     * @throws UnsupportedOperationException when the provider has no SRQs
     */
    default SrqOps createSrq(PdOps pd, int maxWr, int maxSge, int srqLimit) {
        throw new UnsupportedOperationException("this provider has no shared receive queues");
    }

    /**
     * {@code ibv_create_qp} of a QP of {@code type} that takes its receive WQEs from {@code srq} (null:
     * its own receive queue).
     */
    default QpOps createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll,
            io.rxe4j.verbs.QpType type, SrqOps srq) {
        if (srq != null) {
            throw new UnsupportedOperationException("this provider has no shared receive queues");
        }
        return createQp(pd, sendCq, recvCq, caps, sqSigAll, type);
    }

    /**
     * @return the device's GSI QP, QP1 ({@link GsiOps}), which the library's connection manager uses
     * @throws UnsupportedOperationException if the provider has none
     */
    default GsiOps gsi() {
        throw new UnsupportedOperationException("this provider has no GSI QP");
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}; {@code verbs-surface-facts.md} §5.1).
     *
     * @param type 1 (IBV_MW_TYPE_1) or 2 (IBV_MW_TYPE_2, type 2B semantics)
     * @throws UnsupportedOperationException if the provider has no memory windows
     * @throws IllegalStateException when the device holds as many windows as it can (ENOMEM)
     */
    default MwOps allocMw(PdOps pd, int type) {
        throw new UnsupportedOperationException("this provider has no memory windows");
    }

    /** Deallocates a window ({@code ibv_dealloc_mw}): later accesses through it fail (NAK 0x62). */
    default void deallocMw(MwOps mw) {
        throw new UnsupportedOperationException("this provider has no memory windows");
    }

    /**
     * Sets where the device reports that an SRQ-attached QP in ERR will take no more WQEs from its SRQ
     * ({@code IBV_EVENT_QP_LAST_WQE_REACHED}), or null; called on the QP's event loop, must not block.
     */
    default void onLastWqeReached(QpFatalListener listener) {
    }

    /** {@code ibv_destroy_qp}: the QP stops and its QPN is freed. */
    void destroyQp(QpOps qp);

    /**
     * Sets where the device reports that a QP entered ERR on its own ({@code IBV_EVENT_QP_FATAL}),
     * or null for nowhere. The listener is called on the QP's event loop and must not block.
     */
    void onQpFatal(QpFatalListener listener);

    /** Closes the device and its transport. Idempotent. */
    void close();

    /** @return whether {@link #close()} was called */
    boolean isClosed();

    /** Receives {@code IBV_EVENT_QP_FATAL}. */
    @FunctionalInterface
    interface QpFatalListener {
        /**
         * @param qpn the QP's number
         * @param reason why, as {@link QpOps#errorReason()} will say
         */
        void qpFatal(int qpn, String reason);
    }
}
