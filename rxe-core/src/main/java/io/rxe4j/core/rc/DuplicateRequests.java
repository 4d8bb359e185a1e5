package io.rxe4j.core.rc;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.stats.Counters;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;

/**
 * DUPLICATE_REQUEST of the responder ({@code rxe_resp.c}'s {@code duplicate_request}; {@code
 * rxe-facts.md} §5.5, {@code extensions.md} §6): a request behind the expected PSN is answered
 * again from its record and never executed again: a SEND/WRITE with an ACK of its own PSN, a READ
 * by a replay from memory, an atomic with its cached original value, ATOMIC WRITE and FLUSH with
 * the empty READ RESPONSE; an extension's requests by its hook. A duplicate whose record was
 * evicted is dropped (counted): a later response completes the WQE at the requester. Loop only.
 */
final class DuplicateRequests {
    private final Responder resp;
    private final Counters counters;
    private final ResponderResources resources;
    private final ReadReply reply;
    private final ResponsePackets packets;

    DuplicateRequests(Responder resp, RxeQp qp, ResponderResources resources, ReadReply reply,
            ResponsePackets packets) {
        this.resp = resp;
        this.counters = qp.counters;
        this.resources = resources;
        this.reply = reply;
        this.packets = packets;
    }

    /** Answers duplicate {@code pkt} (opcode {@code op}, PSN {@code p}) again, or drops it (counted). */
    void answer(PacketView pkt, Opcode op, int p) {
        switch (op.operation()) {
            // C9-105: acknowledge again, with the duplicate's own PSN: ePsn − 1 could be a later
            // READ's or atomic's PSN, which would acknowledge it implicitly (extensions §6)
            case SEND, WRITE -> packets.sendAck(Aeth.ACK_UNLIMITED, p);
            case TID_READ_REQUEST, TID_WRITE_REQUEST -> resp.hook().duplicate(pkt, p);
            case READ -> {
                ResponderResources.Entry e = resources.find(ResponderResources.Type.READ, p);
                if (e == null) {
                    counters.drop(DropReason.STALE_DUPLICATE);
                    return;
                }
                reply.replay(pkt, e, p, true);
            }
            case ATOMIC_WRITE, FLUSH -> {
                ResponderResources.Type t = op.operation() == Opcode.Operation.FLUSH
                        ? ResponderResources.Type.FLUSH : ResponderResources.Type.ATOMIC_WRITE;
                ResponderResources.Entry e = resources.find(t, p);
                if (e == null) { // evicted: a later response completes the WQE at the requester
                    counters.drop(DropReason.STALE_DUPLICATE);
                    return;
                }
                if (e.firstPsn != p) {
                    counters.drop(DropReason.OTHER);
                    return;
                }
                packets.sendEmptyReadResponse(p); // answered again, not executed again
            }
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> {
                ResponderResources.Entry e = resources.find(ResponderResources.Type.ATOMIC, p);
                if (e == null) {
                    e = resources.find(ResponderResources.Type.OPFN, p); // answered again, not negotiated again
                }
                if (e == null || e.firstPsn != p) {
                    counters.drop(e == null ? DropReason.STALE_DUPLICATE : DropReason.OTHER);
                    return;
                }
                packets.sendAtomicAck(p, e.original); // memory is not touched again
            }
            default -> counters.drop(DropReason.OTHER);
        }
    }
}
