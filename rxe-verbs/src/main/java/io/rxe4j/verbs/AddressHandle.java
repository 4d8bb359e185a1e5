package io.rxe4j.verbs;

/**
 * An address handle ({@code ibv_ah}): the destination of UD sends ({@link SendWr#ud}), created in a
 * protection domain by {@link ProtectionDomain#createAh} and usable only by UD QPs of the same PD
 * ({@code verbs-surface-facts.md} §2.5: {@code rdma_rxe} completes a WR whose AH belongs to another PD
 * with LOC_QP_OP_ERR; rxe4j refuses it at post time). Holds no device resources beyond the PD's
 * count of open objects. Thread-safe.
 */
public final class AddressHandle implements AutoCloseable {
    private final ProtectionDomain pd;
    private final AhAttr attr;
    private volatile boolean closed;

    AddressHandle(ProtectionDomain pd, AhAttr attr) {
        this.pd = pd;
        this.attr = attr;
    }

    /** @return the attributes it was created with ({@code ibv_query_ah}) */
    public AhAttr attr() {
        return attr;
    }

    /** @return the PD it belongs to */
    public ProtectionDomain pd() {
        return pd;
    }

    /** @return whether {@link #close} was called */
    public boolean isClosed() {
        return closed;
    }

    /**
     * {@code ibv_destroy_ah}. WRs already posted with it still go to its peer (they copied it);
     * posting with it afterwards throws. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        pd.ahs.remove(this);
    }

    @Override
    public String toString() {
        return "AH{" + attr.peer() + ", hop_limit " + attr.hopLimit() + ", tc " + attr.trafficClass() + "}";
    }
}
