package io.rxe4j.core.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Access;
import java.lang.foreign.Arena;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RxeMw} and {@link MwTable} against {@code verbs-surface-facts.md} §5: keys (§5.1), the bind
 * checks in rxe's order with their rule numbers (§5.3), the bind's effect (§5.4), the remote-access
 * checks plus the window's own bounds (§5.5), invalidation (§5.6) and the MR's window count (§5.7).
 */
class MemoryWindowTest {
    private static final RxePd PD = new RxePd(1);
    private static final RxePd OTHER_PD = new RxePd(2);
    private static final int QPN = 0x11;
    private static final int RW = Access.REMOTE_READ | Access.REMOTE_WRITE;

    private Arena arena;
    private MrTable mrs;
    private RxeMr mr;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
        mrs = new MrTable(16, 5, 16);
        mr = mrs.register(k -> new RxeMr(PD, arena.allocate(8192, 4096), null, Access.LOCAL_WRITE | Access.MW_BIND, k));
    }

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private String bind(RxeMw mw, long off, long len, int access) {
        return mw.bind(mw.rkey(), mw.rkey() + 1, mr, mr.lkey(), mr.iova() + off, len, access, PD, QPN);
    }

    @Test
    void windowKeysLieAboveEveryMrIndexAndAreNotMrKeys() {
        RxeMw mw = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        assertThat(mw.rkey() >>> 8).isGreaterThan(MrTable.MAX_MR_INDEX);
        assertThat(MwTable.isWindowKey(mw.rkey())).isTrue();
        assertThat(MwTable.isWindowKey(mr.rkey())).isFalse();
        assertThat(mrs.lookup(mw.rkey())).as("an MW key is never an MR").isNull();
        assertThat(mrs.windows().lookup(mr.rkey())).isNull();
        assertThat(mw.state()).isEqualTo(RxeMw.State.VALID);
        assertThat(mrs.windows().allocate(PD, RxeMw.Type.TYPE_2B).state()).isEqualTo(RxeMw.State.FREE);
        assertThat(mrs.windows().size()).isEqualTo(2);
    }

    @Test
    void aBindChangesOnlyTheKeyPartAndCountsTheMrsWindows() {
        RxeMw mw = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        int before = mw.rkey();
        assertThat(mw.bind(before, 0x1234_56AB, mr, mr.lkey(), mr.iova(), 4096, RW, PD, QPN)).isNull();
        assertThat(mw.rkey()).isEqualTo((before & ~0xFF) | 0xAB);
        assertThat(mr.boundWindows()).isEqualTo(1);
        assertThat(bind(mw, 0, 0, 0)).as("a type 1 unbind").isNull();
        assertThat(mw.length()).isZero();
        assertThat(mw.mr()).isNull();
        assertThat(mr.boundWindows()).isZero();
        assertThat(mw.state()).as("type 1 stays VALID").isEqualTo(RxeMw.State.VALID);
    }

    @Test
    void theBindChecksInRxesOrder() {
        RxeMw t1 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        RxeMw t2 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_2B);
        assertThat(t1.bind(t1.rkey() ^ 1, 0, mr, mr.lkey(), mr.iova(), 8, RW, PD, QPN)).contains("stale");
        assertThat(t1.bind(t1.rkey(), 0, null, 0x999, mr.iova(), 8, RW, PD, QPN)).contains("no valid MR");
        assertThat(bind(t1, 0, 8, Access.MW_BIND)).contains("EOPNOTSUPP");
        assertThat(bind(t1, 0, 8, RW | Access.ZERO_BASED)).contains("zero-based");
        assertThat(t2.bind(t2.rkey(), 1, mr, mr.lkey(), mr.iova(), 8, RW, OTHER_PD, QPN)).contains("C10-72");
        assertThat(bind(t2, 0, 0, RW)).contains("o10-37.2.40");
        assertThat(bind(t1, 4096, 4097, RW)).contains("C10-75");
        assertThat(bind(t1, 8192, 0, RW)).as("a zero-length type 1 bind ignores the range").isNull();
        RxeMr readOnly = mrs.register(k -> new RxeMr(PD, arena.allocate(4096), null, Access.MW_BIND, k));
        assertThat(t1.bind(t1.rkey(), 0, readOnly, readOnly.lkey(), readOnly.iova(), 8, Access.REMOTE_WRITE, PD, QPN))
                .contains("C10-74");
        assertThat(t1.bind(t1.rkey(), 0, readOnly, readOnly.lkey(), readOnly.iova(), 8, Access.REMOTE_READ, PD, QPN))
                .isNull();
        RxeMr noBind = mrs.register(k -> new RxeMr(PD, arena.allocate(4096), null, Access.LOCAL_WRITE, k));
        assertThat(t1.bind(t1.rkey(), 0, noBind, noBind.lkey(), noBind.iova(), 8, RW, PD, QPN)).contains("C10-73");
        RxeMr elsewhere = mrs.register(k -> new RxeMr(OTHER_PD, arena.allocate(4096), null, MemoryWindowTest.bindable(), k));
        assertThat(t1.bind(t1.rkey(), 0, elsewhere, elsewhere.lkey(), elsewhere.iova(), 8, RW, PD, QPN)).contains("not in");
        assertThat(bind(t1, 0, 8, RW | Access.FLUSH_GLOBAL)).as("FLUSH rights the MR lacks").contains("FLUSH");
        assertThat(bind(t2, 0, 64, RW)).isNull();
        assertThat(bind(t2, 0, 64, RW)).as("bound: must be invalidated first").contains("o10-37.2.30");
        mrs.windows().deallocate(t1);
        assertThat(t1.bind(t1.rkey(), 0, mr, mr.lkey(), mr.iova(), 8, RW, PD, QPN)).contains("deallocated");
    }

    private static int bindable() {
        return Access.LOCAL_WRITE | Access.MW_BIND;
    }

    @Test
    void aRemoteAccessMustFitTheWindowItsRightsItsPdAndItsQp() {
        RxeMw t2 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_2B);
        assertThat(mrs.remote(t2.rkey(), PD, QPN, mr.iova(), 8, Access.REMOTE_READ)).as("FREE").isNull();
        assertThat(bind(t2, 1024, 2048, Access.REMOTE_READ)).isNull();
        int k = t2.rkey();
        long start = mr.iova() + 1024;
        assertThat(mrs.remote(k, PD, QPN, start, 2048, Access.REMOTE_READ)).isSameAs(mr);
        assertThat(mrs.remote(k, PD, QPN, start + 2048, 0, Access.REMOTE_READ)).as("0 bytes at the end").isSameAs(mr);
        assertThat(mrs.remote(k, PD, QPN, start - 1, 8, Access.REMOTE_READ)).as("before the window").isNull();
        assertThat(mrs.remote(k, PD, QPN, start + 2041, 8, Access.REMOTE_READ)).as("past its end, inside the MR").isNull();
        assertThat(mrs.remote(k, PD, QPN, start, 8, Access.REMOTE_WRITE)).as("beyond its rights").isNull();
        assertThat(mrs.remote(k, OTHER_PD, QPN, start, 8, Access.REMOTE_READ)).as("another PD").isNull();
        assertThat(mrs.remote(k, PD, QPN + 1, start, 8, Access.REMOTE_READ)).as("another QP (type 2B)").isNull();
        assertThat(mrs.remote(k ^ 0x01, PD, QPN, start, 8, Access.REMOTE_READ)).as("another key part").isNull();
        assertThat(mrs.remote(k, PD, QPN, -8, 16, Access.REMOTE_READ)).as("a range that wraps").isNull();
        assertThat(mrs.remote(mr.rkey(), PD, QPN, mr.iova(), 8, Access.REMOTE_READ)).as("the MR grants nothing remote")
                .isNull();
        RxeMw t1 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        assertThat(bind(t1, 0, 8192, RW)).isNull();
        assertThat(mrs.remote(t1.rkey(), PD, QPN + 7, mr.iova(), 8, Access.REMOTE_WRITE)).as("type 1: any QP of the PD")
                .isSameAs(mr);
        assertThat(t1.stillGrants(t1.rkey())).isTrue();
        mrs.unregister(mr);
        assertThat(mrs.remote(t1.rkey(), PD, QPN, mr.iova(), 8, Access.REMOTE_WRITE)).as("its MR is gone").isNull();
        assertThat(t1.stillGrants(t1.rkey())).isFalse();
    }

    @Test
    void invalidationFreesAType2bWindowOfItsQpOnly() {
        RxeMw t1 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        RxeMw t2 = mrs.windows().allocate(PD, RxeMw.Type.TYPE_2B);
        assertThat(bind(t2, 0, 64, RW)).isNull();
        int k = t2.rkey();
        assertThat(t1.invalidate(t1.rkey(), PD, QPN)).contains("o10-37.2.26");
        assertThat(t2.invalidate(k ^ 0x01, PD, QPN)).contains("does not name");
        assertThat(t2.invalidate(k, OTHER_PD, QPN)).contains("not in");
        assertThat(t2.invalidate(k, PD, QPN + 1)).contains("bound to QP 0x11");
        assertThat(mr.boundWindows()).isEqualTo(1);
        assertThat(t2.invalidate(k, PD, QPN)).isNull();
        assertThat(t2.state()).isEqualTo(RxeMw.State.FREE);
        assertThat(t2.rkey()).as("the key stays; a new bind changes it").isEqualTo(k);
        assertThat(mr.boundWindows()).isZero();
        assertThat(mrs.remote(k, PD, QPN, mr.iova(), 8, Access.REMOTE_READ)).isNull();
        assertThat(t2.invalidate(k, PD, QPN + 5)).as("FREE already: no error (rxe)").isNull();
        assertThat(bind(t2, 0, 64, RW)).as("bound again").isNull();
        mrs.windows().deallocate(t2);
        assertThat(t2.state()).isEqualTo(RxeMw.State.INVALID);
        assertThat(mr.boundWindows()).as("dealloc releases the MR").isZero();
        assertThat(t2.invalidate(t2.rkey(), PD, QPN)).contains("deallocated");
        assertThat(mrs.windows().lookup(t2.rkey())).as("its slot is free").isNull();
    }

    /** Binds racing on two threads (type 1: any QP of the PD, on any lane) leave one binding and a true count. */
    @Test
    void racingBindsLeaveOneBindingAndAnExactWindowCount() throws Exception {
        RxeMr other = mrs.register(k -> new RxeMr(PD, arena.allocate(8192), null, bindable(), k));
        RxeMw mw = mrs.windows().allocate(PD, RxeMw.Type.TYPE_1);
        CountDownLatch go = new CountDownLatch(1);
        Runnable binder = () -> {
            try {
                go.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            for (int i = 0; i < 20_000; i++) {
                RxeMr target = (i & 1) == 0 ? mr : other;
                int k = mw.rkey();
                mw.bind(k, k + 1, target, target.lkey(), target.iova(), 64, RW, PD, QPN); // a stale key fails: fine
            }
        };
        Thread t1 = new Thread(binder);
        Thread t2 = new Thread(binder);
        t1.start();
        t2.start();
        go.countDown();
        t1.join();
        t2.join();
        assertThat(mr.boundWindows() + other.boundWindows()).as("exactly the one binding counts").isEqualTo(1);
        assertThat(mw.mr().boundWindows()).isEqualTo(1);
    }

    /** A destroyed QP's type 2B windows go back to FREE: a later QP with its QPN gets nothing through them. */
    @Test
    void destroyingAQpFreesItsType2bWindowsOnly() {
        io.rxe4j.core.device.RxeDevice dev = new io.rxe4j.core.device.RxeDevice(
                new io.rxe4j.core.device.FakeTransport(new java.net.InetSocketAddress("10.0.0.1", 4791)),
                io.rxe4j.verbs.DeviceConfig.defaults().withSeed(3));
        try {
            RxePd pd = dev.allocPd();
            io.rxe4j.core.cq.RxeCq cq = dev.createCq(16);
            io.rxe4j.core.qp.RxeQp a = dev.createQp(pd, cq, cq, new io.rxe4j.verbs.QpCaps(4, 4, 1, 1, 0), false);
            io.rxe4j.core.qp.RxeQp b = dev.createQp(pd, cq, cq, new io.rxe4j.verbs.QpCaps(4, 4, 1, 1, 0), false);
            RxeMr m = dev.registerMr(pd, arena.allocate(8192, 4096), null, Access.LOCAL_WRITE | Access.MW_BIND);
            RxeMw ofA = dev.mrs().windows().allocate(pd, RxeMw.Type.TYPE_2B);
            RxeMw ofB = dev.mrs().windows().allocate(pd, RxeMw.Type.TYPE_2B);
            RxeMw type1 = dev.mrs().windows().allocate(pd, RxeMw.Type.TYPE_1);
            assertThat(ofA.bind(ofA.rkey(), 1, m, m.lkey(), m.iova(), 64, RW, pd, a.qpn())).isNull();
            assertThat(ofB.bind(ofB.rkey(), 1, m, m.lkey(), m.iova(), 64, RW, pd, b.qpn())).isNull();
            assertThat(type1.bind(type1.rkey(), 1, m, m.lkey(), m.iova(), 64, RW, pd, a.qpn())).isNull();
            dev.destroyQp(a);
            assertThat(ofA.state()).isEqualTo(RxeMw.State.FREE);
            assertThat(dev.mrs().remote(ofA.rkey(), pd, a.qpn(), m.iova(), 8, Access.REMOTE_READ)).isNull();
            assertThat(ofB.state()).as("another QP's window").isEqualTo(RxeMw.State.VALID);
            assertThat(type1.state()).as("a type 1 window is no QP's").isEqualTo(RxeMw.State.VALID);
            assertThat(m.boundWindows()).isEqualTo(2);
        } finally {
            dev.close();
        }
    }
}
