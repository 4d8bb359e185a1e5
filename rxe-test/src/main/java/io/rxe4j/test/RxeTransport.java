package io.rxe4j.test;

/** What the devices of an {@link RxeFabric} run on. */
public enum RxeTransport {
    /**
     * The in-JVM fabric on one {@link io.rxe4j.net.sim.VirtualScheduler}: no threads, no sockets,
     * time moves only while the test waits ({@link RxeFabric#await}), so a run is a function of its
     * seed (faults, PSNs, comm IDs) and timers of seconds take no wall-clock time. The default.
     */
    VIRTUAL,
    /** The in-JVM fabric in real time: each device's loop is a thread of its own; no sockets. */
    IN_JVM,
    /** Real UDP sockets on the loopback interface (127.0.0.1, one ephemeral port per device). */
    UDP
}
