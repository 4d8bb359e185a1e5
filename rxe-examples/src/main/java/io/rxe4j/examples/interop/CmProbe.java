package io.rxe4j.examples.interop;

import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.cm.ib.IbCm;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A live check of rxe4j's IB CM against librdmacm peers ({@code cm-facts.md} §7.1), before the
 * public API speaks it: as the <b>active</b> side it connects an RC QP to a peer's rdma_cm listener
 * ({@code rping -s}: REQ, the kernel's REP, our RTU), reports the connection, and disconnects (DREQ,
 * the kernel's DREP); with {@code --listen} it listens on the port, accepts the first REQ ({@code
 * rping -c}'s) with an RC QP (our REP, the kernel's RTU), then waits for the peer's DREQ or
 * disconnects itself after {@code --hold} seconds. Exit code 0 when the connection was established
 * and then ended cleanly.
 */
@Command(name = "cm-probe", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "Connect to (or accept) a librdmacm peer through rxe4j's IB CM on QP1, then disconnect.")
public final class CmProbe implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "PEER", description = "the peer's IP: connect to it (else --listen)")
    String peer;

    @Option(names = {"-g", "--ip"}, required = true, description = "local IP to bind the UDP transport to")
    String ip;

    @Option(names = {"-p", "--port"}, description = "rdma_cm port, TCP port space (default ${DEFAULT-VALUE}: rping's)")
    int port = 7174;

    @Option(names = "--listen", description = "accept the first connection on the port instead")
    boolean listen;

    @Option(names = "--hold", description = "--listen: seconds to keep the connection before disconnecting, "
            + "unless the peer disconnects first (default ${DEFAULT-VALUE})")
    int holdSeconds = 3;

    @Option(names = "--timeout", description = "seconds to wait for the connection (default ${DEFAULT-VALUE})")
    int timeoutSeconds = 60;

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new CmProbe()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if ((peer == null) != listen) {
            System.err.println("cm-probe: give a PEER to connect to, or --listen");
            return 2;
        }
        InetAddress local = InteropDevice.resolve(ip);
        try (InteropDevice dev = new InteropDevice(local, IbCm.ROCE_PORT, IcrcMode.AUTO, false)) {
            ProtectionDomain pd = dev.device().allocPd();
            CompletionQueue cq = dev.device().createCq(64);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq, cq));
            IbCm cm = IbCm.of(dev.device());
            try {
                return run(dev, qp, cm);
            } finally {
                dev.device().closeAll();
            }
        }
    }

    private int run(InteropDevice dev, QueuePair qp, IbCm cm) throws Exception {
        {
            IbCm.Connection c;
            try {
                if (listen) {
                    CompletableFuture<IbCm.Connection> accepted = new CompletableFuture<>();
                    cm.listen(port, req -> {
                        System.out.println("REQ from " + req.peer() + ": " + req.cmaHeader());
                        req.accept(qp, IbCm.Options.defaults(), new byte[0]).whenComplete((conn, t) -> {
                            if (t != null) {
                                accepted.completeExceptionally(t);
                            } else {
                                accepted.complete(conn);
                            }
                        });
                    });
                    System.out.println("listening on rdma_cm port " + port + " (QP1 of " + dev.device().address() + ")");
                    System.out.flush();
                    c = accepted.get(timeoutSeconds, TimeUnit.SECONDS);
                } else {
                    InetAddress p = InteropDevice.resolve(peer);
                    c = cm.connect(qp, new InetSocketAddress(p, IbCm.ROCE_PORT), port, IbCm.Options.defaults(),
                            new byte[0]).get(timeoutSeconds, TimeUnit.SECONDS);
                }
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                System.out.println("FAILED: no connection: " + (e.getCause() != null ? e.getCause() : e));
                System.out.println("rxe4j counters: " + dev.counters());
                return 1;
            }
            System.out.println("ESTABLISHED: QP 0x" + Integer.toHexString(qp.qpNum()) + " <-> QP 0x"
                    + Integer.toHexString(c.remoteQpn()) + " at " + c.peer() + ", QP " + qp.state());
            boolean byPeer = false;
            if (listen) {
                try {
                    c.disconnected().get(holdSeconds, TimeUnit.SECONDS);
                    byPeer = true;
                } catch (java.util.concurrent.TimeoutException stillUp) {
                    // we end it
                }
            }
            if (!byPeer) {
                c.disconnect().get(30, TimeUnit.SECONDS);
            }
            System.out.println("DISCONNECTED (" + (byPeer ? "by the peer's DREQ" : "our DREQ, the peer's DREP") + "); QP "
                    + qp.state());
            System.out.println("rxe4j counters: " + dev.counters());
            return 0;
        }
    }
}
