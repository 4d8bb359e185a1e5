package io.rxe4j.examples.persist;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.examples.BufferAdvert;
import io.rxe4j.examples.RcEndpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * RDMA FLUSH with persistence across processes: a server JVM exposes a file-backed persistent MR,
 * this JVM WRITEs a seeded block into it and FLUSHes the range with PERSISTENT; once the FLUSH has
 * completed the server is killed ({@code SIGKILL}, no shutdown hooks, no unmapping), and a new
 * process opens the file and must find the block.
 *
 * <p>Note what this can and cannot show: the FLUSH completion orders "WRITE placed and range
 * forced" before the kill, and a fresh process then reads the data from the file. A killed process
 * does not lose dirty page-cache pages of a shared file mapping, so only a power cut between the
 * completion and the kernel's own write-back could tell {@code force} from no force; that is out of
 * reach of a unit test.
 */
class PersistenceTest {
    static final long PMEM_BYTES = 1L << 20;
    static final long BLOCK_OFF = 128L << 10;
    static final int BLOCK_LEN = 64 << 10;
    static final long SEED = 0xF1A5_4L;
    static final long TIMEOUT_S = 60;

    @TempDir
    Path dir;

    /** The seeded block both this test and {@link PmemChecker} compute. */
    static byte[] block(int length, long seed) {
        byte[] b = new byte[length];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        return b;
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void flushedBlockSurvivesServerKillAndIsFoundByNewProcess() throws Exception {
        Path file = dir.resolve("pmem.bin");
        Process server = start(PmemServer.class, file.toString(), Long.toString(PMEM_BYTES));
        try {
            CompletableFuture<int[]> ready = new CompletableFuture<>();
            relay(server, "[pmem-server] ", ready);
            int[] ports = ready.get(TIMEOUT_S, TimeUnit.SECONDS);
            InetAddress ip = InetAddress.getLoopbackAddress();
            try (RcEndpoint client = new RcEndpoint(new InetSocketAddress(ip, 0), BLOCK_LEN)) {
                BufferAdvert peer = client.connect(new InetSocketAddress(ip, ports[1]), ports[0], Mtu.MTU_1024,
                        RcEndpoint.DEFAULT_ACK_TIMEOUT, qp -> { });
                assertThat(peer.hasPmem()).as("server advertises a persistent MR").isTrue();
                assertThat(client.connection().remoteAddress().getPort()).isEqualTo(ports[1]);
                assertThat(peer.pmemLength()).isEqualTo(PMEM_BYTES);

                MemorySegment.copy(block(BLOCK_LEN, SEED), 0, client.segment(),
                        ValueLayout.JAVA_BYTE, 0, BLOCK_LEN);
                // the WRITE is unsignaled: only the FLUSH after it says "placed and durable"
                client.postSend(new SendWr().set(1, WrOpcode.RDMA_WRITE, 0,
                        new Sge(client.addr(), BLOCK_LEN, client.lkey())).remote(peer.pmemVa() + BLOCK_OFF,
                        peer.pmemRkey()));
                client.postSend(new SendWr().set(2, WrOpcode.FLUSH, SendFlags.SIGNALED)
                        .remote(peer.pmemVa() + BLOCK_OFF, peer.pmemRkey())
                        .flush(Flush.PERSISTENT, Flush.RANGE, BLOCK_LEN));
                WorkCompletion wc = client.awaitCompletion(TIMEOUT_S);
                assertThat(wc.status).as("FLUSH completion %s", wc).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode).isEqualTo(WcOpcode.FLUSH);
                assertThat(wc.wrId).isEqualTo(2);

                // the FLUSH is acknowledged: kill the server without letting it unmap or close anything
                server.destroyForcibly();
                assertThat(server.waitFor(TIMEOUT_S, TimeUnit.SECONDS)).as("server died").isTrue();
            }
        } finally {
            server.destroyForcibly();
        }

        assertThat(check(file, BLOCK_OFF, BLOCK_LEN, SEED)).as("checker exit code (0 = block found)").isZero();
        // the checker can fail: a different seed, and the untouched range before the block, are not found
        assertThat(check(file, BLOCK_OFF, BLOCK_LEN, SEED + 1)).as("checker with a wrong seed").isEqualTo(1);
        assertThat(check(file, 0, BLOCK_LEN, SEED)).as("checker on an unwritten range").isEqualTo(1);
    }

    private static int check(Path file, long offset, int length, long seed) throws Exception {
        Process checker = start(PmemChecker.class, file.toString(), Long.toString(offset), Integer.toString(length),
                Long.toString(seed));
        Thread out = relay(checker, "[pmem-checker] ", null);
        try {
            assertThat(checker.waitFor(TIMEOUT_S, TimeUnit.SECONDS)).as("checker finished").isTrue();
        } finally {
            checker.destroyForcibly();
        }
        out.join(TimeUnit.SECONDS.toMillis(10));
        return checker.exitValue();
    }

    private static Process start(Class<?> main, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                main.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Echoes the process's output; completes {@code ready} with the ports of its {@code READY} line. */
    private static Thread relay(Process p, String prefix, CompletableFuture<int[]> ready) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    System.out.println(prefix + line);
                    if (ready != null && line.startsWith("READY ")) {
                        String[] f = line.split(" ");
                        ready.complete(new int[] {Integer.parseInt(f[1]), Integer.parseInt(f[2])});
                    }
                }
            } catch (IOException | RuntimeException e) {
                System.out.println(prefix + "<output lost: " + e + ">");
            } finally {
                if (ready != null) {
                    ready.completeExceptionally(new IllegalStateException("server exited before READY"));
                }
            }
        }, "relay" + prefix.trim());
        t.setDaemon(true);
        t.start();
        return t;
    }
}
