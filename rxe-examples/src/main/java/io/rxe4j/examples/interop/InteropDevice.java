package io.rxe4j.examples.interop;

import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.net.udp.UdpTransport;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.RdmaDevice;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * An rxe4j device on a UDP socket bound to one local IP, set up to talk to a kernel {@code
 * rdma_rxe} peer: its GID is derived from that IP ({@link Gid#of(InetAddress)}); the peer's (IP, UDP
 * port) is derived from the peer's GID ({@link Gid#toAddress}), with the local scope for an IPv6
 * link-local peer; ICRC checking and {@code rdma_rxe}'s FLUSH ICRC variant are chosen per {@link
 * IcrcMode} ({@code extensions.md} §1).
 */
public final class InteropDevice implements AutoCloseable {
    /** Whether received ICRCs are checked. */
    public enum IcrcMode {
        /** Off for an IPv4 local address (a kernel peer's IPv4 ID is invisible to a UDP socket), else on. */
        AUTO,
        /** Always checked. */
        ON,
        /** Never checked. */
        OFF
    }

    private final io.rxe4j.verbs.spi.Transport transport;
    private final RdmaDevice device;
    /** The fault injector, or null. */
    private io.rxe4j.net.fault.FaultInjectingTransport faultInjector;
    private final InetAddress localIp;
    private final boolean checkIcrc;
    private final boolean opfn;

    /**
     * Binds the transport and opens the device.
     *
     * @param localIp the local IP (for an IPv6 link-local address with its scope, e.g. {@code
     *     fe80::1%br0})
     * @param udpPort the local UDP port (4791 for a kernel peer)
     * @param icrc the ICRC checking mode
     * @param rxeFlushCompat send and accept {@code rdma_rxe}'s FLUSH ICRC variant
     */
    public InteropDevice(InetAddress localIp, int udpPort, IcrcMode icrc, boolean rxeFlushCompat) {
        this(localIp, udpPort, icrc, rxeFlushCompat, false);
    }

    /**
     * Binds the transport and opens the device.
     *
     * @param opfn turn OPFN and TID RDMA on ({@link DeviceConfig#withTidRdma()}): every packet then
     *     carries BTH DW1 bit 24, which a kernel {@code rdma_rxe} peer ignores, so it never receives
     *     an OPFN request; used to show that such a device still interoperates
     * @see #InteropDevice(InetAddress, int, IcrcMode, boolean)
     */
    public InteropDevice(InetAddress localIp, int udpPort, IcrcMode icrc, boolean rxeFlushCompat, boolean opfn) {
        this(localIp, udpPort, icrc, rxeFlushCompat, opfn, null);
    }

    /**
     * Binds the transport and opens the device.
     *
     * @param pcap write every packet sent and received to this pcap file, or null
     * @see #InteropDevice(InetAddress, int, IcrcMode, boolean, boolean)
     */
    public InteropDevice(InetAddress localIp, int udpPort, IcrcMode icrc, boolean rxeFlushCompat, boolean opfn,
            java.nio.file.Path pcap) {
        this(localIp, udpPort, icrc, rxeFlushCompat, opfn, pcap, null, 0);
    }

    /**
     * Binds the transport and opens the device.
     *
     * @param faults a {@code FaultSpec} (e.g. {@code drop=0.02,dir=out}) to inject into this device's
     *     packets, or null: a loss test against a kernel peer, whose own retransmissions and rxe4j's
     *     must both recover
     * @param faultSeed the fault injector's seed
     * @throws IllegalArgumentException for a malformed fault spec
     */
    public InteropDevice(InetAddress localIp, int udpPort, IcrcMode icrc, boolean rxeFlushCompat, boolean opfn,
            java.nio.file.Path pcap, String faults, long faultSeed) {
        this(localIp, udpPort, icrc, rxeFlushCompat, opfn, pcap, faults, faultSeed, 1);
    }

    /**
     * Binds the transport and opens the device.
     *
     * @param loops event loops of the device: 1, or more for a multi-core device ({@code
     *     UdpTransport.Builder.loops}: that many {@code SO_REUSEPORT} sockets on {@code udpPort});
     *     not with {@code faults}
     * @throws IllegalArgumentException for a malformed fault spec, or faults on more than one loop
     */
    public InteropDevice(InetAddress localIp, int udpPort, IcrcMode icrc, boolean rxeFlushCompat, boolean opfn,
            java.nio.file.Path pcap, String faults, long faultSeed, int loops) {
        var rules = faults == null || faults.isBlank() ? null : io.rxe4j.net.fault.FaultSpec.parse(faults);
        this.localIp = localIp;
        this.opfn = opfn;
        this.checkIcrc = switch (icrc) {
            case AUTO -> !Gid.isIpv4(localIp);
            case ON -> true;
            case OFF -> false;
        };
        DeviceConfig config = DeviceConfig.defaults().withCheckIcrc(checkIcrc).withRxeFlushCompat(rxeFlushCompat);
        if (opfn) {
            config = config.withTidRdma();
        }
        if (rules != null && loops > 1) {
            throw new IllegalArgumentException("fault injection needs one event loop, got " + loops);
        }
        this.transport = loops == 1 ? UdpTransport.bind(new InetSocketAddress(localIp, udpPort))
                : UdpTransport.builder(localIp).port(udpPort).loops(loops).bindLoops();
        try {
            io.rxe4j.verbs.spi.Transport t = pcap == null ? transport
                    : new io.rxe4j.net.pcap.CapturingTransport(transport, pcap);
            if (rules != null) { // outside the capture: the file shows what really crossed the socket
                faultInjector = new io.rxe4j.net.fault.FaultInjectingTransport(t, faultSeed, rules);
                t = faultInjector;
            }
            this.device = RdmaDevice.open(t, config);
        } catch (RuntimeException e) {
            transport.close();
            throw e;
        }
    }

    /**
     * Resolves a {@code --ip} argument: an IPv4 or IPv6 literal, for link-local IPv6 with {@code
     * %interface} (or {@code %scopeId}).
     *
     * @throws IllegalArgumentException if it does not resolve
     */
    public static InetAddress resolve(String ip) {
        try {
            return InetAddress.getByName(ip);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cannot resolve local IP '" + ip + "': " + e.getMessage(), e);
        }
    }

    /** @return the device */
    public RdmaDevice device() {
        return device;
    }

    /** @return the local GID advertised to the peer */
    public Gid gid() {
        return Gid.of(localIp);
    }

    /** @return whether received ICRCs are checked */
    public boolean checksIcrc() {
        return checkIcrc;
    }

    /**
     * @param peerGid the GID the peer advertised
     * @param peerUdpPort the peer's UDP port (4791 for a kernel peer)
     * @return the address vector: the IP from the GID (scoped like the local IP if link-local)
     */
    public InetSocketAddress peerAddress(Gid peerGid, int peerUdpPort) {
        return new InetSocketAddress(peerGid.toAddress(localIp), peerUdpPort);
    }

    /** Prints a note about the ICRC and IPv6 settings to {@code out}. */
    public void printNotes(PrintStream out, boolean rxeFlushCompat) {
        out.println("rxe4j: UDP " + transport.localAddress() + ", ICRC check " + (checkIcrc ? "on" : "off")
                + (checkIcrc ? "" : " (a kernel rdma_rxe peer's IPv4 ID is invisible to a UDP socket: "
                        + "extensions.md section 1)")
                + (rxeFlushCompat ? ", rdma_rxe FLUSH ICRC variant" : "")
                + (opfn ? ", OPFN and TID RDMA on (BTH bit 24 set on every packet)" : ""));
    }

    /**
     * @return the device counters that are not zero, followed by the UDP socket's own counters
     *     ({@code udp_*}) that are not zero
     */
    public Map<String, Long> counters() {
        Map<String, Long> m = new LinkedHashMap<>(device.counters());
        long rcvd = 0;
        long sent = 0;
        long rerr = 0;
        long cerr = 0;
        long big = 0;
        for (io.rxe4j.verbs.spi.Transport lane : transport.lanes()) { // one socket per event loop
            UdpTransport u = (UdpTransport) lane;
            rcvd += u.packetsReceived();
            sent += u.packetsSent();
            rerr += u.receiveErrors();
            cerr += u.channelErrors();
            big += u.oversizedDropped();
        }
        m.put("udp_packets_received", rcvd);
        m.put("udp_packets_sent", sent);
        m.put("udp_receive_errors", rerr);
        m.put("udp_channel_errors", cerr);
        m.put("udp_oversized_dropped", big);
        if (faultInjector != null) {
            for (io.rxe4j.net.fault.FaultAction a : io.rxe4j.net.fault.FaultAction.values()) {
                m.put("faults_" + a.name().toLowerCase(Locale.ROOT), faultInjector.count(io.rxe4j.net.fault.Direction.OUTBOUND, a)
                        + faultInjector.count(io.rxe4j.net.fault.Direction.INBOUND, a));
            }
        }
        m.values().removeIf(v -> v == 0L);
        return m;
    }

    /**
     * Waits for at least one completion and polls up to {@code out.length} of them.
     *
     * @return the number polled (at least 1)
     * @throws StallException if none arrives within {@code stallSeconds}
     */
    public int awaitCompletions(CompletionQueue cq, WorkCompletion[] out, long stallSeconds) {
        return awaitCompletions(new CompletionQueue[] {cq}, out, stallSeconds);
    }

    /**
     * Waits for at least one completion on any of {@code cqs} and polls up to {@code out.length} of
     * them from the first CQ (round robin from the start) that has some.
     *
     * @return the number polled (at least 1)
     * @throws StallException if none arrives within {@code stallSeconds}
     */
    public int awaitCompletions(CompletionQueue[] cqs, WorkCompletion[] out, long stallSeconds) {
        if (cqs.length == 1) {
            return awaitOne(cqs[0], out, stallSeconds);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(stallSeconds);
        while (true) {
            for (CompletionQueue cq : cqs) {
                int n = cq.poll(out);
                if (n > 0) {
                    return n;
                }
            }
            if (System.nanoTime() - deadline > 0) {
                throw new StallException(String.format(Locale.ROOT,
                        "no completion within %d s; rxe4j counters %s", stallSeconds, counters()));
            }
            java.util.concurrent.locks.LockSupport.parkNanos(20_000); // several CQs: no single one to block on
        }
    }

    private int awaitOne(CompletionQueue cq, WorkCompletion[] out, long stallSeconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(stallSeconds);
        int n;
        while ((n = cq.poll(out)) == 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new StallException(String.format(Locale.ROOT,
                        "no completion within %d s; rxe4j counters %s", stallSeconds, counters()));
            }
            cq.await(Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
        }
        return n;
    }

    @Override
    public void close() {
        device.close();
    }

    /** No completion arrived in time. */
    public static final class StallException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StallException(String message) {
            super(message);
        }
    }
}
