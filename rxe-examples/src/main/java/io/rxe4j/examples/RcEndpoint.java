package io.rxe4j.examples;

import io.rxe4j.net.fault.Direction;
import io.rxe4j.net.fault.FaultAction;
import io.rxe4j.net.fault.FaultInjectingTransport;
import io.rxe4j.net.fault.FaultSpec;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.cm.RdmaCmException;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * One side of the demo: a device on UDP, a PD, one CQ, one MR, and an RC QP that the connection
 * manager creates and connects ({@link #connect} or {@link #accept}), advertising the MR (and,
 * optionally, a second, persistent MR backed by a memory-mapped file, {@link #registerPmem}) as
 * private data.
 */
public final class RcEndpoint implements AutoCloseable {
    /**
     * Access granted to the peer on the QP: everything the two MRs allow, including both FLUSH
     * placement types (a FLUSH needs its type on the QP and on the MR).
     */
    public static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;
    /** Access granted to the peer on the ordinary (off-heap) MR. */
    public static final int MR_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC;
    /**
     * Access granted to the peer on the persistent MR: WRITE, READ and FLUSH with global
     * visibility and persistence (FLUSH_PERSISTENT is accepted only on a file-backed MR).
     */
    public static final int PMEM_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

    final RdmaDevice device;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final MemoryRegion mr;
    /** The fault injector wrapping the UDP transport, or null when no fault spec was given. */
    final FaultInjectingTransport faults;
    MemoryRegion pmem;
    private RdmaConnection conn;
    private final WorkCompletion[] wc = {new WorkCompletion()};

    /**
     * @param udp the (IP, UDP port) to bind; port 0 picks one
     * @param mrBytes MR size in bytes
     */
    public RcEndpoint(InetSocketAddress udp, long mrBytes) {
        this(udp, mrBytes, null, 0);
    }

    /**
     * @param udp the (IP, UDP port) to bind; port 0 picks one
     * @param mrBytes MR size in bytes
     * @param faultSpec a {@link FaultSpec} (e.g. {@code drop=0.02,dir=out}) to inject faults into
     *     this endpoint's packets, or null / blank for none
     * @param faultSeed seed of the fault injector's random choices
     * @throws IllegalArgumentException for a malformed fault spec
     */
    public RcEndpoint(InetSocketAddress udp, long mrBytes, String faultSpec, long faultSeed) {
        this(udp, mrBytes, faultSpec, faultSeed, null);
    }

    /**
     * As {@link #RcEndpoint(InetSocketAddress, long, String, long)}, writing every packet that
     * crosses the UDP socket to {@code pcap} (after fault injection: what the wire carried).
     *
     * @param pcap the pcap file, or null
     */
    public RcEndpoint(InetSocketAddress udp, long mrBytes, String faultSpec, long faultSeed, java.nio.file.Path pcap) {
        var rules = faultSpec == null || faultSpec.isBlank() ? null : FaultSpec.parse(faultSpec); // fail before binding
        Transport transport = UdpTransport.bind(udp);
        if (pcap != null) {
            transport = new io.rxe4j.net.pcap.CapturingTransport(transport, pcap);
        }
        faults = rules == null ? null : new FaultInjectingTransport(transport, faultSeed, rules);
        // OPFN and TID RDMA on (docs/tid-rdma.md): two rxe4j endpoints negotiate TID RDMA on their
        // first packets when the path MTU is 4096, and large aligned READs/WRITEs are carried as TID
        device = RdmaDevice.open(faults != null ? faults : transport, DeviceConfig.defaults().withTidRdma());
        pd = device.allocPd();
        cq = device.createCq(4096);
        mr = pd.allocMr(mrBytes, MR_ACCESS);
    }

    /**
     * Registers the first {@code length} bytes of {@code file} (created or grown as needed) as a
     * persistent MR with {@link #PMEM_ACCESS}; {@link #advert()} then advertises it too.
     *
     * @return the MR, closed with this endpoint
     * @throws IllegalStateException if one is already registered
     */
    public MemoryRegion registerPmem(java.nio.file.Path file, long length) {
        if (pmem != null) {
            throw new IllegalStateException("a persistent MR is already registered: " + pmem);
        }
        pmem = pd.registerFileMr(file, length, PMEM_ACCESS);
        return pmem;
    }

    /** @return the persistent MR, or null if none is registered */
    public MemoryRegion pmem() {
        return pmem;
    }

    /** @return the buffers the peer may use: our MR and, if registered, our persistent MR */
    public BufferAdvert advert() {
        return pmem == null ? new BufferAdvert(mr.rkey(), mr.addr(), mr.length())
                : new BufferAdvert(mr.rkey(), mr.addr(), mr.length(), pmem.rkey(), pmem.addr(), pmem.length());
    }

    /** @return the device's UDP address */
    public InetSocketAddress address() {
        return device.address();
    }

    /**
     * The examples' local ACK timeout: 17, the connection manager's default (≈ 537 ms; see {@link
     * ConnectionParams}): it survives a freshly started JVM's first answer.
     */
    public static final int DEFAULT_ACK_TIMEOUT = 17;

    /**
     * The examples' local ACK timeout with faults injected: 14 (≈ 67 ms). With loss, every lost tail
     * packet (nothing after it to reveal the gap) waits for the timer, so a short one matters more
     * than surviving a cold JVM (one spurious retransmission).
     */
    public static final int FAULTS_ACK_TIMEOUT = 14;

    /**
     * @param requested the timeout asked for, or null
     * @param faults whether faults are injected
     * @return {@code requested}, else {@link #FAULTS_ACK_TIMEOUT} with faults, else {@link #DEFAULT_ACK_TIMEOUT}
     */
    public static int ackTimeoutFor(Integer requested, boolean faults) {
        return requested != null ? requested : faults ? FAULTS_ACK_TIMEOUT : DEFAULT_ACK_TIMEOUT;
    }

    /**
     * The connection parameters: the defaults, with this path MTU (null: the port's active MTU, the
     * connection manager's default), ACK timeout, access and our advert.
     */
    private ConnectionParams params(Mtu mtu, int ackTimeout) {
        ConnectionParams p = ConnectionParams.defaults();
        if (mtu != null) {
            p = p.withPathMtu(mtu);
        }
        return p.withAckTimeout(ackTimeout).withAccessFlags(ACCESS).withPrivateData(advert().toBytes());
    }

    /** @return the port's active MTU ({@code RdmaDevice.queryPort}): the default path MTU */
    public Mtu activeMtu() {
        return device.queryPort(1).activeMtu();
    }

    /** @return the IP MTU of the link the device sends on, or -1 when unknown ({@code RdmaDevice.linkMtu}) */
    public int linkMtu() {
        return device.linkMtu();
    }

    /**
     * Connects to the listener on rdma_cm port {@code port} of the device at {@code serverDevice}
     * with the connection manager ({@link RdmaConnection#connect}), advertising our buffers; {@code
     * beforeConnect} may post receives on the new QP first.
     *
     * @param serverDevice the server device's IP and UDP port (4791 for a RoCEv2 device)
     * @return the server's buffers
     * @throws RdmaCmException if the connection cannot be made
     */
    public BufferAdvert connect(InetSocketAddress serverDevice, int port, Mtu mtu, int ackTimeout,
            java.util.function.Consumer<QueuePair> beforeConnect) throws RdmaCmException {
        conn = RdmaConnection.connect(pd, cq, cq, serverDevice, port, params(mtu, ackTimeout), beforeConnect);
        return BufferAdvert.parse(conn.remotePrivateData());
    }

    /**
     * Listens on rdma_cm port {@code port} of this endpoint's device.
     *
     * @param port 0 for a free one ({@link RdmaListener#port()})
     */
    public RdmaListener listen(int port) {
        return RdmaListener.listen(device, port);
    }

    /**
     * Accepts the next client of {@code listener}, advertising our buffers; {@code beforeAccept}
     * may post receives on the new QP first.
     *
     * @return the client's buffers
     * @throws RdmaCmException if the connection cannot be made
     * @throws InterruptedException if interrupted while waiting for a client
     */
    public BufferAdvert accept(RdmaListener listener, Mtu mtu, int ackTimeout,
            java.util.function.Consumer<QueuePair> beforeAccept) throws RdmaCmException, InterruptedException {
        conn = listener.accept(pd, cq, cq, params(mtu, ackTimeout), beforeAccept);
        return BufferAdvert.parse(conn.remotePrivateData());
    }

    /** @return the connection, or null before {@link #connect} / {@link #accept} */
    public RdmaConnection connection() {
        return conn;
    }

    private QueuePair qp() {
        if (conn == null) {
            throw new IllegalStateException("not connected yet");
        }
        return conn.qp();
    }

    /**
     * Waits for one completion.
     *
     * @return the completion (reused on the next call)
     * @throws IllegalStateException if none arrives within {@code timeoutSeconds}
     */
    public WorkCompletion awaitCompletion(long timeoutSeconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (cq.poll(wc) == 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IllegalStateException("no completion within " + timeoutSeconds + " s; counters "
                        + device.counters());
            }
            cq.await(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
        }
        return wc[0];
    }

    /** {@code ibv_post_recv}. */
    public void postRecv(io.rxe4j.verbs.RecvWr wr) {
        qp().postRecv(wr);
    }

    /** {@code ibv_post_send}. */
    public void postSend(io.rxe4j.verbs.SendWr wr) {
        qp().postSend(wr);
    }

    /** @return the TID RDMA parameters the peer sent through OPFN, or null while TID RDMA is off */
    public io.rxe4j.verbs.TidRdmaParams tidRdma() {
        return qp().tidRdma();
    }

    /** @return the value of device counter {@code name} (0 if it is zero or unknown) */
    public long counter(String name) {
        return device.counter(name);
    }

    /** @return the MR's memory */
    public java.lang.foreign.MemorySegment segment() {
        return mr.segment();
    }

    /** @return the MR's virtual address */
    public long addr() {
        return mr.addr();
    }

    /** @return the MR's lkey */
    public int lkey() {
        return mr.lkey();
    }

    /** @return the device counters that are not zero */
    public java.util.Map<String, Long> counters() {
        java.util.Map<String, Long> m = new java.util.LinkedHashMap<>(device.counters());
        m.values().removeIf(v -> v == 0L);
        return m;
    }

    /**
     * @return the faults injected so far by kind ({@code drop=…, duplicate=…}, non-zero only, both
     *     directions), or an empty map when no fault spec was given
     */
    public java.util.Map<String, Long> faultCounts() {
        java.util.Map<String, Long> m = new java.util.LinkedHashMap<>();
        if (faults != null) {
            for (FaultAction a : FaultAction.values()) {
                long n = faults.count(Direction.OUTBOUND, a) + faults.count(Direction.INBOUND, a);
                if (n > 0) {
                    m.put(a.name().toLowerCase(java.util.Locale.ROOT), n);
                }
            }
        }
        return m;
    }

    /** @return whether faults are injected into this endpoint's packets */
    public boolean injectsFaults() {
        return faults != null;
    }

    /**
     * Disconnects and closes everything, newest first, then the device ({@link RdmaDevice#closeAll()}):
     * safe from any state, e.g. after a failed operation with work still outstanding.
     */
    @Override
    public void close() {
        device.closeAll();
    }
}
