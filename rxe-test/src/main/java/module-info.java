/**
 * rxe4j's test kit: a JUnit 5 extension ({@link io.rxe4j.test.RxeTest}, {@link
 * io.rxe4j.test.RxeFabric}) that gives a test devices on virtual time, the in-JVM fabric or
 * loopback UDP, connected pairs through the connection manager, faults switchable mid-test, a
 * clock-agnostic await and a leak check at the end of each test. Test scope ({@code docs/testing.md}).
 */
module io.rxe4j.test {
    requires transitive io.rxe4j.net;
    requires transitive org.junit.jupiter.api;
    requires io.netty.buffer;

    exports io.rxe4j.test;
}
