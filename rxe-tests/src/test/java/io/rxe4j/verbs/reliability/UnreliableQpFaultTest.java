package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.AddressHandle;
import io.rxe4j.verbs.AhAttr;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpInitAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QueuePair;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.net.fault.FaultInjectingTransport;
import io.rxe4j.net.fault.FaultSpec;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.BitSet;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * UD and UC under loss, duplication and reordering ({@code verbs-surface-facts.md} §2.9, §3.2–§3.4),
 * on virtual time with seeded faults on every packet sent: nothing is retried (every send completes
 * SUCCESS, the sender sends each packet once); a UD datagram arrives whole or not at all; a UC message
 * arrives whole, or not at all when one of its packets was lost (no half message completes, a
 * MIDDLE/LAST after a gap is dropped until the next FIRST/ONLY); every message that completes has
 * its own bytes. UC delivers a duplicated ONLY packet twice, as {@code rdma_rxe} does (no duplicate
 * detection on UC, §3.3 rule 4); UD too (a duplicated datagram is two datagrams).
 */
class UnreliableQpFaultTest {
    private static final int QKEY = 0x11111111;
    private static final int N = 300;
    private static final int SLOT = 4096;

    private VirtualScheduler vs;
    private InJvmFabric fabric;
    private RdmaDevice a;
    private RdmaDevice b;

    @BeforeEach
    void open() {
        vs = new VirtualScheduler();
        fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(10_000).build();
    }

    private RdmaDevice device(String ip, String faults, long seed) throws Exception {
        InetSocketAddress addr = new InetSocketAddress(InetAddress.getByName(ip), 4791);
        FaultInjectingTransport t = new FaultInjectingTransport(fabric.newTransport(addr), seed, FaultSpec.parse(faults));
        return RdmaDevice.open(t, DeviceConfig.defaults().withSeed(seed));
    }

    @AfterEach
    void close() {
        if (a != null) {
            a.closeAll();
        }
        if (b != null) {
            b.closeAll();
        }
        fabric.closeAll();
        vs.shutdown();
    }

    private boolean runUntil(BooleanSupplier cond, long virtualNanos) {
        return vs.runUntil(cond, virtualNanos);
    }

    /** Fills {@code n} bytes at {@code off} with message {@code seq}'s pattern (its number first). */
    private static void pattern(MemorySegment m, long off, int seq, int n) {
        for (int i = 0; i < n; i++) {
            m.set(ValueLayout.JAVA_BYTE, off + i, (byte) (i < 4 ? seq >>> (24 - 8 * i) : seq * 31 + i));
        }
    }

    /** @return the message number at {@code off} if the {@code n} bytes there are its pattern, else -1 */
    private static int check(MemorySegment m, long off, int n) {
        int seq = 0;
        for (int i = 0; i < 4; i++) {
            seq = seq << 8 | (m.get(ValueLayout.JAVA_BYTE, off + i) & 0xFF);
        }
        for (int i = 4; i < n; i++) {
            if (m.get(ValueLayout.JAVA_BYTE, off + i) != (byte) (seq * 31 + i)) {
                return -1;
            }
        }
        return seq;
    }

    record Counts(int sent, int delivered, int duplicates, long sentPkts) {}

    @ParameterizedTest(name = "UD under {0}")
    @ValueSource(strings = {"drop=0.05", "dup=0.05", "reorder=0.05,hold=3", "drop=0.03,dup=0.03,reorder=0.03"})
    void udDatagramsArriveWholeOrNotAtAllAndAreNeverResent(String faults) throws Exception {
        a = device("10.1.0.1", faults + ",dir=out", 11);
        b = device("10.1.0.2", faults + ",dir=out", 12);
        Counts c = stream(true, 1000, faults);
        assertThat(c.sentPkts()).as("one packet per datagram, none resent").isEqualTo(N);
        check(c, faults);
    }

    @ParameterizedTest(name = "UC under {0}")
    @ValueSource(strings = {"drop=0.05", "dup=0.05", "reorder=0.05,hold=3", "drop=0.03,dup=0.03,reorder=0.03"})
    void ucMessagesArriveWholeOrNotAtAllAndAreNeverResent(String faults) throws Exception {
        a = device("10.1.0.1", faults + ",dir=out", 21);
        b = device("10.1.0.2", faults + ",dir=out", 22);
        Counts c = stream(false, 3000, faults); // three packets at path MTU 1024
        assertThat(c.sentPkts()).as("three packets per message, none resent").isEqualTo(3L * N);
        check(c, faults);
    }

    private void check(Counts c, String faults) {
        assertThat(c.sent()).as("every send completes SUCCESS").isEqualTo(N);
        if (faults.contains("drop")) {
            assertThat(c.delivered()).as("losses are not repaired").isLessThan(N).isGreaterThan(N / 2);
        }
        if (!faults.contains("drop") && !faults.contains("dup")) {
            assertThat(c.delivered()).as("reordering alone: UD delivers all; UC drops a message per overtaking")
                    .isLessThanOrEqualTo(N).isGreaterThan(N / 2);
        }
        if (!faults.contains("dup")) {
            assertThat(c.duplicates()).as("no duplicate without duplication").isZero();
        }
    }

    /** Sends {@code N} messages of {@code len} bytes A -> B; checks every receive; returns the counts. */
    private Counts stream(boolean ud, int len, String faults) {
        ProtectionDomain pa = a.allocPd();
        ProtectionDomain pb = b.allocPd();
        CompletionQueue ca = a.createCq(2 * N + 16);
        CompletionQueue cb = b.createCq(2 * N + 16);
        QueuePair qa = pa.createQp(new QpInitAttr(ca, ca, new io.rxe4j.verbs.QpCaps(N, 4, 1, 1, 0),
                ud ? io.rxe4j.verbs.QpType.UD : io.rxe4j.verbs.QpType.UC, false));
        QueuePair qb = pb.createQp(new QpInitAttr(cb, cb, new io.rxe4j.verbs.QpCaps(4, 2 * N, 1, 1, 0),
                ud ? io.rxe4j.verbs.QpType.UD : io.rxe4j.verbs.QpType.UC, false));
        MemoryRegion ma = pa.allocMr((long) SLOT * N, Access.LOCAL_WRITE);
        MemoryRegion mb = pb.allocMr((long) SLOT * 2 * N, Access.LOCAL_WRITE);
        if (ud) {
            for (QueuePair q : new QueuePair[] {qa, qb}) {
                q.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(QKEY));
                q.modify(new QpAttr().state(QpState.RTR));
                q.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            }
        } else {
            ucUp(qa, b.address(), qb.qpNum());
            ucUp(qb, a.address(), qa.qpNum());
        }
        int grh = ud ? 40 : 0;
        for (int i = 0; i < 2 * N; i++) {
            qb.postRecv(new RecvWr().set(i, new Sge(mb.addr() + (long) SLOT * i, SLOT, mb.lkey())));
        }
        AddressHandle ah = ud ? pa.createAh(AhAttr.of(b.address())) : null;
        for (int s = 0; s < N; s++) {
            pattern(ma.segment(), (long) SLOT * s, s, len);
            SendWr wr = new SendWr().send(s, new Sge(ma.addr() + (long) SLOT * s, len, ma.lkey())).signaled();
            if (ud) {
                wr.ud(ah, qb.qpNum(), QKEY);
            }
            qa.postSend(wr);
        }
        WorkCompletion[] wc = {new WorkCompletion()};
        int[] sent = {0};
        runUntil(() -> {
            while (ca.poll(wc, 1) == 1) {
                assertThat(wc[0].status).as("send %d under %s", wc[0].wrId, faults).isEqualTo(WcStatus.SUCCESS);
                sent[0]++;
            }
            return sent[0] == N;
        }, 1_000_000_000L);
        runUntil(() -> false, 100_000_000L); // 100 ms of virtual time: everything in flight lands or is lost
        BitSet seen = new BitSet(N);
        int delivered = 0;
        int duplicates = 0;
        while (cb.poll(wc, 1) == 1) {
            assertThat(wc[0].status).as("receive under %s", faults).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc[0].opcode).isEqualTo(WcOpcode.RECV);
            assertThat(wc[0].byteLen).as("a whole message, never part of one").isEqualTo(grh + len);
            int seq = check(mb.segment(), (long) SLOT * wc[0].wrId + grh, len);
            assertThat(seq).as("receive %d holds one message's own bytes", wc[0].wrId).isBetween(0, N - 1);
            if (seen.get(seq)) {
                duplicates++;
            }
            seen.set(seq);
            delivered++;
        }
        assertThat(qa.state()).isEqualTo(QpState.RTS);
        assertThat(qb.state()).isEqualTo(QpState.RTS);
        return new Counts(sent[0], seen.cardinality(), duplicates, a.counters().get("sent_pkts"));
    }

    private static void ucUp(QueuePair q, InetSocketAddress peer, int peerQpn) {
        q.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.LOCAL_WRITE));
        q.modify(new QpAttr().state(QpState.RTR).av(peer).pathMtu(Mtu.MTU_1024).destQpNum(peerQpn).rqPsn(0));
        q.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
    }
}
