package io.rxe4j.core.tid;

/**
 * Limits shared by the TID RDMA halves of a QP, so that neither half borrows them from the other
 * ({@code tid-opfn-facts.md} §6.5; hfi1's {@code tid_rdma.h}).
 */
final class TidLimits {
    /** Most TID WRITE requests outstanding per QP, at the requester and in the responder's ring ({@code HFI1_TID_RDMA_WRITE_CNT}). */
    static final int WRITE_CNT = 8;

    private TidLimits() {
    }
}
