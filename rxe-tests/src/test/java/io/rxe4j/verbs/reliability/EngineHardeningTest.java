package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import io.rxe4j.verbs.reliability.VirtualRcPair.Pkt;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The engine-hardening rules of {@code extensions.md} §6 and {@code rxe-facts.md} §5.8, each as
 * the bug it guards against, on virtual time ({@link VirtualRcPair}): no spurious retransmits,
 * finite retry_cnt 7, one CHECK_PSN for every response, READ gaps and mid-stream errors, duplicate
 * WRITE acknowledged with its own PSN, bounded output, writability, loud engine faults.
 */
class EngineHardeningTest {
    private static final int SEND_ONLY = 0x04;
    private static final int WRITE_FIRST = 0x06;
    private static final int WRITE_MIDDLE = 0x07;
    private static final int WRITE_ONLY = 0x0A;
    private static final int READ_REQUEST = 0x0C;
    private static final int READ_RESP_FIRST = 0x0D;
    private static final int READ_RESP_MIDDLE = 0x0E;
    private static final int READ_RESP_ONLY = 0x10;
    private static final int ACK = 0x11;
    /** 4.096 µs × 2^14: the local ACK timeout of {@link Params#defaults()}, in nanoseconds. */
    private static final long PERIOD = 4096L << 14;
    /** One-way link latency of the "20 µs round trip" cases. */
    private static final long LATENCY = 10_000;

    private static void fill(MemorySegment seg, long off, int len, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < len; i++) {
            seg.set(ValueLayout.JAVA_BYTE, off + i, (byte) r.nextInt());
        }
    }

    private static SendWr write(long id, VirtualRcPair.Side from, long off, int len, VirtualRcPair.Side to, long toOff) {
        return new SendWr().set(id, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(from.mr.addr() + off, len,
                from.mr.lkey())).remote(to.mr.addr() + toOff, to.mr.rkey());
    }

    private static SendWr read(long id, VirtualRcPair.Side into, long off, int len, VirtualRcPair.Side from, long fromOff) {
        return new SendWr().set(id, WrOpcode.RDMA_READ, SendFlags.SIGNALED, new Sge(into.mr.addr() + off, len,
                into.mr.lkey())).remote(from.mr.addr() + fromOff, from.mr.rkey());
    }

    private static void assertSameBytes(MemorySegment x, long xOff, MemorySegment y, long yOff, long len) {
        assertThat(x.asSlice(xOff, len).mismatch(y.asSlice(yOff, len))).as("bytes differ at").isEqualTo(-1);
    }

    /** A response packet from B to A's QP, with a valid ICRC, as a (hostile or buggy) responder could send it. */
    private static ByteBuf craftResponse(VirtualRcPair p, int opcode, int psn, int payload) {
        int total = Bth.LENGTH + (opcode == READ_RESP_MIDDLE ? 0 : Aeth.LENGTH) + payload + Icrc.LENGTH;
        ByteBuf b = Unpooled.buffer(total, total);
        Bth.write(b, 0, opcode, false, 0, Bth.DEFAULT_PKEY, p.a.qp.qpNum(), false, psn);
        if (opcode != READ_RESP_MIDDLE) {
            Aeth.write(b, Bth.LENGTH, Aeth.ACK_UNLIMITED, 0);
        }
        b.writerIndex(total);
        new Icrc().write(b, 0, total, VirtualRcPair.ADDR_B, VirtualRcPair.ADDR_A);
        return b;
    }

    // ------------------------------------------------------------------ 1. retransmit timer

    /**
     * The bug: the retransmit timer kept the deadline of an earlier burst, so a lone READ posted
     * 8.9 µs before that deadline was retransmitted 8.9 µs after it was sent, on a loss-free link.
     */
    @Test
    void aLonePacketAfterAnIdlePeriodIsNotRetransmittedByAnOldDeadline() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, LATENCY)) {
            fill(p.b.mr.segment(), 0, 4096, 1);
            long t0 = p.vs.nanoTime();
            p.a.qp.postSend(write(1, p.a, 0, 64, p.b, 0));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(t0 + PERIOD - 8_900 - p.vs.nanoTime()); // idle until just before the first deadline
            p.a.qp.postSend(read(2, p.a, 4096, 512, p.b, 0));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(3 * PERIOD); // and nothing happens later either
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
            assertThat(p.a.dev.counter("resent_pkts")).isZero();
            assertThat(p.sent(true, READ_REQUEST)).hasSize(1);
            assertSameBytes(p.a.mr.segment(), 4096, p.b.mr.segment(), 0, 512);
        }
    }

    /** 10,000 WRITEs posted one at a time with seeded idle gaps of 0..2 timeout periods: no PSN is ever sent twice. */
    @Test
    void writesPostedOneAtATimeWithIdleGapsAreNeverResent() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, LATENCY)) {
            SplittableRandom rnd = new SplittableRandom(42);
            int n = 10_000;
            for (int i = 0; i < n; i++) {
                p.a.qp.postSend(write(i, p.a, 0, 1 + rnd.nextInt(600), p.b, 0)); // 1..3 packets at MTU 256
                assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
                p.vs.runFor(rnd.nextLong(2 * PERIOD));
            }
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
            assertThat(p.a.dev.counter("resent_pkts")).isZero();
            assertThat(p.b.dev.counter("duplicate_request")).isZero();
        }
    }

    // ------------------------------------------------------------------ 2. retry_cnt 7

    /** The bug: retry_cnt 7 retried forever against a dead peer, and nothing was logged or completed. */
    @Test
    void retryCnt7IsSevenRetriesAgainstADeadPeer() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.dropper = Pkt::fromA; // the peer is gone: nothing A sends arrives
            long t0 = p.vs.nanoTime();
            p.a.qp.postSend(write(7, p.a, 0, 64, p.b, 0));
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.RETRY_EXC_ERR);
            assertThat(wc.wrId).isEqualTo(7);
            assertThat(p.sent(true, WRITE_ONLY)).as("the first transmission and seven retries").hasSize(8);
            assertThat(p.a.dev.counter("retransmit_timeouts")).isEqualTo(8);
            assertThat(p.a.dev.counter("retry_exceeded_err")).isEqualTo(1);
            assertThat(p.vs.nanoTime() - t0).isGreaterThanOrEqualTo(8 * PERIOD);
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
            assertThat(p.a.qp.errorReason()).contains("RETRY_EXC_ERR").contains("10.0.0.2").contains("PSN 0x100");
        }
    }

    // ------------------------------------------------------------------ 3. one CHECK_PSN

    /**
     * The bug: a late copy of a PSN-sequence NAK made the requester rewind again (and spend retry_cnt).
     * rdma_rxe's recovery, where a NAK is a rewind (adaptive recovery repairs the one packet instead).
     */
    @Test
    void aLateDuplicateOfASequenceNakIsDropped() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0, io.rxe4j.verbs.DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            fill(p.a.mr.segment(), 0, 1024, 3);
            boolean[] dropped = {false};
            p.dropper = pkt -> pkt.fromA() && pkt.opcode() == WRITE_MIDDLE && !dropped[0] && (dropped[0] = true);
            p.capturer = pkt -> !pkt.fromA() && pkt.opcode() == ACK && pkt.syndrome() == Aeth.NAK_PSN_SEQ_ERROR;
            p.a.qp.postSend(write(1, p.a, 0, 1024, p.b, 0));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.captured).hasSize(1);
            assertThat(p.a.dev.counter("rewinds")).isEqualTo(1);
            long stale = p.a.dev.counter("duplicate_response");
            int sentBefore = p.sent(true, WRITE_MIDDLE).size();
            p.replay(p.captured.get(0), false); // the NAK again, long after comp.psn moved past it
            p.vs.runFor(2 * PERIOD);
            assertThat(p.a.dev.counter("rewinds")).as("no second rewind").isEqualTo(1);
            assertThat(p.a.dev.counter("rcvd_seq_err")).isEqualTo(1);
            assertThat(p.a.dev.counter("duplicate_response")).isEqualTo(stale + 1);
            assertThat(p.sent(true, WRITE_MIDDLE)).hasSize(sentBefore);
            p.a.qp.postSend(write(2, p.a, 0, 1024, p.b, 2048));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertSameBytes(p.a.mr.segment(), 0, p.b.mr.segment(), 2048, 1024);
        }
    }

    /** The bug: a late copy of an RNR NAK charged rnr_retry and sent the requester into an RNR wait and a rewind. */
    @Test
    void aLateDuplicateOfAnRnrNakIsDropped() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.capturer = pkt -> !pkt.fromA() && pkt.opcode() == ACK && Aeth.type(pkt.syndrome()) == Aeth.TYPE_RNR_NAK;
            p.onFabric = pkt -> { // the responder posts its receive right after its first RNR NAK
                if (!pkt.fromA() && pkt.opcode() == ACK && Aeth.type(pkt.syndrome()) == Aeth.TYPE_RNR_NAK
                        && p.captured.size() == 1) {
                    p.b.qp.postRecv(new RecvWr().set(9, new Sge(p.b.mr.addr(), 256, p.b.mr.lkey())));
                }
            };
            p.a.qp.postSend(new SendWr().set(1, WrOpcode.SEND, SendFlags.SIGNALED, new Sge(p.a.mr.addr(), 64,
                    p.a.mr.lkey())));
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertThat(p.captured).hasSize(1);
            assertThat(p.a.dev.counter("rcvd_rnr_err")).isEqualTo(1);
            long rewinds = p.a.dev.counter("rewinds");
            p.replay(p.captured.get(0), false);
            p.vs.runFor(2 * PERIOD);
            assertThat(p.a.dev.counter("rcvd_rnr_err")).as("the stale RNR NAK is not acted on").isEqualTo(1);
            assertThat(p.a.dev.counter("rewinds")).isEqualTo(rewinds);
            assertThat(p.sent(true, SEND_ONLY)).hasSize(2);
        }
    }

    /** rxe-facts §5.8: a READ response for a WQE that is not a READ completes it with FATAL_ERR. */
    @Test
    void aReadResponseForAWriteIsAFatalError() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.dropper = pkt -> !pkt.fromA() && pkt.opcode() == ACK; // the WRITE's ACK never arrives
            p.a.qp.postSend(write(1, p.a, 0, 64, p.b, 0));
            p.vs.runFor(LATENCY + 1_000_000);
            p.dropper = null;
            p.replay(craftResponse(p, READ_RESP_ONLY, Params.defaults().psnA(), 0), false);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.FATAL_ERR);
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
        }
    }

    /**
     * rxe-facts §5.8: with no READ response stream under way only a FIRST/ONLY may start one
     * (rdma_rxe's recovery; adaptive recovery checks a READ response by its position and length
     * instead: {@code AdaptiveRecoveryTest}).
     */
    @Test
    void aReadResponseMiddleWithoutFirstIsABadResponse() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0, io.rxe4j.verbs.DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            p.dropper = pkt -> !pkt.fromA(); // B's real responses never arrive
            p.a.qp.postSend(read(1, p.a, 4096, 1024, p.b, 0));
            p.vs.runFor(1_000_000);
            p.dropper = null;
            p.replay(craftResponse(p, READ_RESP_MIDDLE, Params.defaults().psnA(), 256), false);
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.BAD_RESP_ERR);
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
        }
    }

    // ------------------------------------------------------------------ 4. READ gaps and errors

    /**
     * The bug: the responder went silent when the MR under a READ was deregistered while the
     * response stream was being sent; now it stops the payload and NAKs 0x62 with the request's
     * PSN, and the requester accepts that NAK after READ RESPONSE FIRST.
     */
    @Test
    void aReadWhoseMrIsDeregisteredMidStreamEndsWithNak62() {
        try (VirtualRcPair p = new VirtualRcPair(64 << 10, Params.defaults())) {
            boolean[] gone = {false};
            p.onFabric = pkt -> {
                if (!pkt.fromA() && pkt.opcode() == READ_RESP_FIRST && !gone[0]) {
                    gone[0] = true;
                    p.b.mr.close(); // deregistered while the reply is being sent
                }
            };
            p.a.qp.postSend(read(1, p.a, 0, 32 << 10, p.b, 0)); // 128 response packets at MTU 256
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.REM_ACCESS_ERR);
            assertThat(wc.vendorErr).isEqualTo(Aeth.NAK_REMOTE_ACCESS_ERROR);
            List<Pkt> fromB = p.log.stream().filter(x -> !x.fromA()).toList();
            Pkt last = fromB.get(fromB.size() - 1);
            assertThat(last.opcode()).isEqualTo(ACK);
            assertThat(last.syndrome()).isEqualTo(Aeth.NAK_REMOTE_ACCESS_ERROR);
            assertThat(last.psn()).as("the READ request's PSN").isEqualTo(Params.defaults().psnA());
            assertThat(fromB.size() - 1).as("READ responses sent: at most the batch that was under way")
                    .isBetween(1, 16);
            assertThat(p.b.qp.state()).isEqualTo(QpState.ERR);
            assertThat(p.b.qp.errorReason()).contains("NAK 0x62");
        }
    }

    /** The bug: a duplicate READ whose MR was gone got no answer at all; now NAK 0x62 with the duplicate's PSN. */
    @Test
    void aDuplicateReadWhoseMrIsGoneIsNaked() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.dropper = pkt -> !pkt.fromA() && pkt.opcode() != ACK; // every READ response is lost
            p.a.qp.postSend(read(1, p.a, 4096, 1024, p.b, 0));
            p.vs.runFor(1_000_000); // B executed the READ (its responses were lost)
            p.b.mr.close();
            WorkCompletion wc = p.next(p.a); // A times out, re-requests; B finds no MR
            assertThat(wc.status).isEqualTo(WcStatus.REM_ACCESS_ERR);
            assertThat(p.sent(true, READ_REQUEST)).hasSize(2);
            Pkt nak = p.sent(false, ACK).get(0);
            assertThat(nak.syndrome()).isEqualTo(Aeth.NAK_REMOTE_ACCESS_ERROR);
            assertThat(nak.psn()).isEqualTo(p.sent(true, READ_REQUEST).get(1).psn());
            assertThat(p.a.dev.counter("retransmit_timeouts")).isEqualTo(1);
        }
    }

    /**
     * extensions §6: a re-requested READ tail is answered as a new response stream FIRST … LAST
     * (rdma_rxe's recovery; adaptive recovery re-requests only the missing part, after the
     * reordering window: {@code LossRecoveryTest}).
     */
    @Test
    void aReRequestedTailIsANewResponseStream() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0, io.rxe4j.verbs.DeviceConfig.defaults().withAdaptiveRecovery(false))) {
            fill(p.b.mr.segment(), 0, 2048, 5);
            boolean[] dropped = {false};
            p.dropper = pkt -> !pkt.fromA() && pkt.opcode() == READ_RESP_MIDDLE && !dropped[0] && (dropped[0] = true);
            p.a.qp.postSend(read(1, p.a, 4096, 2048, p.b, 0)); // 8 responses; the 2nd is lost
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertSameBytes(p.a.mr.segment(), 4096, p.b.mr.segment(), 0, 2048);
            List<Pkt> reqs = p.sent(true, READ_REQUEST);
            assertThat(reqs).hasSize(2);
            int tailPsn = reqs.get(1).psn();
            int at = p.log.indexOf(reqs.get(1));
            Pkt firstOfTail = p.log.subList(at, p.log.size()).stream().filter(x -> !x.fromA() && x.psn() == tailPsn)
                    .findFirst().orElseThrow();
            assertThat(firstOfTail.opcode()).isEqualTo(READ_RESP_FIRST);
            assertThat(p.a.dev.counter("retransmit_timeouts")).as("the gap re-requested at once").isZero();
        }
    }

    // ------------------------------------------------------------------ 5. duplicate SEND/WRITE

    /** The bug: a duplicate WRITE arriving after a READ was ACKed with the READ's last PSN. */
    @Test
    void aDuplicateWriteAfterAReadIsAckedWithItsOwnPsn() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.capturer = pkt -> pkt.fromA() && pkt.opcode() == WRITE_ONLY;
            p.a.qp.postSend(write(1, p.a, 0, 64, p.b, 0));
            p.a.qp.postSend(read(2, p.a, 4096, 1024, p.b, 0)); // PSNs psnA+1 .. psnA+4
            p.next(p.a);
            p.next(p.a);
            int acksBefore = p.sent(false, ACK).size();
            p.replay(p.captured.get(0), true);
            p.vs.runFor(1_000_000);
            List<Pkt> acks = p.sent(false, ACK);
            assertThat(acks).hasSize(acksBefore + 1);
            assertThat(acks.get(acks.size() - 1).psn()).isEqualTo(Params.defaults().psnA());
            assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(1);
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    // ------------------------------------------------------------------ 6. bounded output

    /**
     * rxe-facts §5.2, extensions §6: at most 64 packets unacknowledged per QP (it used to be the
     * 128-PSN window), whatever the congestion window (off here, so the bound alone limits), with
     * rdma_rxe's recovery; adaptive recovery sizes the window by the path ({@code AdaptiveRecoveryTest}).
     */
    @Test
    void theRequesterKeepsAtMost64PacketsUnacknowledged() {
        try (VirtualRcPair p = new VirtualRcPair(64 << 10, Params.defaults(), VirtualRcPair.ALL_REMOTE, 0,
                io.rxe4j.verbs.DeviceConfig.defaults().withCongestionControl(false).withAdaptiveRecovery(false))) {
            fill(p.a.mr.segment(), 0, 64 << 10, 6);
            p.dropper = pkt -> !pkt.fromA(); // no ACK comes back for a while
            p.a.qp.postSend(write(1, p.a, 0, 64 << 10, p.b, 0)); // 256 packets at MTU 256
            p.vs.runFor(PERIOD / 2);
            long sent = p.log.stream().filter(Pkt::fromA).count();
            assertThat(sent).isEqualTo(64);
            assertThat(p.a.dev.counter("output_stalls")).isEqualTo(1);
            assertThat(p.log.stream().filter(Pkt::fromA).filter(Pkt::ackReq).count())
                    .as("the packet that fills the bound asks for an ACK").isGreaterThanOrEqualTo(1);
            p.dropper = null;
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertSameBytes(p.a.mr.segment(), 0, p.b.mr.segment(), 0, 64 << 10);
        }
    }

    /**
     * The bug: a READ reply was built whole in one loop task, so one large READ starved every
     * other QP of the device. A 1 GiB READ on one QP; a ping-pong of SENDs on another QP of the
     * same devices completes while the READ is under way, each SEND acknowledged after at most a
     * couple of reply batches.
     */
    @Test
    void aOneGibReadDoesNotDelayAPingPongOnAnotherQp() {
        long gib = 1L << 30;
        try (VirtualRcPair p = new VirtualRcPair(gib, new Params(Mtu.MTU_4096, 14, 7, 0x100, 0x200))) {
            VirtualRcPair.Conn c = p.newConnection();
            int pings = 20;
            for (int i = 0; i < pings; i++) {
                c.qb().postRecv(new RecvWr().set(i, new Sge(p.b.mr.addr(), 64, p.b.mr.lkey())));
            }
            p.a.qp.postSend(read(1, p.a, 0, (int) (gib - 1), p.b, 0)); // 2^30 - 1 bytes: 262,144 responses
            p.vs.runUntil(() -> p.sent(false, READ_RESP_MIDDLE).size() > 1000, VirtualRcPair.MAX_WAIT);
            int[] readRespFromB = {0};
            int[] sinceSend = {-1};
            int[] worst = {0};
            p.onFabric = pkt -> {
                if (!pkt.fromA() && pkt.destQp() == p.a.qp.qpNum() && pkt.opcode() != ACK) {
                    readRespFromB[0]++;
                    if (sinceSend[0] >= 0) {
                        sinceSend[0]++;
                    }
                }
                if (pkt.fromA() && pkt.destQp() == c.qb().qpNum() && pkt.opcode() == SEND_ONLY) {
                    sinceSend[0] = 0;
                }
                if (!pkt.fromA() && pkt.destQp() == c.qa().qpNum() && pkt.opcode() == ACK) {
                    worst[0] = Math.max(worst[0], sinceSend[0]);
                    sinceSend[0] = -1;
                }
            };
            for (int i = 0; i < pings; i++) {
                c.qa().postSend(new SendWr().set(i, WrOpcode.SEND, SendFlags.SIGNALED, new Sge(p.a.mr.addr(), 64,
                        p.a.mr.lkey())));
                assertThat(p.next(c.cqa(), "ping").status).isEqualTo(WcStatus.SUCCESS);
                assertThat(p.next(c.cqb(), "pong").status).isEqualTo(WcStatus.SUCCESS);
            }
            assertThat(readRespFromB[0]).as("the READ went on meanwhile").isGreaterThan(pings);
            assertThat(p.sent(false, READ_RESP_MIDDLE).size()).as("and is far from done").isLessThan(100_000);
            assertThat(worst[0]).as("READ responses B sent between a ping and its ACK").isLessThanOrEqualTo(32);
        }
    }

    /**
     * The bug: every duplicate READ request made the responder build the whole reply again at
     * once. 500 duplicates of a 4 MiB READ arrive while its reply is under way: the responder never
     * holds more than one batch of packets, and the READ completes with the right data.
     */
    @Test
    void duplicatedReadRequestsNeverMakeTheResponderHoldMoreThanABatch() {
        int len = 4 << 20;
        try (VirtualRcPair p = new VirtualRcPair(2L * len, new Params(Mtu.MTU_1024, 14, 7, 0x100, 0x200))) {
            fill(p.b.mr.segment(), 0, len, 8);
            p.capturer = pkt -> pkt.fromA() && pkt.opcode() == READ_REQUEST;
            p.a.qp.postSend(read(1, p.a, len, len, p.b, 0)); // 4096 responses
            p.vs.runUntil(() -> p.sent(false, READ_RESP_MIDDLE).size() >= 100, VirtualRcPair.MAX_WAIT);
            for (int i = 0; i < 500; i++) {
                p.replay(p.captured.get(0), true);
            }
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertSameBytes(p.a.mr.segment(), len, p.b.mr.segment(), 0, len);
            assertThat(p.b.dev.counter("duplicate_request")).isEqualTo(500);
            assertThat(p.tap(false).maxHeld).as("packets B held between two flushes").isLessThanOrEqualTo(17);
            assertThat(p.log.stream().filter(x -> !x.fromA()).count()).as("no replay per duplicate")
                    .isLessThan(2L * 4096 + 100);
        }
    }

    /** The engine stops producing while the transport is not writable, and resumes when it is. */
    @Test
    void nothingIsProducedWhileTheTransportIsNotWritable() {
        try (VirtualRcPair p = new VirtualRcPair(64 << 10, Params.defaults())) {
            fill(p.b.mr.segment(), 0, 16 << 10, 9);
            p.tap(true).writable(false);
            p.a.qp.postSend(write(1, p.a, 0, 8192, p.b, 32 << 10));
            p.vs.runFor(PERIOD * 3);
            assertThat(p.log).as("nothing left A").isEmpty();
            assertThat(p.a.dev.counter("tx_not_writable")).isGreaterThanOrEqualTo(1);
            p.tap(true).writable(true);
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);

            p.tap(false).writable(false); // now the responder's transport is full
            p.a.qp.postSend(read(2, p.a, 16 << 10, 16 << 10, p.b, 0));
            p.vs.runFor(PERIOD / 4);
            assertThat(p.sent(false, READ_RESP_FIRST)).isEmpty();
            p.tap(false).writable(true);
            assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            assertSameBytes(p.a.mr.segment(), 16 << 10, p.b.mr.segment(), 0, 16 << 10);
            assertThat(p.tap(true).sentWhileNotWritable + p.tap(false).sentWhileNotWritable).isZero();
            assertThat(p.a.dev.counter("retransmit_timeouts")).isZero();
        }
    }

    // ------------------------------------------------------------------ 8. loud engine faults

    /** The bug: an unexpected exception in the engine was swallowed into a counter; now the QP enters ERR and says why. */
    @Test
    void anEngineFaultMovesTheQpToErrWithAReason() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            p.tap(true).failNextSend = true;
            p.a.qp.postSend(write(1, p.a, 0, 64, p.b, 0));
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            assertThat(p.a.qp.state()).isEqualTo(QpState.ERR);
            assertThat(p.a.qp.errorReason()).contains("internal error").contains("injected transport fault");
            assertThat(p.a.dev.counter("drop_internal_error")).isEqualTo(1);
        }
    }

    // ------------------------------------------------------------------ 10. responder order

    /** rxe-facts §9.3: CHK_RESOURCE comes before CHK_LENGTH, so an over-long SEND with no receive WQE gets an RNR NAK. */
    @Test
    void theResponderChecksForAReceiveWqeBeforeTheLength() {
        try (VirtualRcPair p = new VirtualRcPair(8192, Params.defaults())) {
            int payload = 300; // longer than the 256-byte path MTU allows in one packet
            int total = Bth.LENGTH + payload + Icrc.LENGTH;
            ByteBuf b = Unpooled.buffer(total, total);
            Bth.write(b, 0, SEND_ONLY, false, 0, Bth.DEFAULT_PKEY, p.b.qp.qpNum(), true, Params.defaults().psnA());
            b.writerIndex(total);
            new Icrc().write(b, 0, total, VirtualRcPair.ADDR_A, VirtualRcPair.ADDR_B);
            p.replay(b, true);
            b.release();
            p.vs.runFor(1_000_000);
            Pkt nak = p.sent(false, ACK).get(0);
            assertThat(Aeth.type(nak.syndrome())).as("RNR NAK, not NAK 0x61").isEqualTo(Aeth.TYPE_RNR_NAK);
            assertThat(p.b.qp.state()).isEqualTo(QpState.RTS);
        }
    }
}
