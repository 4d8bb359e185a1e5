package io.rxe4j.examples.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code rxe-demo --pcap FILE}: the two-process demo passes, and its capture decodes in tshark as
 * RoCEv2 packet by packet (the demo's opcodes, TID RDMA's and the masked atomics' included) with
 * every ICRC right according to {@code pcap_icrc.py}. Skips without {@code ../shared} or tshark.
 */
class DemoPcapTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(300)
    void theDemosCaptureDecodesAsRocev2AndEveryIcrcChecksOut() throws Exception {
        Path pcap = dir.resolve("demo.pcap");
        int rc = new CommandLine(new DemoLauncher()).execute("--pcap", pcap.toString());
        assertThat(rc).as("demo exit code").isZero();
        assertThat(Files.size(pcap)).isGreaterThan(24);

        Path shared = Path.of(System.getProperty("rxe4j.shared", "../shared"));
        Path icrcTool = shared.resolve("kernel-rxe-vm/pcap_icrc.py");
        assumeTrue(Files.exists(icrcTool), "shared reference folder not found at " + shared.toAbsolutePath()
                + " (-Drxe4j.shared): the ICRC and decode checks are skipped");
        List<String> icrc = run("python3", icrcTool.toString(), pcap.toString());
        String summary = icrc.get(icrc.size() - 1);
        assertThat(summary).contains(" 0 bad").doesNotContain("ICRC: 0 ok");
        long ok = Long.parseLong(summary.replaceAll("^ICRC: (\\d+) ok.*$", "$1"));

        assumeTrue(Files.isExecutable(Path.of("/usr/bin/tshark")), "tshark is not installed: the decode check is skipped");
        List<String> ops = run("tshark", "-r", pcap.toString(), "-T", "fields", "-e", "infiniband.bth.opcode");
        assertThat(ops).hasSize((int) ok).allSatisfy(o -> assertThat(o).as("every packet decoded").isNotBlank());
        Map<Integer, Integer> byOp = new TreeMap<>();
        ops.forEach(o -> byOp.merge(Integer.decode(o), 1, Integer::sum));
        // the demo's operations: SEND_ONLY_IMM, WRITE FIRST, MIDDLE and LAST_IMM, READ, the atomics and their ACKs, FETCH_AND_ADD,
        // ATOMIC WRITE, FLUSH, the masked atomics (0xF0, 0xF1) and TID RDMA (0xE0..0xE7)
        // and UD SEND ONLY (0x64) of the UD exchange
        assertThat(byOp.keySet()).contains(0x05, 0x06, 0x07, 0x09, 0x0C, 0x11, 0x12, 0x13, 0x14, 0x1C, 0x1D, 0xE0, 0xE1, 0xE2, 0xE3,
                0xE4, 0xE5, 0xF0, 0xF1, 0x64);
        assertThat(byOp.get(0x64)).as("the UD datagrams and their echoes").isGreaterThanOrEqualTo(6);
        assertThat(byOp.get(0x14)).as("the 1,000 FETCH_AND_ADDs").isGreaterThanOrEqualTo(1000);
        // both connections were made by the IB CM on QP1, as Wireshark decodes it: REQ, REP, RTU, DREQ, DREP
        List<String> cm = run("tshark", "-r", pcap.toString(), "-Y", "infiniband.bth.destqp == 1", "-T", "fields",
                "-e", "infiniband.mad.attributeid");
        Map<Integer, Integer> byAttr = new TreeMap<>();
        cm.forEach(a -> byAttr.merge(Integer.decode(a), 1, Integer::sum));
        assertThat(byAttr).as("CM MADs by attribute").containsEntry(0x10, 2).containsEntry(0x13, 2)
                .containsEntry(0x14, 2).containsKeys(0x15, 0x16);

        // the Lua post-dissector names and decodes what Wireshark's InfiniBand dissector does not
        Path lua = Path.of("../tools/wireshark/rxe4j.lua").toAbsolutePath().normalize();
        List<String> rows = run("tshark", "-X", "lua_script:" + lua, "-r", pcap.toString(), "-T", "fields", "-E",
                "separator=;", "-e", "infiniband.bth.opcode", "-e", "rxe4j.opcode", "-e", "rxe4j.opfn", "-e",
                "rxe4j.kdeth.jkey", "-e", "rxe4j.kdeth.kver", "-e", "rxe4j.tid.verbs_qp", "-e", "rxe4j.tid.entries", "-e",
                "rxe4j.masked.compare_mask");
        assertThat(rows).hasSize((int) ok);
        int tid = 0;
        int masked = 0;
        for (String r : rows) {
            String[] c = r.split(";", -1);
            int op = Integer.decode(c[0]);
            if (op >= 0x60 && op <= 0x7F) {
                continue; // UD: OPFN and its BTH bit are RC's (tid-opfn-facts.md section 1)
            }
            assertThat(c[2]).as("OPFN bit on every RC packet of two OPFN devices: %s", r).isIn("1", "True");
            if (op >= 0xE0 && op <= 0xE7) {
                tid++;
                assertThat(c[1]).as(r).startsWith("TID_RDMA_");
                assertThat(c[3]).as("J_KEY of %s", r).isEqualTo("32");
                assertThat(c[4]).as("KVER of %s", r).isEqualTo("1");
                assertThat(c[5]).as("verbs_qp of %s", r).isNotEmpty();
                if (op == 0xE4 || op == 0xE1) {
                    assertThat(Integer.parseInt(c[6])).as("TID list of %s", r).isPositive();
                }
            } else if (op == 0xF0 || op == 0xF1) {
                masked++;
                assertThat(c[1]).as(r).isEqualTo(op == 0xF0 ? "RC_MASKED_COMPARE_SWAP" : "RC_MASKED_FETCH_ADD");
                if (op == 0xF0) {
                    assertThat(c[7]).as(r).isNotEmpty();
                }
            } else {
                assertThat(c[1]).as("no rxe4j opcode name for a standard opcode: %s", r).isEmpty();
            }
        }
        assertThat(tid).isEqualTo(byOp.entrySet().stream().filter(e -> e.getKey() >= 0xE0 && e.getKey() <= 0xE7)
                .mapToInt(Map.Entry::getValue).sum());
        assertThat(masked).isEqualTo(byOp.get(0xF0) + byOp.get(0xF1));
    }

    private static List<String> run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("%s exit code; output:%n%s", List.of(cmd), out).isZero();
        return out.lines().filter(l -> !l.isBlank()).toList();
    }
}
