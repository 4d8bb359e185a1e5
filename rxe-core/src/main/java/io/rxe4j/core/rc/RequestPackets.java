package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.qp.WrOpcodeInfo;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.ImmDt;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.WrOpcode;

/**
 * Builds the request packets of a send WQE ({@code rxe_req.c}'s {@code init_req_packet} and {@code
 * finish_packet}; {@code rxe-facts.md} §4.2, §7.2–§7.3): a SEND/WRITE packet at any byte offset of
 * its message, a READ request for any part of its range, an atomic, ATOMIC WRITE or FLUSH. A builder
 * reads the WQE and never changes it, so the same packet can be built again for a repair or a
 * tail-loss probe ({@link RequesterRepair}) with the PSN it had. The buffer comes back with its
 * writer index at the end of the packet, ICRC room included (the transport fills it in). Loop only.
 */
final class RequestPackets {
    /** Whether a native {@code long} is little-endian (then its bytes are reversed for a big-endian put). */
    private static final boolean NATIVE_LE = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    private final RxeQp qp;

    RequestPackets(RxeQp qp) {
        this.qp = qp;
    }

    /**
     * The SEND/WRITE packet of {@code w} that starts at message byte {@code offset}, with PSN {@code
     * psn}: FIRST/MIDDLE/LAST/ONLY by position, RETH on the first, ImmDt and SE on the last.
     *
     * @return the packet, or null when the WQE's local memory cannot be read (LOC_PROT_ERR; nothing
     *     is left allocated)
     */
    ByteBuf sendOrWrite(SendWqe w, int psn, long offset, int pmtu, boolean ackReq) {
        return io.rxe4j.core.qp.SendWritePacket.build(qp, w, psn, offset, pmtu, ackReq, false);
    }

    /** The READ request with PSN {@code psn} for {@code len} bytes at remote byte {@code offset} of {@code w} (AckReq set). */
    ByteBuf read(SendWqe w, int psn, long offset, long len) {
        Opcode op = Opcode.RC_RDMA_READ_REQUEST;
        int total = op.headerLength() + Icrc.LENGTH;
        ByteBuf b = qp.host().allocPacket(total);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn(), true, psn);
        Reth.write(b, op.offset(Header.RETH), w.remoteAddr + offset, w.rkey, len);
        b.writerIndex(total);
        return b;
    }

    /** The one packet of an atomic, ATOMIC WRITE or FLUSH WQE, with PSN {@code psn} (AckReq set). */
    ByteBuf single(SendWqe w, int psn) {
        return switch (WrOpcodeInfo.of(w.opcode).family()) {
            case ATOMIC -> atomic(w, psn);
            case ATOMIC_WRITE -> atomicWrite(w, psn);
            case FLUSH -> flush(w, psn);
            default -> throw new IllegalStateException("not a one-packet request: " + w.opcode);
        };
    }

    private ByteBuf start(Opcode op, int payload, int psn) {
        ByteBuf b = qp.host().allocPacket(op.headerLength() + payload + Icrc.LENGTH);
        Bth.write(b, 0, op.code(), false, 0, Bth.DEFAULT_PKEY, qp.destQpn(), true, psn);
        b.writerIndex(op.headerLength() + payload + Icrc.LENGTH);
        return b;
    }

    private ByteBuf atomic(SendWqe w, int psn) {
        Opcode op = WrOpcodeInfo.of(w.opcode).packetOpcode(true, true);
        ByteBuf b = start(op, 0, psn);
        switch (op.operation()) { // which WR operands go where in the packet opcode's ETH
            case COMPARE_SWAP ->
                    AtomicEth.write(b, op.offset(Header.ATOMIC_ETH), w.remoteAddr, w.rkey, w.swap, w.compareAdd);
            case FETCH_ADD ->
                    AtomicEth.write(b, op.offset(Header.ATOMIC_ETH), w.remoteAddr, w.rkey, w.compareAdd, 0);
            case MASKED_COMPARE_SWAP -> MaskedCmpSwapEth.write(b, op.offset(Header.MASKED_CMP_SWAP_ETH),
                    w.remoteAddr, w.rkey, w.swap, w.compareAdd, w.swapMask, w.compareAddMask);
            default -> // masked FETCH_ADD: add in the swap/add slot, field boundary in the compare slot
                    AtomicEth.write(b, op.offset(Header.ATOMIC_ETH), w.remoteAddr, w.rkey, w.compareAdd,
                            w.compareAddMask);
        }
        return b;
    }

    /** ATOMIC WRITE: RETH (length 8) and the 8 raw bytes ({@code rxe-facts.md} §7.2). */
    private ByteBuf atomicWrite(SendWqe w, int psn) {
        Opcode op = Opcode.RC_ATOMIC_WRITE;
        ByteBuf b = start(op, 8, psn);
        Reth.write(b, op.offset(Header.RETH), w.remoteAddr, w.rkey, 8);
        b.setLong(op.headerLength(), NATIVE_LE ? Long.reverseBytes(w.atomicWriteValue) : w.atomicWriteValue);
        return b;
    }

    /** FLUSH: FETH then RETH, no payload ({@code rxe-facts.md} §7.3). */
    private ByteBuf flush(SendWqe w, int psn) {
        Opcode op = Opcode.RC_FLUSH;
        ByteBuf b = start(op, 0, psn);
        Feth.write(b, op.offset(Header.FETH), w.flushLevel, w.flushType);
        Reth.write(b, op.offset(Header.RETH), w.remoteAddr, w.rkey, w.length);
        return b;
    }
}
