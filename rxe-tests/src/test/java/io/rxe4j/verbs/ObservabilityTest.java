package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Typed counters, the device MBean, and the packet trace. */
class ObservabilityTest {
    private VirtualScheduler vs;
    private RdmaDevice da;
    private RdmaDevice db;
    private ProtectionDomain pa;
    private ProtectionDomain pb;
    private CompletionQueue ca;
    private CompletionQueue cb;
    private QueuePair qa;
    private QueuePair qb;
    private MemoryRegion ma;
    private MemoryRegion mb;

    @BeforeEach
    void setUp() {
        vs = new VirtualScheduler();
        InJvmFabric fabric = InJvmFabric.withScheduler(vs);
        da = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        db = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        pa = da.allocPd();
        pb = db.allocPd();
        ca = da.createCq(16);
        cb = db.createCq(16);
        qa = pa.createQp(QpInitAttr.rc(ca, ca));
        qb = pb.createQp(QpInitAttr.rc(cb, cb));
        ma = pa.allocMr(4096, Access.LOCAL_WRITE);
        mb = pb.allocMr(4096, Access.LOCAL_WRITE);
        for (QueuePair[] p : new QueuePair[][] {{qa, qb}, {qb, qa}}) {
            RdmaDevice peer = p[1] == qb ? db : da;
            p[0].modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.LOCAL_WRITE));
            p[0].modify(new QpAttr().state(QpState.RTR).av(peer.address()).pathMtu(Mtu.MTU_1024)
                    .destQpNum(p[1].qpNum()).rqPsn(0x10).maxDestRdAtomic(1).minRnrTimer(1));
            p[0].modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0x10).maxRdAtomic(1));
        }
    }

    @AfterEach
    void tearDown() {
        for (AutoCloseable c : new AutoCloseable[] {qa, qb, ma, mb, ca, cb, pa, pb, da, db}) {
            try {
                c.close();
            } catch (Exception e) {
                // best effort
            }
        }
        vs.shutdown();
    }

    private void sendOne() {
        qb.postRecv(new RecvWr().set(1, new Sge(mb.addr(), 64, mb.lkey())));
        qa.postSend(new SendWr().send(2, new Sge(ma.addr(), 40, ma.lkey())).signaled());
        vs.runUntilIdle();
    }

    @Test
    void theCounterEnumNamesEveryCounterInTheSnapshotInOrder() {
        assertThat(Arrays.stream(Counter.values()).map(Counter::rxeName).toList())
                .containsExactlyElementsOf(da.counters().keySet());
        sendOne();
        assertThat(da.counter(Counter.SENT_PKTS)).isEqualTo(1);
        assertThat(db.counter(Counter.RCVD_PKTS)).isEqualTo(1);
        assertThat(da.counterValues()).containsEntry(Counter.RCVD_PKTS, 1L).hasSize(Counter.values().length);
        assertThat(Counter.ofRxeName("drop_bad_icrc")).isEqualTo(Counter.DROP_BAD_ICRC);
        assertThatThrownBy(() -> Counter.ofRxeName("nope")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown counter 'nope'");
    }

    @Test
    void eachDeviceHasAnMBeanWithOneAttributePerCounterUntilItCloses() throws Exception {
        sendOne();
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = da.mbeanName();
        assertThat(name.getDomain()).isEqualTo("io.rxe4j");
        assertThat(name.getKeyProperty("type")).isEqualTo("RdmaDevice");
        assertThat(server.getAttribute(name, "sent_pkts")).isEqualTo(1L);
        assertThat(server.getAttribute(name, "Address")).isEqualTo("/10.0.0.1:4791");
        assertThat(server.getAttribute(name, "QueuePairs")).isEqualTo(1);
        assertThat(server.getMBeanInfo(name).getAttributes()).hasSize(Counter.values().length + 2);
        qa.close();
        ma.close();
        ca.close();
        pa.close();
        da.close();
        assertThat(server.isRegistered(name)).as("unregistered on close").isFalse();
    }

    @Test
    void thePacketTraceLogsOneLinePerPacketAtTraceAndNothingOtherwise() {
        Logger trace = (Logger) LoggerFactory.getLogger("io.rxe4j.trace");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        trace.addAppender(lines);
        Level before = trace.getLevel();
        try {
            trace.setLevel(Level.INFO);
            sendOne();
            assertThat(lines.list).as("off below TRACE").isEmpty();
            trace.setLevel(Level.TRACE);
            sendOne();
            List<String> msgs = lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            String qpnB = String.format("qpn=0x%06x", qb.qpNum());
            String qpnA = String.format("qpn=0x%06x", qa.qpNum());
            assertThat(msgs).contains(
                    "tx 10.0.0.1:4791 -> 10.0.0.2:4791 RC_SEND_ONLY " + qpnB + " psn=0x000011 len=56 ackreq",
                    "rx 10.0.0.1:4791 -> 10.0.0.2:4791 RC_SEND_ONLY " + qpnB + " psn=0x000011 len=56 ackreq",
                    "tx 10.0.0.2:4791 -> 10.0.0.1:4791 RC_ACKNOWLEDGE " + qpnA + " psn=0x000011 len=20 aeth=ACK:31/msn=0x000002");
            assertThat(msgs).hasSize(4);
        } finally {
            trace.setLevel(before);
            trace.detachAppender(lines);
        }
    }
}
