package io.rxe4j.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaListener;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The binder's meters follow the device's counters, with its tags, and stop growing with its QPs. */
class RxeDeviceMetricsTest {
    @Test
    void everyCounterIsAMeterWithTheDevicesValueAndTags() throws Exception {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice a = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice b = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        try {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            new RxeDeviceMetrics(a, Tags.of("service", "test"), Duration.ZERO).bindTo(registry);
            int meters = registry.getMeters().size();
            assertThat(meters).isEqualTo(Counter.values().length + 2);
            // traffic: a connect through the CM moves QP1's counters
            RdmaListener l = RdmaListener.listen(b, 0);
            var server = l.acceptAsync(b.allocPd(), b.createCq(16), b.createCq(16),
                    io.rxe4j.verbs.cm.ConnectionParams.defaults());
            var pd = a.allocPd();
            var cq = a.createCq(16);
            var client = io.rxe4j.verbs.cm.RdmaConnection.connectAsync(pd, cq, cq, b.address(), l.port(),
                    io.rxe4j.verbs.cm.ConnectionParams.defaults(), qp -> { }).get();
            server.get();
            FunctionCounter sent = registry.get("rxe4j.gsi.sent.mads").tag("device", "10.0.0.1:4791")
                    .tag("service", "test").functionCounter();
            assertThat(sent.count()).isEqualTo(a.counter(Counter.GSI_SENT_MADS)).isGreaterThanOrEqualTo(2);
            assertThat(registry.get("rxe4j.open.objects").gauge().value()).isEqualTo((double) a.openObjects());
            assertThat(registry.getMeters()).as("no meter per QP or connection").hasSize(meters);
            client.close();
            l.close();
        } finally {
            a.closeAll();
            b.closeAll();
            fabric.closeAll();
        }
    }

    @Test
    void aSnapshotServesEveryMeterForItsRefreshAndNamesFollowTheCounters() {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice a = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        try {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            new RxeDeviceMetrics(a, Tags.empty(), Duration.ofHours(1)).bindTo(registry);
            double before = registry.get("rxe4j.gsi.sent.mads").functionCounter().count();
            a.allocPd(); // (no traffic needed: the value is cached for an hour anyway)
            assertThat(registry.get("rxe4j.gsi.sent.mads").functionCounter().count()).isEqualTo(before);
            assertThat(RxeDeviceMetrics.meterName(Counter.DROP_BAD_ICRC)).isEqualTo("rxe4j.drop.bad.icrc");
            assertThatThrownBy(() -> new RxeDeviceMetrics(a, Tags.empty(), Duration.ofSeconds(-1)))
                    .isInstanceOf(IllegalArgumentException.class);
        } finally {
            a.closeAll();
            fabric.closeAll();
        }
    }
}
