package io.rxe4j.examples.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.examples.perf.AtomicType;
import io.rxe4j.examples.perf.PerfTest;
import io.rxe4j.verbs.Mtu;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * perftest compatibility: the dest message byte for byte as perftest's {@code KEY_PRINT_FMT_GID}
 * formats it, and the whole exchange between two rxe-perf --perftest peers (loopback; the kernel
 * peer runs in scripts/interop-live.sh).
 */
class PerftestPeerTest {
    @Test
    void theDestMessageIsPerftestsKeyPrintFmtGid() throws Exception {
        PerftestDest d = new PerftestDest(0, 1, 0x1d, 0x40f4f0, 0xe0b, 0x7f328e6d7000L,
                Gid.of(InetAddress.getByName("10.99.0.11")), 0);
        byte[] msg = d.format();
        assertThat(msg).hasSize(108);
        assertThat(msg[107]).isZero();
        assertThat(new String(msg, 0, 107, StandardCharsets.US_ASCII)).isEqualTo(
                "0000:0001:00001d:40f4f0:00000e0b:00007f328e6d7000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:0b:00000000:");
        assertThat(PerftestDest.parse(msg)).isEqualTo(d);
        // the address lines as the guest's ib_write_bw 25.01 printed them for the same values
        assertThat(d.describe("local", PerfTest.Op.WRITE)).isEqualTo(
                " local address: LID 0000 QPN 0x001d PSN 0x40f4f0 RKey 0x000e0b VAddr 0x007f328e6d7000\n"
                + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:11");
        assertThat(d.describe("remote", PerfTest.Op.SEND)).isEqualTo(" remote address: LID 0000 QPN 0x001d PSN 0x40f4f0\n"
                + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:11");
        assertThat(d.describe("local", PerfTest.Op.READ)).contains("PSN 0x40f4f0 OUT 0x01 RKey 0x000e0b");
        assertThatThrownBy(() -> PerftestDest.parse("0000:0001:zz".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed perftest dest message");
    }

    @Test
    void versionsAreComparedLikeAtof() {
        assertThat(PerftestWire.number("6.10")).isEqualTo(6.10);
        assertThat(PerftestWire.number("5.70-rc1")).isEqualTo(5.70);
        assertThat(PerftestWire.number("x")).isZero();
        assertThat(PerftestWire.number(PerftestWire.VERSION)).isBetween(5.70, 6.27);
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(120)
    void twoPerftestPeersRunEachBandwidthTest(PerfTest test) throws Exception {
        int port = 18700 + test.ordinal();
        int size = test.op() == PerfTest.Op.ATOMIC ? 8 : test.latency() ? 2 : 8192;
        ByteArrayOutputStream srvOut = new ByteArrayOutputStream();
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> PerftestPeer.run(
                new PerftestPeer.Config(test, size, 300, 1, 32, AtomicType.FAA, Mtu.MTU_1024, true, null, port, null,
                        false), new PrintStream(srvOut, true, StandardCharsets.UTF_8), System.err));
        ByteArrayOutputStream cliOut = new ByteArrayOutputStream();
        // the client's TCP connection goes to 127.0.0.2, so the two devices bind UDP 4791 on two addresses
        int rc = PerftestPeer.run(new PerftestPeer.Config(test, size, 300, 1, 32, AtomicType.FAA, Mtu.MTU_1024, false,
                "127.0.0.2", port, null, false), new PrintStream(cliOut, true, StandardCharsets.UTF_8), System.err);
        int serverRc = server.get(60, TimeUnit.SECONDS); // before reading its output: it may finish after the client
        String cli = cliOut.toString(StandardCharsets.UTF_8);
        String srv = srvOut.toString(StandardCharsets.UTF_8);
        System.out.println(cli + srv);
        assertThat(rc).as("client exit code").isZero();
        assertThat(serverRc).as("server exit code").isZero();
        assertThat(cli).containsPattern("(?m)^ " + size + " +300 ");
        if (test.latency()) {
            if (test.op() == PerfTest.Op.WRITE || test.op() == PerfTest.Op.SEND) { // ping-pong: both sides measure
                assertThat(srv).containsPattern("(?m)^ " + size + " +300 ");
            }
            return;
        }
        if (test == PerfTest.SEND_BW) {
            assertThat(srv).as("the server counts its own receives").containsPattern("(?m)^ " + size + " +300 ");
        } else {
            assertThat(srv).as("the server prints the client's report").containsPattern("(?m)^ " + size + " +300 ");
        }
        if (test == PerfTest.ATOMIC_BW) {
            assertThat(srv).contains("the word at the advertised address now holds 300");
        }
    }

    @Test
    void theBinaryDestIsStructPingpongDestBigEndian() {
        PerftestDest d = new PerftestDest(0, 16, 0x11, 0xabcdef, 0x1234, 0x7f0011223344L,
                Gid.of(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 99, 0, 1}), 7);
        byte[] b = d.binary();
        // rdma_write_keys: htobe32 of lid, out_reads, qpn, psn, rkey; 4 bytes of padding; htobe64 vaddr; the GID;
        // htobe32 srqn and gid_index: sizeof(struct pingpong_dest) = 56
        assertThat(b).hasSize(56);
        assertThat(java.util.HexFormat.of().formatHex(b)).isEqualTo("00000000" + "00000010" + "00000011" + "00abcdef"
                + "00001234" + "00000000" + "00007f0011223344" + "00000000000000000000ffff0a630001" + "00000007"
                + "00000000");
        assertThat(PerftestDest.parseBinary(b)).isEqualTo(d);
        assertThat(PerftestDest.ZERO.binary()).containsOnly(0);
        assertThatThrownBy(() -> PerftestDest.parseBinary(new byte[55])).hasMessageContaining("56");
    }

    @Test
    void rdmaCmConfigNeedsTheServersAddress() {
        assertThatThrownBy(() -> new PerftestPeer.Config(PerfTest.WRITE_BW, 8192, 10, 1, 32, AtomicType.FAA, null,
                true, null, 18515, null, false, 1, 14, true, null)).hasMessageContaining("--ip");
        assertThatThrownBy(() -> new PerftestPeer.Config(PerfTest.WRITE_BW, 8192, 10, 1, 32, AtomicType.FAA, null,
                false, "10.0.0.1", 18515, null, false, 1, 14, false, "10.0.0.2")).hasMessageContaining("-R");
        assertThat(new PerftestPeer.Config(PerfTest.WRITE_BW, 8192, 10, 1, 32, AtomicType.FAA, null, false,
                "10.0.0.1", 18515, null, false, 1, 14, true, null).localIp()).isNull();
    }

    @Test
    void rdmaCmTestQpsTakePerftestsConnParam() {
        PerftestPeer.Config read = new PerftestPeer.Config(PerfTest.READ_BW, 8192, 10, 1, 32, AtomicType.FAA, null,
                false, "10.0.0.1", 18515, null, false, 1, 14, true, null);
        io.rxe4j.verbs.cm.ConnectionParams p = PerftestPeer.testQpParams(read);
        assertThat(p.initiatorDepth()).isEqualTo(16);
        assertThat(p.responderResources()).isEqualTo(16);
        assertThat(p.retryCnt()).isEqualTo(7);
        assertThat(p.rnrRetry()).isEqualTo(7);
        assertThat(p.minRnrTimer()).isEqualTo(12);
        assertThat(p.ackTimeout()).isEqualTo(14);
        assertThat(p.privateData()).isEmpty();
        assertThat(p.pathMtu()).isNull();
        PerftestPeer.Config write = new PerftestPeer.Config(PerfTest.WRITE_BW, 8192, 10, 1, 32, AtomicType.FAA,
                Mtu.MTU_1024, false, "10.0.0.1", 18515, null, false, 1, 17, true, null);
        io.rxe4j.verbs.cm.ConnectionParams w = PerftestPeer.testQpParams(write);
        assertThat(w.initiatorDepth()).isZero();
        assertThat(w.responderResources()).isZero();
        assertThat(w.ackTimeout()).isEqualTo(17);
        assertThat(w.pathMtu()).isEqualTo(Mtu.MTU_1024);
        io.rxe4j.verbs.cm.ConnectionParams ctl = PerftestCmLink.params(14, java.time.Duration.ofSeconds(5));
        assertThat(ctl.initiatorDepth()).isZero();
        assertThat(ctl.responderResources()).isZero();
        assertThat(ctl.retryCnt()).isEqualTo(7);
        assertThat(ctl.rnrRetry()).isEqualTo(7);
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> rdmaCmCases() {
        java.util.stream.Stream.Builder<org.junit.jupiter.params.provider.Arguments> b = java.util.stream.Stream.builder();
        for (PerfTest t : PerfTest.values()) {
            b.add(org.junit.jupiter.params.provider.Arguments.of(t, 1));
        }
        b.add(org.junit.jupiter.params.provider.Arguments.of(PerfTest.WRITE_BW, 3));
        b.add(org.junit.jupiter.params.provider.Arguments.of(PerfTest.SEND_BW, 2));
        return b.build();
    }

    /** perftest -R between two rxe-perf peers: control QP and test QPs by rdma_cm (rxe4j's IB CM), loopback. */
    @ParameterizedTest(name = "{0} -q {1}")
    @org.junit.jupiter.params.provider.MethodSource("rdmaCmCases")
    @Timeout(120)
    void twoPerftestPeersRunEachTestWithRdmaCm(PerfTest test, int qps) throws Exception {
        int port = 18720 + test.ordinal() + 10 * qps;
        int size = test.op() == PerfTest.Op.ATOMIC ? 8 : test.latency() ? 2 : 8192;
        ByteArrayOutputStream srvOut = new ByteArrayOutputStream();
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> PerftestPeer.run(
                new PerftestPeer.Config(test, size, 300, qps, 32, AtomicType.FAA, Mtu.MTU_1024, true, null, port, null,
                        false, 1, 14, true, "127.0.0.2"), new PrintStream(srvOut, true, StandardCharsets.UTF_8),
                System.err));
        Thread.sleep(300); // the client retries while nothing listens (REJ 8) anyway
        ByteArrayOutputStream cliOut = new ByteArrayOutputStream();
        int rc = PerftestPeer.run(new PerftestPeer.Config(test, size, 300, qps, 32, AtomicType.FAA, Mtu.MTU_1024, false,
                "127.0.0.2", port, null, false, 1, 14, true, "127.0.0.1"), new PrintStream(cliOut, true,
                StandardCharsets.UTF_8), System.err);
        int serverRc = server.get(60, TimeUnit.SECONDS);
        String cli = cliOut.toString(StandardCharsets.UTF_8);
        String srv = srvOut.toString(StandardCharsets.UTF_8);
        System.out.println(cli + srv);
        assertThat(rc).as("client exit code").isZero();
        assertThat(serverRc).as("server exit code").isZero();
        assertThat(cli).contains("rdma_cm QPs     : ON").containsPattern("(?m)^ " + size + " +300 ");
        if (!test.latency() || test.op() == PerfTest.Op.WRITE || test.op() == PerfTest.Op.SEND) {
            assertThat(srv).containsPattern("(?m)^ " + size + " +300 ");
        }
    }
}
