package io.rxe4j.examples.interop;

import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ib.IbCm;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * rping ({@code librdmacm/examples/rping.c}) on rxe4j, through rxe4j's IB CM on QP1, as client or
 * server, speaking rping's data protocol so that the kernel's {@code rping} is its peer: per ping the
 * client SENDs the address, rkey and size of its start buffer ({@code struct rping_rdma_info}, 16
 * bytes, big-endian), the server RDMA READs it and SENDs a go-ahead, the client SENDs its RDMA
 * buffer's, the server RDMA WRITEs what it read there and SENDs the next go-ahead, and the client
 * checks that the RDMA buffer equals the start buffer ({@code -V}). The buffers hold {@code
 * "rdma-ping-N: "} and a rotating alphabet, NUL-terminated, as rping fills them. The client
 * disconnects after {@code -C} pings; the server serves until its client disconnects. Exit code 0
 * when every ping checked out.
 */
@Command(name = "rxe-rping", sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "rping on rxe4j (IB CM on QP1, rping's SEND/READ/WRITE protocol), client or server.")
public final class RxeRping implements Callable<Integer> {
    static final int INFO = 16;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "this help")
    boolean help;

    @Option(names = "--version", versionHelp = true, description = "the rxe4j version (rping's -V is validation)")
    boolean version;

    @Option(names = "-c", description = "client (connect to -a)")
    boolean client;

    @Option(names = "-s", description = "server (listen)")
    boolean server;

    @Option(names = "-a", description = "client: the server's IP")
    String address;

    @Option(names = {"-g", "--ip"}, required = true, description = "local IP to bind the UDP transport to")
    String ip;

    @Option(names = "-p", description = "rdma_cm port (default ${DEFAULT-VALUE})")
    int port = 7174;

    @Option(names = "-C", description = "client: pings (default ${DEFAULT-VALUE})")
    int count = 10;

    @Option(names = "-S", description = "buffer size in bytes, as rping's -S (default ${DEFAULT-VALUE})")
    int size = 64;

    @Option(names = "-V", description = "client: check each echo against the start buffer (always done here)")
    boolean validate;

    @Option(names = "--timeout", description = "seconds to wait for any step (default ${DEFAULT-VALUE})")
    int timeoutSeconds = 30;

    private QueuePair qp;
    private CompletionQueue cq;
    private MemoryRegion bufs;
    private final WorkCompletion[] wc = {new WorkCompletion()};

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RxeRping()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (client == server || (client && address == null) || size < INFO) {
            System.err.println("rxe-rping: give -c -a SERVER or -s, and -S of at least 16");
            return 2;
        }
        try (InteropDevice dev = new InteropDevice(InteropDevice.resolve(ip), IbCm.ROCE_PORT, IcrcMode.AUTO, false)) {
            try {
                return run(dev);
            } finally {
                System.out.println("rxe4j counters: " + dev.counters());
                dev.device().closeAll();
            }
        }
    }

    // buffer layout in one MR: recv info | send info | start buffer | rdma buffer
    private long recvAt() { return 0; }
    private long sendAt() { return INFO; }
    private long startAt() { return 2 * INFO; }
    private long rdmaAt() { return 2 * INFO + size; }

    private int run(InteropDevice dev) throws Exception {
        ProtectionDomain pd = dev.device().allocPd();
        cq = dev.device().createCq(64);
        qp = pd.createQp(new QpInitAttr(cq, cq, new QpCaps(16, 2, 1, 1, 0), QpType.RC, false));
        bufs = pd.allocMr(2L * INFO + 2L * size, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE));
        postRecv();
        IbCm cm = IbCm.of(dev.device());
        IbCm.Connection c;
        if (client) {
            c = cm.connect(qp, new InetSocketAddress(InteropDevice.resolve(address), IbCm.ROCE_PORT), port,
                    IbCm.Options.defaults(), new byte[0]).get(timeoutSeconds, TimeUnit.SECONDS);
        } else {
            CompletableFuture<IbCm.Connection> accepted = new CompletableFuture<>();
            cm.listen(port, req -> req.accept(qp, IbCm.Options.defaults(), new byte[0]).whenComplete((x, t) -> {
                if (t != null) {
                    accepted.completeExceptionally(t);
                } else {
                    accepted.complete(x);
                }
            }));
            System.out.println("listening on rdma_cm port " + port);
            System.out.flush();
            c = accepted.get(timeoutSeconds * 4L, TimeUnit.SECONDS);
        }
        System.out.println("connected: QP 0x" + Integer.toHexString(qp.qpNum()) + " <-> QP 0x"
                + Integer.toHexString(c.remoteQpn()) + " at " + c.peer());
        return client ? runClient(c) : runServer(c);
    }

    private int runClient(IbCm.Connection c) throws Exception {
        MemorySegment m = bufs.segment();
        int start = 65;
        for (int ping = 0; ping < count; ping++) {
            byte[] msg = String.format("rdma-ping-%d: ", ping).getBytes(StandardCharsets.US_ASCII);
            int cc = Math.min(msg.length, size);
            MemorySegment.copy(msg, 0, m, ValueLayout.JAVA_BYTE, startAt(), cc);
            int ch = start;
            for (int i = cc; i < size; i++) {
                m.set(ValueLayout.JAVA_BYTE, startAt() + i, (byte) ch);
                if (++ch > 122) {
                    ch = 65;
                }
            }
            if (++start > 122) {
                start = 65;
            }
            m.set(ValueLayout.JAVA_BYTE, startAt() + size - 1, (byte) 0);
            m.asSlice(rdmaAt(), size).fill((byte) 0);
            sendInfo(bufs.addr() + startAt());
            if (!awaitRecv("the server's go-ahead after its READ")) {
                return 1;
            }
            sendInfo(bufs.addr() + rdmaAt());
            if (!awaitRecv("the server's go-ahead after its WRITE")) {
                return 1;
            }
            if (m.asSlice(startAt(), size).mismatch(m.asSlice(rdmaAt(), size)) >= 0) {
                System.out.println("FAILED: data mismatch in ping " + ping);
                return 1;
            }
            System.out.println("ping data: " + cString(rdmaAt()));
        }
        c.disconnect().get(timeoutSeconds, TimeUnit.SECONDS);
        System.out.println("rping client: " + count + " pings checked, disconnected");
        return 0;
    }

    private int runServer(IbCm.Connection c) throws Exception {
        MemorySegment m = bufs.segment();
        int pings = 0;
        while (true) {
            WorkCompletion w = next(c);
            if (w == null) {
                System.out.println("rping server: the client disconnected after " + pings + " pings");
                return pings > 0 ? 0 : 1;
            }
            if (!recvOk(w)) {
                return 1;
            }
            // RDMA_READ_ADV: read the client's start buffer
            long addr = m.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), recvAt());
            int rkey = m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), recvAt() + 8);
            int len = m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), recvAt() + 12);
            if (len <= 0 || len > size) {
                System.out.println("FAILED: the client advertised " + len + " bytes, the buffer has " + size);
                return 1;
            }
            postRecv();
            qp.postSend(new SendWr().rdmaRead(1, addr, rkey, new Sge(bufs.addr() + rdmaAt(), len, bufs.lkey())).signaled());
            if (!awaitOp(WcOpcode.RDMA_READ)) {
                return 1;
            }
            String data = cString(rdmaAt());
            if (!data.startsWith("rdma-ping-")) {
                System.out.println("FAILED: the READ brought '" + data + "'");
                return 1;
            }
            System.out.println("server ping data: " + data);
            goAhead();
            w = next(c);
            if (w == null || !recvOk(w)) {
                System.out.println("FAILED: no RDMA buffer advertisement");
                return 1;
            }
            addr = m.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), recvAt());
            rkey = m.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), recvAt() + 8);
            postRecv();
            int n = data.length() + 1; // strlen + 1, as rping
            qp.postSend(new SendWr().rdmaWrite(2, addr, rkey, new Sge(bufs.addr() + rdmaAt(), n, bufs.lkey())).signaled());
            if (!awaitOp(WcOpcode.RDMA_WRITE)) {
                return 1;
            }
            goAhead();
            pings++;
        }
    }

    private void postRecv() {
        qp.postRecv(new RecvWr().set(9, new Sge(bufs.addr() + recvAt(), INFO, bufs.lkey())));
    }

    private void sendInfo(long buf) throws Exception {
        MemorySegment m = bufs.segment();
        m.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), sendAt(), buf);
        m.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), sendAt() + 8, bufs.rkey());
        m.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), sendAt() + 12, size);
        qp.postSend(new SendWr().send(3, new Sge(bufs.addr() + sendAt(), INFO, bufs.lkey())).signaled());
    }

    private void goAhead() {
        qp.postSend(new SendWr().send(4, new Sge(bufs.addr() + sendAt(), INFO, bufs.lkey())).signaled());
    }

    private boolean recvOk(WorkCompletion w) {
        if (w.status != WcStatus.SUCCESS || w.opcode != WcOpcode.RECV || w.byteLen != INFO) {
            System.out.println("FAILED: receive " + w + " (rping sends 16 bytes)");
            return false;
        }
        return true;
    }

    /** Client: the next receive (the server's go-ahead), reposting the receive; sends completing meanwhile are fine. */
    private boolean awaitRecv(String what) {
        while (true) {
            WorkCompletion w = poll();
            if (w == null) {
                System.out.println("FAILED: no " + what + " within " + timeoutSeconds + " s");
                return false;
            }
            if (w.status != WcStatus.SUCCESS) {
                System.out.println("FAILED: " + w + " while waiting for " + what + "; " + qp.errorReason());
                return false;
            }
            if (w.opcode == WcOpcode.RECV) {
                postRecv();
                return recvOk(w);
            }
        }
    }

    private boolean awaitOp(WcOpcode op) {
        while (true) {
            WorkCompletion w = poll();
            if (w == null || w.status != WcStatus.SUCCESS) {
                System.out.println("FAILED: " + op + ": " + w + "; " + qp.errorReason());
                return false;
            }
            if (w.opcode == op) {
                return true;
            }
        }
    }

    /** Server: the next receive, or null once the client disconnected (its DREQ moved the QP to ERR). */
    private WorkCompletion next(IbCm.Connection c) {
        while (true) {
            WorkCompletion w = poll();
            if (w == null) {
                return null;
            }
            if (w.status == WcStatus.WR_FLUSH_ERR) {
                try { // the DREQ's flush may reach the CQ just before the CM marks the connection ended
                    c.disconnected().get(5, TimeUnit.SECONDS);
                    return null;
                } catch (Exception notDisconnected) {
                    return w;
                }
            }
            if (w.opcode == WcOpcode.SEND && w.status == WcStatus.SUCCESS) {
                continue;
            }
            return w;
        }
    }

    private WorkCompletion poll() {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (cq.poll(wc) == 0) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            cq.await(Math.min(left, 20_000_000L));
        }
        WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(wc[0]);
        return copy;
    }

    private String cString(long at) {
        MemorySegment m = bufs.segment();
        int n = 0;
        while (n < size && m.get(ValueLayout.JAVA_BYTE, at + n) != 0) {
            n++;
        }
        return new String(m.asSlice(at, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
    }
}
