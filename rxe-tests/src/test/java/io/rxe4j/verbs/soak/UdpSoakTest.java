package io.rxe4j.verbs.soak;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The reliability soak over real UDP on the loopback address ({@code docs/reliability.md}): the
 * workload, fault spec and checks of {@link SoakTest}, shorter (10,000 operations by default), with
 * a local ACK timeout of 16.8 ms and completions awaited in real time. Seeded but not bit-for-bit
 * reproducible (thread timing decides which packet meets which random draw). Overrides:
 * {@code -Drxe4j.soak.seed=N -Drxe4j.soak.udp.ops=N -Drxe4j.soak.faults=spec}.
 */
class UdpSoakTest {
    @Test
    void mixedOperationsSurviveFaultsOverLoopbackUdp() {
        long seed = Long.getLong("rxe4j.soak.seed", 1);
        int ops = Integer.getInteger("rxe4j.soak.udp.ops", 10_000);
        String faults = System.getProperty("rxe4j.soak.faults", SoakTest.DEFAULT_FAULTS);
        // warm-up without faults: in a fresh JVM the first packets run interpreted and a loop can
        // stall for tens of milliseconds; with finite retries the lossy run starts on warm code
        new Soak(seed + 1000, 2_000, "", Soak.Network.UDP).run();
        Soak.Result r = new Soak(seed, ops, faults, Soak.Network.UDP).run();
        System.out.println(r);
        SoakTest.assertInvariants(r);
        assertThat(r.virtualNanos()).as("no virtual time on UDP").isNegative();
        if (ops <= 10_000) {
            assertThat(Duration.ofNanos(r.realNanos())).as("the UDP soak stays short").isLessThan(Duration.ofSeconds(60));
        }
    }
}
