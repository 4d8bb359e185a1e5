package io.rxe4j.verbs.cm.ib;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.cm.ib.CmMessages.Dreq;
import io.rxe4j.verbs.cm.ib.CmMessages.Rej;
import io.rxe4j.verbs.cm.ib.CmMessages.Rep;
import io.rxe4j.verbs.cm.ib.CmMessages.Req;
import io.rxe4j.verbs.cm.ib.CmMessages.RtuOrDrep;
import io.rxe4j.verbs.internal.VerbsAccess;
import io.rxe4j.verbs.spi.Scheduler;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One connection of the {@link IbCm} ({@code ib_cm_id}), with the states of {@code ib_cm.h} it
 * passes through ({@code cm-facts.md} §5): the active side IDLE → REQ_SENT (→ MRA_REQ_RCVD) →
 * ESTABLISHED; the passive side REQ_RCVD → REP_SENT → ESTABLISHED; either DREQ_SENT or DREQ_RCVD →
 * TIMEWAIT → gone. Each received message has one method; each sent one is kept for its retries,
 * resent unchanged (same TID) on the retry timer, as the MAD layer does. Loop only.
 */
final class CmId implements IbCm.Connection {
    enum State { IDLE, REQ_SENT, MRA_REQ_RCVD, REQ_RCVD, REP_SENT, MRA_REP_RCVD, ESTABLISHED, DREQ_SENT, TIMEWAIT, GONE }

    private final IbCm cm;
    private final Scheduler loop;
    private final InetSocketAddress peer;
    private IbCm.Options o;
    private QueuePair qp;
    State state = State.IDLE;
    private int localCommId;
    private int remoteCommId;
    private long remoteCaGuid;
    private long tid;
    private int remoteQpn;
    private int myPsn;
    private int remotePsn;
    private Mtu pathMtu;
    private byte[] remotePrivate = new byte[0];
    private Req req; // passive: the REQ received
    private RuntimeException withdrawn; // passive: the REJ that withdrew the REQ before it was answered
    private CmaHeader cma;
    private CmMad lastSent;
    private long periodMs;
    private int retriesLeft;
    private Scheduler.Cancellable timer;
    /** The exchange's own deadline ({@link IbCm.Options#timeoutNanos()}), if any. */
    private Scheduler.Cancellable deadline;
    /** Active side: the extension bits offered in the REQ. */
    private int offered;
    private CompletableFuture<IbCm.Connection> connected;
    private final CompletableFuture<Void> disconnectDone = new CompletableFuture<>();
    private final CompletableFuture<Void> disconnected = new CompletableFuture<>();

    CmId(IbCm cm, QueuePair qp, InetSocketAddress peer, IbCm.Options o) {
        this.cm = cm;
        this.loop = cm.loop();
        this.qp = qp;
        this.peer = peer;
        this.o = o;
    }

    // ------------------------------------------------------------------ active side

    /** IDLE → REQ_SENT. */
    void sendReq(long serviceId, byte[] user, CompletableFuture<IbCm.Connection> f) {
        IbCm.toInit(qp);
        connected = f;
        myPsn = cm.random().nextInt(1 << 24);
        pathMtu = mtu(Mtu.MTU_4096);
        offered = VerbsAccess.get().localExtensions(qp);
        int cmaPort = 1024 + cm.random().nextInt(65536 - 1024);
        java.net.InetAddress local = cm.device().address().getAddress();
        cma = new CmaHeader(cmaPort, local, peer.getAddress()); // throws for two address families: nothing registered yet
        localCommId = cm.newCommId(this);
        tid = cm.newTid(localCommId);
        Req r = Req.create(tid).localCommId(localCommId).serviceId(serviceId).localCaGuid(cm.caGuid())
                .localQpn(qp.qpNum()).responderResources(o.responderResources()).initiatorDepth(o.initiatorDepth())
                .remoteCmResponseTimeout(o.cmResponseTimeout()).transportType(Req.RC).startingPsn(myPsn)
                .localCmResponseTimeout(o.cmResponseTimeout()).retryCount(o.retryCount()).pkey(0xFFFF)
                .pathMtu(pathMtu.value()).rnrRetryCount(o.rnrRetryCount()).maxCmRetries(o.maxCmRetries())
                .primaryLocalLid(0xFFFF).primaryRemoteLid(0xFFFF).primaryLocalGid(IbCm.gid(local))
                .primaryRemoteGid(IbCm.gid(peer.getAddress()))
                .primaryFlowLabel((cmaPort * 31 + ServiceIds.port(serviceId)) & 0xFFFFF).primaryHopLimit(64)
                .primaryLocalAckTimeout(IbCm.PACKET_LIFE_TIME + 1)
                .privateData(cma.encode(user, Req.PRIVATE_DATA - CmaHeader.LENGTH))
                .vendorId(IbCm.ECE_VENDOR_ID);
        r.mad().attributeModifier(IbCm.eceOptions(cm.device().address().getPort(), 0, offered));
        state = State.REQ_SENT;
        armDeadline();
        arm(r.mad(), 2 * IbCm.ms(IbCm.PACKET_LIFE_TIME) + IbCm.ms(o.cmResponseTimeout()), o.maxCmRetries());
    }

    /**
     * A REP: REQ_SENT/MRA_REQ_RCVD → RTR, RTS, RTU, ESTABLISHED; a duplicate in ESTABLISHED gets the RTU again.
     *
     * @return false if the REP does not fit this id's state (stale, replayed): dropped
     */
    boolean onRep(Rep rep) {
        if (state == State.ESTABLISHED && rep.localCommId() == remoteCommId) {
            send(lastSent); // the RTU was lost (cm_dup_rep_handler)
            return true;
        }
        if (state != State.REQ_SENT && state != State.MRA_REQ_RCVD) {
            return false;
        }
        cancel();
        remoteCommId = rep.localCommId();
        remoteCaGuid = rep.localCaGuid();
        remoteQpn = rep.localQpn();
        remotePsn = rep.startingPsn();
        remotePrivate = rep.privateData();
        int agreed = 0;
        if (rep.vendorId() == IbCm.ECE_VENDOR_ID) { // an rxe4j peer (a librdmacm one echoes it with options 0)
            int opts = rep.mad().attributeModifier();
            agreed = opts & 0xFFF;
            int mtuEnum = (opts >>> 12) & 0xF;
            if (mtuEnum != 0 && ibMtu(mtuEnum).bytes() < pathMtu.bytes()) {
                pathMtu = ibMtu(mtuEnum); // the passive side takes at most what we asked for, maybe less
            }
        }
        try {
            if ((agreed & ~offered) != 0) {
                throw new IllegalArgumentException("the REP agrees to extensions 0x" + Integer.toHexString(agreed)
                        + " beyond the 0x" + Integer.toHexString(offered) + " offered");
            }
            VerbsAccess.get().setPeerExtensions(qp, agreed);
            qp.modify(new QpAttr().state(QpState.RTR).av(peer).pathMtu(pathMtu).destQpNum(remoteQpn).rqPsn(myPsn)
                    .maxDestRdAtomic(o.responderResources()).minRnrTimer(o.minRnrTimer()));
            qp.modify(new QpAttr().state(QpState.RTS).timeout(o.ackTimeout() >= 0 ? o.ackTimeout()
                    : ackTimeout(rep.targetAckDelay()))
                    .retryCnt(o.retryCount()).rnrRetry(rep.rnrRetryCount()).sqPsn(remotePsn)
                    .maxRdAtomic(Math.min(o.initiatorDepth(), rep.responderResources())));
        } catch (RuntimeException e) { // cma_rep_recv: REJ 28, CONNECT_ERROR
            cm.send(peer, Rej.create(tid).localCommId(localCommId).remoteCommId(remoteCommId)
                    .messageRejected(Rej.REJECTED_REP).reason(IbCm.REJ_CONSUMER_DEFINED).mad());
            fail(new IllegalStateException("the QP could not be connected after the REP from " + peer + ": "
                    + e.getMessage(), e));
            return true;
        }
        lastSent = RtuOrDrep.rtu(tid).localCommId(localCommId).remoteCommId(remoteCommId).mad();
        send(lastSent);
        established();
        return true;
    }

    /** {@code cm_ack_timeout}: the QP's local ACK timeout from the peer's ACK delay and the packet life time. */
    static int ackTimeout(int targetAckDelay) {
        int a = IbCm.PACKET_LIFE_TIME + 1;
        if (a >= targetAckDelay) {
            a += targetAckDelay >= a - 1 ? 1 : 0;
        } else {
            a = targetAckDelay + (a >= targetAckDelay - 1 ? 1 : 0);
        }
        return Math.min(31, a);
    }

    /**
     * An MRA: the peer needs time; the retry timer is extended to conv(service timeout) + conv(17)
     * ({@code cm_mra_handler}): of our REQ (REQ_SENT → MRA_REQ_RCVD) or of our REP (REP_SENT → MRA_REP_RCVD).
     */
    boolean onMra(CmMessages.Mra mra) {
        boolean ofReq = mra.messageMraed() == 0 && state == State.REQ_SENT;
        boolean ofRep = mra.messageMraed() == 1 && state == State.REP_SENT && mra.localCommId() == remoteCommId;
        if (!ofReq && !ofRep) {
            return false;
        }
        state = ofReq ? State.MRA_REQ_RCVD : State.MRA_REP_RCVD;
        cancel();
        timer = loop.schedule(this::onTimeout, TimeUnit.MILLISECONDS.toNanos(IbCm.ms(mra.serviceTimeout())
                + IbCm.ms(IbCm.PACKET_LIFE_TIME + 1)));
        return true;
    }

    /**
     * A REJ of our REQ or REP: the connection fails with its reason and private data.
     *
     * @return false if the REJ does not fit this id's state (stale, replayed): dropped
     */
    boolean onRej(Rej rej) {
        if (state == State.REQ_SENT || state == State.MRA_REQ_RCVD) {
            // a REJ of our REQ names us only (its local comm ID is 0 from REQ_RCVD)
            fail(new IbCm.RejectedException("rejected by " + peer + ": reason " + rej.reason(), rej.reason(),
                    rej.privateData(), true));
            return true;
        } else if (rej.localCommId() == remoteCommId || rej.reason() == IbCm.REJ_TIMEOUT) {
            if (state == State.REQ_RCVD) {
                // the active side gave up (REJ 4 from its destroy or timeout) before anyone answered:
                // forgotten, as Linux's cm_rej_handler resets a REQ_RCVD id to idle; an accept then fails
                withdrawn = new IbCm.RejectedException("the peer at " + peer + " withdrew its request (REJ reason "
                        + rej.reason() + ")", rej.reason(), rej.privateData(), true);
                forgetNow();
                return true;
            } else if (state == State.REP_SENT || state == State.MRA_REP_RCVD) {
                fail(new IbCm.RejectedException("the REP was rejected by " + peer + ": reason " + rej.reason(),
                        rej.reason(), rej.privateData(), true));
                return true;
            } else if (state == State.ESTABLISHED) {
                toError("the peer at " + peer + " rejected the connection (REJ reason " + rej.reason() + ")");
                end();
                return true;
            }
        }
        return false;
    }

    /** @return whether {@code rej}, a REJ 4 of a destroyed active id, names this passive id (by comm ID and the ARI's GUID) */
    boolean isRejectedBy(Rej rej) {
        byte[] ari = rej.ari();
        if (req == null || ari.length < 8 || rej.localCommId() != remoteCommId) {
            return false;
        }
        return java.nio.ByteBuffer.wrap(ari).getLong(0) == remoteCaGuid;
    }

    // ------------------------------------------------------------------ passive side

    /** IDLE → REQ_RCVD with the REQ's values. */
    void received(Req r, CmaHeader header) {
        req = r;
        cma = header;
        remoteCommId = r.localCommId();
        remoteCaGuid = r.localCaGuid();
        tid = r.mad().tid();
        remoteQpn = r.localQpn();
        remotePsn = r.startingPsn();
        remotePrivate = CmaHeader.userData(r.privateData());
        localCommId = cm.newCommId(this);
        state = State.REQ_RCVD;
    }

    /** @return whether {@code r} is a retransmission of the REQ this id answers */
    boolean isFor(Req r) {
        return req != null && remoteCommId == r.localCommId() && remoteCaGuid == r.localCaGuid();
    }

    /**
     * @return whether a new REQ {@code r} comes from the QP this id is (or was, in TIMEWAIT) connected
     *     to: the same QPN and CA GUID under another comm ID ({@code cm_match_req}'s stale check)
     */
    boolean isStaleFor(Req r) {
        return (state == State.ESTABLISHED || state == State.TIMEWAIT || state == State.DREQ_SENT)
                && remoteQpn == r.localQpn() && remoteCaGuid == r.localCaGuid() && remoteCommId != r.localCommId();
    }

    /** A retransmitted REQ: in REP_SENT the REP again, in TIMEWAIT REJ 10; otherwise nothing (cm_dup_req_handler). */
    void onDuplicateReq(Req r) {
        if (state == State.REP_SENT || state == State.MRA_REP_RCVD) {
            send(lastSent);
        } else if (state == State.TIMEWAIT) {
            cm.send(peer, Rej.create(r.mad().tid()).localCommId(0).remoteCommId(r.localCommId())
                    .messageRejected(Rej.REJECTED_REQ).reason(IbCm.REJ_STALE_CONN).mad());
        }
    }

    IbCm.Incoming incoming() {
        return new IbCm.Incoming() {
            @Override
            public InetSocketAddress peer() {
                return peer;
            }

            @Override
            public int remoteQpn() {
                return remoteQpn;
            }

            @Override
            public Mtu pathMtu() {
                return ibMtu(req.pathMtu());
            }

            @Override
            public void drop() {
                loop.execute(() -> {
                    if (state == State.REQ_RCVD) {
                        forgetNow();
                    }
                });
            }

            @Override
            public CmaHeader cmaHeader() {
                return cma;
            }

            @Override
            public byte[] privateData() {
                return remotePrivate.clone();
            }

            @Override
            public CompletableFuture<IbCm.Connection> accept(QueuePair q, IbCm.Options options, byte[] user) {
                if (user.length > Rep.PRIVATE_DATA) {
                    throw new IllegalArgumentException("a REP carries at most 196 bytes, got " + user.length);
                }
                CompletableFuture<IbCm.Connection> f = new CompletableFuture<>();
                f.whenComplete((c, t) -> {
                    if (f.isCancelled()) {
                        loop.execute(() -> destroy("the accept was cancelled"));
                    }
                });
                loop.execute(() -> {
                    try {
                        sendRep(q, options, user, f);
                    } catch (RuntimeException e) { // rdma_accept's error path: REJ 28, as rdma_reject
                        if (state == State.REQ_RCVD) {
                            rejectRequest(new byte[0]);
                        }
                        f.completeExceptionally(e);
                    }
                });
                return f;
            }

            @Override
            public void reject(byte[] user) {
                loop.execute(() -> {
                    if (state == State.REQ_RCVD) {
                        rejectRequest(user);
                    }
                });
            }
        };
    }

    /** REQ_RCVD: REJ 28 with {@code user} (a REJ of a REQ has local comm ID 0), and the id is gone at once. */
    void rejectRequest(byte[] user) {
        cm.send(peer, Rej.create(tid).localCommId(0).remoteCommId(remoteCommId).messageRejected(Rej.REJECTED_REQ)
                .reason(IbCm.REJ_CONSUMER_DEFINED).privateData(user).mad());
        forgetNow();
    }

    /** REQ_RCVD: nobody answered within the peer's retry window ({@code expiry}): gone, silently. */
    void expireRequest() {
        if (state == State.REQ_RCVD) {
            forgetNow();
        }
    }

    /** REQ_RCVD → the QP to RTR and RTS, REP_SENT ({@code cm-facts.md} §3.1: the passive side's attributes). */
    private void sendRep(QueuePair q, IbCm.Options options, byte[] user, CompletableFuture<IbCm.Connection> f) {
        if (withdrawn != null) {
            throw withdrawn;
        }
        if (state != State.REQ_RCVD) {
            throw new IllegalStateException("the request was answered already (" + state + ")");
        }
        qp = q;
        o = options;
        connected = f;
        IbCm.toInit(qp);
        myPsn = cm.random().nextInt(1 << 24);
        pathMtu = mtu(ibMtu(req.pathMtu()));
        boolean rxe4jPeer = req.vendorId() == IbCm.ECE_VENDOR_ID;
        if (!rxe4jPeer) {
            pathMtu = ibMtu(req.pathMtu()); // a peer that cannot be told uses the REQ's: so must we (§3.1)
        }
        int agreed = rxe4jPeer ? req.mad().attributeModifier() & 0xFFF & VerbsAccess.get().localExtensions(q) : 0;
        VerbsAccess.get().setPeerExtensions(q, agreed);
        qp.modify(new QpAttr().state(QpState.RTR).av(peer).pathMtu(pathMtu).destQpNum(remoteQpn).rqPsn(myPsn)
                .maxDestRdAtomic(o.responderResources()).minRnrTimer(o.minRnrTimer()));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(o.ackTimeout() >= 0 ? o.ackTimeout()
                : req.primaryLocalAckTimeout()).retryCnt(req.retryCount())
                .rnrRetry(req.rnrRetryCount()).sqPsn(remotePsn)
                .maxRdAtomic(Math.min(o.initiatorDepth(), req.responderResources())));
        Rep rep = Rep.create(tid).localCommId(localCommId).remoteCommId(remoteCommId).localQpn(qp.qpNum())
                .startingPsn(myPsn).responderResources(o.responderResources()).initiatorDepth(o.initiatorDepth())
                .targetAckDelay(IbCm.TARGET_ACK_DELAY).rnrRetryCount(o.rnrRetryCount()).localCaGuid(cm.caGuid())
                .privateData(user);
        if (rxe4jPeer) {
            rep.vendorId(IbCm.ECE_VENDOR_ID);
            rep.mad().attributeModifier(IbCm.eceOptions(cm.device().address().getPort(), pathMtu.value(), agreed));
        }
        state = State.REP_SENT;
        armDeadline();
        arm(rep.mad(), IbCm.ms(req.localCmResponseTimeout()), req.maxCmRetries());
    }

    /** An RTU: REP_SENT → ESTABLISHED. @return false if it does not fit (stale, replayed): dropped */
    boolean onRtu(RtuOrDrep rtu) {
        if ((state == State.REP_SENT || state == State.MRA_REP_RCVD) && rtu.localCommId() == remoteCommId) {
            cancel();
            established();
            return true;
        }
        return false;
    }

    // ------------------------------------------------------------------ disconnection

    @Override
    public CompletableFuture<Void> disconnect() {
        loop.execute(() -> {
            if (state == State.DREQ_SENT) {
                return; // under way: the DREP (or the retries' end) completes it
            }
            if (state != State.ESTABLISHED) {
                disconnectDone.complete(null);
                return;
            }
            toError("this side disconnected");
            Dreq d = Dreq.create(cm.newTid(localCommId)).localCommId(localCommId).remoteCommId(remoteCommId)
                    .remoteQpn(remoteQpn);
            state = State.DREQ_SENT;
            arm(d.mad(), 2 * IbCm.ms(IbCm.PACKET_LIFE_TIME) + IbCm.ms(o.cmResponseTimeout()), o.maxCmRetries());
        });
        return disconnectDone;
    }

    /** A DREQ for this connection: DREP, the QP to ERR, TIMEWAIT. @return false if not for this id: dropped */
    boolean onDreq(Dreq d) {
        if ((qp != null && d.remoteQpn() != qp.qpNum()) || d.localCommId() != remoteCommId) {
            return false; // not our QP, or not our peer (cm_dreq_handler, cm_acquire_id)
        }
        cm.send(peer, RtuOrDrep.drep(d.mad().tid()).localCommId(localCommId).remoteCommId(remoteCommId).mad());
        if (state == State.REP_SENT || state == State.MRA_REP_RCVD) { // our RTU was lost: it was connected
            cancel();
            established();
        }
        if (state == State.ESTABLISHED || state == State.DREQ_SENT) {
            cancel();
            toError("the peer at " + peer + " disconnected");
            disconnectDone.complete(null);
            end();
        }
        return true;
    }

    /** A DREP: DREQ_SENT → TIMEWAIT. @return false if it does not fit (stale, replayed): dropped */
    boolean onDrep(RtuOrDrep drep) {
        if (state == State.DREQ_SENT && drep.localCommId() == remoteCommId) {
            cancel();
            disconnectDone.complete(null);
            end();
            return true;
        }
        return false;
    }

    // ------------------------------------------------------------------ retries and the end

    private void arm(CmMad m, long period, int retries) {
        lastSent = m;
        periodMs = period;
        retriesLeft = retries;
        send(m);
        timer = loop.schedule(this::onTimeout, TimeUnit.MILLISECONDS.toNanos(periodMs));
    }

    private void onTimeout() {
        timer = null;
        if (state != State.REQ_SENT && state != State.MRA_REQ_RCVD && state != State.REP_SENT
                && state != State.MRA_REP_RCVD && state != State.DREQ_SENT) {
            return;
        }
        if (retriesLeft-- > 0) {
            send(lastSent);
            timer = loop.schedule(this::onTimeout, TimeUnit.MILLISECONDS.toNanos(periodMs));
            return;
        }
        if (state == State.DREQ_SENT) {
            disconnectDone.complete(null); // DREQ_ERROR: the connection is down anyway
            end();
            return;
        }
        fail(new IbCm.RejectedException("no answer from " + peer + " after " + o.maxCmRetries() + " retries of "
                + periodMs + " ms", IbCm.REJ_TIMEOUT, new byte[0]));
    }

    /** → ESTABLISHED: the exchange's deadline off, the future completed. */
    private void established() {
        state = State.ESTABLISHED;
        if (deadline != null) {
            deadline.cancel();
            deadline = null;
        }
        connected.complete(this);
    }

    /** Arms the exchange's own deadline, if the options set one. */
    private void armDeadline() {
        if (o.timeoutNanos() > 0) {
            deadline = loop.schedule(this::onDeadline, o.timeoutNanos());
        }
    }

    /** The exchange took longer than {@link IbCm.Options#timeoutNanos()}: it gives up as a destroyed id. */
    private void onDeadline() {
        deadline = null;
        if (state == State.REQ_SENT || state == State.MRA_REQ_RCVD || state == State.REP_SENT
                || state == State.MRA_REP_RCVD) {
            long ms = TimeUnit.NANOSECONDS.toMillis(o.timeoutNanos());
            sayGoodbye();
            fail(new IbCm.RejectedException("no " + (req == null ? "REP" : "RTU") + " from " + peer + " within "
                    + ms + " ms", IbCm.REJ_TIMEOUT, new byte[0]));
        }
    }

    /**
     * What a destroyed id tells its peer ({@code cm_destroy_id}), sent once: REJ 4 with our CA GUID
     * for a REQ in flight, REJ 28 for a request received or a REP in flight, a DREQ for a connection.
     */
    private void sayGoodbye() {
        switch (state) {
            // cm_format_rej: REQ_RCVD names the REQ (local comm ID 0); the others are "other"
            case REQ_SENT, MRA_REQ_RCVD -> send(Rej.create(tid).localCommId(localCommId).remoteCommId(0)
                    .messageRejected(Rej.REJECTED_OTHER).reason(IbCm.REJ_TIMEOUT)
                    .ari(java.nio.ByteBuffer.allocate(8).putLong(cm.caGuid()).array()).mad());
            case REQ_RCVD -> send(Rej.create(tid).localCommId(0).remoteCommId(remoteCommId)
                    .messageRejected(Rej.REJECTED_REQ).reason(IbCm.REJ_CONSUMER_DEFINED).mad());
            case REP_SENT, MRA_REP_RCVD -> send(Rej.create(tid).localCommId(localCommId).remoteCommId(remoteCommId)
                    .messageRejected(Rej.REJECTED_OTHER).reason(IbCm.REJ_CONSUMER_DEFINED).mad());
            // no retries follow a destroyed id: two copies, so that one lost packet does not leave the
            // peer connected (a duplicate is answered by a DREP too: cm_dreq_handler, cm_issue_drep)
            case ESTABLISHED -> {
                CmMad d = Dreq.create(cm.newTid(localCommId)).localCommId(localCommId).remoteCommId(remoteCommId)
                        .remoteQpn(remoteQpn).mad();
                send(d);
                send(d);
            }
            case DREQ_SENT -> send(lastSent); // a second copy of the DREQ whose retries end here
            default -> { }
        }
    }

    /**
     * The id is destroyed (its future cancelled, or the device's CM closes): the peer is told once
     * ({@link #sayGoodbye()}), every future completes, no timer stays armed, the id is gone.
     */
    void destroy(String why) {
        if (state == State.GONE) {
            return;
        }
        sayGoodbye();
        if (state == State.ESTABLISHED || state == State.DREQ_SENT) {
            toError(why);
        }
        abort(why);
        cm.forget(localCommId);
    }

    /** The connection never came up: the future fails, the QP goes to ERR (rdma_cm's REJECTED), the id is gone. */
    private void fail(RuntimeException e) {
        cancel();
        toError(e.getMessage());
        if (connected != null) {
            connected.completeExceptionally(e);
        }
        forgetNow();
    }

    /** The device's CM closes: every future fails, no timer stays armed. */
    void abort(String why) {
        cancel();
        if (deadline != null) {
            deadline.cancel();
            deadline = null;
        }
        IllegalStateException e = new IbCm.ClosedException(why);
        if (connected != null) {
            connected.completeExceptionally(e);
        }
        disconnectDone.complete(null);
        disconnected.complete(null);
        state = State.GONE;
    }

    private void forgetNow() {
        cancel();
        if (deadline != null) {
            deadline.cancel();
            deadline = null;
        }
        state = State.GONE;
        disconnected.complete(null);
        cm.forget(localCommId);
    }

    /** → TIMEWAIT, then gone after the timewait ({@code cm_enter_timewait}: conv(av.timeout) = 512 ms). */
    private void end() {
        cancel();
        state = State.TIMEWAIT;
        disconnected.complete(null);
        loop.schedule(() -> {
            state = State.GONE;
            cm.forget(localCommId);
        }, TimeUnit.MILLISECONDS.toNanos(IbCm.ms(IbCm.PACKET_LIFE_TIME + 1)));
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel();
            timer = null;
        }
    }

    private void send(CmMad m) {
        cm.send(peer, m);
    }

    /**
     * The QP to ERR with {@code reason} as its error reason, unless the application reset or
     * destroyed it, or it is in ERR already ({@code disconnectToError}).
     */
    private void toError(String reason) {
        try {
            if (qp != null) {
                VerbsAccess.get().disconnectToError(qp, reason);
            }
        } catch (RuntimeException destroyed) {
            // the QP or its device is gone already: nothing to move
        }
    }

    /** @return the MTU of IB's enum value {@code v} (1 = 256 … 5 = 4096; another value: 4096) */
    static Mtu ibMtu(int v) {
        for (Mtu m : Mtu.values()) {
            if (m.value() == v) {
                return m;
            }
        }
        return Mtu.MTU_4096;
    }

    /** @return the smaller of {@code peerMax} and this side's: the options' MTU as given, else the port's active MTU */
    private Mtu mtu(Mtu peerMax) {
        Mtu m = o.pathMtu() != null ? o.pathMtu() : cm.device().queryPort(1).activeMtu();
        return peerMax.bytes() < m.bytes() ? peerMax : m;
    }

    // ------------------------------------------------------------------ Connection

    @Override
    public QueuePair qp() {
        return qp;
    }

    @Override
    public int remoteQpn() {
        return remoteQpn;
    }

    @Override
    public Mtu pathMtu() {
        return pathMtu;
    }

    @Override
    public byte[] remotePrivateData() {
        return remotePrivate.clone();
    }

    @Override
    public InetSocketAddress peer() {
        return peer;
    }

    @Override
    public CompletableFuture<Void> disconnected() {
        return disconnected;
    }

    @Override
    public String toString() {
        return "CmId{" + state + ", local=0x" + Integer.toHexString(localCommId) + ", remote=0x"
                + Integer.toHexString(remoteCommId) + ", peer " + peer + '}';
    }
}
