package io.rxe4j.verbs;

import java.net.InetSocketAddress;

/**
 * The attributes of an address handle ({@code struct ibv_ah_attr} with its GRH, as RoCEv2 uses
 * it): where a UD send goes. On RoCEv2 the destination GID is an IP address (an IPv4 address as its
 * v4-mapped GID), and rxe4j names it, as everywhere, by the peer's (IP, UDP port): port 4791 for a
 * kernel {@code rdma_rxe} or a RoCE NIC, any port for another rxe4j device ({@code
 * verbs-surface-facts.md} §2.5).
 *
 * @param peer the destination (IP, UDP port); resolved
 * @param hopLimit the GRH hop limit, 0..255: the IPv4 TTL or IPv6 hop limit {@code rdma_rxe} puts on
 *     the packet ({@code ah_attr.grh.hop_limit})
 * @param trafficClass the GRH traffic class, 0..255: the IPv4 TOS or IPv6 traffic class ({@code
 *     ah_attr.grh.traffic_class})
 * @param flowLabel the GRH flow label, 0..0xFFFFF ({@code ah_attr.grh.flow_label}; {@code rdma_rxe}
 *     sends flow label 0 whatever it is)
 */
public record AhAttr(InetSocketAddress peer, int hopLimit, int trafficClass, int flowLabel) {
    /** Hop limit of {@link #of}: 64, Linux's default IP TTL. */
    public static final int DEFAULT_HOP_LIMIT = 64;

    /**
     * @throws IllegalArgumentException for an unresolved or null peer, or a field out of range (named)
     */
    public AhAttr {
        if (peer == null || peer.isUnresolved()) {
            throw new IllegalArgumentException("AH peer must be a resolved (IP, UDP port), got " + peer);
        }
        if (hopLimit < 0 || hopLimit > 255) {
            throw new IllegalArgumentException("hop_limit must be 0..255, got " + hopLimit);
        }
        if (trafficClass < 0 || trafficClass > 255) {
            throw new IllegalArgumentException("traffic_class must be 0..255, got " + trafficClass);
        }
        if ((flowLabel & ~0xFFFFF) != 0) {
            throw new IllegalArgumentException("flow_label must be 0..0xFFFFF (20 bits), got 0x"
                    + Integer.toHexString(flowLabel));
        }
    }

    /** @return the attributes of an AH to {@code peer}: hop limit 64, traffic class 0, flow label 0 */
    public static AhAttr of(InetSocketAddress peer) {
        return new AhAttr(peer, DEFAULT_HOP_LIMIT, 0, 0);
    }
}
