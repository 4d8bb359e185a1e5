package io.rxe4j.examples.demo;

import io.rxe4j.examples.RcEndpoint;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.AddressHandle;
import io.rxe4j.verbs.AhAttr;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.SharedReceiveQueue;
import io.rxe4j.verbs.SrqInitAttr;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

/**
 * The demo's second connection and its UD exchange ({@code docs/verbs.md} "Shared receive queues",
 * "UD queue pairs"): the client connects again; the server accepts on a QP that takes its receives
 * from a shared receive queue and says in its accept private data which UD QP and Q_Key it has; the
 * client, which sent its own UD QPN in its connect private data, SENDs {@value #SENDS} messages over
 * the new connection (the server checks each where the SRQ put it) and then {@value #DATAGRAMS} UD
 * datagrams to the server's UD QP, which echoes each back to the client's UD QP. UD is unreliable,
 * so the client sends a datagram again until its echo comes back (as UD applications do), at most
 * {@value #TRIES} times.
 */
final class SrqAndUd {
    static final int SENDS = 4;
    static final int SEND_LEN = 2000;
    static final int DATAGRAMS = 3;
    static final int DATAGRAM_LEN = 512;
    static final int TRIES = 50;
    static final int QKEY = 0x11111111;
    static final long SEND_SEED = 0x5E9D;
    static final long UD_SEED = 0xD6;
    private static final int GRH = 40;
    private static final int UD_SLOTS = 8;

    private SrqAndUd() {}

    private static ConnectionParams params(int ackTimeout) {
        return ConnectionParams.defaults().withAckTimeout(ackTimeout);
    }

    /** A UD QP in RTS with its CQ and {@link #UD_SLOTS} receive slots of 40 + {@link #DATAGRAM_LEN} bytes posted. */
    private record Ud(QueuePair qp, CompletionQueue cq, MemoryRegion mr) implements AutoCloseable {
        static Ud open(ProtectionDomain pd) {
            CompletionQueue cq = pd.device().createCq(64);
            QueuePair qp = pd.createQp(QpInitAttr.ud(cq, cq));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(QKEY));
            qp.modify(new QpAttr().state(QpState.RTR));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            MemoryRegion mr = pd.allocMr((long) UD_SLOTS * (GRH + DATAGRAM_LEN) + DATAGRAM_LEN, Access.LOCAL_WRITE);
            Ud ud = new Ud(qp, cq, mr);
            for (int s = 0; s < UD_SLOTS; s++) {
                ud.repost(s);
            }
            return ud;
        }

        void repost(int s) {
            qp.postRecv(new RecvWr().set(s, new Sge(mr.addr() + (long) s * (GRH + DATAGRAM_LEN), GRH + DATAGRAM_LEN,
                    mr.lkey())));
        }

        /** @return the slot's payload offset in the MR */
        static long payload(int s) {
            return (long) s * (GRH + DATAGRAM_LEN) + GRH;
        }

        /** The send buffer, after the receive slots. */
        long sendOff() {
            return (long) UD_SLOTS * (GRH + DATAGRAM_LEN);
        }

        @Override
        public void close() {
            qp.close();
            mr.close();
            cq.close();
        }
    }

    // ------------------------------------------------------------------ server

    /**
     * Accepts the client's second connection on an SRQ-served QP, checks its SENDs, and echoes its UD
     * datagrams until the client disconnects. Adds what went wrong to {@code failures}.
     */
    static void serve(RcEndpoint ep, RdmaListener listener, int ackTimeout, List<String> failures) throws Exception {
        ProtectionDomain pd = ep.connection().qp().pd();
        CompletionQueue cq = pd.device().createCq(64);
        MemoryRegion buf = pd.allocMr((long) SENDS * SEND_LEN, Access.LOCAL_WRITE);
        try (SharedReceiveQueue srq = pd.createSrq(new SrqInitAttr(SENDS * 2, 1, 0)); Ud ud = Ud.open(pd)) {
            for (int i = 0; i < SENDS; i++) {
                srq.postRecv(new RecvWr().set(i, new Sge(buf.addr() + (long) i * SEND_LEN, SEND_LEN, buf.lkey())));
            }
            byte[] mine = ByteBuffer.allocate(8).putInt(ud.qp().qpNum()).putInt(QKEY).array();
            RdmaConnection conn = listener.accept(pd, cq, cq, params(ackTimeout).withSrq(srq).withAcceptPrivateData(mine),
                    qp -> { });
            try {
                int clientUdQpn = ByteBuffer.wrap(conn.remotePrivateData()).getInt();
                WorkCompletion[] wc = {new WorkCompletion()};
                for (int i = 0; i < SENDS; i++) {
                    if (!await(cq, wc, 60)) {
                        failures.add("SRQ connection: no SEND " + i);
                        return;
                    }
                    // the SRQ hands out its receives in posting order, to whichever of its QPs needs one
                    if (wc[0].status != WcStatus.SUCCESS || wc[0].wrId != i || wc[0].qpNum != conn.qp().qpNum()
                            || wc[0].byteLen != SEND_LEN
                            || !Pattern.matches(buf.segment(), (long) i * SEND_LEN, SEND_LEN, SEND_SEED + i)) {
                        failures.add("SRQ connection: SEND " + i + " completed as " + wc[0]);
                    }
                }
                echo(ud, conn, clientUdQpn, failures);
            } finally {
                conn.close();
            }
            System.out.println("server: " + SENDS + " SENDs taken from the SRQ, UD datagrams echoed");
        } finally {
            buf.close();
            cq.close();
        }
    }

    /** Echoes every datagram from the client's UD QP back to it, until the client disconnects. */
    private static void echo(Ud ud, RdmaConnection conn, int clientUdQpn, List<String> failures) throws Exception {
        try (AddressHandle ah = ud.qp().pd().createAh(AhAttr.of(conn.remoteAddress()))) {
            WorkCompletion[] wc = {new WorkCompletion()};
            boolean[] seen = new boolean[DATAGRAMS];
            while (!conn.awaitDisconnect(Duration.ZERO)) {
                if (!await(ud.cq(), wc, 0)) {
                    Thread.onSpinWait();
                    ud.cq().await(5_000_000L);
                    continue;
                }
                WorkCompletion w = wc[0];
                if (w.opcode == WcOpcode.SEND) {
                    continue; // an echo went out
                }
                int s = (int) w.wrId;
                long off = Ud.payload(s);
                int seq = ud.mr().segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, off);
                if (w.status != WcStatus.SUCCESS || w.srcQp != clientUdQpn || w.byteLen != GRH + DATAGRAM_LEN
                        || seq < 0 || seq >= DATAGRAMS
                        || !Pattern.matches(ud.mr().segment(), off + 1, DATAGRAM_LEN - 1, UD_SEED + seq)) {
                    failures.add("UD datagram completed as " + w);
                    ud.repost(s);
                    continue;
                }
                seen[seq] = true;
                java.lang.foreign.MemorySegment.copy(ud.mr().segment(), off, ud.mr().segment(), ud.sendOff(),
                        DATAGRAM_LEN);
                ud.repost(s);
                ud.qp().postSend(new SendWr().send(100 + seq, new Sge(ud.mr().addr() + ud.sendOff(), DATAGRAM_LEN,
                        ud.mr().lkey())).ud(ah, clientUdQpn, QKEY));
            }
            for (int i = 0; i < DATAGRAMS; i++) {
                if (!seen[i]) {
                    failures.add("UD datagram " + i + " never arrived");
                }
            }
        }
    }

    private static boolean await(CompletionQueue cq, WorkCompletion[] wc, long seconds) {
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (cq.poll(wc) == 0) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            cq.await(Math.min(left, 50_000_000L));
        }
        return true;
    }

    // ------------------------------------------------------------------ client

    /** The client's side: @return a failure description, or null when everything was checked and right. */
    static String run(RcEndpoint ep, java.net.InetSocketAddress serverDevice, int port, int ackTimeout, int[] udTries)
            throws Exception {
        ProtectionDomain pd = ep.connection().qp().pd();
        CompletionQueue cq = pd.device().createCq(64);
        MemoryRegion buf = pd.allocMr((long) SENDS * SEND_LEN, Access.LOCAL_WRITE);
        try (Ud ud = Ud.open(pd)) {
            byte[] mine = ByteBuffer.allocate(4).putInt(ud.qp().qpNum()).array();
            RdmaConnection conn = RdmaConnection.connect(pd, cq, cq, serverDevice, port,
                    params(ackTimeout).withPrivateData(mine),
                    qp -> { });
            try {
                ByteBuffer theirs = ByteBuffer.wrap(conn.remotePrivateData());
                int serverUdQpn = theirs.getInt();
                int qkey = theirs.getInt();
                WorkCompletion[] wc = {new WorkCompletion()};
                for (int i = 0; i < SENDS; i++) {
                    Pattern.fill(buf.segment(), (long) i * SEND_LEN, SEND_LEN, SEND_SEED + i);
                    conn.qp().postSend(new SendWr().send(i, new Sge(buf.addr() + (long) i * SEND_LEN, SEND_LEN,
                            buf.lkey())).signaled());
                }
                for (int i = 0; i < SENDS; i++) {
                    if (!await(cq, wc, 60) || wc[0].status != WcStatus.SUCCESS) {
                        return "SEND " + i + " over the SRQ connection: " + wc[0];
                    }
                }
                try (AddressHandle ah = pd.createAh(AhAttr.of(conn.remoteAddress()))) {
                    for (int seq = 0; seq < DATAGRAMS; seq++) {
                        String why = ping(ud, ah, serverUdQpn, qkey, seq, udTries);
                        if (why != null) {
                            return why;
                        }
                    }
                }
            } finally {
                conn.disconnect();
                conn.close();
            }
        } finally {
            buf.close();
            cq.close();
        }
        return null;
    }

    /** Sends datagram {@code seq} until its echo arrives whole; @return null, or why not. */
    private static String ping(Ud ud, AddressHandle ah, int serverUdQpn, int qkey, int seq, int[] tries) {
        java.lang.foreign.MemorySegment m = ud.mr().segment();
        m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, ud.sendOff(), (byte) seq);
        Pattern.fill(m, ud.sendOff() + 1, DATAGRAM_LEN - 1, UD_SEED + seq);
        WorkCompletion[] wc = {new WorkCompletion()};
        for (int t = 0; t < TRIES; t++) {
            tries[0]++;
            ud.qp().postSend(new SendWr().send(seq, new Sge(ud.mr().addr() + ud.sendOff(), DATAGRAM_LEN,
                    ud.mr().lkey())).ud(ah, serverUdQpn, qkey));
            long end = System.nanoTime() + 300_000_000L; // 300 ms, then send it again
            while (System.nanoTime() < end) {
                if (!await(ud.cq(), wc, 0)) {
                    ud.cq().await(5_000_000L);
                    continue;
                }
                WorkCompletion w = wc[0];
                if (w.opcode == WcOpcode.SEND) {
                    if (w.status != WcStatus.SUCCESS) {
                        return "UD send " + seq + ": " + w;
                    }
                    continue;
                }
                int s = (int) w.wrId;
                long off = Ud.payload(s);
                boolean echo = w.status == WcStatus.SUCCESS && w.srcQp == serverUdQpn
                        && w.byteLen == GRH + DATAGRAM_LEN && m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, off) == seq
                        && Pattern.matches(m, off + 1, DATAGRAM_LEN - 1, UD_SEED + seq);
                ud.repost(s);
                if (echo) {
                    return null;
                }
                if (w.status != WcStatus.SUCCESS || w.srcQp != serverUdQpn) {
                    return "UD echo of " + seq + ": " + w;
                }
                // an older echo that came late: wait for this one
            }
        }
        return "UD datagram " + seq + ": no echo after " + TRIES + " tries";
    }
}
