package io.rxe4j.core.qp;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.device.LaneInboxLayout;
import java.lang.reflect.Field;
import org.junit.jupiter.api.Test;

/**
 * The hot ring indices written by different threads lie at least one 64-byte cache line apart
 * (issue 13: no false sharing between a posting thread and the device loop, or between the loop
 * and a polling thread). Reads the field offsets HotSpot chose, with {@code sun.misc.Unsafe}.
 */
class QueueIndexLayoutTest {
    private static final int LINE = 64;

    private static long offset(Class<?> c, String field) throws Exception {
        Field uf = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        uf.setAccessible(true);
        Object unsafe = uf.get(null);
        Field f = c.getDeclaredField(field);
        @SuppressWarnings("deprecation")
        long o = (long) unsafe.getClass().getMethod("objectFieldOffset", Field.class).invoke(unsafe, f);
        return o;
    }

    private static void apart(Class<?> c, String a, String b) throws Exception {
        assertThat(Math.abs(offset(c, a) - offset(c, b))).as("%s.%s and %s", c.getSimpleName(), a, b)
                .isGreaterThanOrEqualTo(LINE);
    }

    @Test
    void sendAndReceiveQueueIndicesDoNotShareACacheLine() throws Exception {
        apart(SendQueue.class, "prod", "comp");
        apart(RecvQueue.class, "prod", "cons");
    }

    @Test
    void requesterIndexHasALineOfItsOwn() throws Exception {
        // written by the loop for every WQE; posting threads read the QP's state and parts
        apart(RxeQp.class, "sqReq", "state");
        apart(RxeQp.class, "sqReq", "sendQueue");
        apart(RxeQp.class, "sqReq", "recvQueue");
        apart(RxeQp.class, "sqReq", "validator");
        apart(RxeQp.class, "sqReq", "kickScheduled");
    }

    @Test
    void completionQueueHeadAndTailDoNotShareACacheLine() throws Exception {
        apart(RxeCq.class, "tail", "head");
    }

    @Test
    void laneInboxHeadAndTailDoNotShareACacheLine() throws Exception {
        apart(LaneInboxLayout.inboxClass(), "head", "tail");
    }
}
