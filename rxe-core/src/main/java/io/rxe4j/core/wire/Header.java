package io.rxe4j.core.wire;

/**
 * The transport headers a RoCEv2 packet can carry after the BTH, with their sizes in bytes
 * ({@code rxe-facts.md} §1.2, §2; {@code extensions.md} §2 for the masked CAS header).
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
    MASKED_CMP_SWAP_ETH(MaskedCmpSwapEth.LENGTH);

    private final int length;

    Header(int length) {
        this.length = length;
    }

    /** @return the header length in bytes */
    public int length() {
        return length;
    }
}
