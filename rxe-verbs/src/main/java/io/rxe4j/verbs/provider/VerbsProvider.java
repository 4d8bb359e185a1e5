package io.rxe4j.verbs.provider;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.spi.Transport;

/**
 * A verbs provider: opens devices ({@code ibv_open_device} through a driver's {@code
 * verbs_device_ops}). Found at run time with {@link java.util.ServiceLoader}: a provider module
 * declares {@code provides io.rxe4j.verbs.provider.VerbsProvider with ...}, and on the class path
 * lists its class in {@code META-INF/services/io.rxe4j.verbs.provider.VerbsProvider}.
 */
public interface VerbsProvider {
    /** @return the provider's name, e.g. {@code "rxe"} (rdma-core's driver name) */
    String name();

    /**
     * Opens a device on {@code transport}, which the device then owns and closes.
     *
     * @param transport the transport the device sends and receives on
     * @param config device options
     * @return the new device
     */
    DeviceOps open(Transport transport, DeviceConfig config);
}
