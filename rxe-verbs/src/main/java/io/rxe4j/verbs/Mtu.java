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
}
