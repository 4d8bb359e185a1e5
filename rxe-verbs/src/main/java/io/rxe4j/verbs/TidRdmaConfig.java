package io.rxe4j.verbs;

/**
 * A device's TID RDMA capability ({@code HFI1_CAP_TID_RDMA}; {@code tid-opfn-facts.md} §2, §4;
 * {@code extensions.md} §5). TID RDMA is negotiated per QP through OPFN, so it needs {@link
 * DeviceConfig#opfn()} too; a QP asks for it when it enters RTS with path MTU 4096.
 *
 * @param enabled whether QPs of the device request (and accept) TID RDMA
 * @param tidEntries TID entries of the device's receive context (one per piece of ≤ 2 MiB of a
 *     segment being received), 1..1024 (the 10-bit KDETH TID); exhausting them makes QPs wait
 *     ({@code n_tidwait}) or sends RNR NAKs
 * @param flows hardware flows of the receive context, 1..32 ({@code RXE_NUM_TID_FLOWS} = 32)
 * @param maxRead TID READ segments in flight per request advertised to the peer (1..63, hfi1: 6)
 * @param maxWrite TID WRITE segments allocatable at once advertised to the peer (1..63, hfi1: 4)
 */
public record TidRdmaConfig(boolean enabled, int tidEntries, int flows, int maxRead, int maxWrite) {
    /** Hardware flows per receive context ({@code RXE_NUM_TID_FLOWS}). */
    public static final int MAX_FLOWS = 32;

    /**
     * @throws IllegalArgumentException naming a value out of range
     */
    public TidRdmaConfig {
        if (tidEntries < 1 || tidEntries > 1024) {
            throw new IllegalArgumentException("tidEntries must be 1..1024 (KDETH's TID is 10 bits), got "
                    + tidEntries);
        }
        if (flows < 1 || flows > MAX_FLOWS) {
            throw new IllegalArgumentException("flows must be 1.." + MAX_FLOWS + ", got " + flows);
        }
        if (maxRead < 1 || maxRead > 63) {
            throw new IllegalArgumentException("maxRead must be 1..63, got " + maxRead);
        }
        if (maxWrite < 1 || maxWrite > 63) {
            throw new IllegalArgumentException("maxWrite must be 1..63, got " + maxWrite);
        }
    }

    /** @return TID RDMA off, with hfi1's sizes (512 TID entries, 32 flows, max_read 6, max_write 4) */
    public static TidRdmaConfig disabled() {
        return new TidRdmaConfig(false, 512, MAX_FLOWS, TidRdmaParams.DEFAULT_MAX_READ,
                TidRdmaParams.DEFAULT_MAX_WRITE);
    }

    /** @return TID RDMA on, with hfi1's sizes */
    public static TidRdmaConfig on() {
        return new TidRdmaConfig(true, 512, MAX_FLOWS, TidRdmaParams.DEFAULT_MAX_READ,
                TidRdmaParams.DEFAULT_MAX_WRITE);
    }

    /** @return a copy with {@code n} TID entries (tests force exhaustion with a small number) */
    public TidRdmaConfig withTidEntries(int n) {
        return new TidRdmaConfig(enabled, n, flows, maxRead, maxWrite);
    }

    /** @return a copy with {@code n} hardware flows */
    public TidRdmaConfig withFlows(int n) {
        return new TidRdmaConfig(enabled, tidEntries, n, maxRead, maxWrite);
    }
}
