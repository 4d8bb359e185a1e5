package io.rxe4j.core.wire;

/**
 * Why a received packet was dropped before reaching a QP's engines. Each reason has a counter
 * on the device. Source: {@code rxe-facts.md} §4.1 "Receive filtering".
 */
public enum DropReason {
    /**
     * Shorter than BTH + ICRC, or than the opcode's headers + pad + ICRC; also an opcode without
     * payload followed by extra bytes, and a TID list (TID RDMA READ_REQ, WRITE_RESP) of 0 or more
     * than 64 entries (the lengths do not add up).
     */
    TOO_SHORT,
    /** BTH TVer is not 0. */
    BAD_TVER,
    /** Opcode not in the opcode table. */
    UNKNOWN_OPCODE,
    /**
     * PadCnt on a packet without payload, or larger than the bytes after the headers; payload + pad
     * not a multiple of 4; PadCnt on a TID list (whose length must be a multiple of 4).
     */
    BAD_PAD,
    /** ICRC mismatch. */
    BAD_ICRC,
    /** P_Key is neither 0xFFFF nor 0x7FFF. */
    BAD_PKEY,
    /** DestQP is 0, or no such QP exists. */
    NO_QP,
    /** Opcode transport does not match the QP type (UC, or UD to an RC QP and back). */
    WRONG_TRANSPORT,
    /** Request while the QP is not at least RTR, or response while not at least RTS. */
    QP_STATE,
    /** Sender address is not the QP's peer. */
    WRONG_PEER,
    /** Anything else the engine refused without a NAK (stale or unexpected responses, unmatched duplicates). */
    OTHER,
    /**
     * An unexpected exception in the engine while handling the packet (a bug): the QP concerned
     * enters ERR with an "internal error" reason and a rate-limited WARN is logged.
     */
    INTERNAL_ERROR,
    /**
     * A request that arrived while the responder's queue of requests waiting behind a READ reply
     * was full (the requester resends it); {@code extensions.md} §6, bounded output.
     */
    RESPONDER_BUSY,
    /**
     * A TID RDMA packet (opcode 0xE0–0xE7) whose KDETH J_KEY is not the receive context's (32),
     * as the hardware's J_KEY check would refuse it ({@code tid-opfn-facts.md} §3.3, §9.7).
     */
    BAD_JKEY,
    /**
     * A packet that arrived on one event loop of a multi-loop device for a QP of another, when the
     * ring between the two loops was full (the peer resends it); {@code docs/architecture.md}, lanes.
     */
    STEER_QUEUE_FULL,
    /**
     * A duplicate READ, atomic, ATOMIC WRITE or FLUSH request whose responder resource later requests
     * have reused (more than max_dest_rd_atomic of them came after it), so there is no record to
     * answer it from: the requester has had its response (it never has more outstanding than the
     * responder's resources), so this is a late network duplicate; {@code rdma_rxe} drops it too
     * ({@code rxe-facts.md} §5.5).
     */
    STALE_DUPLICATE,
    /** A UD datagram whose DETH Q_Key is not the receiving QP's ({@code verbs-surface-facts.md} §2.4). */
    BAD_QKEY,
    /** A UD datagram or UC message for a QP without a receive WQE ({@code verbs-surface-facts.md} §2.8, §3.4). */
    NO_RECV_WQE,
    /**
     * A UD datagram that with its 40-byte GRH does not fit the receive WQE ({@code verbs-surface-facts.md}
     * §2.6); a UC packet with a length error (§3.4 rule 4).
     */
    RECV_LENGTH,
    /** A MAD for the GSI QP (QP1) while nothing in the library listens for MADs. */
    GSI_NO_LISTENER
}
