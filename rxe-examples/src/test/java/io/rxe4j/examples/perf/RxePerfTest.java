package io.rxe4j.examples.perf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rxe4j.net.udp.UdpTransport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class RxePerfTest {

    @Test
    void parsesOptions() {
        RxePerf p = RxePerf.parse("write_bw", "-s", "4096", "-n", "10", "-m", "1024", "-q", "2", "-t", "8",
                "--transport", "nio", "--compare", "--json");
        assertThat(p.test()).isEqualTo(PerfTest.WRITE_BW);
        assertThat(p.sizes()).containsExactly(4096);
        assertThat(p.iterationsPerSize()).isEqualTo(10);
        assertThat(p.pathMtu().bytes()).isEqualTo(1024);
        assertThat(p.qps).isEqualTo(2);
        assertThat(p.txDepth).isEqualTo(8);
        assertThat(p.io()).isEqualTo(UdpTransport.Io.NIO);
        assertThat(p.compare).isTrue();
        assertThat(p.json).isTrue();

        assertThat(RxePerf.parse("read_lat").sizes()).containsExactly(2);
        assertThat(RxePerf.parse("send_bw").sizes()).containsExactly(65536);
        assertThat(RxePerf.parse("atomic_lat", "-a", "--atomic-type", "mcas").atomicType).isEqualTo(AtomicType.MCAS);
        assertThat(RxePerf.parse("atomic_lat", "-a").sizes()).containsExactly(8);
        List<Integer> all = RxePerf.parse("write_bw", "-a").sizes();
        assertThat(all).hasSize(23).startsWith(2, 4).endsWith(RxePerf.MAX_ALL_SIZE);
        assertThat(RxePerf.parse("write_bw", "-a", "--max-size", "64").sizes()).containsExactly(2, 4, 8, 16, 32, 64);
    }

    @Test
    void rejectsBadOptions() {
        assertThatThrownBy(() -> RxePerf.parse("write_bandwidth")).hasMessageContaining("write_bw");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "-m", "1500")).hasMessageContaining("4096");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--transport", "rdma")).hasMessageContaining("epoll");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--compare")).hasMessageContaining("nio, epoll or io_uring");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "-q", "0")).hasMessageContaining("-q");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--cq-mod", "0")).hasMessageContaining("--cq-mod")
                .hasMessageContaining("0");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "-w", "NaN")).hasMessageContaining("--warmup");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "-w", "Infinity")).hasMessageContaining("--warmup");
        assertThat(RxePerf.parse("write_bw").jitSettle).as("on by default").isTrue();
        assertThat(RxePerf.parse("write_bw", "--no-jit-settle").jitSettle).isFalse();
        assertThat(RxePerf.parse("write_bw").directSend).as("direct sendmmsg by default").isTrue();
        assertThat(RxePerf.parse("write_bw", "--no-direct-send").directSend).isFalse();
        assertThat(RxePerf.parse("write_bw").cqMod).as("perftest's DEF_CQ_MOD").isEqualTo(100);
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--server", "--connect", "h:1"))
                .hasMessageContaining("exclude");
        assertThat(RxePerf.run(new PrintStream(new ByteArrayOutputStream()), "nonsense")).isNotZero();
    }

    @Test
    void perftestRdmaCmOptionsAsPerftests() {
        // perftest's names: -R / --rdma_cm, --source_ip; rdma_cm's port is perftest's -p
        io.rxe4j.examples.interop.PerftestPeer.Config srv = RxePerf.parse("write_bw", "--perftest", "-R", "--server",
                "--ip", "10.99.0.1", "-p", "18610", "-n", "200", "-m", "1024").perftestConfig();
        assertThat(srv.rdmaCm()).isTrue();
        assertThat(srv.server()).isTrue();
        assertThat(srv.localIp()).isEqualTo("10.99.0.1");
        assertThat(srv.port()).isEqualTo(18610);
        assertThat(srv.qpTimeout()).isEqualTo(14);
        assertThat(srv.iters()).isEqualTo(200);
        io.rxe4j.examples.interop.PerftestPeer.Config cli = RxePerf.parse("read_bw", "--perftest", "--rdma_cm",
                "--connect", "fe80::5054:ff:fe00:11%br0", "-p", "18611", "--source_ip", "fe80::1%br0", "-u", "17")
                .perftestConfig();
        assertThat(cli.rdmaCm()).isTrue();
        assertThat(cli.host()).isEqualTo("fe80::5054:ff:fe00:11%br0"); // an IPv6 literal takes -p
        assertThat(cli.port()).isEqualTo(18611);
        assertThat(cli.localIp()).isEqualTo("fe80::1%br0");
        assertThat(cli.qpTimeout()).isEqualTo(17);
        io.rxe4j.examples.interop.PerftestPeer.Config plain = RxePerf.parse("write_bw", "--perftest", "--connect",
                "10.99.0.11:18600").perftestConfig();
        assertThat(plain.rdmaCm()).isFalse();
        assertThat(plain.localIp()).isNull();
        assertThat(plain.port()).isEqualTo(18600);
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--perftest", "-R", "--server").perftestConfig())
                .hasMessageContaining("--ip");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--perftest", "--server", "--ip", "10.99.0.1")
                .perftestConfig()).hasMessageContaining("-R");
        PrintStream sink = new PrintStream(new ByteArrayOutputStream());
        assertThat(RxePerf.run(sink, "write_bw", "-R")).as("-R without --perftest").isEqualTo(2);
        assertThat(RxePerf.run(sink, "write_bw", "--perftest", "-R", "--server")).as("no --ip").isEqualTo(2);
    }

    @Test
    void shapesMatchRxePackets() {
        // 64 KiB WRITE at MTU 4096: 16 packets, first with RETH, one ACK back
        Shape w = Shape.of(PerfTest.WRITE_BW, 65536, 4096, AtomicType.FAA);
        assertThat(w.count()).isEqualTo(16);
        assertThat(w.first()).isEqualTo(12 + 16 + 4096 + 4);
        assertThat(w.last()).isEqualTo(12 + 4096 + 4);
        assertThat(w.respCount()).isEqualTo(1);
        assertThat(w.respFirst()).isEqualTo(20);
        Shape r = Shape.of(PerfTest.READ_BW, 5000, 4096, AtomicType.FAA);
        assertThat(r.count()).isEqualTo(1);
        assertThat(r.first()).isEqualTo(32);
        assertThat(r.respCount()).isEqualTo(2);
        assertThat(r.respFirst()).isEqualTo(12 + 4 + 4096 + 4);
        assertThat(r.respLast()).isEqualTo(12 + 4 + 904 + 4);
        Shape a = Shape.of(PerfTest.ATOMIC_LAT, 8, 4096, AtomicType.MCAS);
        assertThat(a.first()).isEqualTo(60);
        assertThat(a.respFirst()).isEqualTo(28);
    }

    private static String run(String... args) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code = RxePerf.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), args);
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(code).as(out).isZero();
        return out;
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    void everyTestRunsInProcess(PerfTest test) {
        String out = run(test.cliName(), "-n", "50", "-s", "5000", "-m", "1024", "-t", "8", "-w", "0", "--json");
        assertThat(out).contains("\"test\":\"" + test.cliName() + "\"").contains("\"iterations\":50");
        assertThat(out).doesNotContain("\"bw_mb_s\":0.0000").doesNotContain("null");
        if (test.latency()) {
            assertThat(out).contains("\"t_p99_9_us\":");
        }
    }

    @ParameterizedTest
    @EnumSource(value = PerfTest.class, names = {"WRITE_BW", "READ_BW", "SEND_BW", "ATOMIC_BW"})
    void unsignaledWrsAreCountedExactly(PerfTest test) {
        // 3 QPs share 1,000 WRs (334 + 333 + 333), one in 7 signaled: 1,000 = 142 x 7 + 6, so each QP's
        // last group is short and must end with a signaled WR of its own, or the run stalls or miscounts
        String out = run(test.cliName(), "-n", "1000", "-q", "3", "-t", "16", "--cq-mod", "7", "-s", "64", "-w", "0",
                "--json");
        assertThat(out).contains("\"iterations\":1000,").contains("\"cq_mod\":7");
    }

    @Test
    @org.junit.jupiter.api.Timeout(120) // a safety net against a hang, not a measurement
    void aTimedPhaseClosesEachQpsLastUnsignaledGroup() {
        // -D with a warm-up: the warm-up phase ends with unsignaled WRs outstanding; if their QP did not
        // post a signaled one after them, the measured phase would see their completions out of order
        String out = run("write_bw", "-D", "0.3", "-w", "0.2", "--no-jit-settle", "-q", "2", "-t", "32", "--cq-mod", "10",
                "-s", "64", "--json");
        assertThat(out).containsPattern("\"iterations\":[1-9]").contains("\"cq_mod\":10")
                .contains("\"warmup_s\":0.2,\"jit_settle\":false,\"longest_warmup_s\":{\"rxe4j\":0.");
    }

    @ParameterizedTest
    @EnumSource(value = PerfTest.class, names = {"ATOMIC_LAT", "SEND_LAT", "WRITE_BW", "SEND_BW"})
    void theBackoffIdleStrategyCompletesEveryRun(PerfTest test) {
        String out = run(test.cliName(), "--backoff", "-n", "200", "-s", "4096", "-t", "8", "-w", "0", "--json");
        assertThat(out).contains("\"iterations\":200").doesNotContain("null");
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"--busy-poll", "--events", "--backoff"})
    void latencyComparisonsRunTheRawSideWithTheSameWaiting(String wait) {
        String out = run("atomic_lat", "--compare", wait, "-n", "200", "-w", "0", "--transport", "nio", "--json");
        assertThat(out).contains("\"mode\":\"raw-udp\"").contains("\"iterations\":200").contains("\"t_p50_us\":");
    }

    @Test
    void tableOutputAndMaskedAtomics() {
        String out = run("atomic_bw", "--atomic-type", "MFAA", "-n", "20", "-t", "4", "-w", "0", "-q", "2");
        assertThat(out).contains("Atomic BW Test").contains("BW average[MB/sec]").contains(" 8 ");
        out = run("atomic_lat", "--atomic-type", "MCAS", "-n", "20", "-w", "0");
        assertThat(out).contains("t_p99.9[us]");
    }

    @Test
    void tidCompareRunsTidAndPlainInOneProcess() {
        // 512 KiB at MTU 4096: two 256 KiB segments each, as TID READ and WRITE on one pair and plain on the other
        for (String test : new String[] {"write_bw", "read_bw"}) {
            String out = run(test, "--tid-compare", "-m", "4096", "-n", "20", "-s", "524288", "-t", "4", "-w", "0");
            assertThat(out).contains("(TID RDMA vs plain)").contains("plain[MB/sec]").contains("TID RDMA negotiated on 1 QP")
                    .contains("TID counters:");
            assertThat(out).containsPattern(test.equals("write_bw") ? "tid_write_segments_acked=[1-9]"
                    : "tid_read_segments_done=[1-9]");
        }
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--tid", "-m", "1024")).hasMessageContaining("-m 4096");
        assertThatThrownBy(() -> RxePerf.parse("write_bw", "--tid-compare", "-m", "4096", "--transport", "nio",
                "--compare")).hasMessageContaining("excludes");
    }

    @Test
    void compareOverNio() {
        String out = run("write_bw", "--transport", "nio", "--compare", "-n", "30", "-s", "8192", "-t", "4", "-w", "0",
                "--json");
        assertThat(out).contains("\"rxe4j\":").contains("\"raw\":").contains("\"ratio\":");
    }

    @Test
    void rawUdpOverEpoll() {
        assumeTrue(UdpTransport.isEpollAvailable(), "epoll unavailable here");
        String out = run("read_lat", "--transport", "epoll", "--compare", "-n", "30", "-w", "0");
        assertThat(out).contains("raw_p50[us]");
    }

    /** An output stream that completes {@link #port} when the server prints the TCP port it listens on. */
    private static final class ServerOutput extends java.io.OutputStream {
        final java.util.concurrent.CompletableFuture<Integer> port = new java.util.concurrent.CompletableFuture<>();
        private final StringBuilder text = new StringBuilder();

        @Override
        public synchronized void write(int b) {
            text.append((char) b);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("waiting on TCP port (\\d+)\n").matcher(text);
            if (!port.isDone() && m.find()) {
                port.complete(Integer.parseInt(m.group(1)));
            }
        }

        synchronized String text() {
            return text.toString();
        }
    }

    /** Runs {@code server} on a thread and, once it listens, {@code client} with --connect; @return the client's output */
    private static String[] twoProcesses(String[] server, String... client) throws Exception {
        ServerOutput so = new ServerOutput();
        java.util.concurrent.CompletableFuture<Integer> serverCode = new java.util.concurrent.CompletableFuture<>();
        Thread.ofPlatform().name("rxe-perf-test-server").daemon().start(
                () -> serverCode.complete(RxePerf.run(new PrintStream(so, true, StandardCharsets.UTF_8), server)));
        int port = so.port.get(30, java.util.concurrent.TimeUnit.SECONDS);
        List<String> args = new java.util.ArrayList<>(List.of(client));
        args.addAll(List.of("--connect", "127.0.0.1:" + port));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code = RxePerf.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), args.toArray(String[]::new));
        int sc = serverCode.get(60, java.util.concurrent.TimeUnit.SECONDS);
        return new String[] {Integer.toString(code), bytes.toString(StandardCharsets.UTF_8), Integer.toString(sc), so.text()};
    }

    @Test
    @org.junit.jupiter.api.Timeout(120) // a safety net against a hang, not a measurement
    void theServerTakesTidAndTheShapeFromTheClient() throws Exception {
        // the server is given neither TEST nor --tid nor -s/-q: it adopts the client's (issue 19); TID RDMA is
        // negotiated only when both devices have it on, so the TID counters of the server prove the adoption
        String[] r = twoProcesses(new String[] {"--server", "-p", "0", "--transport", "nio"},
                "write_bw", "--transport", "nio", "--tid", "-m", "4096", "-s", "524288", "-n", "10", "-t", "2", "-q", "2",
                "-w", "0", "--json");
        assertThat(r[0]).as(r[1] + r[3]).isEqualTo("0");
        assertThat(r[2]).as(r[3]).isEqualTo("0");
        assertThat(r[1]).contains("\"iterations\":10").contains("\"qps\":2");
        assertThat(r[1]).containsPattern("\"responder\":\\{[^}]*\"tid_write_segments_rcvd\":[1-9]");
    }

    @Test
    @org.junit.jupiter.api.Timeout(120) // a safety net against a hang, not a measurement
    void jsonCarriesTheDeviceCountersOfBothSides() throws Exception {
        String one = run("write_bw", "-n", "20", "-s", "4096", "-t", "4", "-w", "0", "--json");
        assertThat(one).containsPattern("\"counters\":\\{\"requester\":\\{[^}]*\"sent_pkts\":[1-9]")
                .containsPattern("\"responder\":\\{[^}]*\"rcvd_pkts\":[1-9]");
        String[] two = twoProcesses(new String[] {"--server", "-p", "0", "--transport", "nio"},
                "send_lat", "--transport", "nio", "-n", "20", "-w", "0", "--json");
        assertThat(two[0]).as(two[1] + two[3]).isEqualTo("0");
        // the server's counters, sent back over the exchange: it received the 20 SENDs and sent 20 echoes
        assertThat(two[1]).containsPattern("\"requester\":\\{[^}]*\"sent_pkts\":[1-9]")
                .containsPattern("\"responder\":\\{[^}]*\"rcvd_pkts\":[1-9]");
    }

    @Test
    void theServerAdoptsTheClientsOptionsAndRefusesContradictions() {
        RxePerf client = RxePerf.parse("read_bw", "--connect", "h:1", "--transport", "nio", "--tid", "-m", "4096", "-q",
                "3", "-t", "8", "-s", "262144", "--ack-timeout", "15", "--no-cc", "-D", "2");
        RxePerf server = RxePerf.parse("--server", "--transport", "nio");
        java.util.Map<String, String> p = server.adopt(client.paramsLine());
        assertThat(server.test()).isEqualTo(PerfTest.READ_BW);
        assertThat(server.tid).isTrue();
        assertThat(server.qps).isEqualTo(3);
        assertThat(server.txDepth).isEqualTo(8);
        assertThat(server.sizes()).containsExactly(262144);
        assertThat(server.ackTimeout).isEqualTo(15);
        assertThat(server.noCongestionControl).isTrue();
        assertThat(server.duration).isEqualTo(2.0);
        assertThat(p).containsEntry("mtu", "4096");

        // the same value given to both is fine; another value is refused, naming each option and both values
        RxePerf same = RxePerf.parse("read_bw", "--server", "--transport", "nio", "-q", "3", "--tid");
        same.adopt(client.paramsLine());
        RxePerf other = RxePerf.parse("write_bw", "--server", "--transport", "nio", "-q", "2");
        assertThatThrownBy(() -> other.adopt(client.paramsLine())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("TEST: server write_bw, client read_bw").hasMessageContaining("--qps: server 2, client 3");
        assertThatThrownBy(() -> RxePerf.parse("--server", "--transport", "nio").adopt("PARAMS test=write_bw"))
                .hasMessageContaining("did not send");
        assertThat(RxePerf.parse("write_bw").test()).isEqualTo(PerfTest.WRITE_BW);
        assertThatThrownBy(() -> RxePerf.parse("--transport", "nio")).hasMessageContaining("TEST missing");
    }

    @Test
    @org.junit.jupiter.api.Timeout(120) // a safety net against a hang, not a measurement
    void aContradictionEndsBothSidesWithExitCode2() throws Exception {
        String[] r = twoProcesses(new String[] {"write_bw", "--server", "-p", "0", "--transport", "nio", "--tid"},
                "write_bw", "--transport", "nio", "-n", "10", "-w", "0");
        assertThat(r[0]).as(r[1]).isEqualTo("2");
        assertThat(r[2]).as(r[3]).isEqualTo("2");
    }

    @Test
    void theDefaultAckTimeoutToleratesAFreshJvm() {
        // 4.096 us x 2^17 = 537 ms per try, as rdma_cm and ConnectionParams.defaults(): a fresh JVM answers its
        // first packet after 100-200 ms, which 14 (67 ms) turned into resends and, on a loaded host, failures
        assertThat(RxePerf.parse("write_bw").ackTimeout).isEqualTo(17)
                .isEqualTo(io.rxe4j.verbs.cm.ConnectionParams.defaults().ackTimeout());
    }
}
