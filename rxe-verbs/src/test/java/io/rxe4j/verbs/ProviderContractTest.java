package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.verbs.provider.DeviceOps;
import io.rxe4j.verbs.provider.VerbsProvider;
import io.rxe4j.verbs.spi.Transport;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The API's side of the provider contract ({@code io.rxe4j.verbs.provider}), against {@link
 * FakeProvider}: how {@link RdmaDevice#open} finds a provider, what it passes, and that argument and
 * lifetime errors are thrown by the API before any provider call.
 */
class ProviderContractTest {
    /** A transport no test sends on: the fake provider never touches it. */
    private static final Transport TRANSPORT = (Transport) Proxy.newProxyInstance(
            Transport.class.getClassLoader(), new Class<?>[] {Transport.class}, (p, m, a) -> {
                throw new UnsupportedOperationException(m.getName());
            });

    private static VerbsProvider named(String name) {
        return new VerbsProvider() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public DeviceOps open(Transport transport, DeviceConfig config) {
                throw new UnsupportedOperationException();
            }
        };
    }

    @Test
    void noProviderOnThePathNamesTheArtifactAndModuleToAdd() {
        assertThatThrownBy(() -> Providers.find(List.of(), null)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("io.rxe4j:rxe-core").hasMessageContaining("module io.rxe4j.core");
    }

    @Test
    void rxeIsPreferredAndThePropertyPicksByName() {
        VerbsProvider other = named("other");
        VerbsProvider rxe = named("rxe");
        assertThat(Providers.find(List.of(other, rxe), null)).isSameAs(rxe);
        assertThat(Providers.find(List.of(other), null)).isSameAs(other);
        assertThat(Providers.find(List.of(rxe, other), "other")).isSameAs(other);
        assertThatThrownBy(() -> Providers.find(List.of(rxe, other), "mlx5"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'mlx5'").hasMessageContaining("rxe, other")
                .hasMessageContaining(Providers.PROPERTY);
    }

    @Test
    void openFindsTheProviderWithServiceLoaderAndPassesTransportAndConfig() {
        DeviceConfig config = DeviceConfig.defaults();
        try (RdmaDevice dev = RdmaDevice.open(TRANSPORT, config)) {
            FakeProvider.Device d = FakeProvider.last;
            assertThat(d.transport).isSameAs(TRANSPORT);
            assertThat(d.config).isSameAs(config);
            assertThat(dev.address()).isEqualTo(d.address());
            assertThat(dev.queryPort(1).activeMtu()).isEqualTo(Mtu.MTU_1024);
            assertThat(dev.linkMtu()).isEqualTo(1500);
            assertThat(dev.numCompVectors()).isEqualTo(2);
            assertThat(dev.counter("sent_pkts")).isEqualTo(7);
        }
        assertThat(FakeProvider.last.calls).containsExactly("close");
    }

    @Test
    void badArgumentsAndClosedHandlesFailInTheApiBeforeTheProvider() {
        assertThatThrownBy(() -> RdmaDevice.open(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("transport");
        RdmaDevice dev = RdmaDevice.open(TRANSPORT);
        FakeProvider.Device d = FakeProvider.last;
        assertThatThrownBy(() -> dev.queryPort(2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 2");
        ProtectionDomain pd = dev.allocPd();
        CompletionQueue cq = dev.createCq(16, 1);
        assertThat(d.calls).containsExactly("allocPd", "createCq 16 1");
        assertThatThrownBy(dev::close).as("EBUSY while children are open").isInstanceOf(IllegalStateException.class);
        cq.close();
        pd.close();
        dev.close();
        assertThatThrownBy(dev::allocPd).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(d.calls).containsExactly("allocPd", "createCq 16 1", "close");
    }

    @Test
    void aQpFatalFromTheProviderBecomesAnAsyncEventNamingTheQp() throws Exception {
        try (RdmaDevice dev = RdmaDevice.open(TRANSPORT)) {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(16);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq, cq));
            FakeProvider.last.fatal.qpFatal(0x11, "retry exceeded");
            AsyncEvent e = dev.getAsyncEvent(Duration.ofSeconds(10));
            assertThat(e).isNotNull();
            assertThat(e.type()).isEqualTo(AsyncEventType.QP_FATAL);
            assertThat(e.qp()).isSameAs(qp);
            assertThat(e.reason()).isEqualTo("retry exceeded");
            dev.closeAll();
        }
    }
}
