package io.rxe4j.verbs;

/**
 * A work completion ({@code struct ibv_wc}). Callers pass arrays of these to {@code poll}, which
 * fills them in place (no allocation per poll).
 */
public final class WorkCompletion {
    /**
     * WC flag: GRH present. Set on every receive completion, as rdma_rxe sets it; only a UD receive
     * buffer holds the 40 GRH bytes ahead of the payload (RC and UC data start at offset 0).
     */
    public static final int WC_GRH = 1;
    /** WC flag: {@link #immData} is valid. */
    public static final int WC_WITH_IMM = 2;
    /**
     * WC flag: {@link #invalidatedRkey} is valid (IBV_WC_WITH_INV, {@code 1 << 3} as libibverbs: a
     * SEND_WITH_INV invalidated it).
     */
    public static final int WC_WITH_INV = 1 << 3;

    /** The work request's cookie. */
    public long wrId;
    /** Completion status. */
    public WcStatus status = WcStatus.SUCCESS;
    /** Completion opcode (valid when status is SUCCESS, as in verbs). */
    public WcOpcode opcode = WcOpcode.SEND;
    /** Vendor error: for remote errors, the NAK syndrome received (e.g. 0x62), else 0. */
    public int vendorErr;
    /** Bytes transferred ({@code rxe-facts.md} §6.6 "byte_len"). */
    public int byteLen;
    /** Immediate data when {@link #WC_WITH_IMM} is set. */
    public int immData;
    /** Local QPN. */
    public int qpNum;
    /** Source QPN (UD only). */
    public int srcQp;
    /** WC flags. */
    public int wcFlags;
    /**
     * The rkey a received SEND_WITH_INV invalidated ({@code wc.invalidated_rkey}) when {@link
     * #WC_WITH_INV} is set, else 0.
     */
    public int invalidatedRkey;

    /** Creates an empty completion. */
    public WorkCompletion() {}

    /** Copies every field of {@code o} into this. */
    public void copyFrom(WorkCompletion o) {
        wrId = o.wrId;
        status = o.status;
        opcode = o.opcode;
        vendorErr = o.vendorErr;
        byteLen = o.byteLen;
        immData = o.immData;
        qpNum = o.qpNum;
        srcQp = o.srcQp;
        wcFlags = o.wcFlags;
        invalidatedRkey = o.invalidatedRkey;
    }

    @Override
    public String toString() {
        return "WorkCompletion{wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen
                + ", qpNum=0x" + Integer.toHexString(qpNum) + (srcQp != 0 ? ", srcQp=0x" + Integer.toHexString(srcQp) : "")
                + ", wcFlags=" + wcFlags
                + ((wcFlags & WC_WITH_IMM) != 0 ? ", imm=0x" + Integer.toHexString(immData) : "")
                + ((wcFlags & WC_WITH_INV) != 0 ? ", invalidatedRkey=0x" + Integer.toHexString(invalidatedRkey) : "")
                + (vendorErr != 0 ? ", vendorErr=0x" + Integer.toHexString(vendorErr) : "") + '}';
    }
}
