package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rxe4j.testing.SharedDir;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.pcap.CapturingTransport;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The built-in capture: one device's pcap file of SEND, WRITE, READ, FETCH_AND_ADD, ATOMIC WRITE
 * and FLUSH decodes in tshark as InfiniBand (RoCEv2) packet by packet, with the opcodes, QPNs and
 * PSNs the engine used, and {@code pcap_icrc.py} finds every ICRC right. Over IPv4 and IPv6
 * addresses of the in-JVM fabric. Skips (with a message) without tshark or {@code ../shared}.
 */
class PcapCaptureTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.1/10.0.0.2", "fd00::1/fd00::2"})
    void aCaptureDecodesAsRocev2InTsharkAndEveryIcrcChecksOut(String ips) throws Exception {
        String[] ip = ips.split("/");
        Path pcap = dir.resolve("a.pcap");
        InJvmFabric fabric = new InJvmFabric();
        CapturingTransport capture = new CapturingTransport(fabric.newTransport(new InetSocketAddress(ip[0], 4791)), pcap);
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
                | Access.FLUSH_GLOBAL;
        long sent;
        long received;
        int qpnA;
        int qpnB;
        try (RcPair p = new RcPair(RdmaDevice.open(capture), RdmaDevice.open(fabric.newTransport(
                new InetSocketAddress(ip[1], 4791))), 1 << 16, access, access, Mtu.MTU_1024)) {
            qpnA = p.a.qp.qpNum();
            qpnB = p.b.qp.qpNum();
            long la = p.a.mr.addr();
            long lb = p.b.mr.addr();
            int lk = p.a.mr.lkey();
            int rk = p.b.mr.rkey();
            p.b.qp.postRecv(new RecvWr().set(1, new Sge(lb + 8192, 4096, p.b.mr.lkey())));
            p.a.qp.postSend(new SendWr().send(1).inline("over the wire".getBytes(StandardCharsets.US_ASCII)).signaled());
            p.a.qp.postSend(new SendWr().rdmaWrite(2, lb, rk, new Sge(la, 3000, lk)).signaled()); // 3 packets
            p.a.qp.postSend(new SendWr().rdmaRead(3, lb, rk, new Sge(la + 4096, 2500, lk)).signaled());
            p.a.qp.postSend(new SendWr().fetchAndAdd(4, lb + 16384, rk, 7, new Sge(la + 16384, 8, lk)).signaled());
            p.a.qp.postSend(new SendWr().atomicWrite(5, lb + 16392, rk, 99).signaled());
            p.a.qp.postSend(new SendWr().flush(6, lb, rk, Flush.GLOBAL, Flush.RANGE, 4096).signaled());
            assertThat(p.a.drain(6)).extracting(w -> w.status).containsOnly(WcStatus.SUCCESS);
            assertThat(p.b.next().status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 16384)).isEqualTo(7);
            sent = p.a.dev.counter(Counter.SENT_PKTS);
            received = p.a.dev.counter(Counter.RCVD_PKTS);
        } // closes the devices, the transport and the file
        assertThat(capture.writer().records()).isEqualTo(sent + received);

        Path shared = SharedDir.present() ? SharedDir.resolve("kernel-rxe-vm/pcap_icrc.py") : null;
        assumeTrue(shared != null && Files.exists(shared), SharedDir.MISSING);
        List<String> icrc = run(List.of("python3", shared.toString(), pcap.toString()));
        assertThat(icrc.get(icrc.size() - 1)).as("pcap_icrc.py summary: %s", icrc)
                .contains((sent + received) + " ok").contains("0 bad");

        assumeTrue(onPath("tshark"), "tshark is not installed (Debian package tshark): the decode check is skipped");
        List<String> rows = run(List.of("tshark", "-r", pcap.toString(), "-T",
                "fields", "-E", "separator=,", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e",
                "infiniband.bth.psn", "-e", "ip.src", "-e", "ipv6.src"));
        assertThat(rows).hasSize((int) (sent + received));
        List<Integer> opsFromA = new ArrayList<>();
        int firstPsn = -1;
        int lastPsn = -1;
        for (String r : rows) {
            String[] f = r.split(",", -1);
            assertThat(f[0]).as("decoded as InfiniBand: %s", r).isNotEmpty();
            int op = Integer.decode(f[0]);
            int qpn = Integer.decode(f[1]);
            int psn = Integer.parseInt(f[2]);
            boolean fromA = (f[3] + f[4]).equals(ip[0]);
            assertThat(qpn).as("destination QP of %s", r).isEqualTo(fromA ? qpnB : qpnA);
            if (fromA) {
                opsFromA.add(op);
                if (firstPsn < 0) {
                    firstPsn = psn;
                }
                lastPsn = psn;
            }
        }
        // SEND ONLY, WRITE FIRST/MIDDLE/LAST, READ REQUEST, FETCH_AND_ADD, ATOMIC WRITE, FLUSH
        assertThat(opsFromA).containsExactly(0x04, 0x06, 0x07, 0x08, 0x0C, 0x14, 0x1D, 0x1C);
        // one PSN per packet, the READ reserving one per response packet (2500 B = 3 at MTU 1024)
        assertThat(lastPsn - firstPsn).isEqualTo(1 + 3 + 3 + 1 + 1);
    }

    @org.junit.jupiter.api.Test
    void aCaptureThatCannotWriteStopsCapturingAndTheDeviceGoesOn() throws Exception {
        Path full = Path.of("/dev/full");
        assumeTrue(Files.isWritable(full), "no /dev/full on this system");
        InJvmFabric fabric = new InJvmFabric();
        CapturingTransport capture = new CapturingTransport(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)),
                full);
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
        try (RcPair p = new RcPair(RdmaDevice.open(capture), RdmaDevice.open(fabric.newTransport(
                new InetSocketAddress("10.0.0.2", 4791))), 1 << 16, access, access, Mtu.MTU_1024)) {
            for (int i = 0; i < 100; i++) {
                p.a.qp.postSend(new SendWr().rdmaWrite(i, p.b.mr.addr(), p.b.mr.rkey(),
                        new Sge(p.a.mr.addr(), 4000, p.a.mr.lkey())).signaled());
            }
            assertThat(p.a.drain(100)).extracting(w -> w.status).containsOnly(WcStatus.SUCCESS);
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
        assertThat(capture.writer().failures()).as("packets the full disk could not take").isPositive();
    }

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }

    private static List<String> run(List<String> cmd) throws IOException, InterruptedException {
        // stderr apart: tshark warns there (e.g. about running as root)
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("%s exit code; output:%n%s", cmd, out).isZero();
        return out.lines().filter(l -> !l.isBlank()).toList();
    }
}
