package io.rxe4j.core.wire;

import io.netty.buffer.ByteBuf;

/**
 * A reusable view of one received packet: where each header of <em>this</em> packet sits and
 * where its payload is. {@link #parse} checks the structure (length, TVer, opcode, pad, and the
 * TID list length of TID RDMA READ_REQ / WRITE_RESP) but not the ICRC, the P_Key or QP state;
 * those need context.
 *
 * <p>Not thread-safe; one instance per event loop, re-pointed at each packet (no allocation).
 */
public final class PacketView {
    private ByteBuf buf;
    private int at;
    private int length;
    private Opcode opcode;
    private int payloadLength;

    /** Creates an empty view. */
    public PacketView() {}

    /**
     * Points this view at a packet and checks its structure.
     *
     * @param b the buffer
     * @param index absolute index of the BTH
     * @param len UDP payload length in bytes, including the ICRC
     * @return {@code null} if well formed, else why it must be dropped
     */
    public DropReason parse(ByteBuf b, int index, int len) {
        this.buf = b;
        this.at = index;
        this.length = len;
        this.opcode = null;
        this.payloadLength = 0;
        if (len < Bth.LENGTH + Icrc.LENGTH) {
            return DropReason.TOO_SHORT;
        }
        if (Bth.tver(b, index) != 0) {
            return DropReason.BAD_TVER;
        }
        Opcode op = Opcode.of(Bth.opcode(b, index));
        if (op == null) {
            return DropReason.UNKNOWN_OPCODE;
        }
        int afterHeaders = len - op.headerLength() - Icrc.LENGTH;
        if (afterHeaders < 0) {
            return DropReason.TOO_SHORT;
        }
        int pad = Bth.padCount(b, index);
        if (!op.hasPayload()) {
            if (pad != 0) {
                return DropReason.BAD_PAD;
            }
            if (afterHeaders != 0) {
                return DropReason.TOO_SHORT; // trailing bytes where none may be: lengths do not add up
            }
        } else if (pad > afterHeaders || (afterHeaders & 3) != 0) {
            // payload + pad is always a multiple of 4 bytes (pad = -payload & 3)
            return DropReason.BAD_PAD;
        } else if (op.hasTidList()) {
            if (pad != 0) {
                return DropReason.BAD_PAD; // a TID list is whole u32 entries: never padded
            }
            if (afterHeaders < TidEntry.LENGTH || afterHeaders > TidEntry.MAX_LIST_BYTES) {
                return DropReason.TOO_SHORT; // 1..64 entries: an empty or over-long list does not add up
            }
        }
        this.opcode = op;
        this.payloadLength = afterHeaders - pad;
        return null;
    }

    /** @return the buffer */
    public ByteBuf buf() {
        return buf;
    }

    /** @return absolute index of the BTH */
    public int bthIndex() {
        return at;
    }

    /** @return UDP payload length including ICRC, bytes */
    public int length() {
        return length;
    }

    /** @return the parsed opcode (null if {@link #parse} failed) */
    public Opcode opcode() {
        return opcode;
    }

    /** @return absolute index of header {@code h}; the opcode must carry it */
    public int index(Header h) {
        int off = opcode.offset(h);
        if (off < 0) {
            throw new IllegalStateException(opcode + " has no " + h);
        }
        return at + off;
    }

    /** @return absolute index of the payload */
    public int payloadIndex() {
        return at + opcode.headerLength();
    }

    /** @return payload length in bytes, pad excluded */
    public int payloadLength() {
        return payloadLength;
    }

    /** @return BTH PSN */
    public int psn() {
        return Bth.psn(buf, at);
    }

    /** @return BTH DestQP */
    public int destQp() {
        return Bth.destQp(buf, at);
    }

    /** @return BTH AckReq */
    public boolean ackReq() {
        return Bth.ackReq(buf, at);
    }

    /** @return BTH SE */
    public boolean solicited() {
        return Bth.se(buf, at);
    }

    /** @return BTH PadCnt */
    public int padCount() {
        return Bth.padCount(buf, at);
    }

    /** @return BTH P_Key */
    public int pkey() {
        return Bth.pkey(buf, at);
    }
}
