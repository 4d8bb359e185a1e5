package io.rxe4j.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.RdmaDevice;
import java.time.Duration;
import java.util.EnumMap;

/**
 * A Micrometer {@link MeterBinder} over one {@link RdmaDevice}: for every {@link Counter} a function
 * counter {@code rxe4j.<name>} (the counter's rdma_rxe-style name with dots for underscores, e.g.
 * {@code rxe4j.sent.pkts}, {@code rxe4j.retransmit.timeouts}, {@code rxe4j.drop.bad.icrc}; Prometheus
 * shows them as {@code rxe4j_sent_pkts_total} ...), the device's totals over the device and every QP,
 * live or destroyed; and gauges {@code rxe4j.open.objects} ({@link RdmaDevice#openObjects()}) and
 * {@code rxe4j.async.events.dropped} ({@link RdmaDevice#droppedAsyncEvents()}). Every meter has the
 * tag {@code device} (the device's IP and UDP port) and the tags given.
 *
 * <p>Cost: a device's counters are read as one snapshot ({@link RdmaDevice#counterValues()}), taken at
 * most once per {@code refresh} (1 s by default) and shared by all its meters, so a registry that
 * reads a hundred counters takes one snapshot. Per-QP meters are not offered: QPs come and go, and a
 * meter per QP would grow the registry without bound; the device totals include every QP's.
 *
 * <pre>{@code
 * new RxeDeviceMetrics(device, Tags.of("service", "kv")).bindTo(registry);
 * }</pre>
 */
public final class RxeDeviceMetrics implements MeterBinder {
    private final RdmaDevice device;
    private final Iterable<Tag> tags;
    private final long refreshNanos;
    private EnumMap<Counter, Long> snapshot;
    private long takenAt;

    /** Binds with no extra tags and a 1 s snapshot. */
    public RxeDeviceMetrics(RdmaDevice device) {
        this(device, Tags.empty(), Duration.ofSeconds(1));
    }

    /** Binds with {@code tags} and a 1 s snapshot. */
    public RxeDeviceMetrics(RdmaDevice device, Iterable<Tag> tags) {
        this(device, tags, Duration.ofSeconds(1));
    }

    /**
     * @param refresh how long one snapshot of the counters serves every meter; zero: a fresh one per read
     * @throws IllegalArgumentException for a null device or tags, or a negative refresh
     */
    public RxeDeviceMetrics(RdmaDevice device, Iterable<Tag> tags, Duration refresh) {
        if (device == null || tags == null || refresh == null || refresh.isNegative()) {
            throw new IllegalArgumentException("device, tags and a non-negative refresh are required, got "
                    + device + ", " + tags + ", " + refresh);
        }
        this.device = device;
        this.tags = tags;
        this.refreshNanos = refresh.toNanos();
    }

    /** @return the meter name of {@code c}: {@code rxe4j.} and its rdma_rxe-style name with dots */
    public static String meterName(Counter c) {
        return "rxe4j." + c.rxeName().replace('_', '.');
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Tags all = Tags.of(tags).and("device", device.address().getAddress().getHostAddress() + ":"
                + device.address().getPort());
        for (Counter c : Counter.values()) {
            FunctionCounter.builder(meterName(c), this, m -> m.value(c)).tags(all)
                    .description("rxe4j device counter " + c.rxeName() + " (io.rxe4j.verbs.Counter." + c.name() + ")")
                    .register(registry);
        }
        Gauge.builder("rxe4j.open.objects", device, d -> d.isClosed() ? 0 : d.openObjects()).tags(all)
                .description("objects open on the device: connections, PDs, QPs, CQs, MRs, ...").register(registry);
        Gauge.builder("rxe4j.async.events.dropped", device, RdmaDevice::droppedAsyncEvents).tags(all)
                .description("asynchronous events dropped from the device's queue").register(registry);
    }

    /** The counter's value from a snapshot at most {@code refresh} old; NaN once the device is closed. */
    private synchronized double value(Counter c) {
        if (device.isClosed() && snapshot == null) {
            return Double.NaN;
        }
        long now = System.nanoTime();
        if (snapshot == null || now - takenAt >= refreshNanos) {
            if (device.isClosed()) {
                return snapshot.get(c); // the last values stay
            }
            snapshot = device.counterValues();
            takenAt = now;
        }
        Long v = snapshot.get(c);
        return v == null ? Double.NaN : v;
    }
}
