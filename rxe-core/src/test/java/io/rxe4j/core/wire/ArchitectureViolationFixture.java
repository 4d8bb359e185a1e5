package io.rxe4j.core.wire;

import io.rxe4j.core.device.RxeDevice;

/**
 * Test fixture of {@code ArchitectureTest}: a class on the wire floor that names the device, the
 * kind of upward dependency the floors rule must report. Never used at run time.
 */
public final class ArchitectureViolationFixture {
    private ArchitectureViolationFixture() {
    }

    public static boolean closed(RxeDevice device) {
        return device.isClosed();
    }
}
