package io.rxe4j.verbs.cm.ib;

/**
 * rdma_cm's service IDs ({@code cma.c:rdma_get_service_id}; {@code cm-facts.md} §4.1): {@code
 * (port space << 16) | port}, inside IBTA's IB-assigned range 0x0000000001000000/40.
 */
public final class ServiceIds {
    /** {@code RDMA_PS_TCP}: connected QPs (RC). */
    public static final int PS_TCP = 0x0106;
    /** {@code RDMA_PS_UDP}: UD QPs, through SIDR. */
    public static final int PS_UDP = 0x0111;
    /** {@code RDMA_PS_IB}. */
    public static final int PS_IB = 0x013F;
    /** {@code RDMA_PS_IPOIB}. */
    public static final int PS_IPOIB = 0x0002;
    /** {@code IB_CMA_SERVICE_ID}: every rdma_cm service ID has these upper 40 bits. */
    public static final long IB_CMA_SERVICE_ID = 0x0000_0000_0100_0000L;
    static final long IB_CMA_SERVICE_ID_MASK = 0xFFFF_FFFF_FF00_0000L;

    private ServiceIds() {}

    /**
     * @return the service ID of {@code port} in {@code portSpace}
     * @throws IllegalArgumentException for a port space or port out of range
     */
    public static long of(int portSpace, int port) {
        if ((portSpace & ~0xFFFF) != 0 || portSpace == 0 || (port & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("port space must be 1..0xFFFF and port 0..65535, got 0x"
                    + Integer.toHexString(portSpace) + " and " + port);
        }
        return ((long) portSpace << 16) | port;
    }

    /** @return whether {@code serviceId} lies in rdma_cm's range */
    public static boolean isRdmaCm(long serviceId) {
        return (serviceId & IB_CMA_SERVICE_ID_MASK) == IB_CMA_SERVICE_ID;
    }

    /** @return the port space, bits 31..16 */
    public static int portSpace(long serviceId) {
        return (int) (serviceId >>> 16) & 0xFFFF;
    }

    /** @return the port, bits 15..0 */
    public static int port(long serviceId) {
        return (int) serviceId & 0xFFFF;
    }
}
