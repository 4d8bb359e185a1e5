package io.rxe4j.core.wire;

import static io.rxe4j.core.wire.Header.AETH;
import static io.rxe4j.core.wire.Header.ATOMIC_ACK_ETH;
import static io.rxe4j.core.wire.Header.ATOMIC_ETH;
import static io.rxe4j.core.wire.Header.DETH;
import static io.rxe4j.core.wire.Header.FETH;
import static io.rxe4j.core.wire.Header.IETH;
import static io.rxe4j.core.wire.Header.IMM_DT;
import static io.rxe4j.core.wire.Header.KDETH;
import static io.rxe4j.core.wire.Header.MASKED_CMP_SWAP_ETH;
import static io.rxe4j.core.wire.Header.RETH;

import java.util.EnumSet;
import java.util.Set;

/**
 * The opcode table: for every BTH opcode rxe4j speaks, its headers in order, their offsets from
 * the start of the BTH, its payload rule and its position flags. Code asks this table instead of
 * switching on opcode values (as {@code rdma_rxe}'s {@code rxe_opcode[]} does).
 *
 * <p>Source: {@code rxe-facts.md} §1.1–§1.2; masked atomics {@code extensions.md} §2; TID RDMA
 * {@code tid-opfn-facts.md} §3.1–§3.4 and {@code extensions.md} §5.
 */
public enum Opcode {
    // ---- RC ----
    RC_SEND_FIRST(0x00, Transport.RC, Operation.SEND, Payload.PMTU, F.FIRST | F.RWR | F.SEND),
    RC_SEND_MIDDLE(0x01, Transport.RC, Operation.SEND, Payload.PMTU, F.MIDDLE | F.SEND),
    RC_SEND_LAST(0x02, Transport.RC, Operation.SEND, Payload.NON_EMPTY, F.LAST | F.COMP | F.SEND),
    RC_SEND_LAST_WITH_IMMEDIATE(0x03, Transport.RC, Operation.SEND, Payload.NON_EMPTY, F.LAST | F.COMP | F.SEND, IMM_DT),
    RC_SEND_ONLY(0x04, Transport.RC, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND),
    RC_SEND_ONLY_WITH_IMMEDIATE(0x05, Transport.RC, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND, IMM_DT),
    RC_RDMA_WRITE_FIRST(0x06, Transport.RC, Operation.WRITE, Payload.PMTU, F.FIRST | F.WRITE, RETH),
    RC_RDMA_WRITE_MIDDLE(0x07, Transport.RC, Operation.WRITE, Payload.PMTU, F.MIDDLE | F.WRITE),
    RC_RDMA_WRITE_LAST(0x08, Transport.RC, Operation.WRITE, Payload.NON_EMPTY, F.LAST | F.WRITE),
    RC_RDMA_WRITE_LAST_WITH_IMMEDIATE(0x09, Transport.RC, Operation.WRITE, Payload.NON_EMPTY, F.LAST | F.RWR | F.COMP | F.WRITE, IMM_DT),
    RC_RDMA_WRITE_ONLY(0x0A, Transport.RC, Operation.WRITE, Payload.ANY, F.FIRST | F.LAST | F.WRITE, RETH),
    RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE(0x0B, Transport.RC, Operation.WRITE, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.WRITE, RETH, IMM_DT),
    RC_RDMA_READ_REQUEST(0x0C, Transport.RC, Operation.READ, Payload.NONE, F.FIRST | F.LAST | F.READ, RETH),
    RC_RDMA_READ_RESPONSE_FIRST(0x0D, Transport.RC, Operation.READ_RESPONSE, Payload.PMTU, F.FIRST | F.RESPONSE, AETH),
    RC_RDMA_READ_RESPONSE_MIDDLE(0x0E, Transport.RC, Operation.READ_RESPONSE, Payload.PMTU, F.MIDDLE | F.RESPONSE),
    RC_RDMA_READ_RESPONSE_LAST(0x0F, Transport.RC, Operation.READ_RESPONSE, Payload.NON_EMPTY, F.LAST | F.RESPONSE, AETH),
    RC_RDMA_READ_RESPONSE_ONLY(0x10, Transport.RC, Operation.READ_RESPONSE, Payload.ANY, F.FIRST | F.LAST | F.RESPONSE, AETH),
    RC_ACKNOWLEDGE(0x11, Transport.RC, Operation.ACKNOWLEDGE, Payload.NONE, F.FIRST | F.LAST | F.RESPONSE, AETH),
    RC_ATOMIC_ACKNOWLEDGE(0x12, Transport.RC, Operation.ATOMIC_ACKNOWLEDGE, Payload.NONE, F.FIRST | F.LAST | F.RESPONSE, AETH, ATOMIC_ACK_ETH),
    RC_COMPARE_SWAP(0x13, Transport.RC, Operation.COMPARE_SWAP, Payload.NONE, F.FIRST | F.LAST | F.ATOMIC, ATOMIC_ETH),
    RC_FETCH_ADD(0x14, Transport.RC, Operation.FETCH_ADD, Payload.NONE, F.FIRST | F.LAST | F.ATOMIC, ATOMIC_ETH),
    RC_SEND_LAST_WITH_INVALIDATE(0x16, Transport.RC, Operation.SEND, Payload.NON_EMPTY, F.LAST | F.COMP | F.SEND, IETH),
    RC_SEND_ONLY_WITH_INVALIDATE(0x17, Transport.RC, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND, IETH),
    /** RDMA FLUSH: FETH comes before RETH. */
    RC_FLUSH(0x1C, Transport.RC, Operation.FLUSH, Payload.NONE, F.FIRST | F.LAST | F.FLUSH, FETH, RETH),
    /** ATOMIC WRITE: RETH then exactly 8 payload bytes. */
    RC_ATOMIC_WRITE(0x1D, Transport.RC, Operation.ATOMIC_WRITE, Payload.EIGHT, F.FIRST | F.LAST | F.ATOMIC_WRITE, RETH),
    /** rxe4j masked compare-and-swap ({@code extensions.md} §2). */
    RC_MASKED_COMPARE_SWAP(0xF0, Transport.RC, Operation.MASKED_COMPARE_SWAP, Payload.NONE, F.FIRST | F.LAST | F.ATOMIC, MASKED_CMP_SWAP_ETH),
    /** rxe4j masked fetch-and-add ({@code extensions.md} §2). */
    RC_MASKED_FETCH_ADD(0xF1, Transport.RC, Operation.MASKED_FETCH_ADD, Payload.NONE, F.FIRST | F.LAST | F.ATOMIC, ATOMIC_ETH),
    /**
     * rxe4j selective NAK ({@code docs/wire.md} "Selective NAK"): the PSN ranges a responder that
     * holds out-of-order requests misses, sent right after its PSN-sequence NAK, only to a peer that
     * agreed {@code EXT_SELECTIVE_NAK} at connection setup. Payload: 1..64 ranges of 4 bytes.
     */
    RC_SELECTIVE_NAK(0xF2, Transport.RC, Operation.SELECTIVE_NAK, Payload.NON_EMPTY, F.FIRST | F.LAST | F.RESPONSE),
    // ---- UC ----
    UC_SEND_FIRST(0x20, Transport.UC, Operation.SEND, Payload.PMTU, F.FIRST | F.RWR | F.SEND),
    UC_SEND_MIDDLE(0x21, Transport.UC, Operation.SEND, Payload.PMTU, F.MIDDLE | F.SEND),
    UC_SEND_LAST(0x22, Transport.UC, Operation.SEND, Payload.NON_EMPTY, F.LAST | F.COMP | F.SEND),
    UC_SEND_LAST_WITH_IMMEDIATE(0x23, Transport.UC, Operation.SEND, Payload.NON_EMPTY, F.LAST | F.COMP | F.SEND, IMM_DT),
    UC_SEND_ONLY(0x24, Transport.UC, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND),
    UC_SEND_ONLY_WITH_IMMEDIATE(0x25, Transport.UC, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND, IMM_DT),
    UC_RDMA_WRITE_FIRST(0x26, Transport.UC, Operation.WRITE, Payload.PMTU, F.FIRST | F.WRITE, RETH),
    UC_RDMA_WRITE_MIDDLE(0x27, Transport.UC, Operation.WRITE, Payload.PMTU, F.MIDDLE | F.WRITE),
    UC_RDMA_WRITE_LAST(0x28, Transport.UC, Operation.WRITE, Payload.NON_EMPTY, F.LAST | F.WRITE),
    UC_RDMA_WRITE_LAST_WITH_IMMEDIATE(0x29, Transport.UC, Operation.WRITE, Payload.NON_EMPTY, F.LAST | F.RWR | F.COMP | F.WRITE, IMM_DT),
    UC_RDMA_WRITE_ONLY(0x2A, Transport.UC, Operation.WRITE, Payload.ANY, F.FIRST | F.LAST | F.WRITE, RETH),
    UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE(0x2B, Transport.UC, Operation.WRITE, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.WRITE, RETH, IMM_DT),
    // ---- CNP ----
    /**
     * RoCEv2 congestion notification packet (IBTA Annex A17): BTH with BECN set, DestQP = the QP whose
     * requests were marked CE, then 16 reserved bytes (taken as the payload), then the ICRC.
     */
    CNP(0x81, Transport.CNP, Operation.CNP, Payload.ANY, 0),
    // ---- UD ----
    UD_SEND_ONLY(0x64, Transport.UD, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND, DETH),
    UD_SEND_ONLY_WITH_IMMEDIATE(0x65, Transport.UD, Operation.SEND, Payload.ANY, F.FIRST | F.LAST | F.RWR | F.COMP | F.SEND, DETH, IMM_DT),
    // ---- TID RDMA (hfi1, opcode group 0xE0; tid-opfn-facts.md §3.1) ----
    // Every TID opcode carries the 36-byte KDETH block after the BTH: header length 12 + 36 = 48.
    // BTH DestQP is a KDETH QPN; the verbs QPN is TidHeader.verbsQp (offset 32 of the block).
    // Position flags: the single-packet control messages are ONLY (F|L), like RC READ/ACK; READ_RESP
    // and WRITE_DATA carry none (a segment's last packet is the one with KDETH SH = 0), and
    // WRITE_DATA_LAST is LAST (the last packet of the whole request). None consumes a receive WQE.
    /** TID RDMA WRITE request: RETH of the remaining range, verbs PSN in BTH; no payload. */
    TID_RDMA_WRITE_REQ(0xE0, Transport.TID, Operation.TID_WRITE_REQUEST, Payload.NONE, F.FIRST | F.LAST | F.WRITE, KDETH),
    /** TID RDMA WRITE response, one per segment: AETH, flow PSN/QP, payload = the segment's TID list. */
    TID_RDMA_WRITE_RESP(0xE1, Transport.TID, Operation.TID_WRITE_RESPONSE, Payload.NON_EMPTY,
            F.FIRST | F.LAST | F.RESPONSE | F.TID_LIST, KDETH),
    /** TID RDMA WRITE data, flow PSN in BTH, 1..PMTU bytes. */
    TID_RDMA_WRITE_DATA(0xE2, Transport.TID, Operation.TID_WRITE_DATA, Payload.NON_EMPTY, 0, KDETH),
    /** TID RDMA WRITE data, the last packet of the last segment of the request. */
    TID_RDMA_WRITE_DATA_LAST(0xE3, Transport.TID, Operation.TID_WRITE_DATA, Payload.NON_EMPTY, F.LAST, KDETH),
    /** TID RDMA READ request, one per segment: RETH, flow PSN/QP, payload = the segment's TID list. */
    TID_RDMA_READ_REQ(0xE4, Transport.TID, Operation.TID_READ_REQUEST, Payload.NON_EMPTY, F.FIRST | F.LAST | F.TID_LIST | F.READ,
            KDETH),
    /** TID RDMA READ response data, flow PSN in BTH, verbs PSN in the block, 1..PMTU bytes. */
    TID_RDMA_READ_RESP(0xE5, Transport.TID, Operation.TID_READ_RESPONSE, Payload.NON_EMPTY, F.RESPONSE, KDETH),
    /** TID RDMA RESYNC (WRITE data source to destination): PSN = sequence 0x7FF; no payload. */
    TID_RDMA_RESYNC(0xE6, Transport.TID, Operation.TID_RESYNC, Payload.NONE, F.FIRST | F.LAST, KDETH),
    /** TID RDMA ACK or TID NAK (WRITE destination to source): AETH, flow PSN in BTH; no payload. */
    TID_RDMA_ACK(0xE7, Transport.TID, Operation.TID_ACK, Payload.NONE, F.FIRST | F.LAST | F.RESPONSE, KDETH);

    /**
     * Transport service of an opcode: the top three bits of the opcode value, except for the
     * manufacturer-specific codes 0xC0–0xFF (rxe4j's masked atomics 0xF0/0xF1 are RC, 0xE0–0xE7
     * are {@link #TID}).
     */
    public enum Transport {
        /** Reliable Connected, base 0x00. */
        RC,
        /** Unreliable Connected, base 0x20. */
        UC,
        /** Unreliable Datagram, base 0x60. */
        UD,
        /** Congestion notification (RoCEv2), base 0x80. */
        CNP,
        /**
         * KDETH/TID RDMA, opcode group 0xE0, manufacturer range (hfi1 TID RDMA carried over RoCEv2,
         * {@code tid-opfn-facts.md} §3, {@code extensions.md} §5). Belongs to an RC QP but has its own
         * handler: BTH DestQP is a KDETH QPN and the QP is found from the KDETH block's verbs_qp.
         */
        TID
    }

    /** What an opcode does. */
    public enum Operation {
        /** SEND*. */
        SEND,
        /** RDMA WRITE*. */
        WRITE,
        /** RDMA READ request. */
        READ,
        /** RDMA READ response (also the answer to ATOMIC WRITE and FLUSH). */
        READ_RESPONSE,
        /** ACKNOWLEDGE (ACK, NAK, RNR NAK). */
        ACKNOWLEDGE,
        /** ATOMIC ACKNOWLEDGE. */
        ATOMIC_ACKNOWLEDGE,
        /** CMP_SWAP. */
        COMPARE_SWAP,
        /** FETCH_ADD. */
        FETCH_ADD,
        /** RDMA FLUSH. */
        FLUSH,
        /** ATOMIC WRITE. */
        ATOMIC_WRITE,
        /** Masked CMP_SWAP (rxe4j). */
        MASKED_COMPARE_SWAP,
        /** Masked FETCH_ADD (rxe4j). */
        MASKED_FETCH_ADD,
        /** The missing PSN ranges of a responder that holds out-of-order requests (rxe4j, 0xF2). */
        SELECTIVE_NAK,
        /** Congestion notification (RoCEv2 CNP). */
        CNP,
        /** TID RDMA WRITE request (0xE0). */
        TID_WRITE_REQUEST,
        /** TID RDMA WRITE response carrying the TID list of one segment (0xE1). */
        TID_WRITE_RESPONSE,
        /** TID RDMA WRITE data (0xE2, and 0xE3 for the last packet of the request). */
        TID_WRITE_DATA,
        /** TID RDMA READ request carrying the TID list of one segment (0xE4). */
        TID_READ_REQUEST,
        /** TID RDMA READ response data (0xE5). */
        TID_READ_RESPONSE,
        /** TID RDMA RESYNC (0xE6). */
        TID_RESYNC,
        /** TID RDMA ACK, or TID NAK with a NAK syndrome (0xE7). */
        TID_ACK
    }

    /**
     * Who handles a received packet of this opcode on its QP (the receive dispatch, {@code rxe_rcv_pkt}
     * in {@code rxe_recv.c}: requests to the responder, responses to the completer). Derived once per
     * opcode from its transport, operation and response flag; the device dispatches on it in one
     * switch ({@code redesign.md} §2 defect 7).
     */
    public enum Handler {
        /** A request (RC, and the TID RDMA WRITE_REQ and READ_REQ): the responder's ordered request path. */
        RESPONDER,
        /** An RC response (ACK, NAK, READ response, ATOMIC ACK): the completer. */
        COMPLETER,
        /** TID RDMA WRITE data and RESYNC: the flow table's path, not the ordered request queue. */
        TID_DATA,
        /** TID RDMA READ response data: the TID READ requester. */
        TID_READ_RESPONSE,
        /** TID RDMA WRITE_RESP and TID ACK/NAK: the TID WRITE requester. */
        TID_RESPONSE,
        /** A RoCEv2 CNP: the requester's congestion reaction. */
        CNP,
        /** An rxe4j selective NAK: the requester's selective repair ({@code RequesterRepair}). */
        REPAIR
    }

    /**
     * Payload length rule, checked against the path MTU by the receiver. The TID list of TID RDMA
     * READ_REQ and WRITE_RESP is {@link #NON_EMPTY} here and further restricted by
     * {@link Opcode#hasTidList()}, which {@link PacketView#parse} checks.
     */
    public enum Payload {
        /** No payload. */
        NONE,
        /** Exactly the path MTU (FIRST and MIDDLE packets). */
        PMTU,
        /** 1..path MTU bytes (LAST packets). */
        NON_EMPTY,
        /** 0..path MTU bytes (ONLY packets). */
        ANY,
        /** Exactly 8 bytes (ATOMIC WRITE). */
        EIGHT
    }

    /** Flag bits. */
    static final class F {
        static final int FIRST = 1;
        static final int MIDDLE = 2;
        static final int LAST = 4;
        static final int RWR = 8;
        static final int COMP = 16;
        static final int RESPONSE = 32;
        /** The payload is a TID list (see {@link Opcode#hasTidList()}). */
        static final int TID_LIST = 64;
        /** rxe's {@code RXE_SEND_MASK}: a SEND request packet (executed by the responder, no memory access right). */
        static final int SEND = 128;
        /** rxe's {@code RXE_WRITE_MASK}: an RDMA WRITE request packet (needs REMOTE_WRITE; TID WRITE_REQ too). */
        static final int WRITE = 256;
        /** rxe's {@code RXE_READ_MASK}: an RDMA READ request (needs REMOTE_READ and a responder resource; TID READ_REQ too). */
        static final int READ = 512;
        /** rxe's {@code RXE_ATOMIC_MASK}: an atomic request (needs REMOTE_ATOMIC and a responder resource). */
        static final int ATOMIC = 1024;
        /** rxe's {@code RXE_ATOMIC_WRITE_MASK}: ATOMIC WRITE (needs REMOTE_WRITE, not REMOTE_ATOMIC, and a resource). */
        static final int ATOMIC_WRITE = 2048;
        /** rxe's {@code RXE_FLUSH_MASK}: FLUSH (the access it needs follows from its FETH placement type). */
        static final int FLUSH = 4096;

        private F() {}
    }

    private static final Opcode[] BY_CODE = new Opcode[256];

    static {
        for (Opcode op : values()) {
            BY_CODE[op.code] = op;
        }
    }

    private final int code;
    private final Transport transport;
    private final Operation operation;
    private final Payload payload;
    private final int flags;
    private final Header[] headers;
    private final int[] offsets = new int[Header.values().length];
    private final int headerLength;
    private final Set<Header> headerSet;
    private final Handler handler;

    Opcode(int code, Transport transport, Operation operation, Payload payload, int flags, Header... headers) {
        this.code = code;
        this.transport = transport;
        this.operation = operation;
        this.payload = payload;
        this.flags = flags;
        this.headers = headers.clone();
        java.util.Arrays.fill(offsets, -1);
        int at = Bth.LENGTH;
        offsets[Header.BTH.ordinal()] = 0;
        EnumSet<Header> set = EnumSet.of(Header.BTH);
        for (Header h : headers) {
            offsets[h.ordinal()] = at;
            at += h.length();
            set.add(h);
        }
        this.headerLength = at;
        this.headerSet = java.util.Collections.unmodifiableSet(set);
        this.handler = handlerOf(transport, operation, flags);
    }

    /** The handler column, from the row's transport, operation and response flag. */
    private static Handler handlerOf(Transport transport, Operation operation, int flags) {
        if (transport == Transport.CNP) {
            return Handler.CNP;
        }
        if (operation == Operation.SELECTIVE_NAK) {
            return Handler.REPAIR;
        }
        if (operation == Operation.TID_WRITE_DATA || operation == Operation.TID_RESYNC) {
            return Handler.TID_DATA;
        }
        if ((flags & F.RESPONSE) == 0) {
            return Handler.RESPONDER;
        }
        if (operation == Operation.TID_READ_RESPONSE) {
            return Handler.TID_READ_RESPONSE;
        }
        return transport == Transport.TID ? Handler.TID_RESPONSE : Handler.COMPLETER;
    }

    /**
     * Looks up an opcode by its 8-bit value.
     *
     * @param code 0..255
     * @return the opcode, or {@code null} if rxe4j does not know it
     */
    public static Opcode of(int code) {
        return BY_CODE[code & 0xFF];
    }

    /** @return the 8-bit BTH opcode value */
    public int code() {
        return code;
    }

    /** @return the transport service */
    public Transport transport() {
        return transport;
    }

    /** @return what the opcode does */
    public Operation operation() {
        return operation;
    }

    /** @return who handles a received packet of this opcode on its QP */
    public Handler handler() {
        return handler;
    }

    /** @return the payload rule */
    public Payload payload() {
        return payload;
    }

    /** @return whether the packet may carry payload bytes */
    public boolean hasPayload() {
        return payload != Payload.NONE;
    }

    /** @return the extended headers after the BTH, in wire order (a copy) */
    public Header[] headers() {
        return headers.clone();
    }

    /** @return every header of this opcode including the BTH */
    public Set<Header> headerSet() {
        return headerSet;
    }

    /** @return whether the opcode carries {@code h} */
    public boolean has(Header h) {
        return offsets[h.ordinal()] >= 0;
    }

    /**
     * @return the offset of {@code h} in bytes from the start of the BTH, or -1 if absent
     */
    public int offset(Header h) {
        return offsets[h.ordinal()];
    }

    /** @return BTH plus every extended header, in bytes (the payload offset) */
    public int headerLength() {
        return headerLength;
    }

    /** @return first or only packet of a message */
    public boolean isFirst() {
        return (flags & F.FIRST) != 0;
    }

    /** @return middle packet of a message */
    public boolean isMiddle() {
        return (flags & F.MIDDLE) != 0;
    }

    /** @return last or only packet of a message */
    public boolean isLast() {
        return (flags & F.LAST) != 0;
    }

    /** @return first and last: a single-packet message */
    public boolean isOnly() {
        return isFirst() && isLast();
    }

    /** @return the packet consumes a receive WQE at the responder */
    public boolean consumesRecvWqe() {
        return (flags & F.RWR) != 0;
    }

    /** @return the packet generates a receive completion */
    public boolean generatesRecvCompletion() {
        return (flags & F.COMP) != 0;
    }

    /** @return a response (responder → requester) packet */
    public boolean isResponse() {
        return (flags & F.RESPONSE) != 0;
    }

    /** @return a request (requester → responder) packet */
    public boolean isRequest() {
        return (flags & F.RESPONSE) == 0;
    }

    /**
     * @return whether the responder executes this request packet (rxe's {@code RXE_REQ_MASK} minus
     *     the TID data packets, which go to the flow table): SEND, RDMA WRITE, RDMA READ, the
     *     atomics, ATOMIC WRITE, FLUSH, TID WRITE_REQ and TID READ_REQ
     */
    public boolean executedByResponder() {
        return (flags & (F.SEND | F.WRITE | F.READ | F.ATOMIC | F.ATOMIC_WRITE | F.FLUSH)) != 0;
    }

    /** @return the request needs IB_ACCESS_REMOTE_READ on the QP and MR ({@code RXE_READ_MASK}; rxe-facts §6.3) */
    public boolean needsRemoteRead() {
        return (flags & F.READ) != 0;
    }

    /**
     * @return the request needs IB_ACCESS_REMOTE_WRITE ({@code RXE_WRITE_MASK | RXE_ATOMIC_WRITE_MASK}:
     *     ATOMIC WRITE asks REMOTE_WRITE, not REMOTE_ATOMIC; rxe-facts §6.3)
     */
    public boolean needsRemoteWrite() {
        return (flags & (F.WRITE | F.ATOMIC_WRITE)) != 0;
    }

    /** @return the request needs IB_ACCESS_REMOTE_ATOMIC ({@code RXE_ATOMIC_MASK}) */
    public boolean needsRemoteAtomic() {
        return (flags & F.ATOMIC) != 0;
    }

    /** @return a FLUSH: the access it needs follows from its FETH placement type (rxe-facts §7.3) */
    public boolean needsFlushAccess() {
        return (flags & F.FLUSH) != 0;
    }

    /**
     * @return the request takes a responder resource, so max_dest_rd_atomic 0 refuses it
     *     ({@code RXE_READ_OR_ATOMIC_MASK | RXE_ATOMIC_WRITE_MASK} in rxe's {@code check_resource};
     *     rxe-facts §9.3): READ, TID READ_REQ, the atomics, ATOMIC WRITE
     */
    public boolean needsRdAtomicResource() {
        return (flags & (F.READ | F.ATOMIC | F.ATOMIC_WRITE)) != 0;
    }

    /** @return carries immediate data */
    public boolean hasImmediate() {
        return has(Header.IMM_DT);
    }

    /** @return carries an IETH (SEND with invalidate) */
    public boolean hasInvalidate() {
        return has(Header.IETH);
    }

    /**
     * Whether the payload is a TID list (TID RDMA READ_REQ 0xE4 and WRITE_RESP 0xE1;
     * {@code tid-opfn-facts.md} §3.4): 1..{@value TidEntry#MAX_ENTRIES} u32 {@link TidEntry
     * entries}, i.e. 4..256 bytes, a multiple of 4 and so never padded. {@link PacketView#parse}
     * enforces this on top of the {@link Payload#NON_EMPTY} rule these opcodes have.
     *
     * @return the payload is a TID list
     */
    public boolean hasTidList() {
        return (flags & F.TID_LIST) != 0;
    }
}
