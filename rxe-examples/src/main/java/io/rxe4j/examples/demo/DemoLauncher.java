package io.rxe4j.examples.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the whole demo: starts {@link DemoServer} and {@link DemoClient} as two separate JVM
 * processes on this machine (same Java, same class path), relays their output with a prefix, and
 * exits 0 only if both exit 0 within the time limit.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "Run the server and the client as two processes over UDP on 127.0.0.1.")
public final class DemoLauncher implements Callable<Integer> {
    @Option(names = "--mtu", description = "path MTU in bytes, passed to both processes (default, or 0: each side's port"
            + " active MTU: 4096 on loopback; TID RDMA needs 4096)")
    int mtu;

    @Option(names = "--ack-timeout", description = "local ACK timeout attribute of both QPs, 0..31, "
            + "4.096 us x 2^n (default: 17, about 537 ms, which survives a cold JVM; with --faults 14, "
            + "about 67 ms, so that each lost tail packet costs less)")
    Integer ackTimeout;

    @Option(names = "--pcap", paramLabel = "FILE", description = "capture the connection (every packet the client "
            + "sends and receives) to a pcap file (Wireshark, tshark; its ICRCs check out); both devices then use "
            + "UDP port 4791, the server on 127.0.0.1 and the client on 127.0.0.2, so that Wireshark recognises RoCEv2")
    java.nio.file.Path pcap;

    @Option(names = "--faults", paramLabel = "<spec>", description = "inject faults into the packets of both "
            + "processes, FaultSpec syntax, e.g. drop=0.02,dir=out (default: none)")
    String faults;

    @Option(names = "--fault-seed", description = "seed of both fault injectors, mixed with the side "
            + "(default: ${DEFAULT-VALUE})")
    long faultSeed = 1;

    @Option(names = "--timeout", description = "seconds before both processes are killed (default: ${DEFAULT-VALUE})")
    long timeoutSeconds = 180;

    @Override
    public Integer call() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("java.class.path");
        if (faults != null) {
            try {
                io.rxe4j.net.fault.FaultSpec.parse(faults); // reject a bad spec before starting anything
            } catch (IllegalArgumentException e) {
                System.err.println("bad --faults '" + faults + "': " + e.getMessage());
                return 2;
            }
        }
        // with --pcap both devices use the RoCEv2 port 4791, on two loopback addresses, as two hosts
        // would: Wireshark and pcap_icrc.py recognise RoCEv2 by that port
        List<String> serverArgs = new ArrayList<>(List.of(withFaults("server", "--mtu", Integer.toString(mtu))));
        if (pcap != null) {
            serverArgs.addAll(List.of("--bind", "127.0.0.1", "--udp-port", "4791"));
        }
        Process server = start(java, cp, serverArgs.toArray(String[]::new));
        CompletableFuture<int[]> port = new CompletableFuture<>();
        Thread serverOut = relay(server, "[server] ", port);
        int[] ports = port.get(60, TimeUnit.SECONDS); // the rdma_cm port and the server device's UDP port
        List<String> clientArgs = new ArrayList<>(List.of(withFaults("client", "--connect", "127.0.0.1:" + ports[0],
                "--server-udp-port", Integer.toString(ports[1]), "--mtu", Integer.toString(mtu))));
        if (pcap != null) {
            clientArgs.addAll(List.of("--pcap", pcap.toAbsolutePath().toString(), "--bind", "127.0.0.2", "--udp-port",
                    "4791"));
        }
        Process client = start(java, cp, clientArgs.toArray(String[]::new));
        Thread clientOut = relay(client, "[client] ", null);
        boolean clientDone = client.waitFor(timeoutSeconds, TimeUnit.SECONDS);
        boolean serverDone = server.waitFor(clientDone ? 30 : 1, TimeUnit.SECONDS);
        if (!clientDone || !serverDone) {
            client.destroyForcibly();
            server.destroyForcibly();
            System.out.println("DEMO FAILED: timed out after " + timeoutSeconds + " s");
            return 1;
        }
        clientOut.join(5000);
        serverOut.join(5000);
        int rc = client.exitValue() | server.exitValue();
        if (pcap != null) {
            System.out.println("capture of the client's packets: " + pcap.toAbsolutePath());
        }
        System.out.println(rc == 0 ? "DEMO PASSED (client and server exited 0)"
                : "DEMO FAILED (client exit " + client.exitValue() + ", server exit " + server.exitValue() + ")");
        return rc == 0 ? 0 : 1;
    }

    /** @return {@code args} plus {@code --ack-timeout}, and {@code --faults} and {@code --fault-seed} when a fault spec was given */
    private String[] withFaults(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        if (ackTimeout != null) {
            all.addAll(List.of("--ack-timeout", Integer.toString(ackTimeout)));
        }
        if (faults != null) {
            all.addAll(List.of("--faults", faults, "--fault-seed", Long.toString(faultSeed)));
        }
        return all.toArray(String[]::new);
    }

    private static Process start(String java, String cp, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp", cp,
                RxeDemo.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    private static Thread relay(Process p, String prefix, CompletableFuture<int[]> port) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (port != null && line.startsWith("LISTENING ")) {
                        String[] f = line.substring(10).trim().split(" ");
                        port.complete(new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])});
                    }
                    System.out.println(prefix + line);
                }
            } catch (IOException | NumberFormatException e) {
                System.out.println(prefix + "<output lost: " + e + ">");
            } finally {
                if (port != null) {
                    port.completeExceptionally(new IllegalStateException("server exited before listening"));
                }
            }
        }, "relay" + prefix.trim());
        t.setDaemon(true);
        t.start();
        return t;
    }
}
