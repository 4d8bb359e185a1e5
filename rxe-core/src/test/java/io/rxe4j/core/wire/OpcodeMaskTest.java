package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The responder's columns of the opcode table against rdma_rxe's masks ({@code rxe_opcode.c}:
 * {@code RXE_READ_MASK}, {@code RXE_WRITE_MASK}, {@code RXE_ATOMIC_MASK}, {@code
 * RXE_ATOMIC_WRITE_MASK}, {@code RXE_FLUSH_MASK}; {@code rxe-facts.md} §6.3, §9.3) and TID RDMA
 * ({@code tid-opfn-facts.md} §5.3, §6.2): which request needs which remote access right, which
 * takes a responder resource, and which the responder executes at all. The expected sets are
 * written out here, not derived from the table.
 */
class OpcodeMaskTest {
    private static final Set<Opcode> READ = EnumSet.of(Opcode.RC_RDMA_READ_REQUEST, Opcode.TID_RDMA_READ_REQ);
    private static final Set<Opcode> ATOMIC = EnumSet.of(Opcode.RC_COMPARE_SWAP, Opcode.RC_FETCH_ADD,
            Opcode.RC_MASKED_COMPARE_SWAP, Opcode.RC_MASKED_FETCH_ADD);
    private static final Set<Opcode> WRITE = EnumSet.of(
            Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST,
            Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_ONLY,
            Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            Opcode.UC_RDMA_WRITE_FIRST, Opcode.UC_RDMA_WRITE_MIDDLE, Opcode.UC_RDMA_WRITE_LAST,
            Opcode.UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.UC_RDMA_WRITE_ONLY,
            Opcode.UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            Opcode.RC_ATOMIC_WRITE, // REMOTE_WRITE, not REMOTE_ATOMIC (rxe-facts §6.3)
            Opcode.TID_RDMA_WRITE_REQ);
    private static final Set<Opcode> SEND = EnumSet.of(
            Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE,
            Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_SEND_LAST_WITH_INVALIDATE,
            Opcode.RC_SEND_ONLY_WITH_INVALIDATE,
            Opcode.UC_SEND_FIRST, Opcode.UC_SEND_MIDDLE, Opcode.UC_SEND_LAST, Opcode.UC_SEND_LAST_WITH_IMMEDIATE,
            Opcode.UC_SEND_ONLY, Opcode.UC_SEND_ONLY_WITH_IMMEDIATE,
            Opcode.UD_SEND_ONLY, Opcode.UD_SEND_ONLY_WITH_IMMEDIATE);

    @Test
    void accessRightsFollowRxesMasks() {
        for (Opcode op : Opcode.values()) {
            assertThat(op.needsRemoteRead()).as(op + " REMOTE_READ").isEqualTo(READ.contains(op));
            assertThat(op.needsRemoteWrite()).as(op + " REMOTE_WRITE").isEqualTo(WRITE.contains(op));
            assertThat(op.needsRemoteAtomic()).as(op + " REMOTE_ATOMIC").isEqualTo(ATOMIC.contains(op));
            assertThat(op.needsFlushAccess()).as(op + " FLUSH").isEqualTo(op == Opcode.RC_FLUSH);
        }
    }

    @Test
    void readsAtomicsAndAtomicWriteTakeAResponderResource() {
        for (Opcode op : Opcode.values()) {
            boolean expected = READ.contains(op) || ATOMIC.contains(op) || op == Opcode.RC_ATOMIC_WRITE;
            assertThat(op.needsRdAtomicResource()).as(op.toString()).isEqualTo(expected);
        }
    }

    @Test
    void theResponderExecutesRequestsOnly() {
        for (Opcode op : Opcode.values()) {
            boolean expected = SEND.contains(op) || WRITE.contains(op) || READ.contains(op) || ATOMIC.contains(op)
                    || op == Opcode.RC_FLUSH;
            assertThat(op.executedByResponder()).as(op.toString()).isEqualTo(expected);
            if (expected) {
                assertThat(op.isRequest()).as(op + " is a request").isTrue();
            }
        }
    }
}
