package io.rxe4j.core.qp;

import static io.rxe4j.core.qp.WrOpcodeInfo.ATOMIC_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.ATOMIC_WRITE_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.FLUSH_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.INLINE_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.LOCAL_OP_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.READ_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.SEND_MASK;
import static io.rxe4j.core.qp.WrOpcodeInfo.WRITE_MASK;
import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.core.qp.WrOpcodeInfo.Family;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WrOpcode;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The WR opcode table against values from outside the code: rdma_rxe's {@code
 * rxe_wr_opcode_info[]} ({@code drivers/infiniband/sw/rxe/rxe_opcode.c}, RC/UC/UD columns, with
 * the FLUSH and ATOMIC_WRITE rows of 6.2), the WC opcodes of {@code rxe-facts.md} §6.6
 * ({@code wr_to_wc_opcode}), the byte_len rule of §6.6, the credits of §5.7 and the access of §6.3.
 */
class WrOpcodeInfoTest {

    /** rxe_wr_opcode_info[op].mask[IB_QPT_RC / UC / UD], copied from rxe_opcode.c. */
    private static final Map<WrOpcode, int[]> RXE_MASKS = new EnumMap<>(WrOpcode.class);

    static {
        RXE_MASKS.put(WrOpcode.RDMA_WRITE, new int[] {INLINE_MASK | WRITE_MASK, INLINE_MASK | WRITE_MASK, 0});
        RXE_MASKS.put(WrOpcode.RDMA_WRITE_WITH_IMM, new int[] {INLINE_MASK | WRITE_MASK, INLINE_MASK | WRITE_MASK, 0});
        RXE_MASKS.put(WrOpcode.SEND, new int[] {INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK});
        RXE_MASKS.put(WrOpcode.SEND_WITH_IMM,
                new int[] {INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK});
        RXE_MASKS.put(WrOpcode.RDMA_READ, new int[] {READ_MASK, 0, 0});
        RXE_MASKS.put(WrOpcode.ATOMIC_CMP_AND_SWP, new int[] {ATOMIC_MASK, 0, 0});
        RXE_MASKS.put(WrOpcode.ATOMIC_FETCH_AND_ADD, new int[] {ATOMIC_MASK, 0, 0});
        RXE_MASKS.put(WrOpcode.SEND_WITH_INV,
                new int[] {INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK, INLINE_MASK | SEND_MASK});
        RXE_MASKS.put(WrOpcode.LOCAL_INV, new int[] {LOCAL_OP_MASK, 0, 0});
        RXE_MASKS.put(WrOpcode.BIND_MW, new int[] {LOCAL_OP_MASK, LOCAL_OP_MASK, 0});
        RXE_MASKS.put(WrOpcode.FLUSH, new int[] {FLUSH_MASK, 0, 0});
        RXE_MASKS.put(WrOpcode.ATOMIC_WRITE, new int[] {ATOMIC_WRITE_MASK, 0, 0});
    }

    /** rxe-facts.md §6.6, "rxe produces it for"; the masked ones: extensions.md §2 (kernel values 11, 12). */
    private static final Map<WrOpcode, WcOpcode> WC = new EnumMap<>(WrOpcode.class);

    static {
        WC.put(WrOpcode.SEND, WcOpcode.SEND);
        WC.put(WrOpcode.SEND_WITH_IMM, WcOpcode.SEND);
        WC.put(WrOpcode.SEND_WITH_INV, WcOpcode.SEND);
        WC.put(WrOpcode.RDMA_WRITE, WcOpcode.RDMA_WRITE);
        WC.put(WrOpcode.RDMA_WRITE_WITH_IMM, WcOpcode.RDMA_WRITE);
        WC.put(WrOpcode.RDMA_READ, WcOpcode.RDMA_READ);
        WC.put(WrOpcode.ATOMIC_CMP_AND_SWP, WcOpcode.COMP_SWAP);
        WC.put(WrOpcode.ATOMIC_FETCH_AND_ADD, WcOpcode.FETCH_ADD);
        WC.put(WrOpcode.BIND_MW, WcOpcode.BIND_MW);
        WC.put(WrOpcode.LOCAL_INV, WcOpcode.LOCAL_INV);
        WC.put(WrOpcode.FLUSH, WcOpcode.FLUSH);
        WC.put(WrOpcode.ATOMIC_WRITE, WcOpcode.ATOMIC_WRITE);
        WC.put(WrOpcode.MASKED_ATOMIC_CMP_AND_SWP, WcOpcode.MASKED_COMP_SWAP);
        WC.put(WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD, WcOpcode.MASKED_FETCH_ADD);
    }

    @Test
    void everyWrOpcodeHasARow() {
        for (WrOpcode op : WrOpcode.values()) {
            WrOpcodeInfo info = WrOpcodeInfo.of(op);
            assertThat(info).as("%s", op).isNotNull();
            assertThat(info.opcode()).isEqualTo(op);
            assertThat(info.wcOpcode()).as("%s", op).isNotNull();
            assertThat(info.family()).as("%s", op).isNotNull();
        }
        assertThat(WC).hasSize(WrOpcode.values().length);
    }

    @Test
    void masksMatchRxeWrOpcodeInfoForEveryQpType() {
        for (WrOpcode op : WrOpcode.values()) {
            WrOpcodeInfo info = WrOpcodeInfo.of(op);
            int[] rxe = RXE_MASKS.get(op);
            if (rxe == null) {
                // not in rxe's table: rxe4j's masked atomics (extensions.md §2), RC only
                assertThat(info.rxeExtension()).as("%s", op).isTrue();
                assertThat(info.mask(QpType.RC)).as("%s", op).isEqualTo(ATOMIC_MASK);
                assertThat(info.mask(QpType.UC)).isZero();
                assertThat(info.mask(QpType.UD)).isZero();
                continue;
            }
            assertThat(info.rxeExtension()).as("%s", op).isFalse();
            assertThat(info.mask(QpType.RC)).as("%s RC", op).isEqualTo(rxe[0]);
            if (op == WrOpcode.SEND_WITH_INV) {
                // rxe takes it on UC/UD and fails it at execution (no such packet); rxe4j refuses it at post
                assertThat(info.mask(QpType.UC)).as("%s UC", op).isZero();
                assertThat(info.mask(QpType.UD)).as("%s UD", op).isZero();
                continue;
            }
            assertThat(info.mask(QpType.UC)).as("%s UC", op).isEqualTo(rxe[1]);
            assertThat(info.mask(QpType.UD)).as("%s UD", op).isEqualTo(rxe[2]);
        }
    }

    @Test
    void wcOpcodesMatchWrToWcOpcode() {
        for (WrOpcode op : WrOpcode.values()) {
            assertThat(WrOpcodeInfo.of(op).wcOpcode()).as("%s", op).isEqualTo(WC.get(op));
        }
    }

    @Test
    void rcPostAcceptsEveryOpcodeAndUcUdTheirColumns() {
        for (WrOpcode op : WrOpcode.values()) {
            assertThat(WrOpcodeInfo.of(op).allowed(QpType.RC)).as("%s", op).isTrue();
        }
        assertThat(WrOpcodeInfo.of(WrOpcode.RDMA_READ).allowed(QpType.UC)).isFalse();
        assertThat(WrOpcodeInfo.of(WrOpcode.BIND_MW).allowed(QpType.UC)).isTrue();
        assertThat(WrOpcodeInfo.of(WrOpcode.LOCAL_INV).allowed(QpType.UC)).isFalse();
        assertThat(WrOpcodeInfo.of(WrOpcode.SEND_WITH_INV).allowed(QpType.UC)).isFalse();
        assertThat(WrOpcodeInfo.of(WrOpcode.BIND_MW).allowed(QpType.UD)).isFalse();
        assertThat(WrOpcodeInfo.of(WrOpcode.SEND).allowed(QpType.UD)).isTrue();
    }

    @Test
    void byteLenIsTheWqeLengthExceptEightForAtomics() {
        for (WrOpcode op : WrOpcode.values()) {
            int expected = op.isAtomic() ? 8 : 4096;
            assertThat(WrOpcodeInfo.of(op).completionByteLen(4096)).as("%s", op).isEqualTo(expected);
        }
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_WRITE).length()).isEqualTo(WrOpcodeInfo.Length.EIGHT);
        assertThat(WrOpcodeInfo.of(WrOpcode.FLUSH).length()).isEqualTo(WrOpcodeInfo.Length.FLUSH_LENGTH);
        assertThat(WrOpcodeInfo.of(WrOpcode.SEND).length()).isEqualTo(WrOpcodeInfo.Length.SGE_TOTAL);
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_WRITE).operandInWr()).isTrue();
        assertThat(WrOpcodeInfo.of(WrOpcode.FLUSH).operandInWr()).isTrue();
        assertThat(WrOpcodeInfo.of(WrOpcode.RDMA_WRITE).operandInWr()).isFalse();
    }

    @Test
    void immediateCreditAndAccessColumns() {
        for (WrOpcode op : WrOpcode.values()) {
            WrOpcodeInfo info = WrOpcodeInfo.of(op);
            assertThat(info.immediateData()).as("%s", op).isEqualTo(op.hasImmediate());
            // rxe-facts §5.7: READ, atomics and ATOMIC_WRITE take an RD/atomic resource
            boolean credit = op == WrOpcode.RDMA_READ || op.isAtomic() || op == WrOpcode.ATOMIC_WRITE;
            assertThat(info.usesRdAtomicCredit()).as("%s", op).isEqualTo(credit);
            assertThat(info.localAccess()).as("%s", op)
                    .isEqualTo(op == WrOpcode.RDMA_READ || op.isAtomic() ? Access.LOCAL_WRITE : 0);
            assertThat(info.payloadInBudget()).as("%s", op)
                    .isEqualTo(info.family() == Family.SEND || info.family() == Family.WRITE);
        }
        // rxe-facts §6.3
        assertThat(WrOpcodeInfo.of(WrOpcode.SEND).remoteAccess()).isZero();
        assertThat(WrOpcodeInfo.of(WrOpcode.RDMA_WRITE).remoteAccess()).isEqualTo(Access.REMOTE_WRITE);
        assertThat(WrOpcodeInfo.of(WrOpcode.RDMA_READ).remoteAccess()).isEqualTo(Access.REMOTE_READ);
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_FETCH_AND_ADD).remoteAccess()).isEqualTo(Access.REMOTE_ATOMIC);
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_WRITE).remoteAccess()).isEqualTo(Access.REMOTE_WRITE);
        assertThat(WrOpcodeInfo.of(WrOpcode.FLUSH).remoteAccess())
                .isEqualTo(Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT);
    }

    @Test
    void packetOpcodesFollowNextOpcodeRc() {
        WrOpcodeInfo send = WrOpcodeInfo.of(WrOpcode.SEND_WITH_IMM);
        assertThat(send.packetOpcode(true, true)).isEqualTo(Opcode.RC_SEND_ONLY_WITH_IMMEDIATE);
        assertThat(send.packetOpcode(true, false)).isEqualTo(Opcode.RC_SEND_FIRST);
        assertThat(send.packetOpcode(false, false)).isEqualTo(Opcode.RC_SEND_MIDDLE);
        assertThat(send.packetOpcode(false, true)).isEqualTo(Opcode.RC_SEND_LAST_WITH_IMMEDIATE);
        WrOpcodeInfo write = WrOpcodeInfo.of(WrOpcode.RDMA_WRITE);
        assertThat(write.packetOpcode(true, true)).isEqualTo(Opcode.RC_RDMA_WRITE_ONLY);
        assertThat(write.packetOpcode(false, true)).isEqualTo(Opcode.RC_RDMA_WRITE_LAST);
        assertThat(WrOpcodeInfo.of(WrOpcode.SEND_WITH_INV).packetOpcode(true, true))
                .isEqualTo(Opcode.RC_SEND_ONLY_WITH_INVALIDATE);
        assertThat(WrOpcodeInfo.of(WrOpcode.RDMA_READ).packetOpcode(true, true))
                .isEqualTo(Opcode.RC_RDMA_READ_REQUEST);
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_CMP_AND_SWP).packetOpcode(true, true))
                .isEqualTo(Opcode.RC_COMPARE_SWAP);
        assertThat(WrOpcodeInfo.of(WrOpcode.MASKED_ATOMIC_FETCH_AND_ADD).packetOpcode(true, true))
                .isEqualTo(Opcode.RC_MASKED_FETCH_ADD);
        assertThat(WrOpcodeInfo.of(WrOpcode.ATOMIC_WRITE).packetOpcode(true, true)).isEqualTo(Opcode.RC_ATOMIC_WRITE);
        assertThat(WrOpcodeInfo.of(WrOpcode.FLUSH).packetOpcode(true, true)).isEqualTo(Opcode.RC_FLUSH);
        assertThat(WrOpcodeInfo.of(WrOpcode.LOCAL_INV).packetOpcode(true, true)).isNull();
        // every packet opcode of a row belongs to the row's family
        for (WrOpcode op : WrOpcode.values()) {
            WrOpcodeInfo info = WrOpcodeInfo.of(op);
            Opcode only = info.packetOpcode(true, true);
            if (info.family() == Family.LOCAL) {
                assertThat(only).as("%s", op).isNull();
                continue;
            }
            Opcode.Operation expected = switch (info.family()) {
                case SEND -> Opcode.Operation.SEND;
                case WRITE -> Opcode.Operation.WRITE;
                case READ -> Opcode.Operation.READ;
                case ATOMIC_WRITE -> Opcode.Operation.ATOMIC_WRITE;
                case FLUSH -> Opcode.Operation.FLUSH;
                default -> only.operation();
            };
            assertThat(only.operation()).as("%s", op).isEqualTo(expected);
            assertThat(info.is(ATOMIC_MASK)).as("%s", op).isEqualTo(info.family() == Family.ATOMIC);
        }
    }
}
