/**
 * Micrometer metrics of rxe4j devices ({@link io.rxe4j.micrometer.RxeDeviceMetrics}); optional: the
 * devices' counters are also in their JMX MBeans without it.
 */
module io.rxe4j.micrometer {
    requires transitive io.rxe4j.verbs;
    requires transitive micrometer.core;

    exports io.rxe4j.micrometer;
}
