package io.rxe4j.core.qp;

import io.rxe4j.core.wire.PacketView;

/**
 * The protocol engines of one QP as its {@link RxeQp} drives them: for RC the requester, completer
 * and responder ({@code rxe_req.c}, {@code rxe_comp.c}, {@code rxe_resp.c}) and the TID RDMA halves
 * (hfi1's {@code tid_rdma.c}); for UD the datagram sender and receiver ({@code io.rxe4j.core.ud}). Implemented by the device's per-QP runner ({@code
 * io.rxe4j.core.device.QpRunner}), which builds and owns them, so that {@code qp} names no engine
 * ({@code design/redesign.md} §3). One instance per QP, registered when the QP is built.
 *
 * <p>Threading: every method runs on the QP's loop.
 */
public interface QpEngine {
    /**
     * Tells the engines about the attributes of a modify_qp just stored in {@code attr} ({@code mask}:
     * the {@link io.rxe4j.verbs.QpAttrMask} bits given): peer, timeout, retry counts, credits,
     * responder resources, PSNs. Runs before the state change.
     */
    void applyAttributes(QpAttributes attr, int mask);

    /** Returns every engine to its state after create_qp (modify to RESET). */
    void reset();

    /** Stops the engines (timers, a message being received): the QP enters ERR or is destroyed. */
    void stop();

    /** Runs the requester (a post, a kick). */
    void run();

    /** One turn on the lane's service queue: the responder's pending replies, then the requester. */
    void onService();

    /** A request packet for this QP. */
    void onRequest(PacketView pkt);

    /**
     * A UD datagram (SEND ONLY, with or without immediate, with its DETH) for this QP, from {@code
     * sender} to {@code recipient}. Only UD engines take datagrams; the receive checks never hand one
     * to another QP type.
     */
    default void onDatagram(PacketView pkt, java.net.InetSocketAddress sender, java.net.InetSocketAddress recipient) {
        throw new IllegalStateException("not a UD QP: " + pkt.opcode());
    }

    /** A request to this QP arrived marked CE: the responder may send a CNP. */
    void onCongestionExperienced();

    /** A CNP for this QP's requester arrived. */
    void onCnp();

    /** The extensions agreed with the peer changed ({@code RxeQp.setPeerExtensions}). */
    void onPeerExtensions();

    /** An rxe4j selective NAK (0xF2) for this QP's requester arrived (the peer agreed EXT_SELECTIVE_NAK). */
    void onSelectiveNak(PacketView pkt);

    /** A response packet (ACK, NAK, READ response, atomic ACK) for this QP. */
    void onResponse(PacketView pkt);

    /** A TID READ_RESP for this QP. */
    void onTidReadResponse(PacketView pkt);

    /** A TID WRITE_DATA(_LAST) or RESYNC for this QP. */
    void onTidWriteData(PacketView pkt);

    /** A TID WRITE_RESP or TID ACK for this QP. */
    void onTidWriteResponse(PacketView pkt);

    /** TID resources may be free again: the TID WRITE responder allocates, then the requester runs. */
    void onTidKick();

    /** Frees every TID entry, flow and timer of this QP (ERR, RESET, destroy). */
    void releaseTid();

    /**
     * A packet of this QP can never be sent ({@link RxeQp#onSendRefused}): a refused response makes
     * the responder NAK "remote operational error" at {@code psn}; the oldest outstanding send WQE
     * completes with LOC_QP_OP_ERR and {@code why} ({@code rxe-facts.md} §6.5).
     */
    void failOnSendRefused(boolean response, int psn, String why);

    /** Appends the requester's and completer's state ({@link RxeQp#debugState()}), starting with a space. */
    void appendSenderState(StringBuilder sb);

    /** Appends the responder's and the TID halves' state ({@link RxeQp#debugState()}). */
    void appendReceiverState(StringBuilder sb);
}
