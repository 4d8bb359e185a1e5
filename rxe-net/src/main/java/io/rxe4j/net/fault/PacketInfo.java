package io.rxe4j.net.fault;

import java.net.InetSocketAddress;

/**
 * What a {@link FaultRule} predicate sees of a packet: its direction, BTH fields (the opcode name may be
 * null for an unknown opcode) and the far end's address. Reused between calls: do not keep it.
 */
public final class PacketInfo {
    Direction direction;
    int opcodeValue;
    String opcodeName;
    int psn;
    int destQp;
    int length;
    InetSocketAddress peer;

    PacketInfo() {}

    /** @return the direction */
    public Direction direction() { return direction; }

    /** @return the 8-bit BTH opcode */
    public int opcodeValue() { return opcodeValue; }

    /**
     * @return the opcode's name as in the IBTA tables and {@code docs/wire.md} (e.g. {@code
     *     "RC_SEND_ONLY"}, {@code "RC_ACKNOWLEDGE"}), or null if the opcode is unknown or the
     *     packet too short
     */
    public String opcodeName() { return opcodeName; }

    /** @return the 24-bit BTH PSN */
    public int psn() { return psn; }

    /** @return the 24-bit BTH DestQP */
    public int destQp() { return destQp; }

    /** @return UDP payload length in bytes */
    public int length() { return length; }

    /** @return the remote (IP, port): destination when outbound, sender when inbound */
    public InetSocketAddress peer() { return peer; }

    @Override
    public String toString() {
        return direction + " " + (opcodeName != null ? opcodeName : "0x" + Integer.toHexString(opcodeValue)) + " psn=0x"
                + Integer.toHexString(psn) + " qp=0x" + Integer.toHexString(destQp) + " len=" + length;
    }
}
