package io.rxe4j.benchmarks;

import io.netty.buffer.ByteBuf;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.spi.PacketReceiver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The UDP transport's send path per datagram, on a real epoll socket over loopback (issue 25):
 * each operation is one packet built in the buffer the transport hands out ({@code
 * Transport.packetBuffer}: with GSO a slot of a GSO train), sent and, per batch of {@link #BATCH},
 * flushed on the transport's event loop, while a second transport receives them.
 * Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the bytes allocated per datagram by all
 * threads (sender loop, receiver loop, the benchmark thread's hand-off), i.e. what the steady-state
 * output path allocates; the time per operation includes the kernel's loopback path and so
 * depends on the machine. Datagrams the receiver's socket drops under the burst do not matter
 * here. Needs native epoll (Linux).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=disabled"})
public class UdpSendBench {
    /** Datagrams per loop task and flush (1 MiB of 4 KiB datagrams, the default write high-water mark). */
    static final int BATCH = 256;

    /** UDP GSO (over IPv6, where it is on by default): the packets go out in GSO trains. */
    @Param({"false", "true"})
    public boolean gso;

    /** UDP payload bytes per datagram: a 4 KiB RDMA WRITE MIDDLE packet (BTH + 4096 + ICRC), or a 64 B one. */
    /** The transport's own sendmmsg (true, the default) or Netty's channel (false) writes the datagrams. */
    @Param({"true", "false"})
    public boolean directSend;

    @Param({"4112", "80"})
    public int size;

    private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private UdpTransport sender;
    private UdpTransport receiver;
    private Batch batch;

    /** One batch, run on the sender's loop; resumes there when the socket is writable again. */
    private final class Batch implements Runnable, PacketReceiver {
        private final InetSocketAddress to;
        private volatile long done;
        private volatile long wanted;
        private volatile Thread waiter;

        Batch(InetSocketAddress to) {
            this.to = to;
        }

        @Override
        public void run() {
            if (done == wanted) {
                return;
            }
            if (!sender.isWritable()) {
                sender.flush(); // onWritable() runs the batch once the queue has drained
                return;
            }
            for (int i = 0; i < BATCH; i++) {
                ByteBuf p = sender.packetBuffer(to, size);
                p.setLong(0, i);
                p.writerIndex(size);
                sender.send(p, to);
            }
            sender.flush();
            done = wanted;
            LockSupport.unpark(waiter);
        }

        @Override
        public void onWritable() {
            run();
        }

        @Override
        public void onPacket(ByteBuf packet, InetSocketAddress from, InetSocketAddress recipient) {
            // the sender receives nothing; the transport releases what it hands over
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        InetAddress ip = InetAddress.getByName(gso ? "::1" : "127.0.0.1");
        sender = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.EPOLL).gso(gso).directSend(directSend).bind();
        receiver = UdpTransport.builder(ip).port(0).io(UdpTransport.Io.EPOLL).gso(false).bind();
        batch = new Batch(receiver.localAddress());
        sender.start(batch);
        receiver.start((packet, from, recipient) -> { }); // the transport releases each packet after the call
    }

    /** Bytes the sender's and the receiver's loop threads allocated, at the start of an iteration. */
    private long senderAllocated;
    private long receiverAllocated;
    private long datagramsAtStart;
    private long receivedAtStart;
    private long senderLoopId;
    private long receiverLoopId;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

    @Setup(Level.Iteration)
    public void startIteration() throws Exception {
        if (senderLoopId == 0) {
            senderLoopId = loopThreadId(sender);
            receiverLoopId = loopThreadId(receiver);
        }
        senderAllocated = THREADS.getThreadAllocatedBytes(senderLoopId);
        receiverAllocated = THREADS.getThreadAllocatedBytes(receiverLoopId);
        datagramsAtStart = sender.packetsSent();
        receivedAtStart = receiver.packetsReceived();
    }

    /**
     * Prints the bytes each loop thread allocated per datagram in the iteration: JMH's {@code -prof
     * gc} figure is for the whole process, this one splits the send path (the sender's loop) from
     * Netty's receive path (the receiver's loop: a {@code DatagramPacket}, a slice and the sender's
     * address per datagram).
     */
    @TearDown(Level.Iteration)
    public void endIteration() {
        long n = Math.max(1, sender.packetsSent() - datagramsAtStart);
        long r = receiver.packetsReceived() - receivedAtStart;
        System.out.printf("  [sender loop %.1f B/datagram, receiver loop %.1f B/datagram received; %d sent, %d"
                        + " received]%n", (THREADS.getThreadAllocatedBytes(senderLoopId) - senderAllocated) / (double) n,
                (THREADS.getThreadAllocatedBytes(receiverLoopId) - receiverAllocated) / (double) Math.max(1, r), n, r);
    }

    private static long loopThreadId(UdpTransport t) throws Exception {
        java.util.concurrent.CompletableFuture<Long> id = new java.util.concurrent.CompletableFuture<>();
        t.scheduler().execute(() -> id.complete(Thread.currentThread().threadId()));
        return id.get(10, TimeUnit.SECONDS);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        sender.close();
        receiver.close();
    }

    /** One datagram (of a batch of {@link #BATCH}): built, sent, flushed with its batch. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void sendDatagram() {
        Batch b = batch;
        b.waiter = Thread.currentThread();
        long want = b.wanted + 1;
        b.wanted = want;
        sender.scheduler().execute(b);
        long stallAt = System.nanoTime() + STALL_NANOS;
        while (b.done != want) {
            LockSupport.parkNanos(20_000);
            if (System.nanoTime() > stallAt) {
                throw new IllegalStateException("batch " + want + " not sent in 10 s: sender writable "
                        + sender.isWritable() + ", sent " + sender.packetsSent() + ", received " + receiver.packetsReceived());
            }
        }
    }
}
