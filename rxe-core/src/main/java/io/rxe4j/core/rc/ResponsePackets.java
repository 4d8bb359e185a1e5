package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.verbs.Counter;

/**
 * The responder's header-only packets ({@code rxe_resp.c}'s {@code send_ack}, {@code
 * send_atomic_ack}; {@code rxe-facts.md} §1.3, §5.2, §7.2–§7.3): ACK and NAK, ATOMIC
 * ACKNOWLEDGE, the zero-length READ RESPONSE ONLY that answers ATOMIC WRITE and FLUSH, each with
 * this QP's MSN in the AETH; and the CNP of a request marked CE. Loop only.
 */
final class ResponsePackets {
    /** At most one CNP per QP per 50 µs (DCQCN's notification point), in nanoseconds. */
    static final long CNP_INTERVAL_NANOS = 50_000;

    private final Responder resp;
    private final RxeQp qp;
    private final Counters counters;
    /** When the last CNP was sent (scheduler nanoseconds), or {@link Long#MIN_VALUE}. */
    private long lastCnpAt = Long.MIN_VALUE;

    ResponsePackets(Responder resp, RxeQp qp) {
        this.resp = resp;
        this.qp = qp;
        this.counters = qp.counters;
    }

    /** Sends an ACK or NAK: AETH {@code syndrome}, PSN {@code psn}. */
    void sendAck(int syndrome, int psn) {
        qp.host().transmit(qp, headerOnlyResponse(Opcode.RC_ACKNOWLEDGE, psn, syndrome));
    }

    /**
     * Sends an rxe4j selective NAK (opcode 0xF2, {@code docs/wire.md} "Selective NAK"): BTH with PSN
     * {@code psn} (the expected PSN), then one 4-byte big-endian word per range, {@code (count − 1)
     * << 24 | first PSN}.
     *
     * @param ranges pairs (first PSN, count 1..256)
     * @param n ranges, 1..64
     */
    void sendSelectiveNak(int psn, int[] ranges, int n) {
        Opcode op = Opcode.RC_SELECTIVE_NAK;
        int total = op.headerLength() + 4 * n + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn(), false, psn);
        for (int i = 0; i < n; i++) {
            b.setInt(op.headerLength() + 4 * i, (ranges[2 * i + 1] - 1) << 24 | ranges[2 * i]);
        }
        b.writerIndex(total);
        counters.inc(Counter.SELECTIVE_NAKS);
        qp.host().transmit(qp, b);
    }

    /** Answers an atomic: ATOMIC ACKNOWLEDGE with the original value. */
    void sendAtomicAck(int psn, long original) {
        Opcode op = Opcode.RC_ATOMIC_ACKNOWLEDGE;
        ByteBuf b = headerOnlyResponse(op, psn, Aeth.ACK_UNLIMITED);
        AtomicAckEth.write(b, op.offset(Header.ATOMIC_ACK_ETH), original);
        qp.host().transmit(qp, b);
    }

    /** Answers ATOMIC WRITE and FLUSH: one zero-length READ RESPONSE ONLY with PSN {@code psn}. */
    void sendEmptyReadResponse(int psn) {
        qp.host().transmit(qp, headerOnlyResponse(Opcode.RC_RDMA_READ_RESPONSE_ONLY, psn, Aeth.ACK_UNLIMITED));
    }

    /**
     * @return a response packet with no payload: BTH (to the requester's QP, PSN {@code psn}) and
     *     AETH ({@code syndrome}, this QP's MSN), its other headers left for the caller, writer index
     *     at its end (ICRC included)
     */
    private ByteBuf headerOnlyResponse(Opcode op, int psn, int syndrome) {
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn(), false, psn);
        Aeth.write(b, op.offset(Header.AETH), syndrome, resp.msn());
        b.writerIndex(total);
        return b;
    }

    /**
     * A request arrived marked CE: sends a CNP to the requester (opcode 0x81, BECN set, DestQP = the
     * requester's QP, 16 reserved bytes), at most one per {@link #CNP_INTERVAL_NANOS}.
     */
    void sendCnp() {
        long now = qp.scheduler.nanoTime();
        if (lastCnpAt != Long.MIN_VALUE && now - lastCnpAt < CNP_INTERVAL_NANOS) {
            return;
        }
        lastCnpAt = now;
        Opcode op = Opcode.CNP;
        int reserved = 16;
        int total = op.headerLength() + reserved + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn(), false, 0);
        b.setInt(Bth.DEST_QP_WORD_OFFSET, b.getInt(Bth.DEST_QP_WORD_OFFSET) | Bth.BECN_BIT);
        b.setZero(op.headerLength(), reserved);
        b.writerIndex(total);
        counters.inc(Counter.CNP_SENT);
        qp.host().transmit(qp, b);
    }
}
