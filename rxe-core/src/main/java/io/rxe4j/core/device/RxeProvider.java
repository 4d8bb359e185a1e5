package io.rxe4j.core.device;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.provider.VerbsProvider;
import io.rxe4j.verbs.spi.Transport;

/**
 * The soft-RoCE provider ({@code rdma_rxe}'s counterpart of rdma-core's {@code providers/rxe}
 * {@code PROVIDER_DRIVER(rxe, ...)}): {@link io.rxe4j.verbs.RdmaDevice#open} finds it through
 * {@link java.util.ServiceLoader} and opens an {@link RxeDevice} per call.
 */
public final class RxeProvider implements VerbsProvider {
    /** The provider's name, as rdma-core's driver name. */
    public static final String NAME = "rxe";

    /** Used by {@link java.util.ServiceLoader}. */
    public RxeProvider() {
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public RxeDevice open(Transport transport, DeviceConfig config) {
        return new RxeDevice(transport, config);
    }
}
