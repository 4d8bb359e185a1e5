package io.rxe4j.verbs;

/** Path MTU ({@code enum ibv_mtu}; {@code rxe-facts.md} §4.2). */
public enum Mtu {
    /** IBV_MTU_256 = 1. */
    MTU_256(1, 256),
    /** IBV_MTU_512 = 2. */
    MTU_512(2, 512),
    /** IBV_MTU_1024 = 3. */
    MTU_1024(3, 1024),
    /** IBV_MTU_2048 = 4. */
    MTU_2048(4, 2048),
    /** IBV_MTU_4096 = 5. */
    MTU_4096(5, 4096);

    private final int value;
    private final int bytes;

    Mtu(int value, int bytes) {
        this.value = value;
        this.bytes = bytes;
    }

    /** @return the rdma-core enum value (1..5) */
    public int value() {
        return value;
    }

    /** @return the MTU in bytes */
    public int bytes() {
        return bytes;
    }

    /**
     * @param bytes 256, 512, 1024, 2048 or 4096
     * @return the MTU
     * @throws IllegalArgumentException for any other value
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes == bytes) {
                return m;
            }
        }
        throw new IllegalArgumentException("path MTU must be 256, 512, 1024, 2048 or 4096 bytes, got " + bytes);
    }

    /**
     * The headroom {@code rdma_rxe} keeps below the netdev MTU for the RoCEv2 headers ({@code
     * RXE_MAX_HDR_LENGTH}): 80 bytes (IP, UDP, BTH, the largest extended headers and the ICRC).
     */
    public static final int ROCE_HEADROOM_BYTES = 80;

    /**
     * The port's active MTU over a link of this IP MTU, as {@code rdma_rxe} computes it ({@code
     * rxe-facts.md} §4.2): {@code ib_mtu_int_to_enum(linkMtu − 80)}, the largest IB MTU not above
     * the link MTU minus {@link #ROCE_HEADROOM_BYTES}, capped at 4096, and 256 when even that does not
     * fit. Examples: 1500 (Ethernet) gives 1024, 9000 gives 4096, 65536 (loopback) gives 4096.
     *
     * @param linkMtuBytes the IP MTU of the link in bytes (e.g. {@code Transport.linkMtu()}), or a
     *     value ≤ 0 for "no limit known"
     * @return the active MTU; {@link #MTU_4096} when {@code linkMtuBytes} ≤ 0
     */
    public static Mtu activeForLinkMtu(int linkMtuBytes) {
        if (linkMtuBytes <= 0) {
            return MTU_4096;
        }
        int room = linkMtuBytes - ROCE_HEADROOM_BYTES;
        Mtu best = MTU_256;
        for (Mtu m : values()) {
            if (m.bytes <= room) {
                best = m;
            }
        }
        return best;
    }
}
