package io.rxe4j.examples.perf;

import java.util.Locale;

/** The tests of rxe-perf, named as perftest's binaries ({@code ib_write_bw} → {@code write_bw}). */
public enum PerfTest {
    /** RDMA WRITE stream, window of {@code -t} WRITEs per QP. */
    WRITE_BW(Op.WRITE, false),
    /** RDMA READ stream. */
    READ_BW(Op.READ, false),
    /** SEND stream; the responder keeps receives posted. */
    SEND_BW(Op.SEND, false),
    /** Atomic stream (CAS, FAA, masked CAS, masked FAA). */
    ATOMIC_BW(Op.ATOMIC, false),
    /** One signaled WRITE at a time: post → completion (the ACK round trip). */
    WRITE_LAT(Op.WRITE, true),
    /** One READ at a time: post → completion (request → response round trip). */
    READ_LAT(Op.READ, true),
    /** SEND ping-pong: post → the peer's echoed SEND received (round trip). */
    SEND_LAT(Op.SEND, true),
    /** One atomic at a time: post → completion (round trip). */
    ATOMIC_LAT(Op.ATOMIC, true);

    /** The operation a test posts. */
    public enum Op { WRITE, READ, SEND, ATOMIC }

    private final Op op;
    private final boolean latency;

    PerfTest(Op op, boolean latency) {
        this.op = op;
        this.latency = latency;
    }

    /** @return the operation */
    public Op op() {
        return op;
    }

    /** @return whether this is a latency test (window of one, histogram) */
    public boolean latency() {
        return latency;
    }

    /** @return the CLI name, e.g. {@code write_bw} */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** @return perftest-style title, e.g. {@code RDMA_Write BW Test} */
    public String title() {
        String o = switch (op) {
            case WRITE -> "RDMA_Write";
            case READ -> "RDMA_Read";
            case SEND -> "Send";
            case ATOMIC -> "Atomic";
        };
        return o + (latency ? " Latency Test" : " BW Test");
    }

    /**
     * @param name {@code write_bw} etc., case-insensitive, {@code -} accepted for {@code _}
     * @throws IllegalArgumentException listing the valid names
     */
    public static PerfTest parse(String name) {
        for (PerfTest t : values()) {
            if (t.cliName().equalsIgnoreCase(name.replace('-', '_'))) {
                return t;
            }
        }
        StringBuilder sb = new StringBuilder();
        for (PerfTest t : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(t.cliName());
        }
        throw new IllegalArgumentException("unknown test '" + name + "'; one of: " + sb);
    }
}
