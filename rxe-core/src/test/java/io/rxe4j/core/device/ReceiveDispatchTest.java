package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.Opcode.Handler;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The receive dispatch of {@link ReceiveChecks}: the opcode table's handler column names, for every
 * opcode, the engine the lane's former if-chain sent it to (requests to the responder, RC responses
 * to the completer, TID WRITE data and RESYNC to the flow path, TID READ responses and the other
 * TID responses to their requesters, CNP to the congestion reaction).
 */
class ReceiveDispatchTest {
    private static Map<Opcode, Handler> expected() {
        Map<Opcode, Handler> m = new EnumMap<>(Opcode.class);
        for (Opcode op : Opcode.values()) {
            String n = op.name();
            if (n.startsWith("UC_") || n.startsWith("UD_")) {
                m.put(op, Handler.RESPONDER); // requests (dropped as WRONG_TRANSPORT before dispatch)
            }
        }
        for (Opcode op : new Opcode[] {Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST,
            Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE,
            Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST,
            Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_ONLY,
            Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_READ_REQUEST, Opcode.RC_COMPARE_SWAP,
            Opcode.RC_FETCH_ADD, Opcode.RC_SEND_LAST_WITH_INVALIDATE, Opcode.RC_SEND_ONLY_WITH_INVALIDATE,
            Opcode.RC_FLUSH, Opcode.RC_ATOMIC_WRITE, Opcode.RC_MASKED_COMPARE_SWAP, Opcode.RC_MASKED_FETCH_ADD,
            Opcode.TID_RDMA_WRITE_REQ, Opcode.TID_RDMA_READ_REQ}) {
            m.put(op, Handler.RESPONDER);
        }
        for (Opcode op : new Opcode[] {Opcode.RC_RDMA_READ_RESPONSE_FIRST, Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
            Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY, Opcode.RC_ACKNOWLEDGE,
            Opcode.RC_ATOMIC_ACKNOWLEDGE}) {
            m.put(op, Handler.COMPLETER);
        }
        m.put(Opcode.TID_RDMA_WRITE_DATA, Handler.TID_DATA);
        m.put(Opcode.TID_RDMA_WRITE_DATA_LAST, Handler.TID_DATA);
        m.put(Opcode.TID_RDMA_RESYNC, Handler.TID_DATA);
        m.put(Opcode.TID_RDMA_READ_RESP, Handler.TID_READ_RESPONSE);
        m.put(Opcode.TID_RDMA_WRITE_RESP, Handler.TID_RESPONSE);
        m.put(Opcode.TID_RDMA_ACK, Handler.TID_RESPONSE);
        m.put(Opcode.CNP, Handler.CNP);
        m.put(Opcode.RC_SELECTIVE_NAK, Handler.REPAIR);
        return m;
    }

    @Test
    void everyOpcodeHasTheHandlerTheIfChainChose() {
        Map<Opcode, Handler> want = expected();
        assertThat(want).as("every opcode is listed").hasSize(Opcode.values().length);
        for (Opcode op : Opcode.values()) {
            assertThat(op.handler()).as("%s", op).isEqualTo(want.get(op));
        }
    }

    @Test
    void theHandlerAgreesWithTheRequestFlag() {
        for (Opcode op : Opcode.values()) {
            Handler h = op.handler();
            if (h == Handler.RESPONDER) {
                assertThat(op.isRequest()).as("%s", op).isTrue();
            } else if (h == Handler.COMPLETER || h == Handler.TID_READ_RESPONSE || h == Handler.TID_RESPONSE) {
                assertThat(op.isResponse()).as("%s", op).isTrue();
            }
        }
    }

    @Test
    void theQpnOfANonTidPacketIsTheBthDestQp() {
        ByteBuf b = Unpooled.buffer(Bth.LENGTH);
        b.writerIndex(Bth.LENGTH);
        Bth.write(b, 0, Opcode.RC_SEND_ONLY.code(), false, 0, Bth.DEFAULT_PKEY, 0x123456, true, 7);
        assertThat(ReceiveChecks.verbsQpn(b, 0, Opcode.RC_SEND_ONLY, null)).isEqualTo(0x123456);
        assertThat(ReceiveChecks.verbsQpn(b, 0, null, null)).as("unknown opcode: the BTH").isEqualTo(0x123456);
        b.release();
    }
}
