package io.rxe4j.core.rc;

import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.qp.RecvWqe;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.rc.Responder.State;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Feth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.MaskedCmpSwapEth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;
import io.rxe4j.core.wire.Reth;
import io.rxe4j.verbs.Access;

/**
 * The responder's checks, one method per state as rdma_rxe's {@code rxe_resp.c} ({@code
 * check_psn}, {@code check_op_seq}, {@code check_op_valid}, {@code check_resource}, {@code
 * check_length}, {@code check_rkey}; {@code rxe-facts.md} §5.5–§5.7, §6.3, §9.3), and what they
 * found for the execute states: the packet, its path MTU and payload, whether it is the OPFN
 * request, and its RETH/atomic target with the MR it names. Each returns the next {@link State}.
 * The access a request needs and whether it takes a responder resource come from the {@link
 * Opcode} table. Loop only; valid while {@link Responder} processes one packet.
 */
final class ResponderChecks {
    /** Maximum RETH DMA length ({@code RXE_PORT_MAX_MSG_SZ}). */
    static final long MAX_MSG = 1L << 31;

    private final Responder resp;
    private final RxeQp qp;

    // ---- the packet and what the checks found ----
    PacketView pkt;
    Opcode op;
    /** The packet's PSN. */
    int psn;
    /** Payload bytes. */
    int payload;
    int pmtu;
    /** The packet is the OPFN request (a COMPARE_SWAP to VA ~0 while OPFN runs). */
    boolean opfnRequest;
    /** RETH/atomic target of a READ, an atomic, ATOMIC WRITE or FLUSH (FLUSH SEL_MR: the whole MR). */
    long va;
    int rkey;
    long length;
    /** The MR CHK_RKEY found (null for a zero-length READ). */
    RxeMr mr;

    ResponderChecks(Responder resp, RxeQp qp) {
        this.resp = resp;
        this.qp = qp;
    }

    void start(PacketView p) {
        pkt = p;
        op = p.opcode();
        psn = p.psn();
        opfnRequest = false;
        mr = null;
    }

    void end() {
        pkt = null;
        mr = null;
    }

    /** CHK_PSN: ahead of the expected PSN is out of sequence, behind it a duplicate. */
    State checkPsn() {
        int d = Psn.diff(psn, resp.ePsn);
        if (d > 0) {
            return State.ERR_PSN_OUT_OF_SEQ;
        }
        if (d < 0) {
            return State.DUPLICATE_REQUEST;
        }
        resp.nakSent = false;
        return State.CHK_OP_SEQ;
    }

    /** CHK_OP_SEQ: a FIRST/ONLY outside a message; inside one, MIDDLE/LAST of the same operation. */
    State checkOpSeq() {
        switch (resp.inMessage) {
            case NONE -> {
                if (!op.isFirst()) {
                    return State.ERR_MISSING_OPCODE_FIRST;
                }
            }
            case SEND -> {
                if (op.operation() != Opcode.Operation.SEND || op.isFirst()) {
                    return State.ERR_MISSING_OPCODE_LAST;
                }
            }
            case WRITE -> {
                if (op.operation() != Opcode.Operation.WRITE || op.isFirst()) {
                    return State.ERR_MISSING_OPCODE_LAST;
                }
            }
        }
        return State.CHK_OP_VALID;
    }

    /**
     * CHK_OP_VALID: the QP grants the access the opcode needs (rxe-facts §6.3: ATOMIC WRITE needs
     * REMOTE_WRITE; FLUSH what its placement type names); TID requests only once OPFN negotiated
     * TID RDMA; the OPFN request needs none (tid-opfn-facts §1.2). A SEND with invalidate needs none:
     * its rkey is checked when it is invalidated, after the payload ({@code verbs-surface-facts.md} §5.6).
     */
    State checkOpValid() {
        opfnRequest = isOpfnRequest();
        int need = opfnRequest ? 0 : requiredAccess();
        if (need < 0 || (qp.attr.accessFlags() & need) != need) {
            return State.ERR_UNSUPPORTED_OPCODE;
        }
        return State.CHK_RESOURCE;
    }

    /** @return the QP access the request needs, from the opcode table, or -1 if it is not valid here */
    private int requiredAccess() {
        if (!op.executedByResponder()) {
            return -1;
        }
        if (op.transport() == Opcode.Transport.TID && qp.opfn.remote() == null) {
            return -1; // only once negotiated
        }
        if (op.needsFlushAccess()) {
            return flushAccess(Feth.placementType(pkt.buf(), pkt.index(Header.FETH)));
        }
        return (op.needsRemoteRead() ? Access.REMOTE_READ : 0) | (op.needsRemoteWrite() ? Access.REMOTE_WRITE : 0)
                | (op.needsRemoteAtomic() ? Access.REMOTE_ATOMIC : 0);
    }

    /** @return the QP/MR access a FLUSH placement type needs, or -1 for an invalid type (NAK 0x61) */
    static int flushAccess(int plt) {
        if (plt == 0 || (plt & ~(Feth.PLT_GLOBAL | Feth.PLT_PERSISTENT)) != 0) {
            return -1;
        }
        return ((plt & Feth.PLT_GLOBAL) != 0 ? Access.FLUSH_GLOBAL : 0)
                | ((plt & Feth.PLT_PERSISTENT) != 0 ? Access.FLUSH_PERSISTENT : 0);
    }

    /**
     * @return whether the packet is an OPFN request: a COMPARE_SWAP to VA 0xFFFFFFFFFFFFFFFF
     *     ({@code HFI1_VERBS_E_ATOMIC_VADDR}) while this device runs OPFN; without OPFN it is an
     *     ordinary atomic (and fails its rkey check)
     */
    private boolean isOpfnRequest() {
        return op == Opcode.RC_COMPARE_SWAP && qp.opfn.enabled()
                && AtomicEth.va(pkt.buf(), pkt.index(Header.ATOMIC_ETH)) == -1L;
    }

    /**
     * CHK_RESOURCE (before CHK_LENGTH, as rxe-facts §9.3): a receive WQE for SEND FIRST/ONLY and
     * WRITE WITH IMMEDIATE, else RNR NAK; max_dest_rd_atomic for READ, atomics and ATOMIC WRITE.
     */
    State checkResource() {
        if (op.consumesRecvWqe()) {
            RecvWqe r = qp.peekRecv();
            if (r == null) {
                return State.ERR_RNR;
            }
            resp.recv = r;
            resp.recvOffset = 0;
        }
        if (op.needsRdAtomicResource() && qp.attr.maxDestRdAtomic() == 0 && !opfnRequest) {
            return State.ERR_TOO_MANY_RDMA_ATM_REQ;
        }
        return State.CHK_LENGTH;
    }

    /** CHK_LENGTH (packet level): the payload rule of the opcode against the path MTU. */
    State checkLength() {
        pmtu = qp.pmtu();
        int n = pkt.payloadLength();
        payload = n;
        boolean lenOk = switch (op.payload()) {
            case NONE -> n == 0;
            case PMTU -> n == pmtu;
            case NON_EMPTY -> n >= 1 && n <= pmtu;
            case ANY -> n <= pmtu;
            case EIGHT -> n == 8;
        };
        return lenOk ? State.CHK_RKEY : State.ERR_LENGTH;
    }

    /**
     * CHK_RKEY: the MR the request names is valid, of this QP's PD, holds the range and grants the
     * access (C9-88: a zero-length WRITE or READ checks none); the DMA length is at most 2 GiB;
     * atomics are 8-byte aligned (A19.4.2); FLUSH names a known selectivity. SEND and TID requests
     * check nothing here (TID READ/WRITE check their R_Key when the extension executes them).
     */
    State checkRkey() {
        switch (op.operation()) {
            case WRITE -> {
                return op.isFirst() ? checkWriteRkey() : State.EXECUTE;
            }
            case READ -> {
                return checkReth(Access.REMOTE_READ);
            }
            case COMPARE_SWAP, FETCH_ADD, MASKED_COMPARE_SWAP, MASKED_FETCH_ADD -> {
                return opfnRequest ? State.EXECUTE : checkAtomicRkey();
            }
            case ATOMIC_WRITE -> {
                return checkAtomicWriteRkey();
            }
            case FLUSH -> {
                return checkFlushRkey();
            }
            default -> {
                return State.EXECUTE;
            }
        }
    }

    /** A READ's or a WRITE's RETH: length, then the MR unless zero-length. */
    private State checkReth(int access) {
        int reth = pkt.index(Header.RETH);
        va = Reth.va(pkt.buf(), reth);
        rkey = Reth.rkey(pkt.buf(), reth);
        length = Reth.dmaLength(pkt.buf(), reth);
        if (length > MAX_MSG) {
            return State.ERR_LENGTH;
        }
        if (length > 0) {
            mr = resp.remoteMr(rkey, va, length, access);
            if (mr == null) {
                return State.ERR_RKEY_VIOLATION;
            }
        }
        return State.EXECUTE;
    }

    /**
     * The first packet of a WRITE: its RETH starts the message's target (WRITE_WITH_IMM took its
     * receive WQE in CHK_RESOURCE, so a later class C error completes that WQE with the error
     * status, as rxe_resp.c's do_complete, rather than flushing it).
     */
    private State checkWriteRkey() {
        State s = checkReth(Access.REMOTE_WRITE);
        if (s == State.EXECUTE) {
            resp.startWrite(mr, va, length);
        }
        return s;
    }

    private State checkAtomicRkey() {
        boolean maskedCas = op == Opcode.RC_MASKED_COMPARE_SWAP;
        int at = maskedCas ? pkt.index(Header.MASKED_CMP_SWAP_ETH) : pkt.index(Header.ATOMIC_ETH);
        va = maskedCas ? MaskedCmpSwapEth.va(pkt.buf(), at) : AtomicEth.va(pkt.buf(), at);
        rkey = maskedCas ? MaskedCmpSwapEth.rkey(pkt.buf(), at) : AtomicEth.rkey(pkt.buf(), at);
        mr = resp.remoteMr(rkey, va, 8, Access.REMOTE_ATOMIC);
        if (mr == null) {
            return State.ERR_RKEY_VIOLATION;
        }
        if ((va & 7) != 0) {
            return State.ERR_MISALIGNED_ATOMIC;
        }
        return State.EXECUTE;
    }

    /** ATOMIC WRITE ({@code rxe-facts.md} §7.2): the MR, then RETH length 8, no pad, 8-byte aligned. */
    private State checkAtomicWriteRkey() {
        int reth = pkt.index(Header.RETH);
        va = Reth.va(pkt.buf(), reth);
        rkey = Reth.rkey(pkt.buf(), reth);
        mr = resp.remoteMr(rkey, va, 8, Access.REMOTE_WRITE);
        if (mr == null) {
            return State.ERR_RKEY_VIOLATION;
        }
        if (Reth.dmaLength(pkt.buf(), reth) != 8 || pkt.padCount() != 0) {
            return State.ERR_LENGTH;
        }
        if ((va & 7) != 0) {
            return State.ERR_MISALIGNED_ATOMIC;
        }
        return State.EXECUTE;
    }

    /** FLUSH ({@code rxe-facts.md} §7.3): the MR grants the placement type; the range, or the whole MR for SEL_MR. */
    private State checkFlushRkey() {
        int feth = pkt.index(Header.FETH);
        int reth = pkt.index(Header.RETH);
        int need = flushAccess(Feth.placementType(pkt.buf(), feth));
        int sel = Feth.selectivity(pkt.buf(), feth);
        va = Reth.va(pkt.buf(), reth);
        length = Reth.dmaLength(pkt.buf(), reth);
        rkey = Reth.rkey(pkt.buf(), reth);
        io.rxe4j.core.memory.RxeMw mw = qp.host().mrs().windows().lookup(rkey);
        if (mw != null && sel == Feth.SEL_MR) {
            // through a window, "the whole MR" is the window: its range is all the rkey grants
            va = mw.address(rkey);
            length = mw.length();
            sel = Feth.SEL_RANGE;
        }
        if (sel == Feth.SEL_MR) {
            RxeMr m = qp.host().mrs().lookup(rkey);
            if (m == null || m.pd() != qp.pd || (m.access() & need) != need) {
                return State.ERR_RKEY_VIOLATION;
            }
            va = m.iova();
            length = m.length();
            mr = m;
            return State.EXECUTE;
        }
        if (sel != Feth.SEL_RANGE) {
            return State.ERR_INVALID_REQUEST;
        }
        mr = qp.host().mrs().remote(rkey, qp.pd, qp.qpn(), va, length, need);
        if (mr == null) {
            return State.ERR_RKEY_VIOLATION;
        }
        return State.EXECUTE;
    }
}
