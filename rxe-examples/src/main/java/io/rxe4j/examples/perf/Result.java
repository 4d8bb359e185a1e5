package io.rxe4j.examples.perf;

import java.util.Locale;
import org.HdrHistogram.Histogram;

/**
 * One row of rxe-perf output: a test at one message size, for rxe4j or raw UDP.
 *
 * @param test the test
 * @param raw whether measured with {@code --raw-udp}
 * @param bytes message size in bytes
 * @param iterations completed messages in the measured phase
 * @param seconds measured time
 * @param histogram round-trip latencies in nanoseconds (latency tests), or null
 * @param lost raw UDP only: messages given up as lost (their datagrams dropped), else 0
 */
public record Result(PerfTest test, boolean raw, int bytes, long iterations, double seconds, Histogram histogram,
        long lost) {

    /** @return average bandwidth in MB/s, MB = 2^20 bytes (perftest's unit) */
    public double mbPerSec() {
        return seconds <= 0 ? 0 : iterations * (double) bytes / seconds / (1 << 20);
    }

    /** @return average bandwidth in Gbit/s (10^9 bits) */
    public double gbitPerSec() {
        return seconds <= 0 ? 0 : iterations * (double) bytes * 8 / seconds / 1e9;
    }

    /** @return messages per second in millions */
    public double mpps() {
        return seconds <= 0 ? 0 : iterations / seconds / 1e6;
    }

    /** @return the latency at {@code percentile} in microseconds (NaN without a histogram) */
    public double latencyUs(double percentile) {
        return histogram == null ? Double.NaN : histogram.getValueAtPercentile(percentile) / 1000.0;
    }

    /** @return the minimum latency in microseconds */
    public double minUs() {
        return histogram == null ? Double.NaN : histogram.getMinValue() / 1000.0;
    }

    /** @return the maximum latency in microseconds */
    public double maxUs() {
        return histogram == null ? Double.NaN : histogram.getMaxValue() / 1000.0;
    }

    /** @return the mean latency in microseconds */
    public double avgUs() {
        return histogram == null ? Double.NaN : histogram.getMean() / 1000.0;
    }

    /** @return this row as a JSON object */
    public String toJson() {
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"test\":\"").append(test.cliName()).append("\",\"mode\":\"").append(raw ? "raw-udp" : "rxe4j")
                .append("\",\"bytes\":").append(bytes).append(",\"iterations\":").append(iterations)
                .append(",\"seconds\":").append(num(seconds)).append(",\"bw_mb_s\":").append(num(mbPerSec()))
                .append(",\"bw_gbit_s\":").append(num(gbitPerSec())).append(",\"mpps\":").append(num(mpps()));
        if (raw) {
            sb.append(",\"lost\":").append(lost);
        }
        if (histogram != null) {
            sb.append(",\"t_min_us\":").append(num(minUs())).append(",\"t_p50_us\":").append(num(latencyUs(50)))
                    .append(",\"t_p99_us\":").append(num(latencyUs(99))).append(",\"t_p99_9_us\":")
                    .append(num(latencyUs(99.9))).append(",\"t_max_us\":").append(num(maxUs()))
                    .append(",\"t_avg_us\":").append(num(avgUs()));
        }
        return sb.append('}').toString();
    }

    static String num(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.4f", v) : "null";
    }
}
