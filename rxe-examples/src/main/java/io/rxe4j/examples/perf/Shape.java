package io.rxe4j.examples.perf;

/**
 * The datagrams of one RC message at a path MTU, as rxe4j puts them on the wire (RoCEv2 UDP
 * payload = BTH 12 + extension headers + payload + ICRC 4), and those of its response. The
 * {@code --raw-udp} mode sends exactly these sizes.
 *
 * @param count packets in the request
 * @param first bytes of the first datagram
 * @param middle bytes of each middle datagram
 * @param last bytes of the last datagram (equal to first when count is 1)
 * @param respCount packets in the response
 * @param respFirst bytes of the first response datagram
 * @param respMiddle bytes of each middle response datagram
 * @param respLast bytes of the last response datagram
 */
public record Shape(int count, int first, int middle, int last, int respCount, int respFirst, int respMiddle,
        int respLast) {
    static final int BTH = 12;
    static final int RETH = 16;
    static final int AETH = 4;
    static final int ATOMIC_ACK_ETH = 8;
    static final int ICRC = 4;
    /** A coalesced RC ACK: BTH + AETH + ICRC. */
    static final int ACK = BTH + AETH + ICRC;

    /** @return datagram count and sizes of a message and its response */
    public static Shape of(PerfTest test, int size, int mtu, AtomicType atomic) {
        int n = Math.max(1, (size + mtu - 1) / mtu);
        int firstPay = Math.min(size, mtu);
        int lastPay = size - (n - 1) * mtu;
        return switch (test.op()) {
            case WRITE -> new Shape(n, BTH + RETH + firstPay + ICRC, BTH + mtu + ICRC,
                    n == 1 ? BTH + RETH + firstPay + ICRC : BTH + lastPay + ICRC, 1, ACK, ACK, ACK);
            case SEND -> {
                int first = BTH + firstPay + ICRC;
                int mid = BTH + mtu + ICRC;
                int last = n == 1 ? first : BTH + lastPay + ICRC;
                // bw: the peer's ACK; latency: the peer's echoed SEND of the same size
                yield test.latency() ? new Shape(n, first, mid, last, n, first, mid, last)
                        : new Shape(n, first, mid, last, 1, ACK, ACK, ACK);
            }
            case READ -> {
                int first = BTH + AETH + firstPay + ICRC;
                int last = n == 1 ? first : BTH + AETH + lastPay + ICRC;
                int req = BTH + RETH + ICRC;
                yield new Shape(1, req, req, req, n, first, BTH + mtu + ICRC, last);
            }
            case ATOMIC -> {
                int req = BTH + atomic.extHeaderBytes() + ICRC;
                int resp = BTH + AETH + ATOMIC_ACK_ETH + ICRC;
                yield new Shape(1, req, req, req, 1, resp, resp, resp);
            }
        };
    }

    /** @return bytes of the i-th request datagram */
    int request(int i) {
        return i == 0 ? first : i == count - 1 ? last : middle;
    }

    /** @return bytes of the i-th response datagram */
    int response(int i) {
        return i == 0 ? respFirst : i == respCount - 1 ? respLast : respMiddle;
    }
}
