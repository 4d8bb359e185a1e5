package io.rxe4j.verbs;

/**
 * Work-completion status ({@code enum ibv_wc_status}; {@code rxe-facts.md} §6.5). The ordinal
 * equals the rdma-core value.
 */
public enum WcStatus {
    /** 0. */ SUCCESS,
    /** 1. */ LOC_LEN_ERR,
    /** 2. */ LOC_QP_OP_ERR,
    /** 3. */ LOC_EEC_OP_ERR,
    /** 4. */ LOC_PROT_ERR,
    /** 5: outstanding WQE flushed because the QP is in ERR. */ WR_FLUSH_ERR,
    /** 6. */ MW_BIND_ERR,
    /** 7. */ BAD_RESP_ERR,
    /** 8. */ LOC_ACCESS_ERR,
    /** 9: the responder sent NAK 0x61 (invalid request). */ REM_INV_REQ_ERR,
    /** 10: the responder sent NAK 0x62 (remote access error). */ REM_ACCESS_ERR,
    /** 11: the responder sent NAK 0x63 or an unknown NAK. */ REM_OP_ERR,
    /** 12: retry_cnt exhausted. */ RETRY_EXC_ERR,
    /** 13: rnr_retry exhausted. */ RNR_RETRY_EXC_ERR,
    /** 14. */ LOC_RDD_VIOL_ERR,
    /** 15. */ REM_INV_RD_REQ_ERR,
    /** 16. */ REM_ABORT_ERR,
    /** 17. */ INV_EECN_ERR,
    /** 18. */ INV_EEC_STATE_ERR,
    /** 19. */ FATAL_ERR,
    /** 20. */ RESP_TIMEOUT_ERR,
    /** 21. */ GENERAL_ERR;

    /** @return the rdma-core numeric value */
    public int value() {
        return ordinal();
    }
}
