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

    @Option(names = "--udaddy", description = "udaddy's exchange instead: SIDR on rdma_cm's UDP port space, then "
            + "10 UD SEND_WITH_IMMs of 100 bytes (imm = the sender's QPN) each way, the client first")
    boolean udaddy;

    @Option(names = "--exchange", description = "rdma_client/rdma_server's exchange once connected: a receive "
            + "posted before the connection, a 16-byte SEND each way (the client first), then the client disconnects")
    boolean exchange;

    @Option(names = "--cmatose", description = "ucmatose's exchange once connected: 10 receives of 100 bytes posted "
            + "before the connection, the server SENDs 10 messages, the client answers with 10, the server disconnects")
    boolean cmatose;

    @Option(names = "--public-api", description = "connect through the public connection manager (RdmaListener, "
            + "RdmaConnection) instead of the IB CM's internal API; with --exchange or alone")
    boolean publicApi;

    static final int UD_MESSAGES = 10;
    static final int UD_SIZE = 100;

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
                if (publicApi) {
                    qp.close();
                    return runPublic(dev, pd, cq);
                }
                return udaddy ? udaddy(dev, pd, cm) : run(dev, qp, cm, cq);
            } finally {
                dev.device().closeAll();
            }
        }
    }

    /**
     * The same flows through the public API: {@code RdmaListener.accept} or {@code RdmaConnection.connect}
     * (the receive of --exchange posted in the hook, before the REQ or REP), then as {@link #run}.
     */
    private int runPublic(InteropDevice dev, ProtectionDomain pd, CompletionQueue cq) throws Exception {
        if (udaddy || cmatose) {
            System.out.println("FAILED: --public-api goes with --exchange or alone");
            return 2;
        }
        io.rxe4j.verbs.MemoryRegion msgs = pd.allocMr(32, io.rxe4j.verbs.Access.LOCAL_WRITE);
        io.rxe4j.verbs.cm.ConnectionParams params = io.rxe4j.verbs.cm.ConnectionParams.defaults()
                .withTimeout(java.time.Duration.ofSeconds(timeoutSeconds));
        java.util.function.Consumer<QueuePair> before = exchange
                ? q -> q.postRecv(new io.rxe4j.verbs.RecvWr().set(1, new io.rxe4j.verbs.Sge(msgs.addr(), 16, msgs.lkey())))
                : q -> { };
        io.rxe4j.verbs.cm.RdmaConnection c;
        try {
            if (listen) {
                try (io.rxe4j.verbs.cm.RdmaListener l = io.rxe4j.verbs.cm.RdmaListener.listen(dev.device(), port)) {
                    System.out.println("listening on rdma_cm port " + port + " (RdmaListener on " + dev.device().address()
                            + ")");
                    System.out.flush();
                    io.rxe4j.verbs.cm.ConnectRequest r = l.getRequest(java.time.Duration.ofSeconds(timeoutSeconds));
                    if (r == null) {
                        System.out.println("FAILED: no connect request within " + timeoutSeconds + " s");
                        return 1;
                    }
                    System.out.println("request: " + r + " from " + r.sourceAddress());
                    c = r.accept(pd, cq, cq, params, before);
                }
            } else {
                c = io.rxe4j.verbs.cm.RdmaConnection.connect(pd, cq, cq,
                        new InetSocketAddress(InteropDevice.resolve(peer), port), params, before);
            }
        } catch (io.rxe4j.verbs.cm.RdmaCmException e) {
            System.out.println("FAILED: no connection: " + e.getMessage());
            System.out.println("rxe4j counters: " + dev.counters());
            return 1;
        }
        System.out.println("ESTABLISHED: " + c + ", path MTU " + c.pathMtu().bytes() + ", QP " + c.qp().state());
        if (exchange && !sendRecv(c.qp(), msgs, cq)) {
            return 1;
        }
        boolean byPeer = listen && c.awaitDisconnect(java.time.Duration.ofSeconds(holdSeconds));
        if (!byPeer) {
            c.disconnectAsync().get(30, TimeUnit.SECONDS);
        }
        System.out.println("DISCONNECTED (" + c.disconnectReason() + "); QP " + c.qp().state());
        System.out.println("rxe4j counters: " + dev.counters());
        c.close();
        return 0;
    }

    private int run(InteropDevice dev, QueuePair qp, IbCm cm, CompletionQueue cq) throws Exception {
        io.rxe4j.verbs.MemoryRegion msgs = qp.pd().allocMr(32 + 2L * UD_MESSAGES * UD_SIZE,
                io.rxe4j.verbs.Access.LOCAL_WRITE);
        if (cmatose) {
            qp.modify(new io.rxe4j.verbs.QpAttr().state(io.rxe4j.verbs.QpState.INIT).pkeyIndex(0).port(1)
                    .accessFlags(io.rxe4j.verbs.Access.LOCAL_WRITE | io.rxe4j.verbs.Access.REMOTE_WRITE
                            | io.rxe4j.verbs.Access.REMOTE_READ));
            for (int i = 0; i < UD_MESSAGES; i++) {
                qp.postRecv(new io.rxe4j.verbs.RecvWr().set(10 + i, new io.rxe4j.verbs.Sge(msgs.addr() + 32
                        + (long) i * UD_SIZE, UD_SIZE, msgs.lkey())));
            }
        }
        if (exchange) { // the receive goes before the connection, as rdma_post_recv before rdma_connect/rdma_accept
            qp.modify(new io.rxe4j.verbs.QpAttr().state(io.rxe4j.verbs.QpState.INIT).pkeyIndex(0).port(1)
                    .accessFlags(io.rxe4j.verbs.Access.LOCAL_WRITE | io.rxe4j.verbs.Access.REMOTE_WRITE
                            | io.rxe4j.verbs.Access.REMOTE_READ));
            qp.postRecv(new io.rxe4j.verbs.RecvWr().set(1, new io.rxe4j.verbs.Sge(msgs.addr(), 16, msgs.lkey())));
        }
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
            if (exchange && !sendRecv(qp, msgs, cq)) {
                return 1;
            }
            if (cmatose) {
                // the server sends first; the client answers; the server then disconnects (cmatose.c run_server)
                if (listen && (!sendMany(qp, msgs, cq) || !awaitMany(cq, io.rxe4j.verbs.WcOpcode.RECV))
                        || !listen && (!awaitMany(cq, io.rxe4j.verbs.WcOpcode.RECV) || !sendMany(qp, msgs, cq))) {
                    return 1;
                }
                System.out.println("cmatose exchange: " + UD_MESSAGES + " SENDs of " + UD_SIZE + " bytes each way");
                if (!listen) {
                    c.disconnected().get(timeoutSeconds, TimeUnit.SECONDS);
                    System.out.println("DISCONNECTED (by the server's DREQ, as ucmatose does); QP " + qp.state());
                    System.out.println("rxe4j counters: " + dev.counters());
                    return 0;
                }
                holdSeconds = 0; // the server disconnects at once
            }
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

    /** udaddy's flow ({@code librdmacm/examples/udaddy.c}) on a UD QP, as client or server. */
    private int udaddy(InteropDevice dev, ProtectionDomain pd, IbCm cm) throws Exception {
        CompletionQueue cq = dev.device().createCq(4 * UD_MESSAGES);
        QueuePair ud = pd.createQp(new QpInitAttr(cq, cq, new io.rxe4j.verbs.QpCaps(UD_MESSAGES, UD_MESSAGES, 1, 1, 0),
                io.rxe4j.verbs.QpType.UD, false));
        io.rxe4j.verbs.MemoryRegion mr = pd.allocMr((long) UD_MESSAGES * (40 + UD_SIZE) + UD_SIZE,
                io.rxe4j.verbs.Access.LOCAL_WRITE);
        int qkey;
        InetSocketAddress to;
        int remoteQpn;
        CompletableFuture<InetSocketAddress> asked = new CompletableFuture<>();
        if (listen) {
            qkey = IbCm.RDMA_UDP_QKEY;
            up(ud, qkey, mr);
            cm.listenUd(port, (from, cma, data) -> {
                System.out.println("SIDR_REQ from " + from + ": " + cma);
                asked.complete(from);
                return new IbCm.SidrAnswer(ud.qpNum(), qkey, new byte[0]);
            });
            System.out.println("listening on rdma_cm port " + port + " (UDP space, QP1 of " + dev.device().address() + ")");
            System.out.flush();
            to = asked.get(timeoutSeconds, TimeUnit.SECONDS);
            // the client's QPN arrives as the immediate data of its datagrams (udaddy's create_reply_ah)
            io.rxe4j.verbs.WorkCompletion first = awaitRecvs(cq, ud, UD_MESSAGES, -1);
            if (first == null) {
                return 1;
            }
            remoteQpn = first.immData;
        } else {
            IbCm.SidrAnswer a;
            try {
                a = cm.resolveUd(new InetSocketAddress(InteropDevice.resolve(peer), IbCm.ROCE_PORT), port, new byte[0])
                        .get(timeoutSeconds, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                System.out.println("FAILED: SIDR: " + e.getCause());
                return 1;
            }
            System.out.println("SIDR_REP: QPN 0x" + Integer.toHexString(a.qpn()) + ", Q_Key 0x" + Integer.toHexString(a.qkey()));
            qkey = a.qkey(); // rdma_cm gives the id the answered Q_Key (cma_set_qkey): the replies carry it
            up(ud, qkey, mr);
            to = new InetSocketAddress(InteropDevice.resolve(peer), IbCm.ROCE_PORT);
            remoteQpn = a.qpn();
        }
        try (io.rxe4j.verbs.AddressHandle ah = pd.createAh(io.rxe4j.verbs.AhAttr.of(to))) {
            long at = (long) UD_MESSAGES * (40 + UD_SIZE);
            for (int i = 0; i < UD_MESSAGES; i++) {
                ud.postSend(new io.rxe4j.verbs.SendWr().sendWithImm(100 + i, ud.qpNum(), new io.rxe4j.verbs.Sge(
                        mr.addr() + at, UD_SIZE, mr.lkey())).ud(ah, remoteQpn, qkey).signaled());
            }
            System.out.println("sent " + UD_MESSAGES + " datagrams to QP 0x" + Integer.toHexString(remoteQpn) + " at " + to);
            if (!listen && awaitRecvs(cq, ud, UD_MESSAGES, remoteQpn) == null) {
                return 1;
            }
        }
        System.out.println("udaddy exchange complete: " + UD_MESSAGES + " datagrams each way");
        return 0;
    }

    private static void up(QueuePair ud, int qkey, io.rxe4j.verbs.MemoryRegion mr) {
        ud.modify(new io.rxe4j.verbs.QpAttr().state(io.rxe4j.verbs.QpState.INIT).pkeyIndex(0).port(1).qkey(qkey));
        ud.modify(new io.rxe4j.verbs.QpAttr().state(io.rxe4j.verbs.QpState.RTR));
        ud.modify(new io.rxe4j.verbs.QpAttr().state(io.rxe4j.verbs.QpState.RTS).sqPsn(0));
        for (int i = 0; i < UD_MESSAGES; i++) {
            ud.postRecv(new io.rxe4j.verbs.RecvWr().set(i, new io.rxe4j.verbs.Sge(mr.addr() + (long) i * (40 + UD_SIZE),
                    40 + UD_SIZE, mr.lkey())));
        }
    }

    /**
     * Waits for {@code n} receive completions (send completions on the same CQ are skipped), each
     * SUCCESS with 40 + 100 bytes and, when {@code srcQp} is not -1, from that QP.
     *
     * @return the first receive completion, or null after printing why
     */
    private io.rxe4j.verbs.WorkCompletion awaitRecvs(CompletionQueue cq, QueuePair ud, int n, int srcQp) {
        io.rxe4j.verbs.WorkCompletion[] wc = {new io.rxe4j.verbs.WorkCompletion()};
        io.rxe4j.verbs.WorkCompletion first = null;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        int got = 0;
        while (got < n) {
            if (cq.poll(wc) == 0) {
                if (System.nanoTime() > end) {
                    System.out.println("FAILED: " + got + " of " + n + " datagrams arrived");
                    return null;
                }
                cq.await(10_000_000L);
                continue;
            }
            io.rxe4j.verbs.WorkCompletion w = wc[0];
            if (w.opcode == io.rxe4j.verbs.WcOpcode.SEND) {
                continue;
            }
            if (w.status != io.rxe4j.verbs.WcStatus.SUCCESS || w.byteLen != 40 + UD_SIZE
                    || (srcQp != -1 && w.srcQp != srcQp)) {
                System.out.println("FAILED: datagram completion " + w);
                return null;
            }
            if (first == null) {
                first = new io.rxe4j.verbs.WorkCompletion();
                first.copyFrom(w);
            }
            got++;
        }
        System.out.println("received " + n + " datagrams from QP 0x" + Integer.toHexString(first.srcQp));
        return first;
    }

    /** rdma_client: SEND, then its completion and the server's SEND; rdma_server: the client's SEND, then ours. */
    private boolean sendRecv(QueuePair qp, io.rxe4j.verbs.MemoryRegion msgs, CompletionQueue cq) {
        io.rxe4j.verbs.WorkCompletion[] wc = {new io.rxe4j.verbs.WorkCompletion()};
        boolean sent = false;
        boolean received = false;
        if (!listen) {
            qp.postSend(new io.rxe4j.verbs.SendWr().send(2, new io.rxe4j.verbs.Sge(msgs.addr() + 16, 16, msgs.lkey()))
                    .signaled());
        }
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (!sent || !received) {
            if (cq.poll(wc) == 0) {
                if (System.nanoTime() > end) {
                    System.out.println("FAILED: the exchange did not complete (sent " + sent + ", received " + received + ")");
                    return false;
                }
                cq.await(10_000_000L);
                continue;
            }
            io.rxe4j.verbs.WorkCompletion w = wc[0];
            if (w.status != io.rxe4j.verbs.WcStatus.SUCCESS || w.byteLen != 16) {
                System.out.println("FAILED: " + w + "; " + qp.errorReason());
                return false;
            }
            if (w.opcode == io.rxe4j.verbs.WcOpcode.RECV) {
                received = true;
                if (listen) { // rdma_server answers once the client's message is in
                    qp.postSend(new io.rxe4j.verbs.SendWr().send(2, new io.rxe4j.verbs.Sge(msgs.addr() + 16, 16,
                            msgs.lkey())).signaled());
                }
            } else {
                sent = true;
            }
        }
        System.out.println("exchange: a 16-byte SEND each way");
        return true;
    }

    /** Posts {@value #UD_MESSAGES} signaled SENDs of {@value #UD_SIZE} bytes and waits for their completions. */
    private boolean sendMany(QueuePair qp, io.rxe4j.verbs.MemoryRegion msgs, CompletionQueue cq) {
        long at = 32 + (long) UD_MESSAGES * UD_SIZE;
        for (int i = 0; i < UD_MESSAGES; i++) {
            qp.postSend(new io.rxe4j.verbs.SendWr().send(30 + i, new io.rxe4j.verbs.Sge(msgs.addr() + at, UD_SIZE,
                    msgs.lkey())).signaled());
        }
        return awaitMany(cq, io.rxe4j.verbs.WcOpcode.SEND);
    }

    /** Waits for {@value #UD_MESSAGES} successful completions of {@code op} of {@value #UD_SIZE} bytes. */
    private boolean awaitMany(CompletionQueue cq, io.rxe4j.verbs.WcOpcode op) {
        io.rxe4j.verbs.WorkCompletion[] wc = {new io.rxe4j.verbs.WorkCompletion()};
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        int got = 0;
        while (got < UD_MESSAGES) {
            if (cq.poll(wc) == 0) {
                if (System.nanoTime() > end) {
                    System.out.println("FAILED: " + got + " of " + UD_MESSAGES + " " + op + " completions");
                    return false;
                }
                cq.await(10_000_000L);
                continue;
            }
            if (wc[0].status != io.rxe4j.verbs.WcStatus.SUCCESS || wc[0].opcode != op || wc[0].byteLen != UD_SIZE) {
                System.out.println("FAILED: " + wc[0] + " while waiting for " + op);
                return false;
            }
            got++;
        }
        return true;
    }
}
