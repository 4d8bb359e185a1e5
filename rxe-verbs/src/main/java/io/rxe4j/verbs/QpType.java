package io.rxe4j.verbs;

/** QP transport types ({@code enum ibv_qp_type}), all three implemented. */
public enum QpType {
    /** IBV_QPT_RC = 2. */
    RC(2),
    /** IBV_QPT_UC = 3: SEND and RDMA WRITE without acknowledgement or retry ({@code verbs-surface-facts.md} §3). */
    UC(3),
    /** IBV_QPT_UD = 4: datagrams, one packet per message, no acknowledgement ({@code verbs-surface-facts.md} §2). */
    UD(4);

    private final int value;

    QpType(int value) {
        this.value = value;
    }

    /** @return the rdma-core numeric value */
    public int value() {
        return value;
    }
}
