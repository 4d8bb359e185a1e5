package io.rxe4j.verbs.cm.ib;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.cm.ib.CmMessages.Dreq;
import io.rxe4j.verbs.cm.ib.CmMessages.Rej;
import io.rxe4j.verbs.cm.ib.CmMessages.Rep;
import io.rxe4j.verbs.cm.ib.CmMessages.Req;
import io.rxe4j.verbs.cm.ib.CmMessages.RtuOrDrep;
import io.rxe4j.verbs.provider.GsiOps;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The IB connection manager of one device, on its GSI QP ({@code cm-facts.md}): RC connections by
 * REQ, REP and RTU, rejected by REJ, ended by DREQ and DREP, with rdma_cm's service IDs (TCP port
 * space) and its header in the REQ's private data, so that librdmacm peers (rping, ucmatose…) and
 * other rxe4j devices connect alike. Every state change runs on the GSI QP's event loop ({@link
 * GsiOps#scheduler()}), timers included: no thread per connection, virtual time on a virtual-time
 * device. Public methods may be called from any thread; their futures complete on the loop.
 *
 * <p>Where replies go: a device bound to RoCEv2's UDP port 4791 answers a peer's port 4791 (a RoCE
 * peer sends from a port of its own, 0xC000 and up); a device bound to another port (several devices
 * in one host, tests) answers the port the MAD came from, which for an rxe4j peer is its device port.
 */
public final class IbCm {
    /** The RoCEv2 UDP port. */
    public static final int ROCE_PORT = 4791;
    /** rxe's local CA ACK delay, the REP's target ACK delay ({@code RXE_LOCAL_CA_ACK_DELAY}). */
    static final int TARGET_ACK_DELAY = 15;
    /** Default CM response timeout exponent (rdma_cm's {@code CMA_CM_RESPONSE_TIMEOUT}). */
    static final int CM_RESPONSE_TIMEOUT = 20;
    /** Default max CM retries ({@code CMA_MAX_CM_RETRIES}). */
    static final int MAX_CM_RETRIES = 15;
    /** RoCE packet life time ({@code CMA_IBOE_PACKET_LIFETIME}). */
    static final int PACKET_LIFE_TIME = 16;
    /** REJ reasons ({@code ib_cm.h}, {@code cm-facts.md} §2.4). */
    public static final int REJ_TIMEOUT = 4;
    public static final int REJ_INVALID_SERVICE_ID = 8;
    public static final int REJ_STALE_CONN = 10;
    public static final int REJ_CONSUMER_DEFINED = 28;
    /**
     * rxe4j's ECE vendor ID ({@code ibv_ece.vendor_id}; REQ and REP, {@code cm-facts.md} §2.1–2.2):
     * "RXE", 0x52 0x58 0x45. Its first octet has the locally administered bit set, so no IEEE
     * assignment can collide with it. A librdmacm peer that does not know it echoes it in its REP
     * with options 0; the kernel CM passes it on unchanged.
     */
    public static final int ECE_VENDOR_ID = 0x525845;

    /**
     * rxe4j's ECE options, the MAD's attribute modifier beside {@link #ECE_VENDOR_ID}: bits 31..16
     * the sender device's UDP port (0: RoCEv2's 4791), bits 15..12 the path MTU the sender will use
     * (IB enum; in a REP, the passive side's; 0: not stated), bits 11..0 the extension bits
     * ({@code QpOps.EXT_*}: offered in a REQ, agreed in a REP).
     */
    static int eceOptions(int udpPort, int mtuEnum, int extensions) {
        return ((udpPort == ROCE_PORT ? 0 : udpPort) << 16) | ((mtuEnum & 0xF) << 12) | (extensions & 0xFFF);
    }

    /** The device address a REQ's or REP's ECE names, else {@code fallback}. */
    static InetSocketAddress eceAddress(InetSocketAddress fallback, int vendorId, int options) {
        int port = options >>> 16;
        return vendorId == ECE_VENDOR_ID && port != 0 ? new InetSocketAddress(fallback.getAddress(), port) : fallback;
    }

    private static final Map<RdmaDevice, IbCm> BY_DEVICE = new ConcurrentHashMap<>();
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(IbCm.class);

    private final RdmaDevice device;
    private final GsiOps gsi;
    private final Scheduler loop;
    private final SecureRandom random = new SecureRandom();
    private final int hiTid = random.nextInt();
    private final long caGuid;
    /** Connections by local comm ID. Loop only. */
    private final Map<Integer, CmId> ids = new HashMap<>();
    /** Listeners by service ID (added and removed from any thread, read on the loop). */
    private final Map<Long, RequestHandler> listeners = new ConcurrentHashMap<>();
    /** UD listeners (SIDR) by service ID. Loop only. */
    private final Map<Long, SidrHandler> sidrListeners = new HashMap<>();
    /** The last SIDR answers by (peer, request ID), for retransmitted requests. Loop only. */
    private final Map<String, CmMad> sidrAnswers = new java.util.LinkedHashMap<>(64, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CmMad> eldest) {
            return size() > 256;
        }
    };
    /** Outstanding SIDR requests by request ID. Loop only. */
    private final Map<Integer, SidrQuery> sidrQueries = new HashMap<>();
    /** Devices (IP and UDP port) a well-formed CM MAD came from, up to {@value #MAX_HEARD}; any thread reads. */
    private final java.util.Set<InetSocketAddress> heard = ConcurrentHashMap.newKeySet();
    private static final int MAX_HEARD = 1024;

    private IbCm(RdmaDevice device) {
        this.device = device;
        this.gsi = io.rxe4j.verbs.internal.VerbsAccess.get().gsi(device);
        this.loop = gsi.scheduler();
        this.caGuid = 0x0200_0000_0000_0000L | (random.nextLong() & 0x00FF_FFFF_FFFF_FFFFL);
        gsi.listener(this::onMad);
    }

    /** @return the connection manager of {@code device} (created with its first use) */
    public static IbCm of(RdmaDevice device) {
        return BY_DEVICE.computeIfAbsent(device, IbCm::new);
    }

    /** Stops listening for MADs (the device closes); every pending future fails. */
    public void close() {
        gsi.listener(null);
        BY_DEVICE.remove(device, this);
        abortAll();
    }

    /** Closes the CM of {@code device}, if it has one (the device closes): every pending future fails. */
    public static void closeFor(RdmaDevice device) {
        IbCm cm = BY_DEVICE.remove(device);
        if (cm != null) {
            cm.gsi.listener(null);
            cm.abortAll();
        }
    }

    /** Fails everything in flight (on the loop when it still runs). */
    private void abortAll() {
        for (RequestHandler h : listeners.values()) {
            try {
                h.onClosed();
            } catch (RuntimeException e) {
                LOG.warn("CM: a listener of {} failed while closing", device, e);
            }
        }
        listeners.clear();
        Runnable abort = () -> {
            for (CmId id : new java.util.ArrayList<>(ids.values())) {
                id.destroy("the connection manager of " + device + " closed");
            }
            ids.clear();
            for (SidrQuery q : sidrQueries.values()) {
                if (q.timer != null) {
                    q.timer.cancel();
                }
                q.answer.completeExceptionally(new IllegalStateException("the connection manager closed"));
            }
            sidrQueries.clear();
        };
        try {
            if (loop.inLoop()) {
                abort.run();
            } else {
                loop.execute(abort);
            }
        } catch (RuntimeException loopGone) {
            abort.run();
        }
    }

    /**
     * What one side of a connection asks for ({@code rdma_conn_param} and the {@code rdma_set_option}s;
     * {@code cm-facts.md} §2.1, §3.1). As in rdma_cm, {@code retryCount} of the active side is used by
     * both QPs, and each side's {@code rnrRetryCount} is the one its <em>peer's</em> QP uses.
     *
     * @param pathMtu the path MTU to use at most, as given (up to the device's largest); null: the
     *     port's active MTU; the smaller of both sides' wins
     * @param ackTimeout this side's QP's local ACK timeout exponent (4.096 µs × 2^n), or -1 for the
     *     CM's ({@code cm_ack_timeout} of the peer's ACK delay and the packet life time: 17 with rxe)
     * @param timeoutNanos the most the exchange may take on this side before it gives up (REJ 4 for a
     *     REQ, REJ 28 for a REP), 0 for the CM's retries alone
     */
    public record Options(int responderResources, int initiatorDepth, int retryCount, int rnrRetryCount,
            int minRnrTimer, Mtu pathMtu, int cmResponseTimeout, int maxCmRetries, int ackTimeout,
            long timeoutNanos) {
        /** rping's: 1 READ/atomic each way, 7 retries, RNR retry 7, min RNR timer 12, MTU from the port. */
        public static Options defaults() {
            return new Options(1, 1, 7, 7, 12, null, CM_RESPONSE_TIMEOUT, MAX_CM_RETRIES, -1, 0);
        }
    }

    /** A connected QP. */
    public interface Connection {
        QueuePair qp();

        int remoteQpn();

        /** @return the path MTU the QP uses */
        Mtu pathMtu();

        /** @return the peer's private data: its REP's (196 bytes) on the active side, its REQ's user bytes (56) on the passive side */
        byte[] remotePrivateData();

        /** @return the peer device's (IP, UDP port) the QP talks to */
        InetSocketAddress peer();

        /** DREQ, then the QP to ERR; completes when the peer's DREP arrives or the retries end. */
        CompletableFuture<Void> disconnect();

        /** Completes when the connection ends from either side (DREQ received or DREP). */
        CompletableFuture<Void> disconnected();
    }

    /** A REQ for a service this device listens on, handed to its {@link RequestHandler} on the loop. */
    public interface Incoming {
        /** @return the peer device's (IP, UDP port): port 4791, or the one its rxe4j ECE names */
        InetSocketAddress peer();

        /** @return the REQ's sender QPN */
        int remoteQpn();

        /** @return the REQ's path MTU */
        Mtu pathMtu();

        /**
         * Forgets the REQ without an answer, so that its retransmission comes as new: what Linux does
         * when the listener's backlog is full ({@code cm_destroy_id} with -ENOMEM in REQ_RCVD).
         */
        void drop();

        /** @return rdma_cm's header of the REQ (the peer's IP and port, and ours) */
        CmaHeader cmaHeader();

        /** @return the 56 bytes of user private data after the header */
        byte[] privateData();

        /** Moves {@code qp} (in INIT, or RESET) to RTR and RTS for the peer and sends the REP; completes on the RTU. */
        CompletableFuture<Connection> accept(QueuePair qp, Options options, byte[] privateData);

        /** Sends REJ 28 (consumer defined) with up to 148 bytes. */
        void reject(byte[] privateData);
    }

    /** Receives the REQs of one listened-on port. Runs on the loop: must not block. */
    @FunctionalInterface
    public interface RequestHandler {
        void onRequest(Incoming request);

        /** The CM closed (its device closes): no request comes any more. Any thread; must not block. */
        default void onClosed() {
        }
    }

    /** The answer to a SIDR request: the peer's UD QP and its Q_Key ({@code param.ud} of rdma_cm's ESTABLISHED). */
    public record SidrAnswer(int qpn, int qkey, byte[] privateData) {
        /** A null private data is none. */
        public SidrAnswer {
            privateData = privateData == null ? new byte[0] : privateData;
        }
    }

    /** What a UD service answers a SIDR request with. Runs on the loop: must not block. */
    @FunctionalInterface
    public interface SidrHandler {
        /**
         * @param from the requester's device (IP, UDP port)
         * @param cma rdma_cm's header of the request
         * @param privateData the 180 user bytes after it
         * @return the UD QP and Q_Key to tell the requester, or null to reject (status 2)
         */
        SidrAnswer onSidr(InetSocketAddress from, CmaHeader cma, byte[] privateData);
    }

    /** rdma_cm's Q_Key of UD ids ({@code RDMA_UDP_QKEY}). */
    public static final int RDMA_UDP_QKEY = 0x01234567;

    /** One SIDR_REQ in flight: resent every 4096 ms, 15 times ({@code cma_resolve_ib_udp}). */
    private final class SidrQuery {
        final int requestId;
        final InetSocketAddress peer;
        final CmMad req;
        final CompletableFuture<SidrAnswer> answer = new CompletableFuture<>();
        int retries = MAX_CM_RETRIES;
        Scheduler.Cancellable timer;

        SidrQuery(int requestId, InetSocketAddress peer, CmMad req) {
            this.requestId = requestId;
            this.peer = peer;
            this.req = req;
        }

        void sendAndArm() {
            send(peer, req);
            timer = loop.schedule(this::onTimeout, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(ms(CM_RESPONSE_TIMEOUT)));
        }

        void onTimeout() {
            if (answer.isDone()) {
                return;
            }
            if (retries-- > 0) {
                sendAndArm();
            } else {
                sidrQueries.remove(requestId);
                answer.completeExceptionally(new RejectedException("no SIDR_REP from " + peer + " after "
                        + MAX_CM_RETRIES + " retries", REJ_TIMEOUT, new byte[0]));
            }
        }
    }

    /**
     * A REJ received ({@link #fromPeer()}), or this side's retries or deadline exhausted (reason
     * {@link #REJ_TIMEOUT}, no private data).
     */
    public static final class RejectedException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int reason;
        private final transient byte[] privateData;
        private final boolean fromPeer;

        /** This side gave up (its retries or deadline). */
        RejectedException(String message, int reason, byte[] privateData) {
            this(message, reason, privateData, false);
        }

        RejectedException(String message, int reason, byte[] privateData, boolean fromPeer) {
            super(message);
            this.reason = reason;
            this.privateData = privateData;
            this.fromPeer = fromPeer;
        }

        /** @return whether the peer sent the REJ (or SIDR_REP status), rather than this side timing out */
        public boolean fromPeer() {
            return fromPeer;
        }

        public int reason() {
            return reason;
        }

        public byte[] privateData() {
            return privateData.clone();
        }
    }

    /** The device's connection manager closed (or the id was destroyed) before the exchange ended. */
    public static final class ClosedException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        ClosedException(String message) {
            super(message);
        }
    }

    // ------------------------------------------------------------------ public operations

    /** First port tried for a listener on port 0 ({@code ip_local_port_range}'s default start). */
    static final int EPHEMERAL_LOW = 32768;

    /**
     * Listens on rdma_cm's TCP-space {@code port} ({@code rdma_listen}).
     *
     * @param port 1..65535, or 0 for a free port from 32768..60999
     * @return the port listened on
     * @throws IllegalStateException if something listens on {@code port} already ({@code EADDRINUSE})
     * @throws IllegalArgumentException for a port out of range
     */
    public int listen(int port, RequestHandler handler) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, got " + port);
        }
        if (port == 0) {
            int start = EPHEMERAL_LOW + random.nextInt(61000 - EPHEMERAL_LOW);
            for (int i = 0; i < 61000 - EPHEMERAL_LOW; i++) {
                int p = EPHEMERAL_LOW + (start - EPHEMERAL_LOW + i) % (61000 - EPHEMERAL_LOW);
                if (listeners.putIfAbsent(ServiceIds.of(ServiceIds.PS_TCP, p), handler) == null) {
                    return p;
                }
            }
            throw new IllegalStateException("no free rdma_cm port on " + device);
        }
        if (listeners.putIfAbsent(ServiceIds.of(ServiceIds.PS_TCP, port), handler) != null) {
            throw new IllegalStateException("something listens on rdma_cm port " + port + " of " + device
                    + " already");
        }
        return port;
    }

    /** Answers SIDR requests for rdma_cm's UDP-space {@code port} ({@code rdma_listen} of a UD id). */
    public void listenUd(int port, SidrHandler handler) {
        long sid = ServiceIds.of(ServiceIds.PS_UDP, port);
        loop.execute(() -> sidrListeners.put(sid, handler));
    }

    /**
     * Asks the device at {@code peer} for the UD QP behind rdma_cm's UDP-space {@code port} (SIDR, as
     * {@code rdma_resolve_route} + {@code rdma_connect} of a UD id): completes with its QPN and Q_Key,
     * or exceptionally: status 1 (nobody listens) and 2 (refused) as {@link RejectedException}s with
     * that status as reason, no answer after the retries with reason {@link #REJ_TIMEOUT}.
     *
     * @param userData at most 180 bytes after rdma_cm's header
     */
    public CompletableFuture<SidrAnswer> resolveUd(InetSocketAddress peer, int port, byte[] userData) {
        if (userData.length > CmMessages.SidrReq.PRIVATE_DATA - CmaHeader.LENGTH) {
            throw new IllegalArgumentException("a SIDR_REQ carries at most 180 bytes of private data, got "
                    + userData.length);
        }
        long serviceId = ServiceIds.of(ServiceIds.PS_UDP, port); // throws for a port out of range, before any I/O
        CmaHeader probe = new CmaHeader(1024, device.address().getAddress(), peer.getAddress()); // throws for two families
        CompletableFuture<SidrAnswer> f = new CompletableFuture<>();
        loop.execute(() -> {
            int id;
            do {
                id = random.nextInt();
            } while (id == 0 || sidrQueries.containsKey(id));
            CmaHeader cma = new CmaHeader(1024 + random.nextInt(65536 - 1024), device.address().getAddress(),
                    peer.getAddress());
            CmMessages.SidrReq r = CmMessages.SidrReq.create(newTid(id)).requestId(id).pkey(0xFFFF)
                    .serviceId(serviceId)
                    .privateData(cma.encode(userData, CmMessages.SidrReq.PRIVATE_DATA - CmaHeader.LENGTH));
            SidrQuery q = new SidrQuery(id, peer, r.mad());
            sidrQueries.put(id, q);
            q.answer.whenComplete((a, t) -> {
                if (t != null) {
                    f.completeExceptionally(t);
                } else {
                    f.complete(a);
                }
            });
            q.sendAndArm();
        });
        return f;
    }

    /** Stops listening on {@code port}. */
    public void unlisten(int port) {
        listeners.remove(ServiceIds.of(ServiceIds.PS_TCP, port));
    }

    /**
     * Connects {@code qp} (RC, in INIT or RESET) to the listener on rdma_cm's TCP-space {@code port}
     * of the device at {@code peer} ({@code rdma_connect}).
     *
     * @param peer the peer device's (IP, UDP port): port 4791 for a RoCE peer
     * @param userData at most 56 bytes of private data (after rdma_cm's header)
     */
    public CompletableFuture<Connection> connect(QueuePair qp, InetSocketAddress peer, int port, Options o,
            byte[] userData) {
        if (userData.length > Req.PRIVATE_DATA - CmaHeader.LENGTH) {
            throw new IllegalArgumentException("a REQ carries at most 56 bytes of private data, got " + userData.length);
        }
        long serviceId = ServiceIds.of(ServiceIds.PS_TCP, port); // throws for a port out of range, before any I/O
        new CmaHeader(1024, device.address().getAddress(), peer.getAddress()); // throws for two families
        CompletableFuture<Connection> f = new CompletableFuture<>();
        loop.execute(() -> {
            try {
                CmId id = new CmId(this, qp, peer, o);
                // cancelled by its user: the id goes as a destroyed rdma_cm id does (REJ 4, or a DREQ)
                f.whenComplete((c, t) -> {
                    if (f.isCancelled()) {
                        loop.execute(() -> id.destroy("the connect was cancelled"));
                    }
                });
                id.sendReq(serviceId, userData, f);
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    // ------------------------------------------------------------------ MADs in

    /**
     * @return whether a well-formed CM MAD ever came from the device at {@code peer} (its IP and UDP
     *     port) to this CM; after {@value #MAX_HEARD} peers, new ones are not remembered (false)
     */
    public boolean heardFrom(InetSocketAddress peer) {
        return heard.contains(peer);
    }

    /**
     * One MAD from QP1, on the loop: dispatched by attribute; a malformed one is counted ({@link
     * Counter#CM_DROP_MALFORMED}) and one that names no connection or does not fit its state ({@link
     * Counter#CM_DROP_STALE}), both dropped. Nothing a peer sends escapes as an exception.
     */
    private void onMad(InetSocketAddress from, int srcQp, byte[] grh, byte[] bytes) {
        CmMad m = CmMad.parse(bytes);
        if (m == null) {
            gsi.count(Counter.CM_DROP_MALFORMED); // not a CM Send of class version 2: no agent for it (mad.c:validate_mad)
            return;
        }
        if (heard.size() < MAX_HEARD) {
            heard.add(replyAddress(from)); // a RoCEv2 peer's source port varies; its device is at 4791
        }
        boolean taken;
        try {
            taken = dispatch(m, replyAddress(from));
        } catch (RuntimeException e) { // a field that does not parse (an address family, a length)
            LOG.debug("CM: {} from {} dropped as malformed: {}", m, from, e.toString());
            gsi.count(Counter.CM_DROP_MALFORMED);
            return;
        }
        if (!taken) {
            gsi.count(Counter.CM_DROP_STALE);
        }
    }

    /** @return false if {@code m} named no connection or did not fit its state (stale, replayed) */
    private boolean dispatch(CmMad m, InetSocketAddress peer) {
        return switch (m.attribute()) {
            case CmMad.ATTR_REQ -> onReq(new Req(m), peer);
            case CmMad.ATTR_REP -> withId(new Rep(m).remoteCommId(), m, id -> id.onRep(new Rep(m)));
            case CmMad.ATTR_RTU -> withId(m.remoteCommId(), m, id -> id.onRtu(new RtuOrDrep(m)));
            case CmMad.ATTR_REJ -> onRej(new Rej(m));
            case CmMad.ATTR_MRA -> withId(m.remoteCommId(), m, id -> id.onMra(new CmMessages.Mra(m)));
            case CmMad.ATTR_DREQ -> onDreq(new Dreq(m), peer);
            case CmMad.ATTR_DREP -> withId(m.remoteCommId(), m, id -> id.onDrep(new RtuOrDrep(m)));
            case CmMad.ATTR_SIDR_REQ -> {
                onSidrReq(new CmMessages.SidrReq(m), peer);
                yield true;
            }
            case CmMad.ATTR_SIDR_REP -> onSidrRep(new CmMessages.SidrRep(m));
            default -> throw new IllegalArgumentException("attribute 0x" + Integer.toHexString(m.attribute())
                    + " is not a CM message this CM handles"); // ClassPortInfo, LAP, APR: counted malformed
        };
    }

    /** A REJ: by our comm ID; a REJ 4 of a destroyed active id names us only by its comm ID and GUID (ARI). */
    private boolean onRej(Rej rej) {
        CmId id = ids.get(rej.remoteCommId());
        if (id == null && rej.reason() == REJ_TIMEOUT) {
            for (CmId c : ids.values()) {
                if (c.isRejectedBy(rej)) {
                    id = c;
                    break;
                }
            }
        }
        return id != null && id.onRej(rej);
    }

    private boolean withId(int localCommId, CmMad m, java.util.function.Predicate<CmId> action) {
        CmId id = ids.get(localCommId);
        if (id == null) {
            LOG.debug("CM {} for unknown comm ID 0x{}", m, Integer.toHexString(localCommId));
            return false;
        }
        return action.test(id);
    }

    /** @return true: every well-formed REQ is answered or, as a retransmission, handled */
    private boolean onReq(Req req, InetSocketAddress from) {
        InetSocketAddress peer = eceAddress(from, req.vendorId(), req.mad().attributeModifier());
        for (CmId id : ids.values()) { // a retransmitted REQ (cm_dup_req_handler)
            if (id.isFor(req)) {
                id.onDuplicateReq(req);
                return true;
            }
        }
        for (CmId id : ids.values()) { // the peer's QP is still connected here, or in timewait: REJ 10
            if (id.isStaleFor(req)) {
                send(peer, Rej.create(req.mad().tid()).localCommId(0).remoteCommId(req.localCommId())
                        .messageRejected(Rej.REJECTED_REQ).reason(REJ_STALE_CONN).mad());
                return true;
            }
        }
        RequestHandler h = listeners.get(req.serviceId());
        CmaHeader cma = CmaHeader.parse(req.privateData());
        if (h == null || cma == null || req.transportType() != Req.RC) {
            Rej rej = Rej.create(req.mad().tid()).localCommId(0).remoteCommId(req.localCommId())
                    .messageRejected(Rej.REJECTED_REQ).reason(h == null ? REJ_INVALID_SERVICE_ID : REJ_CONSUMER_DEFINED);
            send(peer, rej.mad());
            return true;
        }
        if (pendingRequests() >= MAX_PENDING_REQUESTS) { // a REQ flood cannot grow the table without bound
            send(peer, Rej.create(req.mad().tid()).localCommId(0).remoteCommId(req.localCommId())
                    .messageRejected(Rej.REJECTED_REQ).reason(REJ_NO_RESOURCES).mad());
            return true;
        }
        CmId id = new CmId(this, null, peer, Options.defaults());
        id.received(req, cma);
        // unanswered after the peer's whole retry window, the request is dropped (the peer has given up)
        long window = (2 * ms(PACKET_LIFE_TIME) + ms(req.remoteCmResponseTimeout())) * (req.maxCmRetries() + 1L);
        loop.schedule(id::expireRequest, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(window));
        try {
            h.onRequest(id.incoming());
        } catch (RuntimeException e) { // the handler failed: REJ 28, as rdma_cm does for a handler error
            LOG.warn("CM: the handler of port {} failed on a REQ from {}", ServiceIds.port(req.serviceId()), peer, e);
            id.rejectRequest(new byte[0]);
        }
        return true;
    }

    /**
     * @return the communication IDs this CM holds: connections in any state, requests waiting for
     *     their answer, ids in timewait (tests, diagnostics: bounded whatever peers send). Loop only.
     */
    public int idCount() {
        return ids.size();
    }

    /** Most requests waiting for their handler's answer at once. */
    static final int MAX_PENDING_REQUESTS = 1024;
    /** REJ reason: no resources. */
    public static final int REJ_NO_RESOURCES = 3;

    private int pendingRequests() {
        int n = 0;
        for (CmId id : ids.values()) {
            if (id.state == CmId.State.REQ_RCVD) {
                n++;
            }
        }
        return n;
    }

    /** A SIDR_REQ: the listener's UD QP and Q_Key, status 1 without a listener ({@code cm_sidr_req_handler}). */
    private void onSidrReq(CmMessages.SidrReq req, InetSocketAddress peer) {
        String key = peer + "/" + req.requestId();
        CmMad answered = sidrAnswers.get(key);
        if (answered != null) { // a retransmitted SIDR_REQ: the same answer (cm_insert_remote_sidr)
            send(peer, answered);
            return;
        }
        SidrHandler h = sidrListeners.get(req.serviceId());
        CmaHeader cma = CmaHeader.parse(req.privateData());
        CmMessages.SidrRep rep = CmMessages.SidrRep.create(req.mad().tid()).requestId(req.requestId())
                .serviceId(req.serviceId());
        SidrAnswer a = h == null || cma == null ? null : h.onSidr(peer, cma, CmaHeader.userData(req.privateData()));
        if (a == null) {
            rep.status(h == null ? CmMessages.SidrRep.UNSUPPORTED : CmMessages.SidrRep.REJECT);
        } else {
            rep.status(CmMessages.SidrRep.SUCCESS).qpn(a.qpn()).qkey(a.qkey()).privateData(a.privateData());
        }
        sidrAnswers.put(key, rep.mad());
        send(peer, rep.mad());
    }

    private boolean onSidrRep(CmMessages.SidrRep rep) {
        SidrQuery q = sidrQueries.remove(rep.requestId());
        if (q == null) {
            return false; // a duplicate answer, or one to nothing asked
        }
        if (q.timer != null) {
            q.timer.cancel();
        }
        if (rep.status() == CmMessages.SidrRep.SUCCESS && rep.qkey() != 0) {
            q.answer.complete(new SidrAnswer(rep.qpn(), rep.qkey(), rep.privateData()));
        } else {
            q.answer.completeExceptionally(new RejectedException("SIDR_REP status " + rep.status() + " from " + q.peer,
                    rep.status(), rep.privateData(), true));
        }
        return true;
    }

    /** @return false for a DREQ of no connection here (answered from the MAD alone, cm_issue_drep) or not of its peer */
    private boolean onDreq(Dreq dreq, InetSocketAddress peer) {
        CmId id = ids.get(dreq.remoteCommId());
        if (id == null) {
            send(peer, RtuOrDrep.drep(dreq.mad().tid()).localCommId(dreq.remoteCommId())
                    .remoteCommId(dreq.localCommId()).mad());
            return false;
        }
        return id.onDreq(dreq);
    }

    // ------------------------------------------------------------------ for CmId

    Scheduler loop() {
        return loop;
    }

    RdmaDevice device() {
        return device;
    }

    long caGuid() {
        return caGuid;
    }

    SecureRandom random() {
        return random;
    }

    int newCommId(CmId id) {
        int c;
        do {
            c = random.nextInt();
        } while (c == 0 || ids.containsKey(c));
        ids.put(c, id);
        return c;
    }

    void forget(int localCommId) {
        ids.remove(localCommId);
    }

    long newTid(int localCommId) {
        return ((long) hiTid << 32) | (localCommId & 0xFFFF_FFFFL);
    }

    void send(InetSocketAddress to, CmMad m) {
        try {
            if (!gsi.send(to, GsiOps.QPN, m.bytes())) {
                LOG.warn("CM: QP1's send queue is full, {} to {} not sent (its retry timer resends it)", m, to);
            }
        } catch (RuntimeException e) { // the device is closing: nothing more goes out
            LOG.debug("CM: {} to {} not sent: {}", m, to, e.toString());
        }
    }

    /** The reply rule of the class comment. */
    InetSocketAddress replyAddress(InetSocketAddress from) {
        return device.address().getPort() == ROCE_PORT ? new InetSocketAddress(from.getAddress(), ROCE_PORT) : from;
    }

    /** @return the 16-byte RoCEv2 GID of {@code ip} (IPv4: {@code ::ffff:a.b.c.d}) */
    static byte[] gid(InetAddress ip) {
        byte[] raw = ip.getAddress();
        if (raw.length == 16) {
            return raw;
        }
        byte[] g = new byte[16];
        g[10] = (byte) 0xFF;
        g[11] = (byte) 0xFF;
        System.arraycopy(raw, 0, g, 12, 4);
        return g;
    }

    /** @return the IBA time exponent as milliseconds ({@code cm_convert_to_ms}) */
    static long ms(int iba) {
        return 1L << Math.max(iba - 8, 0);
    }

    /** The INIT attributes of an RC QP of the CM (REMOTE_WRITE, READ and ATOMIC: {@code cm_init_qp_init_attr}). */
    static void toInit(QueuePair qp) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.LOCAL_WRITE
                    | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        }
    }

    static boolean isIpv4(InetAddress a) {
        return a instanceof Inet4Address;
    }
}
