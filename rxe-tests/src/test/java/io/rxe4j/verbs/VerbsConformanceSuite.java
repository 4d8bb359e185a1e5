package io.rxe4j.verbs;

import static io.rxe4j.verbs.WorkCompletion.WC_GRH;
import static io.rxe4j.verbs.WorkCompletion.WC_WITH_IMM;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Verbs conformance suite for RC QPs, modelled on rdma-core's {@code tests/test_qpex.py} (one
 * test per operation, checking data and every work-completion field) and
 * {@code tests/test_atomic.py} (CAS/FAA values, invalid rkey, QP and MR access violations,
 * misaligned addresses). Expected behaviour is {@code rdma_rxe}'s, as written down in
 * {@code shared/protocol/rxe-facts.md} (§1.3, §2.3, §4.2, §5.5–§5.8, §6).
 *
 * <p>The body is transport independent; concrete subclasses pick the network (see {@link
 * ConformanceFixture}): {@link InJvmVerbsConformanceTest}, {@link UdpVerbsConformanceTest} (NIO),
 * {@link UdpEpollVerbsConformanceTest}, {@link UdpGsoGroVerbsConformanceTest}, {@link
 * FaultInjectingVerbsConformanceTest} (no fault), {@link LossyVerbsConformanceTest} and {@link
 * LossyVirtualTimeVerbsConformanceTest} (1% loss each way; the tests marked {@link NotOnLossyNet}
 * are skipped there) and {@link VirtualTimeVerbsConformanceTest}.
 */
abstract class VerbsConformanceSuite extends ConformanceFixture {
    /**
     * Why the tests of a fatal NAK cannot hold on a lossy net: the responder enters ERR as it sends
     * NAK 0x61 or 0x62 and sends it once; if that NAK is lost, the retransmitted request finds the
     * responder in ERR and is dropped, so the requester's WQE ends with RETRY_EXC_ERR instead of the
     * NAK's status ({@code rxe-facts.md} §5.6: a class A/C error sets {@code goto_error}).
     */
    static final String FATAL_NAK_LOST = "a lost NAK 0x61/0x62 is never repeated (the responder is in ERR"
            + " and drops the retransmitted request), so the WQE legitimately ends with RETRY_EXC_ERR";

    // =====================================================================================
    // Each operation: data and WC fields (test_qpex.py test_qp_ex_rc_*)
    // =====================================================================================

    @ParameterizedTest(name = "SEND of {0} bytes")
    @ValueSource(ints = {0, 1, 13, 1024, 1025, 5000})
    void send(int len) {
        Pair p = connect();
        byte[] before = bytes(p.b().mem(), HALF, 8192);
        p.b().qp.postRecv(new RecvWr().set(77, p.b().sge(HALF, 8192)));
        p.a().qp.postSend(new SendWr().set(11, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, len)));

        assertWc(p.a().nextSend(), 11, WcStatus.SUCCESS, WcOpcode.SEND, len, 0, p.a().qp);
        assertWc(p.b().nextRecv(), 77, WcStatus.SUCCESS, WcOpcode.RECV, len, WC_GRH, p.b().qp);
        assertThat(bytes(p.b().mem(), HALF, len)).isEqualTo(bytes(p.a().mem(), 0, len));
        // nothing past the message is touched
        assertThat(bytes(p.b().mem(), HALF + len, 8192 - len)).isEqualTo(Arrays.copyOfRange(before, len, 8192));
        assertNoCompletion(p.a().scq);
        assertNoCompletion(p.b().rcq);
    }

    @ParameterizedTest(name = "SEND_WITH_IMM of {0} bytes")
    @ValueSource(ints = {0, 13, 3000})
    void sendWithImm(int len) {
        Pair p = connect();
        int imm = 0xDEADBEEF;
        p.b().qp.postRecv(new RecvWr().set(78, p.b().sge(HALF, 4096)));
        p.a().qp.postSend(new SendWr().set(12, WrOpcode.SEND_WITH_IMM, SendFlags.SIGNALED, p.a().sge(0, len))
                .imm(imm));

        WorkCompletion s = p.a().nextSend();
        // rxe sets WITH_IMM on the send-side WC of *_WITH_IMM WRs too (rxe-facts §6.6)
        assertWc(s, 12, WcStatus.SUCCESS, WcOpcode.SEND, len, WC_WITH_IMM, p.a().qp);
        WorkCompletion r = p.b().nextRecv();
        assertWc(r, 78, WcStatus.SUCCESS, WcOpcode.RECV, len, WC_GRH | WC_WITH_IMM, p.b().qp);
        assertThat(r.immData).isEqualTo(imm);
        assertThat(bytes(p.b().mem(), HALF, len)).isEqualTo(bytes(p.a().mem(), 0, len));
    }

    @ParameterizedTest(name = "RDMA_WRITE of {0} bytes")
    @ValueSource(ints = {1, 3, 1024, 1025, 10_000, 65_536})
    void rdmaWrite(int len) {
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        int dst = 16;
        p.a().qp.postSend(new SendWr().set(13, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, len))
                .remote(p.b().va(dst), p.b().mr.rkey()));

        assertWc(p.a().nextSend(), 13, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, p.a().qp);
        byte[] expected = beforeB.clone();
        System.arraycopy(bytes(p.a().mem(), 0, len), 0, expected, dst, len);
        assertThat(snapshot(p.b().mr)).isEqualTo(expected);
        assertNoCompletion(p.b().rcq); // a plain WRITE consumes no receive and makes no CQE
    }

    @ParameterizedTest(name = "RDMA_WRITE_WITH_IMM of {0} bytes")
    @ValueSource(ints = {0, 7, 3000})
    void rdmaWriteWithImm(int len) {
        Pair p = connect();
        int imm = 0x01020304;
        byte[] beforeB = snapshot(p.b().mr);
        // a receive WQE without SGEs is enough: the data goes to the RETH address
        p.b().qp.postRecv(new RecvWr().set(79));
        p.a().qp.postSend(new SendWr().set(14, WrOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED, p.a().sge(0, len))
                .remote(p.b().va(8), p.b().mr.rkey()).imm(imm));

        assertWc(p.a().nextSend(), 14, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, WC_WITH_IMM, p.a().qp);
        WorkCompletion r = p.b().nextRecv();
        // byte_len of RECV_RDMA_WITH_IMM is the RETH DMA length (rxe-facts §6.6)
        assertWc(r, 79, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, len, WC_GRH | WC_WITH_IMM, p.b().qp);
        assertThat(r.immData).isEqualTo(imm);
        byte[] expected = beforeB.clone();
        System.arraycopy(bytes(p.a().mem(), 0, len), 0, expected, 8, len);
        assertThat(snapshot(p.b().mr)).isEqualTo(expected);
    }

    static Stream<Arguments> readSizes() {
        List<Arguments> l = new ArrayList<>();
        for (Mtu m : new Mtu[] {Mtu.MTU_256, Mtu.MTU_1024, Mtu.MTU_4096}) {
            int b = m.bytes();
            for (int len : new int[] {1, b - 1, b, b + 1, 3 * b + 5, 40_000}) {
                l.add(Arguments.of(m, len));
            }
        }
        return l.stream();
    }

    @ParameterizedTest(name = "RDMA_READ at {0} of {1} bytes")
    @MethodSource("readSizes")
    void rdmaRead(Mtu mtu, int len) {
        Pair p = connect(new Cfg().mtu(mtu));
        byte[] beforeA = snapshot(p.a().mr);
        byte[] beforeB = snapshot(p.b().mr);
        int src = 24;
        p.a().qp.postSend(new SendWr().set(15, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, len))
                .remote(p.b().va(src), p.b().mr.rkey()));

        assertWc(p.a().nextSend(), 15, WcStatus.SUCCESS, WcOpcode.RDMA_READ, len, 0, p.a().qp);
        byte[] expected = beforeA.clone();
        System.arraycopy(beforeB, src, expected, HALF, len);
        assertThat(snapshot(p.a().mr)).isEqualTo(expected);
        assertThat(snapshot(p.b().mr)).isEqualTo(beforeB);
    }

    @ParameterizedTest(name = "SEND and WRITE segmentation at {0}")
    @EnumSource(value = Mtu.class, names = {"MTU_256", "MTU_1024", "MTU_4096"})
    void sendAndWriteSegmentation(Mtu mtu) {
        Pair p = connect(new Cfg().mtu(mtu));
        int len = 3 * mtu.bytes() + 5;
        p.b().qp.postRecv(new RecvWr().set(1, p.b().sge(HALF, len)));
        p.a().qp.postSend(new SendWr().set(2, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, len)));
        p.a().qp.postSend(new SendWr().set(3, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(100, len))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 2, WcStatus.SUCCESS, WcOpcode.SEND, len, 0, p.a().qp);
        assertWc(p.a().nextSend(), 3, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, p.a().qp);
        assertWc(p.b().nextRecv(), 1, WcStatus.SUCCESS, WcOpcode.RECV, len, WC_GRH, p.b().qp);
        assertThat(bytes(p.b().mem(), HALF, len)).isEqualTo(bytes(p.a().mem(), 0, len));
        assertThat(bytes(p.b().mem(), 0, len)).isEqualTo(bytes(p.a().mem(), 100, len));
    }

    // ---------------------------------------------------------------------- atomics (test_atomic.py)

    @Test
    void compareAndSwapSucceeds() {
        Pair p = connect();
        p.b().word(64, 0x1111_2222_3333_4444L);
        p.a().word(HALF, 0x5555_5555_5555_5555L);
        byte[] beforeB = snapshot(p.b().mr);
        SendWr wr = new SendWr().set(21, WrOpcode.ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(64), p.b().mr.rkey()).atomic(0x1111_2222_3333_4444L, 0xCAFE_F00D_0000_0001L);
        p.a().qp.postSend(wr);

        assertWc(p.a().nextSend(), 21, WcStatus.SUCCESS, WcOpcode.COMP_SWAP, 8, 0, p.a().qp);
        assertThat(p.b().word(64)).isEqualTo(0xCAFE_F00D_0000_0001L);
        assertThat(p.a().word(HALF)).as("original value returned").isEqualTo(0x1111_2222_3333_4444L);
        // only the 8 target bytes changed
        byte[] after = snapshot(p.b().mr);
        Arrays.fill(after, 64, 72, (byte) 0);
        Arrays.fill(beforeB, 64, 72, (byte) 0);
        assertThat(after).isEqualTo(beforeB);
    }

    @Test
    void compareAndSwapWithFailedCompareLeavesMemoryAndReturnsOld() {
        Pair p = connect();
        p.b().word(64, 0x1111_2222_3333_4444L);
        byte[] beforeB = snapshot(p.b().mr);
        p.a().qp.postSend(new SendWr().set(22, WrOpcode.ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(64), p.b().mr.rkey()).atomic(0x1111_2222_3333_4445L, -1L));

        assertWc(p.a().nextSend(), 22, WcStatus.SUCCESS, WcOpcode.COMP_SWAP, 8, 0, p.a().qp);
        assertThat(snapshot(p.b().mr)).isEqualTo(beforeB);
        assertThat(p.a().word(HALF)).isEqualTo(0x1111_2222_3333_4444L);
    }

    @Test
    void fetchAndAddReturnsOldAndWrapsModulo2To64() {
        Pair p = connect();
        p.b().word(128, 0xFFFF_FFFF_FFFF_FFFEL);
        SendWr wr = new SendWr().set(23, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(128), p.b().mr.rkey()).atomic(5, 0);
        p.a().qp.postSend(wr);
        assertWc(p.a().nextSend(), 23, WcStatus.SUCCESS, WcOpcode.FETCH_ADD, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF)).isEqualTo(0xFFFF_FFFF_FFFF_FFFEL);
        assertThat(p.b().word(128)).isEqualTo(3L);

        // a second add of 2^63 + 2^63 (= 0 mod 2^64) in two steps, signed values are just bits
        wr.wrId = 24;
        wr.compareAdd = Long.MIN_VALUE;
        p.a().qp.postSend(wr);
        wr.wrId = 25;
        p.a().qp.postSend(wr);
        assertWc(p.a().nextSend(), 24, WcStatus.SUCCESS, WcOpcode.FETCH_ADD, 8, 0, p.a().qp);
        assertWc(p.a().nextSend(), 25, WcStatus.SUCCESS, WcOpcode.FETCH_ADD, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF)).isEqualTo(3L + Long.MIN_VALUE);
        assertThat(p.b().word(128)).isEqualTo(3L);
    }

    @Test
    void manyFetchAndAddsAreEachApplied() {
        Pair p = connect();
        p.b().word(0, 0);
        int n = 200;
        for (int i = 0; i < n; i++) {
            p.a().qp.postSend(new SendWr().set(i, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                    p.a().sge(HALF + 8L * i, 8)).remote(p.b().va(0), p.b().mr.rkey()).atomic(i + 1, 0));
            if (i % 64 == 63) {
                for (int j = i - 63; j <= i; j++) {
                    assertThat(p.a().nextSend().status).isEqualTo(WcStatus.SUCCESS);
                }
            }
        }
        for (int j = n - n % 64; j < n; j++) {
            assertThat(p.a().nextSend().status).isEqualTo(WcStatus.SUCCESS);
        }
        assertThat(p.b().word(0)).isEqualTo((long) n * (n + 1) / 2);
        long expectedOld = 0;
        for (int i = 0; i < n; i++) { // executed in posting order: each returns the running sum
            assertThat(p.a().word(HALF + 8L * i)).isEqualTo(expectedOld);
            expectedOld += i + 1;
        }
    }

    @ParameterizedTest(name = "{0} at remote offset +{1} is rejected at post time")
    @MethodSource("misalignedAtomics")
    void misalignedAtomicIsRejectedAtPostTime(WrOpcode op, int misalign) {
        // rxe4j validates alignment in post_send, like the kernel's rxe post path (EINVAL,
        // rxe-facts §6.7): the WR never reaches the wire, no CQE is made, the QP stays in RTS.
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        SendWr wr = new SendWr().set(31, op, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(64 + misalign), p.b().mr.rkey()).atomic(0, 1);
        assertThatThrownBy(() -> p.a().qp.postSend(wr)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("aligned");
        assertThat(p.a().qp.state()).isEqualTo(QpState.RTS);
        assertNoCompletion(p.a().scq);
        // the QP is still usable
        wr.remoteAddr = p.b().va(64);
        wr.wrId = 32;
        p.a().qp.postSend(wr);
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.wrId).isEqualTo(32);
        assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
        byte[] after = snapshot(p.b().mr);
        Arrays.fill(after, 64, 72, (byte) 0);
        Arrays.fill(beforeB, 64, 72, (byte) 0);
        assertThat(after).isEqualTo(beforeB);
    }

    static Stream<Arguments> misalignedAtomics() {
        return Stream.of(WrOpcode.ATOMIC_CMP_AND_SWP, WrOpcode.ATOMIC_FETCH_AND_ADD,
                        WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD)
                .flatMap(op -> Stream.of(1, 4, 7).map(m -> Arguments.of(op, m)));
    }

    @Test
    void atomicWithLocalSgeOtherThan8BytesIsRejectedAtPostTime() {
        Pair p = connect();
        SendWr wr = new SendWr().set(33, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, p.a().sge(HALF, 4))
                .remote(p.b().va(64), p.b().mr.rkey()).atomic(1, 0);
        assertThatThrownBy(() -> p.a().qp.postSend(wr)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("8 bytes");
    }

    // ---------------------------------------------------------------------- SGEs, inline, signaling

    @Test
    void multiSgeSendGathersAndReceiveScatters() {
        Pair p = connect(new Cfg().mtu(Mtu.MTU_256));
        MemoryRegion extra = p.a().extraMr(4096, ALL, 99);
        Sge[] gather = {p.a().sge(100, 10), new Sge(extra.addr() + 7, 1500, extra.lkey()), p.a().sge(20_000, 3)};
        int total = 1513;
        byte[] msg = concat(bytes(p.a().mem(), 100, 10), bytes(extra.segment(), 7, 1500), bytes(p.a().mem(), 20_000, 3));
        byte[] beforeB = snapshot(p.b().mr);
        Sge[] scatter = {p.b().sge(HALF, 700), p.b().sge(HALF + 1000, 1), p.b().sge(HALF + 2000, 2000)};
        p.b().qp.postRecv(new RecvWr().set(41, scatter));
        p.a().qp.postSend(new SendWr().set(42, WrOpcode.SEND, SendFlags.SIGNALED, gather));

        assertWc(p.a().nextSend(), 42, WcStatus.SUCCESS, WcOpcode.SEND, total, 0, p.a().qp);
        assertWc(p.b().nextRecv(), 41, WcStatus.SUCCESS, WcOpcode.RECV, total, WC_GRH, p.b().qp);
        byte[] expected = beforeB.clone();
        System.arraycopy(msg, 0, expected, HALF, 700);
        System.arraycopy(msg, 700, expected, HALF + 1000, 1);
        System.arraycopy(msg, 701, expected, HALF + 2000, total - 701);
        assertThat(snapshot(p.b().mr)).isEqualTo(expected);
    }

    @Test
    void multiSgeWriteGathersAndReadScatters() {
        Pair p = connect(new Cfg().mtu(Mtu.MTU_256));
        Sge[] gather = {p.a().sge(0, 300), p.a().sge(1000, 1), p.a().sge(5000, 600), p.a().sge(9000, 99)};
        byte[] msg = concat(bytes(p.a().mem(), 0, 300), bytes(p.a().mem(), 1000, 1), bytes(p.a().mem(), 5000, 600),
                bytes(p.a().mem(), 9000, 99));
        p.a().qp.postSend(new SendWr().set(43, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, gather)
                .remote(p.b().va(333), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 43, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, msg.length, 0, p.a().qp);
        assertThat(bytes(p.b().mem(), 333, msg.length)).isEqualTo(msg);

        byte[] beforeA = snapshot(p.a().mr);
        Sge[] scatter = {p.a().sge(HALF, 255), p.a().sge(HALF + 4096, 2), p.a().sge(HALF + 8192, 743)};
        p.a().qp.postSend(new SendWr().set(44, WrOpcode.RDMA_READ, SendFlags.SIGNALED, scatter)
                .remote(p.b().va(333), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 44, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 1000, 0, p.a().qp);
        byte[] expected = beforeA.clone();
        System.arraycopy(msg, 0, expected, HALF, 255);
        System.arraycopy(msg, 255, expected, HALF + 4096, 2);
        System.arraycopy(msg, 257, expected, HALF + 8192, 743);
        assertThat(snapshot(p.a().mr)).isEqualTo(expected);
    }

    @Test
    void inlineSendCopiesDataAtPostTime() {
        Pair p = connect();
        byte[] original = bytes(p.a().mem(), 0, 60);
        p.b().qp.postRecv(new RecvWr().set(51, p.b().sge(HALF, 64)));
        p.a().qp.postSend(new SendWr().set(52, WrOpcode.SEND, SendFlags.SIGNALED | SendFlags.INLINE,
                p.a().sge(0, 40), p.a().sge(40, 20)));
        // the buffer may be reused as soon as post_send returns
        p.a().mem().asSlice(0, 60).fill((byte) 0x5A);

        assertWc(p.a().nextSend(), 52, WcStatus.SUCCESS, WcOpcode.SEND, 60, 0, p.a().qp);
        assertWc(p.b().nextRecv(), 51, WcStatus.SUCCESS, WcOpcode.RECV, 60, WC_GRH, p.b().qp);
        assertThat(bytes(p.b().mem(), HALF, 60)).isEqualTo(original);
    }

    @Test
    void inlineWriteAndInlineLimit() {
        Pair p = connect();
        byte[] original = bytes(p.a().mem(), 0, 64);
        p.a().qp.postSend(new SendWr().set(53, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED | SendFlags.INLINE,
                p.a().sge(0, 64)).remote(p.b().va(HALF), p.b().mr.rkey()));
        p.a().mem().asSlice(0, 64).fill((byte) 0);
        assertWc(p.a().nextSend(), 53, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 64, 0, p.a().qp);
        assertThat(bytes(p.b().mem(), HALF, 64)).isEqualTo(original);

        SendWr tooBig = new SendWr().set(54, WrOpcode.SEND, SendFlags.SIGNALED | SendFlags.INLINE, p.a().sge(0, 65));
        assertThatThrownBy(() -> p.a().qp.postSend(tooBig)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max_inline_data");
    }

    @Test
    void unsignaledWrsMakeNoCompletionButALaterSignaledOneDoes() {
        Pair p = connect();
        for (int i = 0; i < 5; i++) {
            p.a().qp.postSend(new SendWr().set(60 + i, WrOpcode.RDMA_WRITE, 0, p.a().sge(1000L * i, 1000))
                    .remote(p.b().va(HALF + 1000L * i), p.b().mr.rkey()));
        }
        p.a().qp.postSend(new SendWr().set(69, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 5000))
                .remote(p.b().va(HALF), p.b().mr.rkey()));

        assertWc(p.a().nextSend(), 69, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 5000, 0, p.a().qp);
        assertNoCompletion(p.a().scq);
        // every unsignaled write was executed before the read (RC ordering)
        assertThat(bytes(p.a().mem(), HALF, 5000)).isEqualTo(bytes(p.a().mem(), 0, 5000));
    }

    @Test
    void sqSigAllSignalsEveryWr() {
        Pair p = connect(new Cfg().sqSigAll(true));
        p.a().qp.postSend(new SendWr().set(70, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 10))
                .remote(p.b().va(0), p.b().mr.rkey()));
        p.a().qp.postSend(new SendWr().set(71, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 10))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertThat(p.a().nextSend().wrId).isEqualTo(70);
        assertThat(p.a().nextSend().wrId).isEqualTo(71);
    }

    // ---------------------------------------------------------------------- zero length (C9-88)

    @Test
    void zeroLengthWriteAndReadNeedNoRkey() {
        Pair p = connect();
        byte[] beforeA = snapshot(p.a().mr);
        byte[] beforeB = snapshot(p.b().mr);
        p.a().qp.postSend(new SendWr().set(81, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED).remote(0, 0));
        p.a().qp.postSend(new SendWr().set(82, WrOpcode.RDMA_READ, SendFlags.SIGNALED).remote(0, 0));
        // a zero-length SGE is not a transfer either; VA is not checked
        p.a().qp.postSend(new SendWr().set(83, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, 0))
                .remote(-16L, 0));
        p.a().qp.postSend(new SendWr().set(84, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 0))
                .remote(-16L, 0));

        assertWc(p.a().nextSend(), 81, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 0, 0, p.a().qp);
        assertWc(p.a().nextSend(), 82, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 0, 0, p.a().qp);
        assertWc(p.a().nextSend(), 83, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 0, 0, p.a().qp);
        assertWc(p.a().nextSend(), 84, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 0, 0, p.a().qp);
        assertThat(p.a().qp.state()).isEqualTo(QpState.RTS);
        assertThat(p.b().qp.state()).isEqualTo(QpState.RTS);
        assertThat(snapshot(p.a().mr)).isEqualTo(beforeA);
        assertThat(snapshot(p.b().mr)).isEqualTo(beforeB);
    }

    @Test
    void accessesEndingExactlyAtTheMrEndSucceed() {
        // the other side of the one-byte-past-the-end cases below: [va, va + len) may touch the last byte
        Pair p = connect();
        p.a().qp.postSend(new SendWr().set(85, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, 64))
                .remote(p.b().va(MR_BYTES - 64), p.b().mr.rkey()));
        p.a().qp.postSend(new SendWr().set(86, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 64))
                .remote(p.b().va(MR_BYTES - 64), p.b().mr.rkey()));
        p.a().qp.postSend(new SendWr().set(87, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                p.a().sge(HALF + 64, 8)).remote(p.b().va(MR_BYTES - 8), p.b().mr.rkey()).atomic(1, 0));
        for (int id = 85; id <= 87; id++) {
            WorkCompletion wc = p.a().nextSend();
            assertThat(wc.wrId).isEqualTo(id);
            assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.SUCCESS);
        }
        assertThat(bytes(p.a().mem(), HALF, 64)).isEqualTo(bytes(p.a().mem(), 0, 64));
        assertThat(p.a().word(HALF + 64)).isEqualTo(p.a().mem().get(java.lang.foreign.ValueLayout.JAVA_LONG, 56));
    }

    // =====================================================================================
    // Remote access errors (test_atomic.py / test_qpex.py *_invalid_*, rxe-facts §5.6, §6.3)
    // =====================================================================================

    /** The remote operation that fails. */
    enum RemoteOp {
        WRITE(WrOpcode.RDMA_WRITE, WcOpcode.RDMA_WRITE, Access.REMOTE_WRITE, 64),
        WRITE_WITH_IMM(WrOpcode.RDMA_WRITE_WITH_IMM, WcOpcode.RDMA_WRITE, Access.REMOTE_WRITE, 64),
        READ(WrOpcode.RDMA_READ, WcOpcode.RDMA_READ, Access.REMOTE_READ, 64),
        CMP_SWAP(WrOpcode.ATOMIC_CMP_AND_SWP, WcOpcode.COMP_SWAP, Access.REMOTE_ATOMIC, 8),
        FETCH_ADD(WrOpcode.ATOMIC_FETCH_AND_ADD, WcOpcode.FETCH_ADD, Access.REMOTE_ATOMIC, 8),
        MASKED_CMP_SWAP(WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, WcOpcode.MASKED_COMP_SWAP, Access.REMOTE_ATOMIC, 8),
        MASKED_FETCH_ADD(WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, WcOpcode.MASKED_FETCH_ADD, Access.REMOTE_ATOMIC, 8),
        /** ATOMIC WRITE needs REMOTE_WRITE, not REMOTE_ATOMIC, on QP and MR (rxe-facts §6.3, §7.2). */
        ATOMIC_WRITE(WrOpcode.ATOMIC_WRITE, WcOpcode.ATOMIC_WRITE, Access.REMOTE_WRITE, 8);

        final WrOpcode wr;
        final WcOpcode wc;
        final int right;
        final int len;

        RemoteOp(WrOpcode wr, WcOpcode wc, int right, int len) {
            this.wr = wr;
            this.wc = wc;
            this.right = right;
            this.len = len;
        }
    }

    /** What is wrong with the request. */
    enum Fault {
        /** An rkey that names no MR. */
        BAD_RKEY,
        /** A range that ends one byte past the MR (atomics: the aligned word just past it). */
        ONE_BYTE_PAST_END,
        /** A VA range that wraps past 2^64. */
        VA_WRAP,
        /** The MR lacks the right the operation needs. */
        MR_ACCESS_MISSING,
        /** The responder QP lacks the right (NAK 0x61, rxe-facts §6.3). */
        QP_ACCESS_MISSING,
        /** The rkey of a deregistered MR. */
        DEREGISTERED_MR
    }

    static Stream<Arguments> remoteFaults() {
        return Arrays.stream(RemoteOp.values()).flatMap(op -> Arrays.stream(Fault.values()).map(f -> Arguments.of(op, f)));
    }

    @ParameterizedTest(name = "{0} with {1}")
    @MethodSource("remoteFaults")
    @NotOnLossyNet(FATAL_NAK_LOST)
    void remoteErrorFailsTheWrLeavesMemoryAndFlushes(RemoteOp op, Fault fault) {
        Cfg cfg = new Cfg();
        if (fault == Fault.QP_ACCESS_MISSING) {
            cfg.qpAccessB(ALL & ~op.right);
        }
        Pair p = connect(cfg);
        Side a = p.a();
        Side b = p.b();
        MemoryRegion target = b.mr;
        long va = b.va(256);
        int rkey = b.mr.rkey();
        switch (fault) {
            case BAD_RKEY -> rkey = b.mr.rkey() ^ 0x5A; // same index, wrong key byte
            case ONE_BYTE_PAST_END -> va = op.len == 8 ? b.va(MR_BYTES) : b.va(MR_BYTES - op.len + 1);
            case VA_WRAP -> va = op.len == 8 ? -8L : -16L;
            case MR_ACCESS_MISSING -> {
                target = b.extraMr(4096, ALL & ~op.right, 7);
                va = target.addr() + 256;
                rkey = target.rkey();
            }
            case DEREGISTERED_MR -> {
                MemoryRegion gone = b.pd.allocMr(4096, ALL);
                va = gone.addr() + 256;
                rkey = gone.rkey();
                gone.close();
            }
            default -> { }
        }
        byte[] beforeA = snapshot(a.mr);
        byte[] beforeB = snapshot(b.mr);
        byte[] beforeTarget = snapshot(target);
        // a receive WQE at the responder: WRITE_WITH_IMM needs one, the others leave it to be flushed
        b.qp.postRecv(new RecvWr().set(900, b.sge(HALF, 4096)));
        b.qp.postRecv(new RecvWr().set(901, b.sge(HALF, 4096)));

        SendWr bad = op == RemoteOp.ATOMIC_WRITE // its operand is in the WR: no SGE
                ? new SendWr().set(100, op.wr, SendFlags.SIGNALED).remote(va, rkey)
                : new SendWr().set(100, op.wr, SendFlags.SIGNALED, a.sge(HALF, op.len)).remote(va, rkey)
                        .atomic(0, 0x77).masks(0x77, -1L);
        bad.atomicWriteValue = 0x7777_7777_7777_7777L;
        a.qp.postSend(bad);
        // two valid WRs behind it, one unsignaled: both must be flushed, neither executed
        a.qp.postSend(new SendWr().set(101, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, a.sge(0, 100))
                .remote(b.va(0), b.mr.rkey()));
        a.qp.postSend(new SendWr().set(102, WrOpcode.SEND, 0, a.sge(0, 100)));

        boolean qpFault = fault == Fault.QP_ACCESS_MISSING;
        WcStatus expected = qpFault ? WcStatus.REM_INV_REQ_ERR : WcStatus.REM_ACCESS_ERR;
        WorkCompletion wc = a.nextSend();
        assertThat(wc.wrId).isEqualTo(100);
        assertThat(wc.status).as("%s", wc).isEqualTo(expected);
        assertThat(wc.qpNum).isEqualTo(a.qp.qpNum());
        assertThat(wc.vendorErr).as("NAK syndrome").isEqualTo(qpFault ? 0x61 : 0x62);
        WorkCompletion f1 = a.nextSend();
        WorkCompletion f2 = a.nextSend();
        assertThat(List.of(f1.wrId, f2.wrId)).containsExactly(101L, 102L);
        assertThat(List.of(f1.status, f2.status)).containsOnly(WcStatus.WR_FLUSH_ERR);
        awaitState(a.qp, QpState.ERR);
        awaitState(b.qp, QpState.ERR);

        // the responder's receive WQEs: flushed, except that rxe completes the WQE a
        // WRITE_WITH_IMM had already taken (CHK_RESOURCE comes before CHK_RKEY) with the error
        WorkCompletion r1 = b.nextRecv();
        WorkCompletion r2 = b.nextRecv();
        assertThat(r1.wrId).isEqualTo(900);
        assertThat(r2.wrId).isEqualTo(901);
        WcStatus firstRecv = op == RemoteOp.WRITE_WITH_IMM && !qpFault ? WcStatus.REM_ACCESS_ERR : WcStatus.WR_FLUSH_ERR;
        assertThat(r1.status).as("%s", r1).isEqualTo(firstRecv);
        assertThat(r2.status).as("%s", r2).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertNoCompletion(b.rcq);
        assertNoCompletion(a.scq);

        assertThat(snapshot(a.mr)).as("requester memory").isEqualTo(beforeA);
        assertThat(snapshot(b.mr)).as("responder memory").isEqualTo(beforeB);
        assertThat(snapshot(target)).as("target MR").isEqualTo(beforeTarget);

        // later WRs on the failed QP complete with WR_FLUSH_ERR, signaled or not
        a.qp.postSend(new SendWr().set(103, WrOpcode.RDMA_WRITE, 0, a.sge(0, 8)).remote(b.va(0), b.mr.rkey()));
        WorkCompletion f3 = a.nextSend();
        assertThat(f3.wrId).isEqualTo(103);
        assertThat(f3.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(snapshot(b.mr)).isEqualTo(beforeB);
    }

    // ---------------------------------------------------------------------- receive too small (§5.6)

    @ParameterizedTest(name = "receive buffer too small, message of {0} bytes into {1}")
    @MethodSource("tooSmall")
    @NotOnLossyNet(FATAL_NAK_LOST)
    void receiveBufferTooSmallIsInvalidRequestOnBothSides(int msgLen, int bufLen) {
        Pair p = connect();
        byte[] beforeA = snapshot(p.a().mr);
        p.b().qp.postRecv(new RecvWr().set(300, p.b().sge(HALF, bufLen)));
        p.b().qp.postRecv(new RecvWr().set(301, p.b().sge(HALF + 8192, 8192)));
        p.a().qp.postSend(new SendWr().set(200, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, msgLen)));
        p.a().qp.postSend(new SendWr().set(201, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, 10)));

        WorkCompletion s = p.a().nextSend();
        assertThat(s.wrId).isEqualTo(200);
        assertThat(s.status).as("%s", s).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        WorkCompletion s2 = p.a().nextSend();
        assertThat(s2.wrId).isEqualTo(201);
        assertThat(s2.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        WorkCompletion r = p.b().nextRecv();
        assertThat(r.wrId).isEqualTo(300);
        // rxe reports the overflow as REM_INV_REQ_ERR, never LOC_LEN_ERR (rxe-facts §5.6, §10.6)
        assertThat(r.status).as("%s", r).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        assertThat(r.qpNum).isEqualTo(p.b().qp.qpNum());
        WorkCompletion r2 = p.b().nextRecv();
        assertThat(r2.wrId).isEqualTo(301);
        assertThat(r2.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        awaitState(p.a().qp, QpState.ERR);
        awaitState(p.b().qp, QpState.ERR);
        assertThat(snapshot(p.a().mr)).isEqualTo(beforeA);
    }

    static Stream<Arguments> tooSmall() {
        return Stream.of(Arguments.of(200, 100), Arguments.of(1, 0), Arguments.of(3000, 1500),
                Arguments.of(3000, 2999));
    }

    // ---------------------------------------------------------------------- RNR (§5.3, §5.6)

    @ParameterizedTest(name = "{0} of {1} bytes waits out RNR NAKs with rnr_retry 7")
    @MethodSource("rnrCases")
    void rnrWithInfiniteRetryCompletesOnceAReceiveIsPosted(WrOpcode op, int len) {
        Pair p = connect(new Cfg().rnrRetry(7).minRnrTimer(1));
        long rnrBefore = devA.counter("rcvd_rnr_err");
        p.a().qp.postSend(new SendWr().set(400, op, SendFlags.SIGNALED, p.a().sge(0, len))
                .remote(p.b().va(HALF), p.b().mr.rkey()).imm(0x0BADCAFE));
        // the responder has no receive WQE: wait until the requester has been told so
        await(() -> devA.counter("rcvd_rnr_err") - rnrBefore >= 2, "two RNR NAKs at the requester");
        assertNoCompletion(p.a().scq);
        assertThat(p.a().qp.state()).isEqualTo(QpState.RTS);
        assertThat(p.b().qp.state()).as("an RNR NAK leaves the responder up").isEqualTo(QpState.RTS);

        p.b().qp.postRecv(new RecvWr().set(401, p.b().sge(HALF + 16_384, 16_384)));
        assertWc(p.a().nextSend(), 400, WcStatus.SUCCESS, op == WrOpcode.SEND ? WcOpcode.SEND : WcOpcode.RDMA_WRITE,
                len, op.hasImmediate() ? WC_WITH_IMM : 0, p.a().qp);
        WorkCompletion r = p.b().nextRecv();
        assertThat(r.status).isEqualTo(WcStatus.SUCCESS);
        assertThat(r.wrId).isEqualTo(401);
        assertThat(r.byteLen).isEqualTo(len);
        long at = op == WrOpcode.SEND ? HALF + 16_384 : HALF;
        assertThat(bytes(p.b().mem(), at, len)).isEqualTo(bytes(p.a().mem(), 0, len));
        assertNoCompletion(p.b().rcq);
    }

    static Stream<Arguments> rnrCases() {
        return Stream.of(Arguments.of(WrOpcode.SEND, 64), Arguments.of(WrOpcode.SEND, 3000),
                Arguments.of(WrOpcode.RDMA_WRITE_WITH_IMM, 100), Arguments.of(WrOpcode.RDMA_WRITE_WITH_IMM, 3000));
    }

    @Test
    void rnrKeepsLaterWrsInOrder() {
        // WRs queued behind the RNR-NAKed SEND are sent too and answered by a PSN-sequence NAK;
        // once a receive is posted everything completes, in posting order, exactly once
        Pair p = connect(new Cfg().rnrRetry(7).minRnrTimer(1));
        long rnrBefore = devA.counter("rcvd_rnr_err");
        p.b().word(0, 100);
        p.a().qp.postSend(new SendWr().set(420, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, 2000)));
        p.a().qp.postSend(new SendWr().set(421, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(4096, 3000))
                .remote(p.b().va(8192), p.b().mr.rkey()));
        p.a().qp.postSend(new SendWr().set(422, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(0), p.b().mr.rkey()).atomic(5, 0));
        p.a().qp.postSend(new SendWr().set(423, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF + 4096, 3000))
                .remote(p.b().va(8192), p.b().mr.rkey()));
        await(() -> devA.counter("rcvd_rnr_err") - rnrBefore >= 3, "three RNR NAKs at the requester");
        assertNoCompletion(p.a().scq);
        assertThat(p.b().word(0)).as("nothing behind the SEND executed yet").isEqualTo(100);
        p.b().qp.postRecv(new RecvWr().set(424, p.b().sge(HALF, 4096)));
        for (int id = 420; id <= 423; id++) {
            WorkCompletion wc = p.a().nextSend();
            assertThat(wc.wrId).isEqualTo(id);
            assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.SUCCESS);
        }
        assertWc(p.b().nextRecv(), 424, WcStatus.SUCCESS, WcOpcode.RECV, 2000, WC_GRH, p.b().qp);
        assertThat(bytes(p.b().mem(), HALF, 2000)).isEqualTo(bytes(p.a().mem(), 0, 2000));
        assertThat(bytes(p.a().mem(), HALF + 4096, 3000)).isEqualTo(bytes(p.a().mem(), 4096, 3000));
        assertThat(p.a().word(HALF)).isEqualTo(100);
        assertThat(p.b().word(0)).as("the FETCH_ADD ran once").isEqualTo(105);
    }

    @ParameterizedTest(name = "rnr_retry {0}")
    @ValueSource(ints = {0, 1, 3})
    void rnrRetryExhaustedIsRnrRetryExcErr(int rnrRetry) {
        Pair p = connect(new Cfg().rnrRetry(rnrRetry).minRnrTimer(1));
        long rnrBefore = devA.counter("rcvd_rnr_err");
        p.a().qp.postSend(new SendWr().set(410, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, 64)));
        p.a().qp.postSend(new SendWr().set(411, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 64))
                .remote(p.b().va(0), p.b().mr.rkey()));
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.wrId).isEqualTo(410);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.RNR_RETRY_EXC_ERR);
        WorkCompletion f = p.a().nextSend();
        assertThat(f.wrId).isEqualTo(411);
        assertThat(f.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        awaitState(p.a().qp, QpState.ERR);
        // the first try plus rnr_retry retries, each answered by an RNR NAK
        assertThat(devA.counter("rcvd_rnr_err") - rnrBefore).isEqualTo(rnrRetry + 1);
        assertThat(p.b().qp.state()).isEqualTo(QpState.RTS);
    }

    // =====================================================================================
    // QP states and modify_qp (§6.1, §6.8)
    // =====================================================================================

    @Test
    void postSendBeforeRtsThrowsAndPostRecvNeedsInit() {
        Side a = new Side(devA, new Cfg(), 1);
        Side b = new Side(devB, new Cfg(), 2);
        SendWr wr = new SendWr().set(1, WrOpcode.SEND, SendFlags.SIGNALED, a.sge(0, 8));
        RecvWr rwr = new RecvWr().set(2, a.sge(HALF, 8));
        assertThat(a.qp.state()).isEqualTo(QpState.RESET);
        assertThatThrownBy(() -> a.qp.postSend(wr)).isInstanceOf(IllegalStateException.class).hasMessageContaining("RESET");
        assertThatThrownBy(() -> a.qp.postRecv(rwr)).isInstanceOf(IllegalStateException.class).hasMessageContaining("RESET");

        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        assertThatThrownBy(() -> a.qp.postSend(wr)).isInstanceOf(IllegalStateException.class).hasMessageContaining("INIT");
        a.qp.postRecv(rwr); // allowed from INIT on

        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024).destQpNum(b.qp.qpNum())
                .rqPsn(0).maxDestRdAtomic(4).minRnrTimer(1));
        assertThatThrownBy(() -> a.qp.postSend(wr)).isInstanceOf(IllegalStateException.class).hasMessageContaining("RTR");
        assertNoCompletion(a.scq);
        assertNoCompletion(a.rcq);
    }

    @Test
    void postSendInErrCompletesWithFlushErr() {
        Pair p = connect();
        p.a().qp.modify(new QpAttr().state(QpState.ERR));
        assertThat(p.a().qp.state()).isEqualTo(QpState.ERR);
        p.a().qp.postSend(new SendWr().set(500, WrOpcode.SEND, 0, p.a().sge(0, 8)));
        p.a().qp.postSend(new SendWr().set(501, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 8))
                .remote(p.b().va(0), p.b().mr.rkey()));
        WorkCompletion w1 = p.a().nextSend();
        WorkCompletion w2 = p.a().nextSend();
        assertThat(List.of(w1.wrId, w2.wrId)).containsExactly(500L, 501L);
        assertThat(List.of(w1.status, w2.status)).containsOnly(WcStatus.WR_FLUSH_ERR);
        assertThat(w1.qpNum).isEqualTo(p.a().qp.qpNum());
    }

    @Test
    void postRecvInErrFlushesAndModifyToErrFlushesOutstandingReceives() {
        Pair p = connect();
        p.b().qp.postRecv(new RecvWr().set(600, p.b().sge(HALF, 64)));
        p.b().qp.postRecv(new RecvWr().set(601, p.b().sge(HALF, 64)));
        p.b().qp.modify(new QpAttr().state(QpState.ERR));
        assertThat(p.b().nextRecv().wrId).isEqualTo(600);
        assertThat(p.b().nextRecv().wrId).isEqualTo(601);
        p.b().qp.postRecv(new RecvWr().set(602, p.b().sge(HALF, 64)));
        WorkCompletion r = p.b().nextRecv();
        assertThat(r.wrId).isEqualTo(602);
        assertThat(r.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        assertThat(r.qpNum).isEqualTo(p.b().qp.qpNum());
    }

    @Test
    void qpInErrDropsIncomingRequests() {
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        p.b().qp.modify(new QpAttr().state(QpState.ERR));
        // a's QP, reconnected with a ~1 ms ACK timeout and retry_cnt 1, gets neither execution
        // nor an ACK: its WRITE fails with RETRY_EXC_ERR after one retry
        p.a().qp.modify(new QpAttr().state(QpState.RESET));
        Cfg cfg = new Cfg().timeout(8);
        cfg.retryCnt = 1;
        bringUp(p.a(), p.b(), ALL, cfg, cfg.psnA, cfg.psnB);
        p.a().qp.postSend(new SendWr().set(700, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, 64))
                .remote(p.b().va(0), p.b().mr.rkey()));
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.status).isEqualTo(WcStatus.RETRY_EXC_ERR);
        assertThat(snapshot(p.b().mr)).isEqualTo(beforeB);
    }

    static Stream<Arguments> illegalTransitions() {
        return Stream.of(Arguments.of(QpState.RTS), Arguments.of(QpState.ERR), Arguments.of(QpState.RTR),
                Arguments.of(QpState.SQD));
    }

    @ParameterizedTest(name = "RESET -> {0} is illegal")
    @MethodSource("illegalTransitions")
    void illegalTransitionFromResetThrowsNamingIt(QpState to) {
        Side a = new Side(devA, new Cfg(), 1);
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(to)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("RESET").hasMessageContaining(to.name());
        assertThat(a.qp.state()).isEqualTo(QpState.RESET);
    }

    @Test
    void illegalTransitionFromInitToRtsThrows() {
        Side a = new Side(devA, new Cfg(), 1);
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7)
                .sqPsn(0).maxRdAtomic(1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("INIT").hasMessageContaining("RTS");
        assertThat(a.qp.state()).isEqualTo(QpState.INIT);
    }

    @Test
    void missingRequiredAttributeIsNamed() {
        Side a = new Side(devA, new Cfg(), 1);
        Side b = new Side(devB, new Cfg(), 2);
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ACCESS_FLAGS");
        assertThat(a.qp.state()).isEqualTo(QpState.RESET);
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));

        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024)
                .rqPsn(0).maxDestRdAtomic(4).minRnrTimer(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DEST_QPN");
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTR).pathMtu(Mtu.MTU_1024)
                .destQpNum(b.qp.qpNum()).rqPsn(0).maxDestRdAtomic(4).minRnrTimer(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("AV");
        assertThat(a.qp.state()).isEqualTo(QpState.INIT);
        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024).destQpNum(b.qp.qpNum())
                .rqPsn(0).maxDestRdAtomic(4).minRnrTimer(1));

        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7)
                .maxRdAtomic(1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQ_PSN");
        // an attribute the transition does not accept is named too
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7)
                .maxRdAtomic(1).sqPsn(0).pathMtu(Mtu.MTU_256)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PATH_MTU");
        assertThat(a.qp.state()).isEqualTo(QpState.RTR);
    }

    @Test
    void outOfRangeAttributesAreRejected() {
        Side a = new Side(devA, new Cfg(), 1);
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024).destQpNum(0x11)
                .rqPsn(0).maxDestRdAtomic(4).minRnrTimer(1));
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(32).retryCnt(7).rnrRetry(7)
                .sqPsn(0).maxRdAtomic(1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(8).rnrRetry(7)
                .sqPsn(0).maxRdAtomic(1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retry_cnt");
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7)
                .sqPsn(1 << 24).maxRdAtomic(1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sq_psn");
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7)
                .sqPsn(0).maxRdAtomic(129))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max_rd_atomic");
        assertThat(a.qp.state()).isEqualTo(QpState.RTR);
    }

    @Test
    void queryReturnsWhatWasSet() {
        Side a = new Side(devA, new Cfg(), 1);
        Side b = new Side(devB, new Cfg(), 2);
        int access = Access.LOCAL_WRITE | Access.REMOTE_READ;
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(access));
        QpAttr q = a.qp.query();
        assertThat(q.state()).isEqualTo(QpState.INIT);
        assertThat(q.accessFlags()).isEqualTo(access);

        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_2048).destQpNum(b.qp.qpNum())
                .rqPsn(0xABCDEF).maxDestRdAtomic(8).minRnrTimer(12));
        a.qp.modify(new QpAttr().state(QpState.RTS).timeout(17).retryCnt(5).rnrRetry(3).sqPsn(0x123456)
                .maxRdAtomic(4));
        q = a.qp.query();
        assertThat(q.state()).isEqualTo(QpState.RTS);
        assertThat(q.curState()).isEqualTo(QpState.RTS);
        assertThat(q.accessFlags()).isEqualTo(access);
        assertThat(q.pkeyIndex()).isZero();
        assertThat(q.port()).isEqualTo(1);
        assertThat(q.av()).isEqualTo(devB.address());
        assertThat(q.pathMtu()).isEqualTo(Mtu.MTU_2048);
        assertThat(q.destQpNum()).isEqualTo(b.qp.qpNum());
        assertThat(q.rqPsn()).isEqualTo(0xABCDEF);
        assertThat(q.sqPsn()).isEqualTo(0x123456);
        assertThat(q.maxDestRdAtomic()).isEqualTo(8);
        assertThat(q.maxRdAtomic()).isEqualTo(4);
        assertThat(q.minRnrTimer()).isEqualTo(12);
        assertThat(q.timeout()).isEqualTo(17);
        assertThat(q.retryCnt()).isEqualTo(5);
        assertThat(q.rnrRetry()).isEqualTo(3);

        // RTS -> RTS with optional attributes
        a.qp.modify(new QpAttr().state(QpState.RTS).minRnrTimer(3).accessFlags(ALL));
        q = a.qp.query();
        assertThat(q.minRnrTimer()).isEqualTo(3);
        assertThat(q.accessFlags()).isEqualTo(ALL);
    }

    @Test
    void rdAtomicDepthsAreRoundedUpToAPowerOfTwo() {
        // rxe_qp_from_attr rounds max_rd_atomic and max_dest_rd_atomic up (rxe-facts §6.1)
        Side a = new Side(devA, new Cfg(), 1);
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024).destQpNum(0x11)
                .rqPsn(0).maxDestRdAtomic(5).minRnrTimer(1));
        a.qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(0).maxRdAtomic(3));
        QpAttr q = a.qp.query();
        assertThat(q.maxDestRdAtomic()).isEqualTo(8);
        assertThat(q.maxRdAtomic()).isEqualTo(4);
    }

    @Test
    void resetThenReconnectWorks() {
        Pair p = connect();
        p.a().qp.modify(new QpAttr().state(QpState.RESET));
        p.b().qp.modify(new QpAttr().state(QpState.RESET));
        assertThat(p.a().qp.state()).isEqualTo(QpState.RESET);
        Cfg cfg = new Cfg().psnA(0x777).psnB(0x888);
        bringUp(p.a(), p.b(), ALL, cfg, cfg.psnA, cfg.psnB);
        bringUp(p.b(), p.a(), ALL, cfg, cfg.psnB, cfg.psnA);
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 3000))
                .remote(p.b().va(0), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 1, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 3000, 0, p.a().qp);
        assertThat(bytes(p.a().mem(), HALF, 3000)).isEqualTo(bytes(p.b().mem(), 0, 3000));
    }

    // =====================================================================================
    // Resource ownership (libibverbs EBUSY)
    // =====================================================================================

    @Test
    void closingParentsWithLiveChildrenThrows() {
        RdmaDevice dev = RdmaDevice.open(net.newTransport());
        ProtectionDomain pd = dev.allocPd();
        CompletionQueue cq = dev.createCq(16);
        MemoryRegion mr = pd.allocMr(4096, ALL);
        QueuePair qp = pd.createQp(QpInitAttr.rc(cq, cq));

        assertThatThrownBy(dev::close).as("device with a live PD and CQ").isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(pd::close).as("PD with a live MR and QP").isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(cq::close).as("CQ used by a QP").isInstanceOf(IllegalStateException.class);
        qp.close();
        assertThatThrownBy(() -> qp.postSend(new SendWr())).as("destroyed QP").isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(pd::close).as("PD with a live MR").isInstanceOf(IllegalStateException.class);
        mr.close();
        cq.close();
        assertThatThrownBy(dev::close).as("device with a live PD").isInstanceOf(IllegalStateException.class);
        pd.close();
        dev.close();
        assertThatThrownBy(dev::allocPd).as("closed device").isInstanceOf(IllegalStateException.class);
        // every close is idempotent
        qp.close();
        mr.close();
        pd.close();
        cq.close();
        dev.close();
    }

    @Test
    void pdWithOnlyALiveQpAndDeviceWithOnlyALiveCqCannotClose() {
        RdmaDevice dev = RdmaDevice.open(net.newTransport());
        ProtectionDomain pd = dev.allocPd();
        CompletionQueue scq = dev.createCq(16);
        CompletionQueue rcq = dev.createCq(16);
        QueuePair qp = pd.createQp(QpInitAttr.rc(scq, rcq));
        assertThatThrownBy(pd::close).as("PD with a live QP").isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(rcq::close).as("receive CQ of a QP").isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(scq::close).as("send CQ of a QP").isInstanceOf(IllegalStateException.class);
        qp.close();
        pd.close();
        scq.close();
        assertThatThrownBy(dev::close).as("device with a live CQ").isInstanceOf(IllegalStateException.class);
        rcq.close();
        dev.close();
    }

    // ---------------------------------------------------------------------- depth and windows

    @ParameterizedTest(name = "max_rd_atomic {0}")
    @ValueSource(ints = {1, 2, 16})
    void moreReadsAndAtomicsThanMaxRdAtomicAllCompleteInOrder(int depth) {
        Pair p = connect(new Cfg().maxRdAtomic(depth));
        p.b().word(HALF, 0);
        int n = 40;
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) {
                p.a().qp.postSend(new SendWr().set(i, WrOpcode.RDMA_READ, SendFlags.SIGNALED,
                        p.a().sge(HALF + 1000L * i, 1000)).remote(p.b().va(100L * i), p.b().mr.rkey()));
            } else {
                p.a().qp.postSend(new SendWr().set(i, WrOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                        p.a().sge(HALF + 1000L * i, 8)).remote(p.b().va(HALF), p.b().mr.rkey()).atomic(1, 0));
            }
        }
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = p.a().nextSend();
            assertThat(wc.wrId).isEqualTo(i);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
        }
        for (int i = 0; i < n; i += 2) {
            assertThat(bytes(p.a().mem(), HALF + 1000L * i, 1000)).isEqualTo(bytes(p.b().mem(), 100L * i, 1000));
            assertThat(p.a().word(HALF + 1000L * (i + 1))).isEqualTo(i / 2);
        }
        assertThat(p.b().word(HALF)).isEqualTo(n / 2);
    }

    @Test
    void messagesLongerThanThePsnWindow() {
        // 60000 bytes at MTU 256 = 235 packets, more than the 128 unacknowledged PSNs allowed
        Pair p = connect(new Cfg().mtu(Mtu.MTU_256));
        int len = 60_000;
        p.b().qp.postRecv(new RecvWr().set(1, p.b().sge(HALF, len)));
        p.a().qp.postSend(new SendWr().set(1, WrOpcode.SEND, SendFlags.SIGNALED, p.a().sge(0, len)));
        p.a().qp.postSend(new SendWr().set(2, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(1, len))
                .remote(p.b().va(0), p.b().mr.rkey()));
        p.a().qp.postSend(new SendWr().set(3, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, len))
                .remote(p.b().va(HALF), p.b().mr.rkey()));
        assertWc(p.a().nextSend(), 1, WcStatus.SUCCESS, WcOpcode.SEND, len, 0, p.a().qp);
        assertWc(p.a().nextSend(), 2, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, p.a().qp);
        assertWc(p.a().nextSend(), 3, WcStatus.SUCCESS, WcOpcode.RDMA_READ, len, 0, p.a().qp);
        assertWc(p.b().nextRecv(), 1, WcStatus.SUCCESS, WcOpcode.RECV, len, WC_GRH, p.b().qp);
        assertThat(bytes(p.b().mem(), 0, len)).isEqualTo(bytes(p.a().mem(), 1, len));
        assertThat(bytes(p.a().mem(), HALF, len)).isEqualTo(bytes(p.a().mem(), 0, len));
    }

    @Test
    void mrRegistrationRules() {
        ProtectionDomain pd = closeLater(devA.allocPd());
        // the core requires LOCAL_WRITE with REMOTE_WRITE or REMOTE_ATOMIC (rxe-facts §6.2)
        assertThatThrownBy(() -> pd.allocMr(4096, Access.REMOTE_WRITE)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LOCAL_WRITE");
        assertThatThrownBy(() -> pd.allocMr(4096, Access.REMOTE_ATOMIC)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LOCAL_WRITE");
        assertThatThrownBy(() -> pd.allocMr(0, ALL)).isInstanceOf(IllegalArgumentException.class);
        MemoryRegion ro = closeLater(pd.allocMr(4096, Access.REMOTE_READ));
        assertThat(ro.lkey()).isEqualTo(ro.rkey());
        assertThat(ro.rkey() >>> 8).as("MR index, never 0").isPositive();
        assertThat(ro.addr() % ProtectionDomain.PAGE).isZero();
        assertThat(ro.length()).isEqualTo(4096);
        assertThat(ro.access()).isEqualTo(Access.REMOTE_READ);
    }

    @Test
    void fullSendAndReceiveQueuesThrow() {
        Pair p = connect();
        // b drops everything, so none of a's WRs can complete and the SQ fills up
        p.b().qp.modify(new QpAttr().state(QpState.ERR));
        for (int i = 0; i < 256; i++) {
            p.a().qp.postSend(new SendWr().set(i, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 8))
                    .remote(p.b().va(0), p.b().mr.rkey()));
        }
        assertThatThrownBy(() -> p.a().qp.postSend(new SendWr().set(256, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 8))
                .remote(p.b().va(0), p.b().mr.rkey()))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("full");
        for (int i = 0; i < 256; i++) {
            p.a().qp.postRecv(new RecvWr().set(i, p.a().sge(HALF, 8)));
        }
        assertThatThrownBy(() -> p.a().qp.postRecv(new RecvWr().set(256, p.a().sge(HALF, 8))))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("full");
        // moving to ERR flushes all 256 + 256 WRs
        p.a().qp.modify(new QpAttr().state(QpState.ERR));
        for (int i = 0; i < 256; i++) {
            WorkCompletion s = p.a().nextSend();
            assertThat(s.wrId).isEqualTo(i);
            assertThat(s.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
            WorkCompletion r = p.a().nextRecv();
            assertThat(r.wrId).isEqualTo(i);
            assertThat(r.status).isEqualTo(WcStatus.WR_FLUSH_ERR);
        }
    }

    // =====================================================================================
    // Masked atomics, ATOMIC WRITE and RDMA FLUSH (extensions.md §2–4, rxe-facts §7, §8)
    // =====================================================================================

    @Test
    void maskedCompareAndSwapComparesAndSwapsOnlyMaskedBits() {
        Pair p = connect();
        p.b().word(64, 0x1111_2222_3333_4444L);
        byte[] beforeB = snapshot(p.b().mr);
        // compare only the low 16 bits (equal), swap only the high 16 bits
        p.a().qp.postSend(new SendWr().set(51, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED,
                p.a().sge(HALF, 8)).remote(p.b().va(64), p.b().mr.rkey())
                .atomic(0xFFFF_FFFF_FFFF_4444L, 0xAAAA_BBBB_CCCC_DDDDL).masks(0xFFFFL, 0xFFFF_0000_0000_0000L));
        assertWc(p.a().nextSend(), 51, WcStatus.SUCCESS, WcOpcode.MASKED_COMP_SWAP, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF)).as("original returned").isEqualTo(0x1111_2222_3333_4444L);
        assertThat(p.b().word(64)).isEqualTo(0xAAAA_2222_3333_4444L);
        // a masked compare that differs in one masked bit: no change, original returned
        p.a().qp.postSend(new SendWr().set(52, WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, SendFlags.SIGNALED,
                p.a().sge(HALF + 8, 8)).remote(p.b().va(64), p.b().mr.rkey())
                .atomic(0x0000_0000_0000_4445L, -1L).masks(0xFFFFL, -1L));
        assertWc(p.a().nextSend(), 52, WcStatus.SUCCESS, WcOpcode.MASKED_COMP_SWAP, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF + 8)).isEqualTo(0xAAAA_2222_3333_4444L);
        assertThat(p.b().word(64)).isEqualTo(0xAAAA_2222_3333_4444L);
        // only the 8 target bytes changed
        byte[] after = snapshot(p.b().mr);
        Arrays.fill(after, 64, 72, (byte) 0);
        Arrays.fill(beforeB, 64, 72, (byte) 0);
        assertThat(after).isEqualTo(beforeB);
        assertNoCompletion(p.a().scq);
    }

    @Test
    void maskedFetchAndAddAddsFieldByFieldAndReturnsOriginal() {
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        p.b().word(128, 0x01FF_7F80_00FF_FF01L);
        // byte fields: each byte wraps on its own
        p.a().qp.postSend(new SendWr().set(53, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                p.a().sge(HALF, 8)).remote(p.b().va(128), p.b().mr.rkey())
                .atomic(0x0101_0101_0101_0101L, 0).masks(0x8080_8080_8080_8080L, 0));
        assertWc(p.a().nextSend(), 53, WcStatus.SUCCESS, WcOpcode.MASKED_FETCH_ADD, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF)).as("original returned").isEqualTo(0x01FF_7F80_00FF_FF01L);
        assertThat(p.b().word(128)).isEqualTo(0x0200_8081_0100_0002L);
        // boundary 0: an ordinary 64-bit add with carries all the way up
        p.a().qp.postSend(new SendWr().set(54, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                p.a().sge(HALF + 8, 8)).remote(p.b().va(128), p.b().mr.rkey()).atomic(0x00FF_7F7F_FF00_FFFEL, 0)
                .masks(0, 0));
        assertWc(p.a().nextSend(), 54, WcStatus.SUCCESS, WcOpcode.MASKED_FETCH_ADD, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF + 8)).isEqualTo(0x0200_8081_0100_0002L);
        assertThat(p.b().word(128)).isEqualTo(0x0200_8081_0100_0002L + 0x00FF_7F7F_FF00_FFFEL);
        // boundary all ones: XOR
        long before = p.b().word(128);
        p.a().qp.postSend(new SendWr().set(55, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                p.a().sge(HALF + 16, 8)).remote(p.b().va(128), p.b().mr.rkey()).atomic(-1L, 0).masks(-1L, 0));
        assertWc(p.a().nextSend(), 55, WcStatus.SUCCESS, WcOpcode.MASKED_FETCH_ADD, 8, 0, p.a().qp);
        assertThat(p.a().word(HALF + 16)).isEqualTo(before);
        assertThat(p.b().word(128)).isEqualTo(~before);
        byte[] after = snapshot(p.b().mr);
        Arrays.fill(after, 128, 136, (byte) 0);
        Arrays.fill(beforeB, 128, 136, (byte) 0);
        assertThat(after).isEqualTo(beforeB);
    }

    @Test
    void maskedFetchAndAddsFromSeveralQpsOnDisjointFieldsOfOneWordAreEachExact() {
        // four QPs on device A, each connected to its own QP on device B; the four B QPs share one
        // PD and one MR, and every A QP adds 1 to its own 16-bit field of the same remote word
        int qps = 4;
        int n = 600;
        long start = 0xFFF0_FFF0_FFF0_FFF0L; // every field wraps during the test
        long boundary = 0x8000_8000_8000_8000L;
        Cfg cfg = new Cfg();
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion shared = closeLater(pdB.allocMr(4096, ALL));
        shared.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 256, start);
        List<Side> as = new ArrayList<>();
        for (int k = 0; k < qps; k++) {
            Side a = new Side(devA, cfg, 0xA00 + k);
            Side b = new Side(devB, cfg, pdB, shared);
            bringUp(a, b, cfg.qpAccessA, cfg, cfg.psnA + k, cfg.psnB + k);
            bringUp(b, a, cfg.qpAccessB, cfg, cfg.psnB + k, cfg.psnA + k);
            as.add(a);
        }
        long va = shared.addr() + 256;
        int batch = 100;
        for (int from = 0; from < n; from += batch) {
            for (int i = from; i < from + batch; i++) { // interleave the QPs
                for (int k = 0; k < qps; k++) {
                    Side a = as.get(k);
                    a.qp.postSend(new SendWr().set(i, WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED,
                            a.sge(HALF + 8L * i, 8)).remote(va, shared.rkey()).atomic(1L << (16 * k), 0)
                            .masks(boundary, 0));
                }
            }
            for (int i = from; i < from + batch; i++) {
                for (int k = 0; k < qps; k++) {
                    WorkCompletion wc = as.get(k).nextSend();
                    assertWc(wc, i, WcStatus.SUCCESS, WcOpcode.MASKED_FETCH_ADD, 8, 0, as.get(k).qp);
                }
            }
        }
        long end = shared.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 256);
        for (int k = 0; k < qps; k++) {
            int shift = 16 * k;
            assertThat((end >>> shift) & 0xFFFF).as("field %d", k).isEqualTo((0xFFF0L + n) & 0xFFFF);
            // QP k alone changes field k, in posting order: its i-th original holds 0xFFF0 + i there
            for (int i = 0; i < n; i++) {
                long orig = as.get(k).word(HALF + 8L * i);
                assertThat((orig >>> shift) & 0xFFFF).as("field %d of original %d", k, i)
                        .isEqualTo((0xFFF0L + i) & 0xFFFF);
            }
        }
    }

    @Test
    void atomicWriteStoresTheValueAsANativeLong() {
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        long v = 0x0102_0304_0506_0708L;
        SendWr wr = new SendWr().set(61, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(p.b().va(200), p.b().mr.rkey());
        wr.atomicWriteValue = v;
        p.a().qp.postSend(wr);
        assertWc(p.a().nextSend(), 61, WcStatus.SUCCESS, WcOpcode.ATOMIC_WRITE, 8, 0, p.a().qp);
        assertThat(p.b().word(200)).isEqualTo(v);
        byte[] after = snapshot(p.b().mr);
        Arrays.fill(after, 200, 208, (byte) 0);
        Arrays.fill(beforeB, 200, 208, (byte) 0);
        assertThat(after).isEqualTo(beforeB);
        assertNoCompletion(p.b().rcq); // like a WRITE, no receive is consumed
        assertNoCompletion(p.a().scq);
        // a second one at the very end of the MR, after a WRITE of the same QP
        p.a().qp.postSend(new SendWr().set(62, WrOpcode.RDMA_WRITE, 0, p.a().sge(0, 64)).remote(p.b().va(1000),
                p.b().mr.rkey()));
        wr = new SendWr().set(63, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED).remote(p.b().va(MR_BYTES - 8),
                p.b().mr.rkey());
        wr.atomicWriteValue = -2L;
        p.a().qp.postSend(wr);
        assertWc(p.a().nextSend(), 63, WcStatus.SUCCESS, WcOpcode.ATOMIC_WRITE, 8, 0, p.a().qp);
        assertThat(p.b().word(MR_BYTES - 8)).isEqualTo(-2L);
        assertThat(bytes(p.b().mem(), 1000, 64)).isEqualTo(bytes(p.a().mem(), 0, 64));
    }

    @ParameterizedTest(name = "ATOMIC_WRITE at remote offset +{0} fails with REM_INV_REQ_ERR")
    @ValueSource(ints = {1, 4, 7})
    @NotOnLossyNet(FATAL_NAK_LOST)
    void misalignedAtomicWriteReachesTheWireAndIsAnInvalidRequest(int misalign) {
        // unlike CAS/FAA, rxe4j leaves ATOMIC WRITE alignment to the responder (NAK 0x61, rxe-facts §7.2)
        Pair p = connect();
        byte[] beforeB = snapshot(p.b().mr);
        recB.start();
        SendWr wr = new SendWr().set(64, WrOpcode.ATOMIC_WRITE, SendFlags.SIGNALED)
                .remote(p.b().va(64 + misalign), p.b().mr.rkey());
        wr.atomicWriteValue = -1L;
        p.a().qp.postSend(wr);
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.wrId).isEqualTo(64);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        assertThat(wc.vendorErr).as("NAK syndrome").isEqualTo(0x61);
        List<RecordingTransport.Sent> sent = recB.stop().stream()
                .filter(s -> (((s.bytes()[5] & 0xFF) << 16) | ((s.bytes()[6] & 0xFF) << 8) | (s.bytes()[7] & 0xFF))
                        == p.a().qp.qpNum()).toList();
        assertThat(sent).as("the responder answered on the wire").isNotEmpty();
        assertThat(sent.get(0).bytes()[0] & 0xFF).as("ACK opcode").isEqualTo(0x11);
        assertThat(sent.get(0).bytes()[12] & 0xFF).as("AETH syndrome").isEqualTo(0x61);
        awaitState(p.a().qp, QpState.ERR);
        assertThat(snapshot(p.b().mr)).isEqualTo(beforeB);
    }

    // ---------------------------------------------------------------------- FLUSH (test_qpex.py)

    static final int FLUSH_BOTH = Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

    static Stream<Arguments> flushKinds() {
        List<Arguments> l = new ArrayList<>();
        for (int type : new int[] {Flush.GLOBAL, Flush.PERSISTENT, Flush.GLOBAL | Flush.PERSISTENT}) {
            for (int level : new int[] {Flush.RANGE, Flush.MR}) {
                for (int len : new int[] {0, 4096}) {
                    l.add(Arguments.of(type, level, len));
                }
            }
        }
        return l.stream();
    }

    /** test_qp_ex_rc_flush: WRITE into a file-backed MR, then FLUSH it; the WC and the file agree. */
    @ParameterizedTest(name = "FLUSH type {0} level {1} of {2} bytes")
    @MethodSource("flushKinds")
    void flushSucceeds(int type, int level, int len, @TempDir Path dir) throws Exception {
        Pair p = connect(new Cfg().qpAccessB(ALL | FLUSH_BOTH));
        int size = 16 * 1024;
        Path file = dir.resolve("pmem-" + type + "-" + level + "-" + len);
        MemoryRegion pm = closeLater(p.b().pd.registerFileMr(file, size, ALL | FLUSH_BOTH));
        p.a().qp.postSend(new SendWr().set(70, WrOpcode.RDMA_WRITE, SendFlags.SIGNALED, p.a().sge(0, 4096))
                .remote(pm.addr() + 4096, pm.rkey()));
        assertWc(p.a().nextSend(), 70, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 4096, 0, p.a().qp);
        p.a().qp.postSend(new SendWr().set(71, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(pm.addr() + 4096,
                pm.rkey()).flush(type, level, len));
        assertWc(p.a().nextSend(), 71, WcStatus.SUCCESS, WcOpcode.FLUSH, len, 0, p.a().qp);
        assertThat(p.a().qp.state()).isEqualTo(QpState.RTS);
        assertThat(p.b().qp.state()).isEqualTo(QpState.RTS);
        byte[] onFile = Files.readAllBytes(file);
        assertThat(onFile).hasSize(size);
        assertThat(Arrays.copyOfRange(onFile, 4096, 8192)).isEqualTo(bytes(p.a().mem(), 0, 4096));
        // the QP keeps working
        p.a().qp.postSend(new SendWr().set(72, WrOpcode.RDMA_READ, SendFlags.SIGNALED, p.a().sge(HALF, 64))
                .remote(pm.addr() + 4096, pm.rkey()));
        assertWc(p.a().nextSend(), 72, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 64, 0, p.a().qp);
    }

    @Test
    void flushGlobalOnOrdinaryMemory() {
        Pair p = connect(new Cfg().qpAccessB(ALL | Access.FLUSH_GLOBAL).mrAccess(ALL | Access.FLUSH_GLOBAL));
        for (int level : new int[] {Flush.RANGE, Flush.MR}) {
            p.a().qp.postSend(new SendWr().set(73 + level, WrOpcode.FLUSH, SendFlags.SIGNALED)
                    .remote(p.b().va(MR_BYTES - 64), p.b().mr.rkey()).flush(Flush.GLOBAL, level, 64));
            assertWc(p.a().nextSend(), 73 + level, WcStatus.SUCCESS, WcOpcode.FLUSH, 64, 0, p.a().qp);
        }
    }

    /** test_qp_ex_rc_flush_type_violate: QP allows both types, the MR only GLOBAL; PERSISTENT → REM_ACCESS_ERR. */
    @Test
    @NotOnLossyNet(FATAL_NAK_LOST)
    void flushTypeViolationIsRemoteAccessError(@TempDir Path dir) {
        Pair p = connect(new Cfg().qpAccessB(ALL | FLUSH_BOTH));
        MemoryRegion pm = closeLater(p.b().pd.registerFileMr(dir.resolve("global-only"), 8192,
                ALL | Access.FLUSH_GLOBAL));
        p.a().qp.postSend(new SendWr().set(75, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(pm.addr(), pm.rkey())
                .flush(Flush.PERSISTENT, Flush.RANGE, 64));
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.wrId).isEqualTo(75);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_ACCESS_ERR);
        assertThat(wc.vendorErr).isEqualTo(0x62);
        awaitState(p.a().qp, QpState.ERR);
        awaitState(p.b().qp, QpState.ERR);
    }

    @Test
    @NotOnLossyNet(FATAL_NAK_LOST)
    void flushWithoutQpFlushGlobalIsInvalidRequest() {
        Pair p = connect(new Cfg().mrAccess(ALL | Access.FLUSH_GLOBAL)); // QP: ALL, no FLUSH_GLOBAL
        p.a().qp.postSend(new SendWr().set(76, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(p.b().va(0),
                p.b().mr.rkey()).flush(Flush.GLOBAL, Flush.RANGE, 64));
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        assertThat(wc.vendorErr).isEqualTo(0x61);
        awaitState(p.a().qp, QpState.ERR);
    }

    @ParameterizedTest(name = "FLUSH range [{0}, +{1}) outside the MR")
    @MethodSource("flushOutOfRange")
    @NotOnLossyNet(FATAL_NAK_LOST)
    void flushRangeOutsideTheMrIsRemoteAccessError(long off, long len) {
        Pair p = connect(new Cfg().qpAccessB(ALL | Access.FLUSH_GLOBAL).mrAccess(ALL | Access.FLUSH_GLOBAL));
        p.a().qp.postSend(new SendWr().set(77, WrOpcode.FLUSH, SendFlags.SIGNALED).remote(p.b().va(off),
                p.b().mr.rkey()).flush(Flush.GLOBAL, Flush.RANGE, len));
        WorkCompletion wc = p.a().nextSend();
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_ACCESS_ERR);
        assertThat(wc.vendorErr).isEqualTo(0x62);
        awaitState(p.a().qp, QpState.ERR);
    }

    static Stream<Arguments> flushOutOfRange() {
        return Stream.of(Arguments.of((long) MR_BYTES - 8, 64L), Arguments.of((long) MR_BYTES, 1L),
                Arguments.of(-4096L, 64L), Arguments.of(0L, (long) MR_BYTES + 1));
    }

    @Test
    void flushPersistentCannotBeRegisteredOnOrdinaryMemory() {
        ProtectionDomain pd = closeLater(devA.allocPd());
        assertThatThrownBy(() -> pd.allocMr(4096, ALL | Access.FLUSH_PERSISTENT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("FLUSH_PERSISTENT");
        // FLUSH_GLOBAL alone is fine on ordinary memory
        MemoryRegion g = closeLater(pd.allocMr(4096, ALL | Access.FLUSH_GLOBAL));
        assertThat(g.access()).isEqualTo(ALL | Access.FLUSH_GLOBAL);
    }

    @Test
    void deviceReportsMaskedAtomicsAtomicWriteAndFlush() {
        for (RdmaDevice d : new RdmaDevice[] {devA, devB}) {
            DeviceAttr attr = d.queryDevice();
            assertThat(attr.atomicCap()).isEqualTo(DeviceCap.ATOMIC_HCA);
            assertThat(attr.maskedAtomicCap()).isEqualTo(DeviceCap.ATOMIC_HCA).isEqualTo(1);
            assertThat(attr.deviceCapFlagsEx() & DeviceCap.FLUSH_GLOBAL).isEqualTo(1L << 38);
            assertThat(attr.deviceCapFlagsEx() & DeviceCap.FLUSH_PERSISTENT).isEqualTo(1L << 39);
            assertThat(attr.deviceCapFlagsEx() & DeviceCap.ATOMIC_WRITE).isEqualTo(1L << 40);
        }
    }

    // ---------------------------------------------------------------------- utilities

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    // =====================================================================================
    // UD queue pairs (verbs-surface-facts.md §2; pyverbs test_qp.py's UD parts)
    // =====================================================================================

    static final int UD_QKEY = 0x11111111; // pyverbs' tests/base.py UD_QKEY
    static final String UD_LOSS = "a UD datagram lost on the wire is lost for good (no retry), by design";

    /** One UD end: a PD, CQs, a UD QP in RTS with {@code qkey}, an MR filled with seeded bytes. */
    final class UdSide {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue scq;
        final CompletionQueue rcq;
        final QueuePair qp;
        final MemoryRegion mr;

        UdSide(RdmaDevice dev, int qkey, long seed) {
            this.dev = dev;
            this.pd = closeLater(dev.allocPd());
            this.scq = closeLater(dev.createCq(1024));
            this.rcq = closeLater(dev.createCq(1024));
            this.qp = closeLater(pd.createQp(QpInitAttr.ud(scq, rcq)));
            this.mr = closeLater(pd.allocMr(MR_BYTES, Access.LOCAL_WRITE));
            fill(mr.segment(), 0, MR_BYTES, seed);
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(qkey));
            qp.modify(new QpAttr().state(QpState.RTR));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0x123));
        }

        Sge sge(long off, int len) {
            return new Sge(mr.addr() + off, len, mr.lkey());
        }

        AddressHandle ahTo(UdSide peer) {
            return closeLater(pd.createAh(AhAttr.of(peer.dev.address())));
        }

        WorkCompletion nextSend() {
            return next(scq);
        }

        WorkCompletion nextRecv() {
            return next(rcq);
        }
    }

    /** @return the largest UD message: the port's active MTU in bytes */
    int udMtu() {
        return devA.queryPort(1).activeMtu().bytes();
    }

    @ParameterizedTest(name = "UD SEND of {0} bytes, immediate {1}")
    @MethodSource("udSizes")
    @NotOnLossyNet(UD_LOSS)
    void udSendPlacesTheGrhThenThePayload(int len, boolean imm) {
        UdSide a = new UdSide(devA, UD_QKEY, 0xA11CE);
        UdSide b = new UdSide(devB, UD_QKEY, 0xB0B);
        int size = Math.min(len, udMtu());
        byte[] before = bytes(b.mr.segment(), HALF, 8192);
        b.qp.postRecv(new RecvWr().set(7, b.sge(HALF, 40 + size + 100)));
        SendWr wr = imm ? new SendWr().sendWithImm(5, 0xCAFEF00D, a.sge(0, size)) : new SendWr().send(5, a.sge(0, size));
        a.qp.postSend(wr.ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY).signaled());

        assertWc(a.nextSend(), 5, WcStatus.SUCCESS, WcOpcode.SEND, size, imm ? WC_WITH_IMM : 0, a.qp);
        WorkCompletion r = b.nextRecv();
        assertWc(r, 7, WcStatus.SUCCESS, WcOpcode.RECV, 40 + size, WC_GRH | (imm ? WC_WITH_IMM : 0), b.qp);
        assertThat(r.srcQp).as("src_qp: the DETH source QP").isEqualTo(a.qp.qpNum());
        if (imm) {
            assertThat(r.immData).isEqualTo(0xCAFEF00D);
        }
        assertThat(bytes(b.mr.segment(), HALF + 40, size)).as("the payload after the 40-byte GRH")
                .isEqualTo(bytes(a.mr.segment(), 0, size));
        assertGrh(bytes(b.mr.segment(), HALF, 40), a.dev.address().getAddress(), b.dev.address().getAddress(), size,
                imm);
        assertThat(bytes(b.mr.segment(), HALF + 40 + size, 8192 - 40 - size)).as("nothing past the message is touched")
                .isEqualTo(Arrays.copyOfRange(before, 40 + size, 8192));
        assertNoCompletion(a.scq);
        assertNoCompletion(b.rcq);
    }

    static Stream<Arguments> udSizes() {
        return Stream.of(Arguments.of(0, false), Arguments.of(1, false), Arguments.of(13, true),
                Arguments.of(1000, false), Arguments.of(1 << 20, true)); // 1 MiB: clamped to the MTU
    }

    /** The GRH as verbs-surface-facts.md §2.6 gives it: 20 zero bytes + the IPv4 header, or the IPv6 header. */
    static void assertGrh(byte[] g, java.net.InetAddress src, java.net.InetAddress dst, int payload, boolean imm) {
        int udp = 12 + 8 + (imm ? 4 : 0) + payload + (-payload & 3) + 4; // BTH DETH [ImmDt] payload pad ICRC
        java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(g);
        if (src instanceof java.net.Inet4Address) {
            assertThat(Arrays.copyOfRange(g, 0, 20)).as("IPv4: 20 zero bytes first").containsOnly(0);
            assertThat(g[20]).as("version 4, IHL 5").isEqualTo((byte) 0x45);
            assertThat(bb.getShort(22) & 0xFFFF).as("IPv4 total length").isEqualTo(20 + 8 + udp);
            assertThat(g[29]).as("protocol UDP").isEqualTo((byte) 17);
            assertThat(Arrays.copyOfRange(g, 32, 36)).as("source").isEqualTo(src.getAddress());
            assertThat(Arrays.copyOfRange(g, 36, 40)).as("destination").isEqualTo(dst.getAddress());
            int sum = 0;
            for (int i = 20; i < 40; i += 2) {
                sum += bb.getShort(i) & 0xFFFF;
            }
            sum = (sum & 0xFFFF) + (sum >>> 16);
            assertThat(sum & 0xFFFF).as("the IPv4 header checksum holds").isEqualTo(0xFFFF);
        } else {
            assertThat(g[0] >>> 4 & 0xF).as("version 6").isEqualTo(6);
            assertThat(bb.getShort(4) & 0xFFFF).as("IPv6 payload length").isEqualTo(8 + udp);
            assertThat(g[6]).as("next header UDP").isEqualTo((byte) 17);
            assertThat(Arrays.copyOfRange(g, 8, 24)).as("source").isEqualTo(src.getAddress());
            assertThat(Arrays.copyOfRange(g, 24, 40)).as("destination").isEqualTo(dst.getAddress());
        }
    }

    @Test
    @NotOnLossyNet(UD_LOSS)
    void udDatagramsFromTwoQpsNameTheirSenders() {
        UdSide a1 = new UdSide(devA, UD_QKEY, 1);
        UdSide a2 = new UdSide(devA, UD_QKEY, 2);
        UdSide b = new UdSide(devB, UD_QKEY, 3);
        for (int i = 0; i < 4; i++) {
            b.qp.postRecv(new RecvWr().set(100 + i, b.sge(HALF + 2048L * i, 2048)));
        }
        a1.qp.postSend(new SendWr().send(1, a1.sge(0, 100)).ud(a1.ahTo(b), b.qp.qpNum(), UD_QKEY));
        a2.qp.postSend(new SendWr().send(2, a2.sge(0, 200)).ud(a2.ahTo(b), b.qp.qpNum(), UD_QKEY));
        java.util.Map<Integer, Integer> bySender = new java.util.HashMap<>();
        for (int i = 0; i < 2; i++) {
            WorkCompletion r = b.nextRecv();
            assertThat(r.status).isEqualTo(WcStatus.SUCCESS);
            bySender.put(r.srcQp, r.byteLen);
        }
        assertThat(bySender).containsExactlyInAnyOrderEntriesOf(
                java.util.Map.of(a1.qp.qpNum(), 140, a2.qp.qpNum(), 240));
        assertNoCompletion(a1.scq); // unsignaled sends: no CQE
    }

    @Test
    @NotOnLossyNet(UD_LOSS)
    void udWithTheWrongQkeyIsDroppedAndCounted() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        UdSide b = new UdSide(devB, 0x22222222, 2);
        long before = counter(devB, "drop_bad_qkey");
        b.qp.postRecv(new RecvWr().set(9, b.sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(1, a.sge(0, 64)).ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY).signaled());
        assertWc(a.nextSend(), 1, WcStatus.SUCCESS, WcOpcode.SEND, 64, 0, a.qp); // the sender cannot know
        await(() -> counter(devB, "drop_bad_qkey") == before + 1, "drop_bad_qkey on B");
        assertNoCompletion(b.rcq);
        // the right Q_Key goes through, into the WQE that stayed posted
        a.qp.postSend(new SendWr().send(2, a.sge(0, 64)).ud(a.ahTo(b), b.qp.qpNum(), 0x22222222));
        assertWc(b.nextRecv(), 9, WcStatus.SUCCESS, WcOpcode.RECV, 104, WC_GRH, b.qp);
    }

    /** IBTA's privileged-Q_Key rule (verbs-surface-facts.md §2.4 rule 1): bit 31 set sends the QP's own Q_Key. */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void udQkeyWithBit31SetSendsTheQpsOwnQkey() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        UdSide b = new UdSide(devB, UD_QKEY, 2);
        b.qp.postRecv(new RecvWr().set(9, b.sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(1, a.sge(0, 8)).ud(a.ahTo(b), b.qp.qpNum(), 0x80000000));
        assertWc(b.nextRecv(), 9, WcStatus.SUCCESS, WcOpcode.RECV, 48, WC_GRH, b.qp);
    }

    @Test
    @NotOnLossyNet(UD_LOSS)
    void udWithoutAReceiveWqeIsDroppedWithoutACompletion() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        UdSide b = new UdSide(devB, UD_QKEY, 2);
        long before = counter(devB, "drop_no_recv_wqe");
        a.qp.postSend(new SendWr().send(1, a.sge(0, 10)).ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY));
        await(() -> counter(devB, "drop_no_recv_wqe") == before + 1, "drop_no_recv_wqe on B");
        assertNoCompletion(b.rcq);
        assertThat(b.qp.state()).as("class D: the QP stays up").isEqualTo(QpState.RTS);
        b.qp.postRecv(new RecvWr().set(9, b.sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(2, a.sge(0, 10)).ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY));
        assertWc(b.nextRecv(), 9, WcStatus.SUCCESS, WcOpcode.RECV, 50, WC_GRH, b.qp);
    }

    /** verbs-surface-facts.md §2.6 rule 2: payload + 40 beyond the WQE is a class D drop; the WQE stays. */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void udThatDoesNotFitWithItsGrhIsDroppedAndTheWqeStays() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        UdSide b = new UdSide(devB, UD_QKEY, 2);
        long before = counter(devB, "drop_recv_length");
        b.qp.postRecv(new RecvWr().set(9, b.sge(HALF, 40 + 16)));
        a.qp.postSend(new SendWr().send(1, a.sge(0, 17)).ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY));
        await(() -> counter(devB, "drop_recv_length") == before + 1, "drop_recv_length on B");
        assertNoCompletion(b.rcq);
        a.qp.postSend(new SendWr().send(2, a.sge(0, 16)).ud(a.ahTo(b), b.qp.qpNum(), UD_QKEY));
        assertWc(b.nextRecv(), 9, WcStatus.SUCCESS, WcOpcode.RECV, 56, WC_GRH, b.qp);
        assertThat(bytes(b.mr.segment(), HALF + 40, 16)).isEqualTo(bytes(a.mr.segment(), 0, 16));
    }

    @Test
    void udPostChecksNameTheBadValue() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        UdSide b = new UdSide(devB, UD_QKEY, 2);
        AddressHandle ah = a.ahTo(b);
        int mtu = udMtu();
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().send(1, a.sge(0, mtu + 1)).ud(ah, b.qp.qpNum(), UD_QKEY)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining((mtu + 1) + " bytes")
                .hasMessageContaining("active MTU of " + mtu);
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().rdmaWrite(2, 0x1000, 1, a.sge(0, 8)).ud(ah, b.qp.qpNum(),
                UD_QKEY))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("RDMA_WRITE")
                .hasMessageContaining("UD");
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().send(3, a.sge(0, 8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("address handle");
        AddressHandle other = closeLater(closeLater(devA.allocPd()).createAh(AhAttr.of(b.dev.address())));
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().send(4, a.sge(0, 8)).ud(other, b.qp.qpNum(), UD_QKEY)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("belongs to");
        AddressHandle gone = a.pd.createAh(AhAttr.of(b.dev.address()));
        gone.close();
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().send(5, a.sge(0, 8)).ud(gone, b.qp.qpNum(), UD_QKEY)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("destroyed");
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().send(6, a.sge(0, 8)).ud(ah, 1 << 24, UD_QKEY)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("remote_qpn");
        assertThat(a.qp.state()).isEqualTo(QpState.RTS);
        assertNoCompletion(a.scq);
    }

    /** pyverbs test_qp.py test_modify_ud_qp: Q_Key and SQ PSN read back; the UD table's required attributes. */
    @Test
    void udModifyFollowsTheUdTransitionTable() {
        CompletionQueue cq = closeLater(devA.createCq(16));
        ProtectionDomain pd = closeLater(devA.allocPd());
        QueuePair qp = closeLater(pd.createQp(QpInitAttr.ud(cq, cq)));
        assertThat(qp.type()).isEqualTo(QpType.UD);
        assertThatThrownBy(() -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("QKEY");
        assertThatThrownBy(() -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(1)
                .accessFlags(Access.REMOTE_WRITE))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ACCESS_FLAGS");
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(0x1234));
        assertThatThrownBy(() -> qp.modify(new QpAttr().state(QpState.RTR).av(devB.address())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("AV");
        qp.modify(new QpAttr().state(QpState.RTR));
        assertThatThrownBy(() -> qp.modify(new QpAttr().state(QpState.RTS)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQ_PSN");
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0x10).qkey(0x5678));
        QpAttr q = qp.query();
        assertThat(q.state()).isEqualTo(QpState.RTS);
        assertThat(q.qkey()).isEqualTo(0x5678);
        assertThat(q.sqPsn()).isEqualTo(0x10);
        qp.modify(new QpAttr().state(QpState.RESET));
        assertThat(qp.state()).isEqualTo(QpState.RESET);
    }

    /** A datagram for an RC QP and an RC request for a UD QP: wrong transport, dropped, counted. */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void udAndRcDoNotMix() {
        Pair rc = connect();
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        long before = counter(devB, "drop_wrong_transport");
        rc.b().qp.postRecv(new RecvWr().set(1, rc.b().sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(1, a.sge(0, 8)).ud(closeLater(a.pd.createAh(AhAttr.of(devB.address()))),
                rc.b().qp.qpNum(), UD_QKEY));
        await(() -> counter(devB, "drop_wrong_transport") == before + 1, "drop_wrong_transport on B");
        assertNoCompletion(rc.b().rcq);
        assertThat(rc.b().qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void ahAttributesAreCheckedAndThePdCountsItsAhs() {
        assertThatThrownBy(() -> new AhAttr(devB.address(), 256, 0, 0)).hasMessageContaining("hop_limit");
        assertThatThrownBy(() -> new AhAttr(devB.address(), 1, 256, 0)).hasMessageContaining("traffic_class");
        assertThatThrownBy(() -> new AhAttr(devB.address(), 1, 0, 1 << 20)).hasMessageContaining("flow_label");
        assertThatThrownBy(() -> new AhAttr(java.net.InetSocketAddress.createUnresolved("nowhere", 4791), 1, 0, 0))
                .hasMessageContaining("resolved");
        ProtectionDomain pd = devA.allocPd();
        AddressHandle ah = pd.createAh(new AhAttr(devB.address(), 3, 0x20, 0xABCDE));
        assertThat(ah.attr().hopLimit()).isEqualTo(3);
        assertThat(ah.attr().flowLabel()).isEqualTo(0xABCDE);
        assertThatThrownBy(pd::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("1 AH(s)");
        ah.close();
        ah.close(); // idempotent
        pd.close();
        assertThat(devA.queryDevice().maxAh()).isEqualTo(DeviceAttr.MAX_AH);
    }

    // =====================================================================================
    // UC queue pairs (verbs-surface-facts.md §3)
    // =====================================================================================

    static final String UC_LOSS = "a UC packet lost on the wire drops its message for good (no retry), by design";

    /** One UC end: a PD, CQs, a UC QP in RESET and an MR filled with seeded bytes. */
    final class UcSide {
        final RdmaDevice dev;
        final ProtectionDomain pd;
        final CompletionQueue scq;
        final CompletionQueue rcq;
        final QueuePair qp;
        final MemoryRegion mr;

        UcSide(RdmaDevice dev, long seed) {
            this.dev = dev;
            this.pd = closeLater(dev.allocPd());
            this.scq = closeLater(dev.createCq(1024));
            this.rcq = closeLater(dev.createCq(1024));
            this.qp = closeLater(pd.createQp(QpInitAttr.uc(scq, rcq)));
            this.mr = closeLater(pd.allocMr(MR_BYTES, ALL));
            fill(mr.segment(), 0, MR_BYTES, seed);
        }

        Sge sge(long off, int len) {
            return new Sge(mr.addr() + off, len, mr.lkey());
        }
    }

    /** RESET -> INIT -> RTR -> RTS with the UC table's attributes. */
    void ucBringUp(UcSide me, UcSide peer, int access, int myPsn, int peerPsn) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(access));
        me.qp.modify(new QpAttr().state(QpState.RTR).av(peer.dev.address()).pathMtu(Mtu.MTU_1024)
                .destQpNum(peer.qp.qpNum()).rqPsn(peerPsn));
        me.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(myPsn));
    }

    UcSide[] ucConnect(int accessB) {
        UcSide a = new UcSide(devA, 0xA11CE);
        UcSide b = new UcSide(devB, 0xB0B);
        ucBringUp(a, b, ALL, 0x3000, 0x4000);
        ucBringUp(b, a, accessB, 0x4000, 0x3000);
        return new UcSide[] {a, b};
    }

    @ParameterizedTest(name = "UC SEND of {0} bytes")
    @ValueSource(ints = {0, 1, 1024, 1025, 5000})
    @NotOnLossyNet(UC_LOSS)
    void ucSend(int len) {
        UcSide[] p = ucConnect(ALL);
        UcSide a = p[0];
        UcSide b = p[1];
        b.qp.postRecv(new RecvWr().set(7, b.sge(HALF, 8192)));
        a.qp.postSend(new SendWr().sendWithImm(5, 0x0BADCAFE, a.sge(0, len)).signaled());
        assertWc(next(a.scq), 5, WcStatus.SUCCESS, WcOpcode.SEND, len, WC_WITH_IMM, a.qp);
        WorkCompletion r = next(b.rcq);
        assertWc(r, 7, WcStatus.SUCCESS, WcOpcode.RECV, len, WC_GRH | WC_WITH_IMM, b.qp);
        assertThat(r.immData).isEqualTo(0x0BADCAFE);
        assertThat(bytes(b.mr.segment(), HALF, len)).isEqualTo(bytes(a.mr.segment(), 0, len));
        assertNoCompletion(b.rcq);
    }

    @ParameterizedTest(name = "UC RDMA WRITE of {0} bytes")
    @ValueSource(ints = {1, 1024, 3000, 65_536})
    @NotOnLossyNet(UC_LOSS)
    void ucWriteAndWriteWithImm(int len) {
        UcSide[] p = ucConnect(ALL);
        UcSide a = p[0];
        UcSide b = p[1];
        a.qp.postSend(new SendWr().rdmaWrite(1, b.mr.addr() + 16, b.mr.rkey(), a.sge(0, len)).signaled());
        assertWc(next(a.scq), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, 0, a.qp);
        await(() -> java.util.Arrays.equals(bytes(b.mr.segment(), 16, len), bytes(a.mr.segment(), 0, len)),
                "the WRITE's bytes at B");
        assertNoCompletion(b.rcq); // a plain WRITE consumes no receive
        b.qp.postRecv(new RecvWr().set(9));
        a.qp.postSend(new SendWr().rdmaWriteWithImm(2, b.mr.addr() + HALF, b.mr.rkey(), 0x1234, a.sge(0, len))
                .signaled());
        assertWc(next(a.scq), 2, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, len, WC_WITH_IMM, a.qp);
        WorkCompletion r = next(b.rcq);
        assertWc(r, 9, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, len, WC_GRH | WC_WITH_IMM, b.qp);
        assertThat(bytes(b.mr.segment(), HALF, len)).isEqualTo(bytes(a.mr.segment(), 0, len));
    }

    /** §3.4 rule 3 and 5: a WRITE the QP or the R_Key does not allow is dropped with its message, silently. */
    @Test
    @NotOnLossyNet(UC_LOSS)
    void ucWriteWithoutRightsIsDroppedAndTheQpGoesOn() {
        UcSide[] p = ucConnect(Access.LOCAL_WRITE); // B's QP grants no REMOTE_WRITE
        UcSide a = p[0];
        UcSide b = p[1];
        byte[] before = snapshot(b.mr);
        long drops = counter(devB, "drop_other");
        a.qp.postSend(new SendWr().rdmaWrite(1, b.mr.addr(), b.mr.rkey(), a.sge(0, 3000)).signaled());
        assertWc(next(a.scq), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 3000, 0, a.qp); // the sender cannot know
        await(() -> counter(devB, "drop_other") > drops, "B dropping the WRITE");
        assertThat(snapshot(b.mr)).as("nothing written").isEqualTo(before);
        assertThat(b.qp.state()).isEqualTo(QpState.RTS);
        assertThat(a.qp.state()).isEqualTo(QpState.RTS);
        // SENDs still work: the dropped message does not stop the stream
        b.qp.postRecv(new RecvWr().set(7, b.sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(2, a.sge(0, 100)));
        assertWc(next(b.rcq), 7, WcStatus.SUCCESS, WcOpcode.RECV, 100, WC_GRH, b.qp);
    }

    /** §3.4 rule 6: no receive WQE: the SEND is dropped, no RNR NAK, nothing retried; the next one is taken. */
    @Test
    @NotOnLossyNet(UC_LOSS)
    void ucSendWithoutAReceiveIsDroppedNotRetried() {
        UcSide[] p = ucConnect(ALL);
        UcSide a = p[0];
        UcSide b = p[1];
        long before = counter(devB, "drop_no_recv_wqe");
        long rnrBefore = counter(devB, "send_rnr_err");
        long sentBefore = counter(devA, "sent_pkts");
        a.qp.postSend(new SendWr().send(1, a.sge(0, 2000)).signaled());
        assertWc(next(a.scq), 1, WcStatus.SUCCESS, WcOpcode.SEND, 2000, 0, a.qp);
        await(() -> counter(devB, "drop_no_recv_wqe") > before, "drop_no_recv_wqe on B");
        b.qp.postRecv(new RecvWr().set(7, b.sge(HALF, 4096)));
        a.qp.postSend(new SendWr().send(2, a.sge(100, 1500)));
        WorkCompletion r = next(b.rcq);
        assertWc(r, 7, WcStatus.SUCCESS, WcOpcode.RECV, 1500, WC_GRH, b.qp);
        assertThat(bytes(b.mr.segment(), HALF, 1500)).isEqualTo(bytes(a.mr.segment(), 100, 1500));
        assertThat(counter(devA, "sent_pkts") - sentBefore).as("two packets for the dropped SEND, two for the next: no resend")
                .isEqualTo(4);
        assertThat(counter(devB, "send_rnr_err") - rnrBefore).as("UC sends no RNR NAK").isZero();
    }

    @Test
    void ucPostAndModifyChecksNameTheBadValue() {
        UcSide a = new UcSide(devA, 1);
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ACCESS_FLAGS");
        a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(ALL));
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024)
                .destQpNum(1).rqPsn(0).maxDestRdAtomic(1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("MAX_DEST_RD_ATOMIC");
        a.qp.modify(new QpAttr().state(QpState.RTR).av(devB.address()).pathMtu(Mtu.MTU_1024).destQpNum(1).rqPsn(0));
        assertThatThrownBy(() -> a.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("TIMEOUT");
        a.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().rdmaRead(1, 0x1000, 1, a.sge(0, 8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UC");
        assertThatThrownBy(() -> a.qp.postSend(new SendWr().fetchAndAdd(2, 0x1000, 1, 1, a.sge(0, 8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UC");
        assertNoCompletion(a.scq);
    }

    // =====================================================================================
    // Shared receive queues (verbs-surface-facts.md §4; pyverbs test_srq.py)
    // =====================================================================================

    /** @return the next async event of {@code d} of {@code type} for which {@code match} holds, waiting up to 10 s */
    static AsyncEvent awaitEvent(RdmaDevice d, AsyncEventType type, java.util.function.Predicate<AsyncEvent> match)
            throws InterruptedException {
        long end = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < end) {
            AsyncEvent e = d.getAsyncEvent(java.time.Duration.ofMillis(100));
            if (e != null && e.type() == type && match.test(e)) {
                return e;
            }
        }
        throw new AssertionError("no " + type + " event on " + d);
    }

    /** Two RC pairs whose B sides share one SRQ of B's PD. */
    Side[] srqPairs(SharedReceiveQueue srq, ProtectionDomain pdB, MemoryRegion mrB) {
        Cfg cfg = new Cfg();
        Side[] s = new Side[4];
        for (int k = 0; k < 2; k++) {
            Side a = new Side(devA, cfg, 0xA11CE + k);
            CompletionQueue scq = closeLater(devB.createCq(256));
            CompletionQueue rcq = closeLater(devB.createCq(256));
            QueuePair qp = closeLater(pdB.createQp(QpInitAttr.rc(scq, rcq).withSrq(srq)));
            Side b = new Side(devB, cfg, pdB, mrB, scq, rcq, qp);
            bringUp(a, b, cfg.qpAccessA, cfg, cfg.psnA, cfg.psnB);
            bringUp(b, a, cfg.qpAccessB, cfg, cfg.psnB, cfg.psnA);
            s[2 * k] = a;
            s[2 * k + 1] = b;
        }
        return s;
    }

    /** test_rc_srq_traffic: two RC QPs take their receives from one SRQ, in posting order; each CQE names its QP. */
    @Test
    void twoRcQpsTakeTheirReceivesFromOneSrq() {
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(16, 2, 0)));
        Side[] s = srqPairs(srq, pdB, mrB);
        for (int i = 0; i < 4; i++) {
            srq.postRecv(new RecvWr().set(100 + i, new Sge(mrB.addr() + 4096L * i, 4096, mrB.lkey())));
        }
        assertThat(srq.query()).isEqualTo(new SrqAttr(16, 2, 0));
        s[0].qp.postSend(new SendWr().send(1, s[0].sge(0, 3000)).signaled());
        WorkCompletion r0 = next(s[1].rcq);
        s[2].qp.postSend(new SendWr().send(2, s[2].sge(0, 1500)).signaled());
        WorkCompletion r1 = next(s[3].rcq);
        assertWc(r0, 100, WcStatus.SUCCESS, WcOpcode.RECV, 3000, WC_GRH, s[1].qp);
        assertWc(r1, 101, WcStatus.SUCCESS, WcOpcode.RECV, 1500, WC_GRH, s[3].qp);
        assertThat(bytes(mrB.segment(), 0, 3000)).isEqualTo(bytes(s[0].mem(), 0, 3000));
        assertThat(bytes(mrB.segment(), 4096, 1500)).isEqualTo(bytes(s[2].mem(), 0, 1500));
        next(s[0].scq);
        next(s[2].scq);
        assertThatThrownBy(() -> s[1].qp.postRecv(new RecvWr().set(9, s[1].sge(0, 64))))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("SRQ");
    }

    /**
     * test_modify_srq_limit: 10 WRs posted, limit 7 armed, query says 7; the 4th SEND leaves 6 < 7 and
     * raises SRQ_LIMIT_REACHED once; the limit is then 0.
     */
    @Test
    @NotOnLossyNet("the event is checked after each SEND; a resend on a lossy net changes nothing, but the timing of the checks")
    void theSrqLimitFiresOnceWhenFewerThanItRemain() throws Exception {
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(16, 1, 0)));
        Side[] s = srqPairs(srq, pdB, mrB);
        for (int i = 0; i < 10; i++) {
            srq.postRecv(new RecvWr().set(i, new Sge(mrB.addr() + 1024L * i, 1024, mrB.lkey())));
        }
        srq.modify(new SrqAttr(0, 0, 7), SrqAttr.LIMIT);
        assertThat(srq.query().srqLimit()).isEqualTo(7);
        for (int i = 0; i < 4; i++) {
            s[0].qp.postSend(new SendWr().send(i, s[0].sge(0, 100)).signaled());
            next(s[0].scq);
            next(s[1].rcq);
            if (i < 3) {
                assertThat(srq.query().srqLimit()).as("after %d SENDs, %d left", i + 1, 9 - i).isEqualTo(7);
            }
        }
        AsyncEvent e = awaitEvent(devB, AsyncEventType.SRQ_LIMIT_REACHED, ev -> ev.srq() == srq);
        assertThat(e.qp()).isNull();
        assertThat(srq.query().srqLimit()).as("disarmed after it fired").isZero();
        s[0].qp.postSend(new SendWr().send(9, s[0].sge(0, 100)).signaled());
        next(s[1].rcq);
        assertThatThrownBy(() -> awaitEventBriefly(devB, srq)).isInstanceOf(AssertionError.class);
    }

    private static void awaitEventBriefly(RdmaDevice d, SharedReceiveQueue srq) throws InterruptedException {
        AsyncEvent e;
        while ((e = d.getAsyncEvent(java.time.Duration.ofMillis(200))) != null) {
            if (e.type() == AsyncEventType.SRQ_LIMIT_REACHED && e.srq() == srq) {
                return;
            }
        }
        throw new AssertionError("no second event");
    }

    /** test_resize_srq: a larger max_wr keeps the queued WRs; the limits of a resize are named. */
    @Test
    void anSrqResizesAndKeepsWhatIsQueued() {
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(4, 1, 0)));
        for (int i = 0; i < 4; i++) {
            srq.postRecv(new RecvWr().set(i, new Sge(mrB.addr() + 1024L * i, 1024, mrB.lkey())));
        }
        assertThat(srq.tryPostRecv(new RecvWr().set(5, new Sge(mrB.addr(), 8, mrB.lkey())))).as("full").isFalse();
        srq.modify(new SrqAttr(8, 0, 0), SrqAttr.MAX_WR);
        assertThat(srq.query().maxWr()).isEqualTo(8);
        srq.postRecv(new RecvWr().set(4, new Sge(mrB.addr() + 4096, 1024, mrB.lkey())));
        assertThatThrownBy(() -> srq.modify(new SrqAttr(3, 0, 0), SrqAttr.MAX_WR))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("5 WRs queued");
        assertThatThrownBy(() -> srq.modify(new SrqAttr(0, 0, 9), SrqAttr.LIMIT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("srq_limit");
        srq.modify(new SrqAttr(0, 0, 6), SrqAttr.LIMIT);
        assertThatThrownBy(() -> srq.modify(new SrqAttr(5, 0, 0), SrqAttr.MAX_WR))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("armed srq_limit 6");
        Side[] s = srqPairs(srq, pdB, mrB);
        s[0].qp.postSend(new SendWr().send(1, s[0].sge(0, 500)));
        assertWc(next(s[1].rcq), 0, WcStatus.SUCCESS, WcOpcode.RECV, 500, WC_GRH, s[1].qp);
    }

    @Test
    void srqPostAndLifetimeChecksNameTheBadValue() {
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        MemoryRegion ro = closeLater(pdB.allocMr(4096, Access.REMOTE_READ));
        assertThatThrownBy(() -> new SrqInitAttr(0, 1, 0)).hasMessageContaining("max_wr");
        assertThatThrownBy(() -> new SrqInitAttr(8, 28, 0)).hasMessageContaining("max_sge");
        assertThatThrownBy(() -> new SrqInitAttr(8, 1, 9)).hasMessageContaining("srq_limit");
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(8, 1, 0)));
        Sge a = new Sge(mrB.addr(), 8, mrB.lkey());
        assertThatThrownBy(() -> srq.postRecv(new RecvWr().set(1, a, a))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("num_sge 2");
        assertThatThrownBy(() -> srq.postRecv(new RecvWr().set(2, new Sge(ro.addr(), 8, ro.lkey()))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LOCAL_WRITE");
        BadWrException bad = catchThrowableOfType(() -> srq.postRecv(java.util.List.of(new RecvWr().set(3, a),
                new RecvWr().set(4, new Sge(mrB.addr(), 8, 0x7777)))), BadWrException.class);
        assertThat(bad.badWrIndex()).isEqualTo(1);
        assertThat(srq.query().maxWr()).isEqualTo(8);
        ProtectionDomain otherPd = closeLater(devB.allocPd());
        CompletionQueue cq = closeLater(devB.createCq(16));
        assertThatThrownBy(() -> otherPd.createQp(QpInitAttr.rc(cq, cq).withSrq(srq)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("belongs to");
        QueuePair qp = pdB.createQp(QpInitAttr.rc(cq, cq).withSrq(srq));
        assertThatThrownBy(srq::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("EBUSY");
        assertThatThrownBy(pdB::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("SRQ(s)");
        qp.close();
        srq.close();
        assertThatThrownBy(() -> srq.postRecv(new RecvWr().set(5, a))).isInstanceOf(IllegalStateException.class);
        assertThat(devB.queryDevice().maxSrqWr()).isEqualTo(1 << 20);
        assertThat(devB.queryDevice().maxSrqSge()).isEqualTo(27);
    }

    /**
     * §4.3: a QP of an SRQ that enters ERR raises QP_LAST_WQE_REACHED; the WRs left in the SRQ stay
     * there and its other QP takes them.
     */
    @Test
    void aQpOfAnSrqInErrLeavesTheRestQueuedForTheOthers() throws Exception {
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(8, 1, 0)));
        Side[] s = srqPairs(srq, pdB, mrB);
        for (int i = 0; i < 3; i++) {
            srq.postRecv(new RecvWr().set(i, new Sge(mrB.addr() + 1024L * i, 1024, mrB.lkey())));
        }
        s[1].qp.modify(new QpAttr().state(QpState.ERR));
        AsyncEvent e = awaitEvent(devB, AsyncEventType.QP_LAST_WQE_REACHED, ev -> ev.qp() == s[1].qp);
        assertThat(e.reason()).contains("ERR");
        assertNoCompletion(s[1].rcq); // it had taken none: nothing of the SRQ is flushed
        s[2].qp.postSend(new SendWr().send(1, s[2].sge(0, 200)));
        assertWc(next(s[3].rcq), 0, WcStatus.SUCCESS, WcOpcode.RECV, 200, WC_GRH, s[3].qp);
    }

    /** §4.4: a UD datagram too long for the SRQ WQE it took completes that WQE with REM_INV_REQ_ERR (class E). */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void aUdQpOfAnSrqCompletesATooShortWqeWithAnError() {
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        ProtectionDomain pdB = closeLater(devB.allocPd());
        MemoryRegion mrB = closeLater(pdB.allocMr(MR_BYTES, ALL));
        SharedReceiveQueue srq = closeLater(pdB.createSrq(new SrqInitAttr(8, 1, 0)));
        CompletionQueue cq = closeLater(devB.createCq(64));
        QueuePair ud = closeLater(pdB.createQp(QpInitAttr.ud(cq, cq).withSrq(srq)));
        ud.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(UD_QKEY));
        ud.modify(new QpAttr().state(QpState.RTR));
        ud.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        srq.postRecv(new RecvWr().set(1, new Sge(mrB.addr(), 40 + 10, mrB.lkey())));
        srq.postRecv(new RecvWr().set(2, new Sge(mrB.addr() + 1024, 40 + 100, mrB.lkey())));
        AddressHandle ah = closeLater(a.pd.createAh(AhAttr.of(devB.address())));
        a.qp.postSend(new SendWr().send(1, a.sge(0, 50)).ud(ah, ud.qpNum(), UD_QKEY));
        assertWc(next(cq), 1, WcStatus.REM_INV_REQ_ERR, WcOpcode.RECV, 0, 0, ud);
        a.qp.postSend(new SendWr().send(2, a.sge(0, 50)).ud(ah, ud.qpNum(), UD_QKEY));
        WorkCompletion r = next(cq);
        assertWc(r, 2, WcStatus.SUCCESS, WcOpcode.RECV, 90, WC_GRH, ud);
        assertThat(ud.state()).isEqualTo(QpState.RTS);
    }

    // =====================================================================================
    // Memory windows and invalidation (verbs-surface-facts.md §5; pyverbs test_mr.py MWTest)
    // =====================================================================================

    /** The MW tests' MR on B: LOCAL_WRITE | MW_BIND and no remote right of its own (pyverbs MWRC). */
    static final int MW_MR = Access.LOCAL_WRITE | Access.MW_BIND;
    static final int RW = Access.REMOTE_READ | Access.REMOTE_WRITE;

    /** Binds type 1 window {@code mw} over {@code [off, off + len)} of {@code mr} through {@code side}, signaled; @return its rkey */
    int bindType1(Side side, MemoryWindow mw, MemoryRegion mr, long off, long len, int access) {
        int rkey = side.qp.bindMw(mw, new MwBind(77, SendFlags.SIGNALED, new MwBindInfo(mr, mr.addr() + off, len, access)));
        assertWc(next(side.scq), 77, WcStatus.SUCCESS, WcOpcode.BIND_MW, 0, 0, side.qp);
        return rkey;
    }

    /** Binds type 2B window {@code mw} with the next key through {@code side}, signaled; @return its rkey */
    int bindType2(Side side, MemoryWindow mw, MemoryRegion mr, long off, long len, int access) {
        int next = MemoryWindow.incRkey(mw.rkey());
        side.qp.postSend(new SendWr().bindMw(78, mw, next, new MwBindInfo(mr, mr.addr() + off, len, access)).signaled());
        assertWc(next(side.scq), 78, WcStatus.SUCCESS, WcOpcode.BIND_MW, 0, 0, side.qp);
        assertThat(mw.rkey()).isEqualTo(next);
        assertThat(mw.deviceRkey()).as("the device's key after the bind").isEqualTo(next);
        return next;
    }

    /** test_mw_type1: a type 1 window grants WRITE and READ of its range; the key moves on at every bind. */
    @ParameterizedTest(name = "type {0}")
    @EnumSource(MwType.class)
    void aWindowGrantsItsRangeWithItsRights(MwType type) {
        Pair p = connect();
        MemoryRegion mr = p.b().extraMr(16384, MW_MR, 0xD00D);
        MemoryWindow mw = closeLater(p.b().pd.allocMw(type));
        int before = mw.rkey();
        assertThat(before >>> 8).as("an MW's index lies above every MR's").isGreaterThan(1 << 19);
        int rkey = type == MwType.TYPE_1 ? bindType1(p.b(), mw, mr, 4096, 8192, RW)
                : bindType2(p.b(), mw, mr, 4096, 8192, RW);
        assertThat(rkey >>> 8).as("a bind changes only the key part").isEqualTo(before >>> 8);
        assertThat(rkey).isNotEqualTo(before);
        p.a().qp.postSend(new SendWr().rdmaWrite(1, mr.addr() + 4096, rkey, p.a().sge(0, 8192)).signaled());
        assertWc(next(p.a().scq), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 8192, 0, p.a().qp);
        assertThat(bytes(mr.segment(), 4096, 8192)).isEqualTo(bytes(p.a().mem(), 0, 8192));
        p.a().qp.postSend(new SendWr().rdmaRead(2, mr.addr() + 5000, rkey, p.a().sge(HALF, 3000)).signaled());
        assertWc(next(p.a().scq), 2, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 3000, 0, p.a().qp);
        assertThat(bytes(p.a().mem(), HALF, 3000)).isEqualTo(bytes(mr.segment(), 5000, 3000));
        assertThat(p.b().qp.state()).isEqualTo(QpState.RTS);
    }

    /** How a remote access through a window is refused (§5.5): each gives NAK 0x62, REM_ACCESS_ERR. */
    enum WindowViolation {
        /** A VA inside the MR but outside the window: rxe accepts it (it checks the MR only); rxe4j does not. */
        OUTSIDE_THE_WINDOW("is not inside memory window"),
        /** An atomic through a READ/WRITE window. */
        BEYOND_ITS_RIGHTS("lacks REMOTE_ATOMIC"),
        /** The MR's own rkey: the MR has no remote right (only the window has). */
        THE_MRS_OWN_RKEY("lacks REMOTE_WRITE"),
        /** test_invalidate_mw_type1: unbound by a zero-length bind. */
        AFTER_A_TYPE_1_UNBIND("is unbound (length 0)"),
        /** test_mw_type2_invalidate_local: LOCAL_INV on B. */
        AFTER_LOCAL_INV("is not bound"),
        /** test_mw_type2_invalidate_dealloc. */
        AFTER_DEALLOC("no memory window with rkey"),
        /** The key before the last bind. */
        A_STALE_KEY("is stale"),
        /** Type 2B: through another QP of the same PD than the one it is bound to. */
        THROUGH_ANOTHER_QP("is bound to QP");

        /** What the refusing QP's error reason says. */
        final String reason;

        WindowViolation(String reason) {
            this.reason = reason;
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(WindowViolation.class)
    @NotOnLossyNet(FATAL_NAK_LOST)
    void aWindowRefusesWhatItDoesNotGrant(WindowViolation v) {
        Pair p = connect();
        MemoryRegion mr = p.b().extraMr(16384, MW_MR, 0xD00D);
        boolean type1 = v == WindowViolation.AFTER_A_TYPE_1_UNBIND || v == WindowViolation.A_STALE_KEY;
        MemoryWindow mw = closeLater(p.b().pd.allocMw(type1 ? MwType.TYPE_1 : MwType.TYPE_2B));
        int rkey = type1 ? bindType1(p.b(), mw, mr, 4096, 4096, RW) : bindType2(p.b(), mw, mr, 4096, 4096, RW);
        byte[] before = bytes(mr.segment(), 0, 16384);
        Side a = p.a();
        long va = mr.addr() + 4096;
        SendWr wr = new SendWr().rdmaWrite(1, va, rkey, a.sge(0, 64)).signaled();
        switch (v) {
            case OUTSIDE_THE_WINDOW -> wr.remoteAddr = mr.addr() + 8192 - 32; // its last 32 bytes lie past the window
            case BEYOND_ITS_RIGHTS -> wr.fetchAndAdd(1, va, rkey, 1, a.sge(HALF, 8)).signaled();
            case THE_MRS_OWN_RKEY -> wr.rkey = mr.rkey();
            case AFTER_A_TYPE_1_UNBIND -> {
                int unbound = p.b().qp.bindMw(mw, new MwBind(79, SendFlags.SIGNALED, MwBindInfo.unbind()));
                assertWc(next(p.b().scq), 79, WcStatus.SUCCESS, WcOpcode.BIND_MW, 0, 0, p.b().qp);
                wr.rkey = unbound;
            }
            case AFTER_LOCAL_INV -> {
                p.b().qp.postSend(new SendWr().localInv(80, rkey).signaled());
                assertWc(next(p.b().scq), 80, WcStatus.SUCCESS, WcOpcode.LOCAL_INV, 0, 0, p.b().qp);
            }
            case AFTER_DEALLOC -> mw.close();
            case A_STALE_KEY -> bindType1(p.b(), mw, mr, 4096, 4096, RW);
            case THROUGH_ANOTHER_QP -> {
                Side b2 = new Side(devB, new Cfg(), p.b().pd, mr);
                Side a2 = new Side(devA, new Cfg(), 0xA2);
                bringUp(a2, b2, ALL, new Cfg(), 0x5000, 0x6000);
                bringUp(b2, a2, ALL, new Cfg(), 0x6000, 0x5000);
                a2.qp.postSend(new SendWr().rdmaWrite(1, va, rkey, a2.sge(0, 64)).signaled());
                WorkCompletion wc = next(a2.scq);
                assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_ACCESS_ERR);
                assertThat(b2.qp.state()).isEqualTo(QpState.ERR);
                assertThat(b2.qp.errorReason()).contains(v.reason);
                // the QP it is bound to still reaches it
                a.qp.postSend(wr);
                assertWc(next(a.scq), 1, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 64, 0, a.qp);
                return;
            }
        }
        a.qp.postSend(wr);
        WorkCompletion wc = next(a.scq);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.REM_ACCESS_ERR);
        assertThat(wc.vendorErr).isEqualTo(0x62);
        assertThat(bytes(mr.segment(), 0, 16384)).as("the memory is untouched").isEqualTo(before);
        await(() -> p.b().qp.state() == QpState.ERR, "B's QP in ERR after the NAK");
        assertThat(p.b().qp.errorReason()).as("the responder names the check").contains(v.reason);
        assertThat(a.qp.errorReason()).contains("NAK 0x62: remote access error").doesNotContain("NAK 0x62: NAK");
    }

    /** test_mw_type2_invalidate_remote: SEND_WITH_INV frees the window bound to the receiving QP; it can be bound again. */
    @Test
    @NotOnLossyNet(FATAL_NAK_LOST)
    void sendWithInvalidateFreesThePeersWindow() {
        Pair p = connect();
        MemoryRegion mr = p.b().extraMr(16384, MW_MR, 0xD00D);
        MemoryWindow mw = closeLater(p.b().pd.allocMw(MwType.TYPE_2B));
        int rkey = bindType2(p.b(), mw, mr, 0, 8192, RW);
        p.b().qp.postRecv(new RecvWr().set(5, p.b().sge(HALF, 4096)));
        p.a().qp.postSend(new SendWr().sendWithInv(6, rkey, p.a().sge(0, 2000)).signaled().solicited());
        assertWc(next(p.a().scq), 6, WcStatus.SUCCESS, WcOpcode.SEND, 2000, 0, p.a().qp);
        WorkCompletion r = next(p.b().rcq);
        assertWc(r, 5, WcStatus.SUCCESS, WcOpcode.RECV, 2000, WC_GRH | WorkCompletion.WC_WITH_INV, p.b().qp);
        assertThat(r.invalidatedRkey).isEqualTo(rkey);
        assertThat(r.immData).isZero();
        assertThat(bytes(p.b().mem(), HALF, 2000)).isEqualTo(bytes(p.a().mem(), 0, 2000));
        // FREE again: a new bind gives a new key, and the old one is refused
        int again = bindType2(p.b(), mw, mr, 0, 8192, RW);
        p.a().qp.postSend(new SendWr().rdmaWrite(7, mr.addr(), again, p.a().sge(0, 100)).signaled());
        assertWc(next(p.a().scq), 7, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 100, 0, p.a().qp);
        p.a().qp.postSend(new SendWr().rdmaWrite(8, mr.addr(), rkey, p.a().sge(0, 100)).signaled());
        assertThat(next(p.a().scq).status).isEqualTo(WcStatus.REM_ACCESS_ERR);
    }

    /**
     * §5.6 class J: a SEND_WITH_INV of an rkey B may not invalidate (an MR's, a type 1 window's)
     * is placed and acknowledged; B's receive completes with REM_INV_REQ_ERR and B enters ERR.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"an MR's rkey", "a type 1 window", "no object"})
    @NotOnLossyNet("the sender's SEND completes on the ACK; if it is lost, the resend finds B in ERR (RETRY_EXC_ERR)")
    void sendWithInvalidateOfAKeyThatCannotBeInvalidatedFailsTheReceive(String what) {
        Pair p = connect();
        MemoryRegion mr = p.b().extraMr(8192, MW_MR, 0xD00D);
        int rkey = switch (what) {
            case "an MR's rkey" -> p.b().mr.rkey();
            case "a type 1 window" -> bindType1(p.b(), closeLater(p.b().pd.allocMw(MwType.TYPE_1)), mr, 0, 4096, RW);
            default -> 0x7fff_ff00;
        };
        p.b().qp.postRecv(new RecvWr().set(5, p.b().sge(HALF, 4096)));
        p.a().qp.postSend(new SendWr().sendWithInv(6, rkey, p.a().sge(0, 100)).signaled());
        assertWc(next(p.a().scq), 6, WcStatus.SUCCESS, WcOpcode.SEND, 100, 0, p.a().qp);
        WorkCompletion r = next(p.b().rcq);
        assertThat(r.status).as("%s", r).isEqualTo(WcStatus.REM_INV_REQ_ERR);
        assertThat(r.wrId).isEqualTo(5);
        await(() -> p.b().qp.state() == QpState.ERR, "B in ERR");
        assertThat(p.b().qp.errorReason()).contains("SEND_WITH_INV").contains(Integer.toHexString(rkey));
    }

    /** How a bind fails (§5.3): each completes with MW_BIND_ERR and moves the QP to ERR, naming the rule. */
    enum BindFailure {
        MR_WITHOUT_MW_BIND("lacks MW_BIND"),
        RANGE_BEYOND_THE_MR("C10-75"),
        WRITE_WINDOW_ON_A_READ_ONLY_MR("C10-74"),
        TYPE_2B_BOUND_TWICE("o10-37.2.30"),
        TYPE_2B_WITH_LENGTH_0("o10-37.2.40"),
        DEREGISTERED_MR("no valid MR"),
        ZERO_BASED_TYPE_2B("zero-based");

        final String reason;

        BindFailure(String reason) {
            this.reason = reason;
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(BindFailure.class)
    void aBindThatBreaksARuleCompletesWithMwBindErr(BindFailure f) {
        Pair p = connect();
        Side b = p.b();
        MemoryRegion mr = b.extraMr(8192, f == BindFailure.MR_WITHOUT_MW_BIND ? Access.LOCAL_WRITE
                : f == BindFailure.WRITE_WINDOW_ON_A_READ_ONLY_MR ? Access.MW_BIND : MW_MR, 0xD00D);
        MemoryWindow mw = closeLater(b.pd.allocMw(MwType.TYPE_2B));
        long addr = mr.addr();
        long len = 4096;
        int access = RW;
        switch (f) {
            case RANGE_BEYOND_THE_MR -> addr = mr.addr() + 8192 - 100;
            case TYPE_2B_BOUND_TWICE -> bindType2(b, mw, mr, 0, 4096, RW);
            case TYPE_2B_WITH_LENGTH_0 -> len = 0;
            case DEREGISTERED_MR -> mr.close();
            case ZERO_BASED_TYPE_2B -> access |= Access.ZERO_BASED;
            default -> { }
        }
        int old = mw.deviceRkey();
        b.qp.postSend(new SendWr().bindMw(9, mw, old + 1, new MwBindInfo(mr, addr, len, access)).signaled());
        WorkCompletion wc = next(b.scq);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.MW_BIND_ERR);
        assertThat(wc.wrId).isEqualTo(9);
        assertThat(b.qp.state()).isEqualTo(QpState.ERR);
        assertThat(b.qp.errorReason()).contains(f.reason);
        assertThat(mw.deviceRkey()).as("a failed bind leaves the key").isEqualTo(old);
    }

    /** §5.4 rule 6: a bind waits for nothing but completes in order behind the WRs before it. */
    @Test
    void bindAndLocalInvalidateCompleteInOrderWithTheOtherWrs() {
        Pair p = connect();
        MemoryRegion mr = p.a().extraMr(8192, MW_MR, 0xD00D);
        MemoryWindow mw = closeLater(p.a().pd.allocMw(MwType.TYPE_2B));
        QueuePair qp = p.a().qp;
        p.b().qp.postRecv(new RecvWr().set(1, p.b().sge(HALF, 65536)));
        int k = MemoryWindow.incRkey(mw.rkey());
        qp.postSend(java.util.List.of(
                new SendWr().send(10, p.a().sge(0, 60000)).signaled(),
                new SendWr().bindMw(11, mw, k, new MwBindInfo(mr, mr.addr(), 4096, RW)).signaled(),
                new SendWr().rdmaRead(12, p.b().va(0), p.b().mr.rkey(), p.a().sge(HALF, 20000)).signaled(),
                new SendWr().localInv(13, k).signaled().fence(),
                new SendWr().rdmaWrite(14, p.b().va(100), p.b().mr.rkey(), p.a().sge(0, 10)).signaled()));
        long[] order = new long[5];
        for (int i = 0; i < 5; i++) {
            WorkCompletion wc = next(p.a().scq);
            assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.SUCCESS);
            order[i] = wc.wrId;
        }
        assertThat(order).containsExactly(10, 11, 12, 13, 14);
        assertThat(mw.rkey()).isEqualTo(k);
    }

    /** A type 1 window cannot be invalidated (o10-37.2.26): LOCAL_INV of it completes with LOC_QP_OP_ERR. */
    @Test
    void localInvalidateOfATypeOneWindowOrAnMrFails() {
        Pair p = connect();
        MemoryRegion mr = p.b().extraMr(8192, MW_MR, 0xD00D);
        int rkey = bindType1(p.b(), closeLater(p.b().pd.allocMw(MwType.TYPE_1)), mr, 0, 4096, RW);
        p.b().qp.postSend(new SendWr().localInv(3, rkey).signaled());
        WorkCompletion wc = next(p.b().scq);
        assertThat(wc.status).as("%s", wc).isEqualTo(WcStatus.LOC_QP_OP_ERR);
        assertThat(p.b().qp.errorReason()).contains("type 1");
        p.a().qp.postSend(new SendWr().localInv(4, p.a().mr.rkey()).signaled());
        assertThat(next(p.a().scq).status).isEqualTo(WcStatus.LOC_QP_OP_ERR);
        assertThat(p.a().qp.errorReason()).contains("cannot be invalidated");
    }

    /** §5.7: an MR with a bound window cannot be deregistered; the PD counts its windows; post-time checks name the value. */
    @Test
    void windowLifetimesAndPostTimeChecks() {
        Pair p = connect();
        Side b = p.b();
        MemoryRegion mr = closeLater(b.pd.allocMr(8192, MW_MR));
        MemoryWindow t1 = b.pd.allocMw(MwType.TYPE_1);
        MemoryWindow t2 = b.pd.allocMw(MwType.TYPE_2B);
        bindType1(b, t1, mr, 0, 4096, RW);
        assertThatThrownBy(mr::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("1 memory window");
        assertThatThrownBy(b.pd::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("2 MW(s)");
        // the wrong verb for the type, zero-based, an MR of another PD, SEND_WITH_INV on UC
        assertThatThrownBy(() -> b.qp.bindMw(t2, new MwBind(1, 0, new MwBindInfo(mr, mr.addr(), 8, RW))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a type 1");
        assertThatThrownBy(() -> b.qp.postSend(new SendWr().bindMw(1, t1, 5, new MwBindInfo(mr, mr.addr(), 8, RW))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("QueuePair.bindMw");
        assertThatThrownBy(() -> b.qp.bindMw(t1, new MwBind(1, 0, new MwBindInfo(mr, mr.addr(), 8,
                RW | Access.ZERO_BASED)))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("zero-based");
        MemoryRegion elsewhere = closeLater(closeLater(devB.allocPd()).allocMr(4096, MW_MR));
        assertThatThrownBy(() -> b.qp.bindMw(t1, new MwBind(1, 0, new MwBindInfo(elsewhere, elsewhere.addr(), 8, RW))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("EPERM");
        assertThatThrownBy(() -> new MwBindInfo(null, 64, 8, RW)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needs an MR");
        assertThatThrownBy(() -> b.qp.postSend(new SendWr().localInv(2, 1).set(2, WrOpcode.LOCAL_INV, 0, b.sge(0, 8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("takes no SGEs");
        UcSide[] uc = ucConnect(ALL);
        assertThatThrownBy(() -> uc[0].qp.postSend(new SendWr().sendWithInv(3, 0x1234, uc[0].sge(0, 8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not supported on a UC QP");
        assertThatThrownBy(() -> uc[0].qp.postSend(new SendWr().localInv(4, 0x1234)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not supported on a UC QP");
        // unbound, the MR can go; closing a bound window releases its MR too
        b.qp.bindMw(t1, new MwBind(5, 0, MwBindInfo.unbind()));
        await(() -> t1.deviceRkey() == t1.rkey(), "the unbind executed");
        MemoryRegion mr2 = b.pd.allocMr(8192, MW_MR);
        bindType2(b, t2, mr2, 0, 4096, RW);
        t2.close();
        mr2.close();
        t1.close();
        assertThatThrownBy(() -> b.qp.bindMw(t1, new MwBind(6, 0, MwBindInfo.unbind())))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("deallocated");
        DeviceAttr attr = devB.queryDevice();
        assertThat(attr.deviceCapFlagsEx() & (DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B))
                .isEqualTo(DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B);
        assertThat(attr.maxMw()).isPositive();
    }

    /** UC binds windows too (BIND_MW is in rxe's UC column): a UC WRITE reaches the window, then misses it unbound. */
    @Test
    @NotOnLossyNet(UC_LOSS)
    void aUcQpBindsAWindowAndWritesThroughIt() {
        UcSide[] p = ucConnect(ALL);
        UcSide a = p[0];
        UcSide b = p[1];
        MemoryRegion mr = closeLater(b.pd.allocMr(8192, MW_MR));
        MemoryWindow mw = closeLater(b.pd.allocMw(MwType.TYPE_2B));
        int k = MemoryWindow.incRkey(mw.rkey());
        b.qp.postSend(new SendWr().bindMw(1, mw, k, new MwBindInfo(mr, mr.addr(), 4096, Access.REMOTE_WRITE)).signaled());
        assertWc(next(b.scq), 1, WcStatus.SUCCESS, WcOpcode.BIND_MW, 0, 0, b.qp);
        b.qp.postRecv(new RecvWr().set(3, b.sge(HALF, 16)));
        a.qp.postSend(new SendWr().rdmaWriteWithImm(2, mr.addr() + 100, k, 9, a.sge(0, 3000)).signaled());
        next(a.scq);
        assertWc(next(b.rcq), 3, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, 3000, WC_GRH | WC_WITH_IMM, b.qp);
        assertThat(bytes(mr.segment(), 100, 3000)).isEqualTo(bytes(a.mr.segment(), 0, 3000));
    }

    // =====================================================================================
    // The GSI QP, QP1 (verbs-surface-facts.md §2.3, §2.8, §2.9; cm-facts.md §1.1)
    // =====================================================================================

    record Mad(java.net.InetSocketAddress from, int srcQp, byte[] grh, byte[] mad) {}

    /** @return the MADs {@code dev}'s QP1 receives from now on, in order */
    static java.util.concurrent.BlockingQueue<Mad> listen(RdmaDevice dev) {
        java.util.concurrent.BlockingQueue<Mad> got = new java.util.concurrent.LinkedBlockingQueue<>();
        io.rxe4j.verbs.internal.VerbsAccess.get().gsi(dev).listener((from, srcQp, grh, mad) ->
                got.add(new Mad(from, srcQp, grh, mad)));
        return got;
    }

    static byte[] mad(int seed) {
        byte[] m = new byte[io.rxe4j.verbs.provider.GsiOps.MAD_BYTES];
        new java.util.SplittableRandom(seed).nextBytes(m);
        m[0] = 1; // BaseVersion
        return m;
    }

    /** QP1 to QP1 and back: the MAD, the sender, source QP 1 and the GRH the receive buffer got. */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void theGsiQpCarriesMadsBothWays() {
        io.rxe4j.verbs.provider.GsiOps gsiA = io.rxe4j.verbs.internal.VerbsAccess.get().gsi(devA);
        io.rxe4j.verbs.provider.GsiOps gsiB = io.rxe4j.verbs.internal.VerbsAccess.get().gsi(devB);
        java.util.concurrent.BlockingQueue<Mad> atA = listen(devA);
        java.util.concurrent.BlockingQueue<Mad> atB = listen(devB);
        long sentBefore = counter(devA, "gsi_sent_mads");
        try {
            assertThat(gsiA.send(devB.address(), 1, mad(1))).isTrue();
            await(() -> !atB.isEmpty(), "the MAD at B's QP1");
            Mad m = atB.poll();
            assertThat(m.mad()).isEqualTo(mad(1));
            assertThat(m.srcQp()).isEqualTo(1);
            assertThat(m.from().getAddress()).isEqualTo(devA.address().getAddress());
            java.net.InetAddress src = devA.address().getAddress();
            if (src instanceof java.net.Inet4Address) { // verbs-surface-facts §2.6: the IPv4 header at +20
                assertThat(m.grh()[20] >> 4).isEqualTo(4);
                assertThat(Arrays.copyOfRange(m.grh(), 32, 36)).isEqualTo(src.getAddress());
            } else {
                assertThat((m.grh()[0] & 0xFF) >> 4).isEqualTo(6);
                assertThat(Arrays.copyOfRange(m.grh(), 8, 24)).isEqualTo(src.getAddress());
            }
            assertThat(gsiB.send(m.from(), m.srcQp(), mad(2))).isTrue(); // the reply goes where the MAD came from
            await(() -> !atA.isEmpty(), "the reply at A's QP1");
            assertThat(atA.poll().mad()).isEqualTo(mad(2));
            assertThat(counter(devA, "gsi_sent_mads") - sentBefore).isEqualTo(1);
            assertThat(counter(devB, "gsi_rcvd_mads")).isEqualTo(1);
            assertThatThrownBy(() -> gsiA.send(devB.address(), 1, new byte[257]))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("257 bytes");
            assertThatThrownBy(() -> gsiA.send(devB.address(), 1 << 24, mad(3)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("24-bit");
        } finally {
            restoreCm(devA);
            restoreCm(devB);
        }
    }

    /** Gives QP1 back to the device's IB CM (these tests take its MADs themselves). */
    static void restoreCm(RdmaDevice d) {
        io.rxe4j.verbs.cm.ib.IbCm.closeFor(d);
        io.rxe4j.verbs.cm.ib.IbCm.of(d);
    }

    /**
     * QP1 is the device's own: no application object, QPN or MR index of the application's; it
     * takes only Q_Key 0x80010000; with nobody listening its MADs are counted and dropped, and its
     * receive buffers go back, so MADs still arrive once somebody listens.
     */
    @Test
    @NotOnLossyNet(UD_LOSS)
    void theGsiQpIsTheDevicesOwnAndKeepsItsBuffers() {
        assertThat(devB.openObjects()).as("QP1 is no application object").isZero();
        io.rxe4j.verbs.provider.GsiOps gsiA = io.rxe4j.verbs.internal.VerbsAccess.get().gsi(devA);
        io.rxe4j.verbs.cm.ib.IbCm.closeFor(devB); // nothing listens on B's QP1 now, not even its CM
        for (int i = 0; i < 40; i++) { // more than its 32 receive buffers
            assertThat(gsiA.send(devB.address(), 1, mad(i))).isTrue();
        }
        await(() -> counter(devB, "drop_gsi_no_listener") == 40, "40 MADs dropped without a listener");
        UdSide a = new UdSide(devA, UD_QKEY, 1);
        AddressHandle ah = closeLater(a.pd.createAh(AhAttr.of(devB.address())));
        long badQkey = counter(devB, "drop_bad_qkey");
        a.qp.postSend(new SendWr().send(1, a.sge(0, 256)).ud(ah, 1, UD_QKEY).signaled());
        next(a.scq);
        await(() -> counter(devB, "drop_bad_qkey") == badQkey + 1, "a UD datagram with another Q_Key dropped");
        java.util.concurrent.BlockingQueue<Mad> atB = listen(devB);
        try {
            assertThat(gsiA.send(devB.address(), 1, mad(99))).isTrue();
            await(() -> !atB.isEmpty(), "a MAD once B listens");
            assertThat(atB.poll().mad()).isEqualTo(mad(99));
            assertThat(a.qp.qpNum()).as("user QPNs start at 16").isGreaterThanOrEqualTo(16);
        } finally {
            restoreCm(devB);
        }
    }
}
