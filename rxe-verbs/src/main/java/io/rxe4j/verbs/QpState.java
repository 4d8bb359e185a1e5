package io.rxe4j.verbs;

/** QP states ({@code enum ibv_qp_state}; {@code rxe-facts.md} §6.1). Ordinal = rdma-core value. */
public enum QpState {
    /** 0. */ RESET,
    /** 1. */ INIT,
    /** 2: ready to receive. */ RTR,
    /** 3: ready to send. */ RTS,
    /** 4: send queue drain. */ SQD,
    /** 5: send queue error. */ SQE,
    /** 6: error. */ ERR,
    /** 7: libibverbs only. */ UNKNOWN
}
