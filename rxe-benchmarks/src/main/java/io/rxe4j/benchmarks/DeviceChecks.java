package io.rxe4j.benchmarks;

import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.verbs.QpState;
import java.util.Map;

/**
 * End-of-trial checks of the benchmarks that drive a core {@link RxeDevice} with prebuilt
 * packets: a benchmark whose packets were dropped, NAKed, answered RNR, treated as duplicates or
 * resent would measure an error path, not the data path, and must fail instead of reporting.
 */
final class DeviceChecks {
    private DeviceChecks() {}

    /**
     * Throws unless {@code qp} is still in RTS and every device counter ({@link
     * RxeDevice#counterSnapshot()}: every {@code drop_*}, {@code duplicate_*}, {@code out_of_seq_*},
     * RNR, retry, rewind, resend, CQ overflow, stall and budget counter) is zero, apart from the
     * packet counts {@code sent_pkts} and {@code rcvd_pkts}, which must be at least {@code minSent}
     * and {@code minRcvd}.
     */
    static void assertClean(RxeDevice dev, RxeQp qp, long minSent, long minRcvd) {
        if (qp.state() != QpState.RTS) {
            throw new IllegalStateException("QP left RTS: " + qp.state() + " (" + qp.errorReason() + ")");
        }
        Map<String, Long> c = dev.counterSnapshot();
        StringBuilder bad = new StringBuilder();
        for (Map.Entry<String, Long> e : c.entrySet()) {
            String k = e.getKey();
            if (!k.equals("sent_pkts") && !k.equals("rcvd_pkts") && e.getValue() != 0) {
                bad.append(' ').append(k).append('=').append(e.getValue());
            }
        }
        if (!bad.isEmpty()) {
            throw new IllegalStateException("error or drop counters moved:" + bad);
        }
        if (c.get("sent_pkts") < minSent || c.get("rcvd_pkts") < minRcvd) {
            throw new IllegalStateException("sent_pkts " + c.get("sent_pkts") + " < " + minSent + " or rcvd_pkts "
                    + c.get("rcvd_pkts") + " < " + minRcvd);
        }
    }
}
