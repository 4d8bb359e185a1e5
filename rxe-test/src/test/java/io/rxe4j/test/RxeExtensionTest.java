package io.rxe4j.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectionParams;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/** The kit on itself: pairs through the CM under loss on virtual time, every transport, faults mid-test, leaks, seeds. */
@RxeTest(faults = "drop=0.05,dir=out", seed = 42)
class RxeExtensionTest {

    /** 64 SENDs of distinct 2000-byte messages (two packets each at MTU 1024), then a 64 KiB RDMA WRITE. */
    private static void sendAndWrite(RxeFabric fabric, ConnectedPair pair) {
        int n = 64;
        int len = 2000;
        try (MemoryRegion src = pair.client().pd().allocMr((long) n * len + 65536, Access.LOCAL_WRITE);
                MemoryRegion dst = pair.server().pd().allocMr((long) n * len + 65536,
                        Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            for (int i = 0; i < n * len + 65536; i++) {
                src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + i / len));
            }
            for (int i = 0; i < n; i++) {
                pair.server().qp().postRecv(new RecvWr().set(i, new Sge(dst.addr() + (long) i * len, len, dst.lkey())));
            }
            for (int i = 0; i < n; i++) {
                pair.client().qp().postSend(new SendWr().send(i, new Sge(src.addr() + (long) i * len, len, src.lkey()))
                        .signaled());
                WorkCompletion s = fabric.nextCompletion(pair.client().cq());
                assertThat(s.status).as("SEND %d", i).isEqualTo(WcStatus.SUCCESS);
                WorkCompletion r = fabric.nextCompletion(pair.server().cq());
                assertThat(r.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(r.wrId).isEqualTo(i);
                assertThat(r.byteLen).isEqualTo(len);
            }
            long off = (long) n * len;
            pair.client().qp().postSend(new SendWr().rdmaWrite(99, dst.addr() + off, dst.rkey(),
                    new Sge(src.addr() + off, 65536, src.lkey())).signaled());
            assertThat(fabric.nextCompletion(pair.client().cq()).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(dst.segment().asSlice(0, off + 65536).toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(src.segment().asSlice(0, off + 65536).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aPairConnectsThroughTheCmOnVirtualTimeAndCarriesDataUnderLoss(RxeFabric fabric) {
        assertThat(fabric.transport()).isEqualTo(RxeTransport.VIRTUAL);
        assertThat(fabric.seed()).isEqualTo(42);
        ConnectedPair pair = fabric.connect();
        assertThat(pair.client().qp().state()).hasToString("RTS");
        assertThat(pair.server().connection().remoteQpNum()).isEqualTo(pair.client().qp().qpNum());
        long t0 = fabric.nanoTime();
        sendAndWrite(fabric, pair);
        assertThat(fabric.faultsInjected()).as("the loss was there").isPositive();
        assertThat(fabric.nanoTime()).as("virtual time moved").isGreaterThan(t0);
    }

    @Test
    void theSameSeedGivesTheSameRun(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        sendAndWrite(fabric, pair);
        long faults = fabric.faultsInjected();
        long at = fabric.nanoTime();
        try (RxeFabric again = RxeFabric.builder().faults("drop=0.05,dir=out").seed(42).build()) {
            sendAndWrite(again, again.connect());
            assertThat(again.faultsInjected()).isEqualTo(faults);
            assertThat(again.nanoTime()).isEqualTo(at);
        }
    }

    @Test
    void faultsSwitchMidTest(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        fabric.clearFaults();
        long before = fabric.faultsInjected();
        sendAndWrite(fabric, pair);
        assertThat(fabric.faultsInjected()).as("no faults once cleared").isEqualTo(before);
        fabric.faults("drop=0.2");
        sendAndWrite(fabric, pair);
        assertThat(fabric.faultsInjected()).isGreaterThan(before);
        assertThatThrownBy(() -> fabric.faults("drop=lots")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("drop");
    }

    @Test
    @RxeTest(devices = 4, mtu = 4096)
    void aMethodsAnnotationWinsAndPairsMayShareDevices(RxeFabric fabric) {
        assertThat(fabric.devices()).hasSize(4);
        assertThat(fabric.faultsInjected()).isZero();
        List<ConnectedPair> pairs = new ArrayList<>();
        for (int i = 1; i < 4; i++) {
            pairs.add(fabric.connect(i, 0));
        }
        pairs.add(fabric.connect(2, 2)); // a loopback pair
        for (ConnectedPair p : pairs) {
            assertThat(p.client().connection().pathMtu().bytes()).isEqualTo(4096);
            sendAndWrite(fabric, p);
        }
    }

    @Test
    void awaitNamesWhatItWaitedForAndTheClock(RxeFabric fabric) {
        long t0 = fabric.nanoTime();
        assertThatThrownBy(() -> fabric.await(() -> false, Duration.ofSeconds(3), "the answer"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("the answer")
                .hasMessageContaining("PT3S of virtual time").hasMessageContaining("seed=42");
        assertThat(fabric.nanoTime() - t0).isEqualTo(3_000_000_000L);
        assertThatThrownBy(() -> fabric.connect(0, 1, ConnectionParams.defaults().withPrivateData(new byte[57])))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aConnectTheFaultsBreakLeavesNothingOpenAndSaysSo() {
        try (RxeFabric fabric = RxeFabric.builder().seed(3).build()) {
            fabric.faults(1, "drop=1,dir=out"); // the server hears the REQ and accepts; all its REPs are lost
            assertThatThrownBy(fabric::connect).isInstanceOf(AssertionError.class)
                    .hasMessageContaining("the client's connect (device 0 to 1) failed")
                    .hasMessageContaining("the kit closed the half-made pair")
                    .hasMessageContaining("packet(s) during the connection manager's handshake")
                    .hasMessageContaining("fabric.faults(...)")
                    .hasMessageNotContaining("nothing has ever answered");
            assertThat(fabric.leaks()).as("the half-made pair is not the test's leak").isEmpty();
            assertThat(fabric.device(1).openObjectDescriptions()).as("the server's accepted QP went too")
                    .noneMatch(l -> l.startsWith("QP "));
            fabric.clearFaults();
            sendAndWrite(fabric, fabric.connect());
        }
    }

    @Test
    void nextSuccessFailsNamingTheStatusAndTheQpsReason(RxeFabric fabric) {
        fabric.clearFaults();
        ConnectedPair pair = fabric.connect();
        try (MemoryRegion src = pair.client().pd().allocMr(64, Access.LOCAL_WRITE)) {
            pair.client().qp().postSend(new SendWr().rdmaWrite(5, 0x1000, 0xBAD, new Sge(src.addr(), 64, src.lkey()))
                    .signaled());
            assertThatThrownBy(() -> fabric.nextSuccess(pair.client().cq())).isInstanceOf(AssertionError.class)
                    .hasMessageContaining("wr_id 5").hasMessageContaining("REM_ACCESS_ERR")
                    .hasMessageContaining("QP 0x" + Integer.toHexString(pair.client().qp().qpNum()))
                    .hasMessageContaining("the peer's QP: ").hasMessageNotContaining("NAK 0x62: NAK")
                    .hasMessageContaining("seed=42");
        }
    }

    @Test
    void awaitWithoutWordsNamesTheCallersLine(RxeFabric fabric) {
        assertThatThrownBy(() -> fabric.await(() -> false)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("the condition at RxeExtensionTest.java:")
                .hasMessageContaining("PT30S of virtual time");
        assertThatThrownBy(() -> fabric.await(new java.util.concurrent.CompletableFuture<Void>()))
                .isInstanceOf(AssertionError.class).hasMessageContaining("the future awaited at RxeExtensionTest.java:");
        long t0 = fabric.nanoTime();
        fabric.await(() -> true, "nothing");
        assertThat(fabric.nanoTime()).as("a condition that holds costs no time").isEqualTo(t0);
    }

    @ParameterizedTest
    @EnumSource(RxeTransport.class)
    void everyTransportConnectsAPair(RxeTransport t) {
        try (RxeFabric fabric = RxeFabric.builder().transport(t).build()) {
            ConnectedPair pair = fabric.connect();
            sendAndWrite(fabric, pair);
        }
    }

    // ------------------------------------------------------------------ the kit failing tests

    /** Run by {@link #aLeakedMrFailsTheTestNamingIt} through the JUnit Platform, not by the build itself. */
    @RxeTest
    static class LeaksAnMr {
        @Test
        void leaks(RxeFabric fabric) {
            ConnectedPair pair = fabric.connect();
            pair.server().pd().allocMr(4096, Access.LOCAL_WRITE); // never closed
        }
    }

    /** Run by {@link #aFailingTestCarriesTheSeedToReplayIt}. */
    @RxeTest(faults = "drop=0.01")
    static class Fails {
        @Test
        void fails(RxeFabric fabric) {
            fabric.connect();
            throw new AssertionError("the application's check failed");
        }
    }

    private static TestExecutionSummary run(Class<?> c) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request().selectors(selectClass(c)).build();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(request, listener);
        return listener.getSummary();
    }

    @Test
    void aLeakedMrFailsTheTestNamingIt() {
        TestExecutionSummary s = run(LeaksAnMr.class);
        assertThat(s.getTestsFailedCount()).isEqualTo(1);
        Throwable t = s.getFailures().get(0).getException();
        assertThat(t).isInstanceOf(AssertionError.class).hasMessageContaining("the test left 1 object(s) open")
                .hasMessageContaining("device /10.0.0.2:4791: MR MR{").hasMessageContaining("length=4096")
                .hasMessageContaining("seed=");
    }

    @Test
    void aFailingTestCarriesTheSeedToReplayIt() {
        TestExecutionSummary s = run(Fails.class);
        assertThat(s.getTestsFailedCount()).isEqualTo(1);
        Throwable t = s.getFailures().get(0).getException();
        assertThat(t).hasMessage("the application's check failed");
        assertThat(t.getSuppressed()).hasSize(1);
        assertThat(t.getSuppressed()[0]).isInstanceOf(RxeExtension.FabricSettings.class)
                .hasMessageContaining("faults=\"drop=0.01\"").hasMessageContaining("replay with @RxeTest(seed = ");
    }
}
