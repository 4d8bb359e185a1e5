package io.rxe4j.verbs;

/**
 * A receive work request ({@code struct ibv_recv_wr}). Mutable and reusable: the QP copies it
 * at post time.
 */
public final class RecvWr {
    /** User cookie returned in the completion. */
    public long wrId;
    /** Scatter list; the first {@link #numSge} entries are used. */
    public Sge[] sgList = new Sge[0];
    /** Number of SGEs used. */
    public int numSge;

    /** Creates an empty WR. */
    public RecvWr() {}

    /** Sets wr_id and the SGEs. @return this */
    public RecvWr set(long wrId, Sge... sges) {
        this.wrId = wrId;
        this.sgList = sges;
        this.numSge = sges.length;
        return this;
    }
}
