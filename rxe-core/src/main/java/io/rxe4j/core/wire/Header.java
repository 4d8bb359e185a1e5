package io.rxe4j.core.wire;

/**
 * The transport headers a RoCEv2 packet can carry after the BTH, with their sizes in bytes
 * ({@code rxe-facts.md} §1.2, §2; {@code extensions.md} §2 for the masked CAS header, §5 and
 * {@code tid-opfn-facts.md} §3.3–§3.4 for the TID RDMA KDETH block).
 */
public enum Header {
    /** Base Transport Header, 12 bytes. */
    BTH(Bth.LENGTH),
    /** RDMA Extended Transport Header, 16 bytes. */
    RETH(Reth.LENGTH),
    /** ACK Extended Transport Header, 4 bytes. */
    AETH(Aeth.LENGTH),
    /** Atomic Extended Transport Header, 28 bytes. */
    ATOMIC_ETH(AtomicEth.LENGTH),
    /** Atomic ACK Extended Transport Header, 8 bytes. */
    ATOMIC_ACK_ETH(AtomicAckEth.LENGTH),
    /** Immediate data, 4 bytes. */
    IMM_DT(ImmDt.LENGTH),
    /** Invalidate Extended Transport Header, 4 bytes. */
    IETH(Ieth.LENGTH),
    /** Datagram Extended Transport Header, 8 bytes. */
    DETH(Deth.LENGTH),
    /** Flush Extended Transport Header, 4 bytes. */
    FETH(Feth.LENGTH),
    /** rxe4j masked compare-and-swap header, 44 bytes ({@code extensions.md} §2). */
    MASKED_CMP_SWAP_ETH(MaskedCmpSwapEth.LENGTH),
    /**
     * KDETH + TID RDMA extension block, 36 bytes (9 dwords) after the BTH of every TID opcode
     * 0xE0–0xE7: kdeth0 and kdeth1 little-endian ({@link Kdeth}), then the per-opcode extension
     * fields, big-endian ({@link TidHeader}); {@code tid-opfn-facts.md} §3.3–§3.4.
     */
    KDETH(Kdeth.LENGTH);

    private final int length;

    Header(int length) {
        this.length = length;
    }

    /** @return the header length in bytes */
    public int length() {
        return length;
    }
}
