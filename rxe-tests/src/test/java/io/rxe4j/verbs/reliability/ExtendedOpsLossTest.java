package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.spi.Persistence;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.Flush;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import io.rxe4j.verbs.reliability.VirtualRcPair.Pkt;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Deterministic virtual-time loss of the responses of masked atomics, ATOMIC WRITE and FLUSH
 * ({@code rxe-facts.md} §5.5, {@code extensions.md} §2–4): every duplicate is answered from the
 * responder resource, never executed a second time.
 */
class ExtendedOpsLossTest {
    private static final int OP_READ_RESPONSE_ONLY = 0x10;
    private static final int OP_ATOMIC_ACK = 0x12;
    private static final int OP_FLUSH = 0x1C;
    private static final int OP_ATOMIC_WRITE = 0x1D;
    private static final int OP_MASKED_FETCH_ADD = 0xF1;
    private static final int FLUSH_QP_ACCESS = VirtualRcPair.ALL_REMOTE | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;
    private static final int PMEM_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;
    /** The requester's ACK timeout with timeout 14: 4.096 us * 2^14. */
    private static final long ACK_TIMEOUT = 4096L << 14;

    /** One call of {@link Persistence#force}. */
    record Force(long offset, long length) {}

    @Test
    void lostMaskedFetchAddResponseIsReplayedAndAddsOnce() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            long original = 0x7FFF_FFFF_00FF_FFFFL;
            p.b.mr.segment().set(ValueLayout.JAVA_LONG, 64, original);
            int[] atomicAcks = {0};
            p.dropper = pkt -> !pkt.fromA() && pkt.opcode() == OP_ATOMIC_ACK && atomicAcks[0]++ == 0;
            SendWr wr = new SendWr().set(1, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                    new Sge(p.a.mr.addr(), 8, p.a.mr.lkey())).remote(p.b.mr.addr() + 64, p.b.mr.rkey())
                    .atomic(0x0000_0001_0000_0001L, 0).masks(0x8000_0000_8000_0000L, 0);
            long t0 = p.vs.nanoTime();
            p.a.qp.postSend(wr);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.MASKED_FETCH_ADD);
            assertThat(wc.byteLen).isEqualTo(8);
            assertThat(p.vs.nanoTime() - t0).as("recovered by the ACK timeout").isGreaterThanOrEqualTo(ACK_TIMEOUT);
            assertThat(p.a.mr.segment().get(ValueLayout.JAVA_LONG, 0)).as("the cached original").isEqualTo(original);
            // each 32-bit field added once: the high one wraps to 0x80000000, the low one to 0x01000000
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 64)).as("added exactly once")
                    .isEqualTo(0x8000_0000_0100_0000L);
            List<Pkt> reqs = p.sent(true, OP_MASKED_FETCH_ADD);
            assertThat(reqs).hasSize(2);
            assertThat(reqs.get(1).psn()).isEqualTo(reqs.get(0).psn());
            List<Pkt> acks = p.sent(false, OP_ATOMIC_ACK);
            assertThat(acks).hasSize(2);
            assertThat(acks.get(0).dropped()).isTrue();
            assertThat(acks.get(1).dropped()).isFalse();
            assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).isEqualTo(1);
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    @Test
    void lostAtomicWriteResponseIsAnsweredWithoutASecondStore() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            long value = 0x0102_0304_0506_0708L;
            long changedLocally = 0x5A5A_5A5A_5A5A_5A5AL;
            p.b.mr.segment().set(ValueLayout.JAVA_LONG, 128, 0);
            boolean[] dropped = {false};
            p.dropper = pkt -> {
                if (!pkt.fromA() && pkt.opcode() == OP_READ_RESPONSE_ONLY && !dropped[0]) {
                    dropped[0] = true;
                    return true;
                }
                return false;
            };
            SendWr wr = new SendWr().set(2, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(p.b.mr.addr() + 128,
                    p.b.mr.rkey());
            wr.atomicWriteValue = value;
            p.a.qp.postSend(wr);
            // run until the first response is lost: the store has been executed once by then
            assertThat(p.vs.runUntil(() -> dropped[0], VirtualRcPair.MAX_WAIT)).isTrue();
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 128)).as("first execution").isEqualTo(value);
            assertThat(p.sent(true, OP_ATOMIC_WRITE)).hasSize(1);
            // the responder's owner changes the word before the retry arrives
            p.b.mr.segment().set(ValueLayout.JAVA_LONG, 128, changedLocally);

            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.ATOMIC_WRITE);
            assertThat(wc.byteLen).isEqualTo(8);
            List<Pkt> reqs = p.sent(true, OP_ATOMIC_WRITE);
            assertThat(reqs).as("the retry went out").hasSize(2);
            assertThat(reqs.get(1).psn()).isEqualTo(reqs.get(0).psn());
            assertThat(p.sent(false, OP_READ_RESPONSE_ONLY)).hasSize(2);
            assertThat(p.b.mr.segment().get(ValueLayout.JAVA_LONG, 128)).as("the duplicate did not store again")
                    .isEqualTo(changedLocally);
            assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(1);
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    @Test
    void lostFlushResponseIsAnsweredAgainAndForcesOnce() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), FLUSH_QP_ACCESS);
                Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(16384, 4096);
            List<Force> forces = new ArrayList<>();
            MemoryRegion pm = p.b.pd.registerPersistentMr(seg, PMEM_ACCESS,
                    (segment, offset, length) -> forces.add(new Force(offset, length)));
            try {
                int[] responses = {0};
                p.dropper = pkt -> !pkt.fromA() && pkt.opcode() == OP_READ_RESPONSE_ONLY && responses[0]++ == 0;
                SendWr wr = new SendWr().set(3, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(pm.addr() + 4096,
                        pm.rkey()).flush(Flush.PERSISTENT, Flush.RANGE, 8192);
                long t0 = p.vs.nanoTime();
                p.a.qp.postSend(wr);
                WorkCompletion wc = p.next(p.a);
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode).isEqualTo(WcOpcode.FLUSH);
                assertThat(wc.byteLen).isEqualTo(8192);
                assertThat(p.vs.nanoTime() - t0).isGreaterThanOrEqualTo(ACK_TIMEOUT);
                assertThat(forces).as("force called exactly once, on the flushed range")
                        .containsExactly(new Force(4096, 8192));
                List<Pkt> reqs = p.sent(true, OP_FLUSH);
                assertThat(reqs).hasSize(2);
                assertThat(reqs.get(1).psn()).isEqualTo(reqs.get(0).psn());
                List<Pkt> resps = p.sent(false, OP_READ_RESPONSE_ONLY);
                assertThat(resps).hasSize(2);
                assertThat(resps.get(1).psn()).isEqualTo(reqs.get(0).psn());
                assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(1);
                assertThat(p.a.dev.counter("retransmit_timeouts")).isEqualTo(1);
                assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
                // a second FLUSH (whole MR) forces again, once
                p.dropper = null;
                p.a.qp.postSend(new SendWr().set(4, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(pm.addr(), pm.rkey())
                        .flush(Flush.PERSISTENT | Flush.GLOBAL, Flush.MR, 0));
                assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
                assertThat(forces).containsExactly(new Force(4096, 8192), new Force(0, 16384));
            } finally {
                pm.close();
            }
        }
    }

    @Test
    void flushResponseIsNeverSentBeforeForceReturned() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), FLUSH_QP_ACCESS);
                Arena arena = Arena.ofShared()) {
            MemorySegment seg = arena.allocate(8192, 4096);
            List<String> events = new ArrayList<>();
            MemoryRegion pm = p.b.pd.registerPersistentMr(seg, PMEM_ACCESS, (segment, offset, length) -> {
                events.add("force-start");
                // a busy "device": stores to the range while forcing
                for (long i = 0; i < length; i += 8) {
                    segment.set(ValueLayout.JAVA_LONG, offset + i, segment.get(ValueLayout.JAVA_LONG, offset + i));
                }
                events.add("force-end");
            });
            try {
                int[] flushPsn = {-1};
                // the packet log at send time (before the transport batches it) and at the fabric
                p.onSend = pkt -> {
                    if (pkt.fromA() && pkt.opcode() == OP_FLUSH) {
                        flushPsn[0] = pkt.psn();
                    } else if (!pkt.fromA() && pkt.opcode() == OP_READ_RESPONSE_ONLY && pkt.psn() == flushPsn[0]) {
                        events.add("response");
                    }
                };
                p.dropper = pkt -> {
                    if (!pkt.fromA() && pkt.opcode() == OP_READ_RESPONSE_ONLY && pkt.psn() == flushPsn[0]) {
                        events.add("response-delivered");
                    }
                    return false;
                };
                // an earlier WRITE into the range, then the FLUSH
                p.a.mr.segment().set(ValueLayout.JAVA_LONG, 0, 0x1234_5678_9ABC_DEF0L);
                p.a.qp.postSend(new SendWr().set(5, WrOpcode.RDMA_WRITE, 0, new Sge(p.a.mr.addr(), 64,
                        p.a.mr.lkey())).remote(pm.addr(), pm.rkey()));
                p.a.qp.postSend(new SendWr().set(6, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(pm.addr(), pm.rkey())
                        .flush(Flush.PERSISTENT, Flush.RANGE, 4096));
                WorkCompletion wc = p.next(p.a);
                assertThat(wc.wrId).isEqualTo(6);
                assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode).isEqualTo(WcOpcode.FLUSH);
                assertThat(flushPsn[0]).isNotNegative();
                assertThat(events).containsExactly("force-start", "force-end", "response", "response-delivered");
                assertThat(seg.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0x1234_5678_9ABC_DEF0L);
            } finally {
                pm.close();
            }
        }
    }
}
