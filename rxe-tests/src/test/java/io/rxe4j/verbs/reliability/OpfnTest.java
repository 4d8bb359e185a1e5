package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendFlags;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.TidRdmaConfig;
import io.rxe4j.verbs.TidRdmaParams;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.WrOpcode;
import io.rxe4j.core.wire.AtomicAckEth;
import io.rxe4j.core.wire.AtomicEth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.verbs.reliability.VirtualRcPair.Params;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * OPFN ({@code tid-opfn-facts.md} §1) between two rxe4j devices on virtual time: bit 24, the hidden
 * COMPARE_SWAP to VA 0xFFFFFFFFFFFFFFFF and its ATOMIC ACKNOWLEDGE, the TID RDMA words both ways,
 * lost requests and responses, a peer without OPFN or without TID RDMA, silent close-out after
 * retry_cnt, reset and renegotiation on re-entering RTS.
 */
class OpfnTest {
    private static final int COMPARE_SWAP = 0x13;
    private static final int ATOMIC_ACK = 0x12;
    private static final int TIMEOUT = 14;
    private static final Params MTU4096 = new Params(Mtu.MTU_4096, TIMEOUT, 7, 0x100, 0x200);
    private static final DeviceConfig TID = DeviceConfig.defaults().withTidRdma();
    /** hfi1's defaults with timeout 14, encoded by hand from the §1.3 table. */
    private static final long DEFAULT_WORD = 0x0080_07EE_0020_1841L;

    private static VirtualRcPair pair(DeviceConfig a, DeviceConfig b, Params p) {
        return new VirtualRcPair(1 << 20, p, VirtualRcPair.ALL_REMOTE, 0, a, b);
    }

    /** Keeps a copy of every packet; {@link VirtualRcPair#captured} then holds them in fabric order. */
    private static void captureAll(VirtualRcPair p) {
        p.capturer = pkt -> true;
    }

    private static SendWr write(long id, VirtualRcPair.Side from, VirtualRcPair.Side to, int len) {
        return new SendWr().set(id, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, new Sge(from.mr.addr(), len,
                from.mr.lkey())).remote(to.mr.addr() + 4096, to.mr.rkey());
    }

    private static boolean isOpfnRequest(ByteBuf b) {
        int at = b.readerIndex();
        return Bth.opcode(b, at) == COMPARE_SWAP && AtomicEth.va(b, at + Bth.LENGTH) == -1L;
    }

    /** Runs one signaled WRITE from A to B and returns its completion. */
    private static WorkCompletion writeOnce(VirtualRcPair p, long id) {
        p.a.qp.postSend(write(id, p.a, p.b, 100));
        return p.next(p.a);
    }

    @Test
    void theDefaultWordMatchesTheSheetsLayout() {
        TidRdmaParams d = TidRdmaParams.defaults(0, TIMEOUT);
        assertThat(d.encode()).isEqualTo(DEFAULT_WORD);
        assertThat(TidRdmaParams.decode(DEFAULT_WORD)).isEqualTo(d);
        TidRdmaParams odd = new TidRdmaParams(0x80_0007, 8 << 20, 63, 63, 1, 31, true);
        assertThat(TidRdmaParams.decode(odd.encode())).isEqualTo(odd);
        // all-zero parameters still carry max_len 0x7FF (hfi1's quirk) and decode as "TID RDMA off"
        long zero = new TidRdmaParams(0, 0, 0, 0, 0, 0, false).encode();
        assertThat(zero).isEqualTo(0x0000_FFE0_0000_0001L);
        assertThat(TidRdmaParams.decode(zero)).isNull();
        assertThat(TidRdmaParams.decode(TidRdmaParams.CAPCODE)).isNull();
    }

    @Test
    void anEnabledTidConfigTurnsOpfnOnAndTidEntriesStopAt1024() {
        assertThat(DeviceConfig.defaults().withTidRdma(TidRdmaConfig.on().withTidEntries(1)).opfn()).isTrue();
        assertThat(DeviceConfig.defaults().withTidRdma(TidRdmaConfig.disabled()).opfn()).isFalse();
        assertThat(TidRdmaConfig.on().withTidEntries(1024).tidEntries()).isEqualTo(1024);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TidRdmaConfig.on().withTidEntries(1025))
                .hasMessageContaining("1..1024");
    }

    @Test
    void bothSidesNegotiateTidRdmaAfterTheFirstPacketWithoutUserCompletions() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            captureAll(p);
            assertThat(p.a.qp.tidRdma()).isNull();
            assertThat(p.quiet(p.a, 1_000_000_000L)).isTrue();
            assertThat(p.captured).as("nothing is sent before the first user packet").isEmpty();

            WorkCompletion wc = writeOnce(p, 1);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);

            assertThat(p.a.qp.tidRdma()).isEqualTo(TidRdmaParams.defaults(0, TIMEOUT));
            assertThat(p.b.qp.tidRdma()).isEqualTo(TidRdmaParams.defaults(0, TIMEOUT));
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            assertThat(p.b.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            // every packet on the fabric carries bit 24
            for (ByteBuf b : p.captured) {
                assertThat(Bth.extended(b, b.readerIndex())).as("bit 24 of %s", Bth.opcode(b, b.readerIndex()))
                        .isTrue();
            }
            // each side sent one hidden COMPARE_SWAP: VA all ones, rkey 0, swap 0, compare = its word
            List<ByteBuf> requests = p.captured.stream().filter(OpfnTest::isOpfnRequest).toList();
            assertThat(requests).hasSize(2);
            for (ByteBuf r : requests) {
                int eth = r.readerIndex() + Bth.LENGTH;
                assertThat(AtomicEth.rkey(r, eth)).isZero();
                assertThat(AtomicEth.swapAdd(r, eth)).isZero();
                assertThat(AtomicEth.compare(r, eth)).isEqualTo(DEFAULT_WORD);
            }
            // B saw A's bit first, so B asked first; its request went to A's QP
            assertThat(Bth.destQp(requests.get(0), requests.get(0).readerIndex())).isEqualTo(p.a.qp.qpNum());
            // the answers are ATOMIC ACKNOWLEDGEs carrying the responder's word
            List<ByteBuf> acks = p.captured.stream().filter(b -> Bth.opcode(b, b.readerIndex()) == ATOMIC_ACK)
                    .toList();
            assertThat(acks).hasSize(2);
            for (ByteBuf a : acks) {
                assertThat(AtomicAckEth.originalData(a, a.readerIndex() + Bth.LENGTH + 4)).isEqualTo(DEFAULT_WORD);
            }
            assertThat(p.a.dev.counter("opfn_requests")).isEqualTo(1);
            assertThat(p.b.dev.counter("opfn_requests")).isEqualTo(1);
            assertThat(p.a.dev.counter("opfn_responses")).isEqualTo(1);
            assertThat(p.b.dev.counter("opfn_responses")).isEqualTo(1);
            // no completion for the hidden WQEs, on either side
            assertThat(p.quiet(p.a, 1_000_000_000L)).isTrue();
            assertThat(p.quiet(p.b, 1_000_000_000L)).isTrue();
        }
    }

    @Test
    void aPeerWithoutOpfnNeverReceivesAnOpfnRequestAndSeesNoDifference() {
        try (VirtualRcPair p = pair(TID, DeviceConfig.defaults(), MTU4096)) {
            captureAll(p);
            for (int i = 0; i < 5; i++) {
                assertThat(writeOnce(p, i).status).isEqualTo(WcStatus.SUCCESS);
            }
            p.b.qp.postSend(write(9, p.b, p.a, 100));
            assertThat(p.next(p.b).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(1_000_000_000L);
            assertThat(p.captured.stream().filter(OpfnTest::isOpfnRequest)).isEmpty();
            assertThat(p.captured).hasSameSizeAs(p.log);
            for (int i = 0; i < p.captured.size(); i++) {
                ByteBuf b = p.captured.get(i);
                assertThat(Bth.extended(b, b.readerIndex())).as("packet %s", p.log.get(i))
                        .isEqualTo(p.log.get(i).fromA());
            }
            assertThat(p.a.qp.tidRdma()).isNull();
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=false requested=1 completed=0 curr=0");
            assertThat(p.b.qp.tidRdma()).isNull();
        }
    }

    @Test
    void aPeerWithOpfnButWithoutTidRdmaAnswersWithADisablingWord() {
        DeviceConfig opfnOnly = DeviceConfig.defaults().withOpfn(true);
        try (VirtualRcPair p = pair(TID, opfnOnly, MTU4096)) {
            captureAll(p);
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            // only A requests (B requests nothing); B answers with all-zero parameters
            List<ByteBuf> requests = p.captured.stream().filter(OpfnTest::isOpfnRequest).toList();
            assertThat(requests).hasSize(1);
            ByteBuf ack = p.captured.stream().filter(b -> Bth.opcode(b, b.readerIndex()) == ATOMIC_ACK)
                    .findFirst().orElseThrow();
            assertThat(AtomicAckEth.originalData(ack, ack.readerIndex() + Bth.LENGTH + 4))
                    .isEqualTo(0x0000_FFE0_0000_0001L);
            assertThat(p.a.qp.tidRdma()).isNull();
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            assertThat(p.b.qp.tidRdma()).isNull();
        }
    }

    @Test
    void aPathMtuBelow4096RequestsNothing() {
        try (VirtualRcPair p = pair(TID, TID, new Params(Mtu.MTU_1024, TIMEOUT, 7, 1, 2))) {
            captureAll(p);
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            assertThat(p.captured.stream().filter(OpfnTest::isOpfnRequest)).isEmpty();
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=0 completed=0 curr=0");
            assertThat(p.a.qp.tidRdma()).isNull();
        }
    }

    @Test
    void aLostOpfnRequestIsResentAndNegotiationCompletes() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            int[] dropped = {0};
            p.dropper = pkt -> pkt.opcode() == COMPARE_SWAP && dropped[0]++ < 1;
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(2_000_000_000L);
            assertThat(dropped[0]).isGreaterThan(1);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.b.qp.tidRdma()).isNotNull();
            assertThat(p.a.dev.counter("retransmit_timeouts") + p.b.dev.counter("retransmit_timeouts")).isOne();
            assertThat(p.quiet(p.a, 1_000_000L) && p.quiet(p.b, 1_000_000L)).isTrue();
        }
    }

    @Test
    void aLostOpfnResponseIsAnsweredAgainFromTheResponderResource() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            int[] dropped = {0};
            p.dropper = pkt -> pkt.opcode() == ATOMIC_ACK && dropped[0]++ < 1;
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(2_000_000_000L);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.b.qp.tidRdma()).isNotNull();
            // the duplicate request was answered from the record, not negotiated again
            assertThat(p.a.dev.counter("opfn_responses") + p.b.dev.counter("opfn_responses")).isEqualTo(2);
            assertThat(p.a.dev.counter("duplicate_request") + p.b.dev.counter("duplicate_request")).isOne();
        }
    }

    @Test
    void opfnRequestsThatRunOutOfRetriesEndSilentlyWithTidRdmaOffAndTheQpUp() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            // every OPFN answer is lost: each responder takes the request (its PSN is used up, as
            // for any atomic) but no requester ever hears back
            p.dropper = pkt -> pkt.opcode() == ATOMIC_ACK;
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(20L * (4096L << TIMEOUT) * 8);
            assertThat(p.a.dev.counter("opfn_timeouts")).isOne();
            assertThat(p.b.dev.counter("opfn_timeouts")).isOne();
            assertThat(p.a.dev.counter("retry_exceeded_err")).isZero();
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
            assertThat(p.b.qp.state()).isEqualTo(QpState.RTS);
            assertThat(p.a.qp.tidRdma()).isNull();
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            assertThat(p.quiet(p.a, 1_000_000L) && p.quiet(p.b, 1_000_000L)).as("no CQE for the hidden WQE")
                    .isTrue();
            // the QPs still work, and ask nothing again
            p.dropper = null;
            WorkCompletion wc = writeOnce(p, 2);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.opcode).isEqualTo(WcOpcode.RDMA_WRITE);
            assertThat(p.a.dev.counter("opfn_requests")).isOne();
        }
    }

    @Test
    void reEnteringRtsRenegotiatesAndThePeerTakesItAsAReset() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            p.a.qp.modify(new QpAttr().state(QpState.RTS));
            p.vs.runFor(10_000_000L);
            assertThat(p.a.dev.counter("opfn_requests")).isEqualTo(2);
            assertThat(p.b.dev.counter("opfn_responses")).isEqualTo(2);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.b.qp.tidRdma()).isNotNull();
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            assertThat(p.quiet(p.a, 1_000_000L) && p.quiet(p.b, 1_000_000L)).isTrue();
        }
    }

    @Test
    void anOpfnRequestInASlotThatOnceHeldATidReadIsAnOpfnRequest() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS); // slot 0; OPFN takes slot 1
            p.vs.runFor(10_000_000L);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            // 257 TID READs fill slots 2..256, 0 and 1 (the SQ has max_send_wr + 1 = 257 slots)
            for (int i = 0; i < 257; i++) {
                p.a.qp.postSend(new SendWr().set(10 + i, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                        new Sge(p.a.mr.addr(), 256 << 10, p.a.mr.lkey())).remote(p.b.mr.addr(), p.b.mr.rkey()));
                assertThat(p.next(p.a).status).isEqualTo(WcStatus.SUCCESS);
            }
            assertThat(p.a.dev.counter("tid_read_requests")).isEqualTo(257);
            // renegotiation posts the hidden request into slot 2, which last held a TID READ
            p.a.qp.modify(new QpAttr().state(QpState.RTS));
            p.vs.runFor(10_000_000L);
            assertThat(p.a.dev.counter("opfn_requests")).isEqualTo(2);
            assertThat(p.a.qp.opfnState()).isEqualTo("extended=true requested=1 completed=1 curr=0");
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.quiet(p.a, 1_000_000L)).as("no CQE for it").isTrue();
            assertThat(writeOnce(p, 2).status).isEqualTo(WcStatus.SUCCESS);
        }
    }

    @Test
    void resetForgetsTheNegotiationAndANewConnectionNegotiatesAgain() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            for (VirtualRcPair.Side s : new VirtualRcPair.Side[] {p.a, p.b}) {
                s.qp.modify(new QpAttr().state(QpState.ERR));
                s.qp.modify(new QpAttr().state(QpState.RESET));
                assertThat(s.qp.tidRdma()).isNull();
                assertThat(s.qp.opfnState()).isEqualTo("extended=false requested=0 completed=0 curr=0");
            }
            p.vs.runFor(1_000_000L);
            p.reconnect(p.a.qp, p.b.qp, p.b.dev, 0x300, 0x400);
            p.reconnect(p.b.qp, p.a.qp, p.a.dev, 0x400, 0x300);
            assertThat(writeOnce(p, 2).status).isEqualTo(WcStatus.SUCCESS);
            p.vs.runFor(10_000_000L);
            assertThat(p.a.qp.tidRdma()).isNotNull();
            assertThat(p.b.qp.tidRdma()).isNotNull();
            assertThat(p.a.dev.counter("opfn_requests")).isEqualTo(2);
        }
    }

    @Test
    void theReservedSlotDoesNotTakeAUserSlot() {
        try (VirtualRcPair p = pair(TID, TID, MTU4096)) {
            assertThat(writeOnce(p, 1).status).isEqualTo(WcStatus.SUCCESS);
            // B's OPFN request is queued on B behind nothing; fill B's SQ to the user limit at once
            int n = io.rxe4j.verbs.QpInitAttr.rc(p.b.cq, p.b.cq).caps().maxSendWr();
            p.vs.runFor(1);
            for (int i = 0; i < n; i++) {
                p.b.qp.postSend(write(100 + i, p.b, p.a, 8));
            }
            for (int i = 0; i < n; i++) {
                assertThat(p.next(p.b).status).isEqualTo(WcStatus.SUCCESS);
            }
            assertThat(p.b.qp.tidRdma()).isNotNull();
            assertThat(TidRdmaConfig.on().flows()).isEqualTo(32);
        }
    }
}
