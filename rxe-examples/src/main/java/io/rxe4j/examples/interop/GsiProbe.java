package io.rxe4j.examples.interop;

import io.rxe4j.examples.interop.InteropDevice.IcrcMode;
import io.rxe4j.verbs.internal.VerbsAccess;
import io.rxe4j.verbs.provider.GsiOps;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A live check of the device's GSI QP (QP1) against a kernel peer, before rxe4j has an IB CM
 * ({@code cm-facts.md} §1, §2.1, §2.4, §5.3): as a <b>prober</b> it sends the peer's QP1 an IB CM REQ
 * for a service ID nobody listens on and expects the kernel CM's answer from QP1, a REJ with reason 8
 * (invalid service ID) that echoes the REQ's transaction ID and names its communication ID; as a
 * <b>listener</b> ({@code --listen}) it waits for the first MAD a kernel tool sends to rxe4j's QP1
 * (rping's REQ, say) and prints its class, attribute and, for a REQ, the service ID. Exit code 0 when
 * the expected MAD arrived. A Linux peer answers only once its {@code ib_cm} module is loaded (rdma_cm's
 * first user loads it); before that no agent owns the CM class and the REQ is dropped silently.
 */
@Command(name = "gsi-probe", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        description = "QP1 against a kernel peer: a CM REQ that must be REJected (reason 8), or wait for a peer's MAD.")
public final class GsiProbe implements Callable<Integer> {
    static final int CM_CLASS = 0x07;
    static final int ATTR_REQ = 0x0010;
    static final int ATTR_REJ = 0x0012;

    @Parameters(arity = "0..1", paramLabel = "PEER", description = "the peer's IP: send it the REQ (else --listen)")
    String peer;

    @Option(names = {"-g", "--ip"}, required = true, description = "local IP to bind the UDP transport to")
    String ip;

    @Option(names = "--listen", description = "wait for the first MAD to QP1 instead")
    boolean listen;

    @Option(names = "--service-id", description = "the REQ's service ID (default ${DEFAULT-VALUE}: rdma_cm's TCP "
            + "port space, port 19799, where nothing listens)")
    long serviceId = 0x0000_0000_0106_4D57L;

    @Option(names = "--expect-attr", description = "--listen: the attribute ID the MAD must have (default "
            + "${DEFAULT-VALUE}: a REQ)")
    int expectAttr = ATTR_REQ;

    @Option(names = "--timeout", description = "seconds to wait (default ${DEFAULT-VALUE})")
    int timeoutSeconds = 20;

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new GsiProbe()).execute(args));
    }

    record Mad(InetSocketAddress from, int srcQp, byte[] mad) {}

    @Override
    public Integer call() throws Exception {
        if ((peer == null) != listen) {
            System.err.println("gsi-probe: give a PEER to probe, or --listen");
            return 2;
        }
        InetAddress local = InteropDevice.resolve(ip);
        try (InteropDevice dev = new InteropDevice(local, 4791, IcrcMode.AUTO, false)) {
            GsiOps gsi = VerbsAccess.get().gsi(dev.device());
            BlockingQueue<Mad> got = new LinkedBlockingQueue<>();
            gsi.listener((from, srcQp, grh, mad) -> got.add(new Mad(from, srcQp, mad)));
            try {
                return listen ? awaitMad(got) : probe(dev, gsi, got);
            } finally {
                gsi.listener(null);
                System.out.println("rxe4j counters: " + dev.counters());
            }
        }
    }

    private int probe(InteropDevice dev, GsiOps gsi, BlockingQueue<Mad> got) throws InterruptedException {
        SecureRandom rnd = new SecureRandom();
        long tid = rnd.nextLong() & 0x0000_0000_FFFF_FFFFL | 0x1234_0000_0000_0000L;
        int localCommId = rnd.nextInt() | 1;
        InetAddress peerIp = InteropDevice.resolve(peer);
        byte[] req = req(tid, localCommId, serviceId, dev.gid().raw(), Gid.of(peerIp).raw(), rnd);
        InetSocketAddress to = new InetSocketAddress(peerIp, 4791);
        System.out.printf(Locale.ROOT, "REQ to QP1 of %s: TID 0x%016x, local comm ID 0x%08x, service ID 0x%016x%n",
                to, tid, localCommId, serviceId);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        long nextSend = 0;
        while (System.nanoTime() < deadline) {
            if (System.nanoTime() >= nextSend) { // the CM's own retry: a MAD may be lost, and the first one may wait for ARP
                if (!gsi.send(to, 1, req)) {
                    System.out.println("FAILED: QP1's send queue is full");
                    return 1;
                }
                nextSend = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            }
            Mad m = got.poll(100, TimeUnit.MILLISECONDS);
            if (m == null) {
                continue;
            }
            ByteBuffer b = ByteBuffer.wrap(m.mad());
            int attr = b.getShort(16) & 0xFFFF;
            System.out.printf(Locale.ROOT, "MAD from %s QP %d: class 0x%02x version %d method 0x%02x attribute 0x%04x TID "
                    + "0x%016x%n", m.from(), m.srcQp(), b.get(1), b.get(2), b.get(3), attr, b.getLong(8));
            if ((b.get(1) & 0xFF) != CM_CLASS || attr != ATTR_REJ) {
                continue;
            }
            int remoteCommId = b.getInt(24 + 4);
            int reason = b.getShort(24 + 10) & 0xFFFF;
            int rejected = (b.get(24 + 8) & 0xFF) >>> 6;
            System.out.printf(Locale.ROOT, "REJ: local comm ID 0x%08x, remote comm ID 0x%08x, message rejected %d, "
                    + "reason %d%n", b.getInt(24), remoteCommId, rejected, reason);
            boolean ok = m.srcQp() == 1 && b.getLong(8) == tid && remoteCommId == localCommId && rejected == 0
                    && reason == 8;
            System.out.println(ok ? "probe: the kernel's QP1 answered the REQ with REJ 8 (invalid service ID)"
                    : "FAILED: not the REJ 8 of this REQ from QP 1");
            return ok ? 0 : 1;
        }
        System.out.println("FAILED: no REJ within " + timeoutSeconds + " s");
        return 1;
    }

    private int awaitMad(BlockingQueue<Mad> got) throws InterruptedException {
        System.out.println("listening on QP1; waiting for a MAD with attribute 0x" + Integer.toHexString(expectAttr));
        System.out.flush();
        Mad m = got.poll(timeoutSeconds, TimeUnit.SECONDS);
        if (m == null) {
            System.out.println("FAILED: no MAD within " + timeoutSeconds + " s");
            return 1;
        }
        ByteBuffer b = ByteBuffer.wrap(m.mad());
        int attr = b.getShort(16) & 0xFFFF;
        System.out.printf(Locale.ROOT, "MAD from %s QP %d: %d bytes, class 0x%02x version %d method 0x%02x attribute "
                + "0x%04x TID 0x%016x%n", m.from(), m.srcQp(), m.mad().length, b.get(1), b.get(2), b.get(3), attr,
                b.getLong(8));
        if (attr == ATTR_REQ && m.mad().length >= 40) {
            System.out.printf(Locale.ROOT, "REQ: local comm ID 0x%08x, service ID 0x%016x, local QPN 0x%06x%n",
                    b.getInt(24), b.getLong(32), b.getInt(56) >>> 8);
        }
        boolean ok = m.srcQp() == 1 && m.mad().length == GsiOps.MAD_BYTES && (b.get(1) & 0xFF) == CM_CLASS
                && attr == expectAttr;
        System.out.println(ok ? "listen: a CM MAD from the peer's QP1 reached rxe4j's QP1" : "FAILED: unexpected MAD");
        return ok ? 0 : 1;
    }

    /** A REQ of {@code cm-facts.md} §2.1 for an RC connection over RoCE, with rdma_cm's header and no user data. */
    static byte[] req(long tid, int localCommId, long serviceId, byte[] localGid, byte[] remoteGid, SecureRandom rnd) {
        try {
            io.rxe4j.verbs.cm.ib.CmaHeader cma = new io.rxe4j.verbs.cm.ib.CmaHeader(rnd.nextInt(1 << 16),
                    InetAddress.getByAddress(localGid), InetAddress.getByAddress(remoteGid));
            return io.rxe4j.verbs.cm.ib.CmMessages.Req.create(tid).localCommId(localCommId).serviceId(serviceId)
                    .localCaGuid(0x0200_5EFF_FE00_0001L).localQpn(rnd.nextInt(0xFFFF) + 16).responderResources(1)
                    .initiatorDepth(1).remoteCmResponseTimeout(20).transportType(0).startingPsn(rnd.nextInt(1 << 24))
                    .localCmResponseTimeout(20).retryCount(7).pkey(0xFFFF).pathMtu(3).rnrRetryCount(7)
                    .maxCmRetries(15).primaryLocalLid(0xFFFF).primaryRemoteLid(0xFFFF).primaryLocalGid(localGid)
                    .primaryRemoteGid(remoteGid).primaryHopLimit(64).primaryLocalAckTimeout(17)
                    .privateData(cma.encode(new byte[0], 56)).mad().bytes();
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException("a GID is 16 bytes", e);
        }
    }
}
