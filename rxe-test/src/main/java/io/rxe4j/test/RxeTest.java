package io.rxe4j.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a JUnit 5 test class or method with rxe4j's test kit: each test method may take an {@link
 * RxeFabric} parameter, a fresh fabric of {@link #devices()} devices configured by this annotation
 * (a method's annotation wins over its class's), closed after the test. After each test the kit
 * closes the pairs it connected and fails the test if anything else is still open on its devices
 * (QPs, MRs, CQs, PDs, connections ... named one per line) or a packet buffer was never released. A
 * failing test prints the fabric's seed and settings, so that the run can be replayed with {@link
 * #seed()}.
 *
 * <pre>{@code
 * @RxeTest(faults = "drop=0.05", seed = 42)
 * class KvStoreTest {
 *     @Test
 *     void putThenGetUnderLoss(RxeFabric fabric) {
 *         ConnectedPair pair = fabric.connect();
 *         ...
 *     }
 * }
 * }</pre>
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(RxeExtension.class)
public @interface RxeTest {
    /** @return what the devices run on; default {@link RxeTransport#VIRTUAL} */
    RxeTransport transport() default RxeTransport.VIRTUAL;

    /** @return how many devices the fabric has, 1..64; default 2 */
    int devices() default 2;

    /**
     * @return the path MTU of the pairs {@link RxeFabric#connect} makes, bytes: 256, 512, 1024,
     *     2048 or 4096; default 1024 (rdma_rxe's default active MTU)
     */
    int mtu() default 1024;

    /**
     * @return the faults every device's transport applies from the start, a {@link
     *     io.rxe4j.net.fault.FaultSpec} ({@code "drop=0.05,dup=0.01,reorder=0.02,dir=out"}); default
     *     none. {@link RxeFabric#faults(String)} changes them mid-test.
     */
    String faults() default "";

    /**
     * @return the seed of the devices (PSNs, comm IDs) and of the faults; 0 (default) draws one,
     *     printed when the test fails
     */
    long seed() default 0;

    /** @return whether the devices offer OPFN and TID RDMA ({@code DeviceConfig.withTidRdma()}); default off */
    boolean tidRdma() default false;

    /** @return event loops per device (multi-core devices), 1..64; default 1 */
    int loops() default 1;

    /** @return one-way latency of the in-JVM fabric, microseconds (VIRTUAL, IN_JVM); default 20 */
    long latencyMicros() default 20;

    /** @return whether objects left open after the test fail it; default true */
    boolean leakCheck() default true;
}
