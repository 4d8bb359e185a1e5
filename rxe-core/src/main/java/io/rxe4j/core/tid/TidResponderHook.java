package io.rxe4j.core.tid;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.ResponderHook;
import io.rxe4j.core.rc.ResponderResources;
import io.rxe4j.core.wire.DropReason;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.core.wire.Psn;

/**
 * TID RDMA at the responder ({@code tid-opfn-facts.md} §5.3, §5.6, §6.2–§6.4, §7): READ_REQs go to
 * the {@link TidReadResponder}, WRITE_REQs to the {@link TidWriteResponder}; a duplicate WRITE_REQ
 * acts at once; an RDMA READ or TID READ waits while TID WRITEs are being received (the responder
 * half of the READ-after-WRITE interlock, released by {@link io.rxe4j.core.rc.Responder#releaseInterlock}).
 * Loop only; allocates nothing per packet.
 */
public final class TidResponderHook implements ResponderHook {
    private final RxeQp qp;
    private final TidReadResponder read;
    private final TidWriteResponder write;

    private final RcEngines rc;

    /** Hooks the TID responder halves {@code read} and {@code write} of {@code qp} into its responder. */
    public TidResponderHook(RxeQp qp, RcEngines rc, TidReadResponder read, TidWriteResponder write) {
        this.qp = qp;
        this.rc = rc;
        this.read = read;
        this.write = write;
    }

    @Override
    public boolean actsAtOnce(PacketView pkt, int ePsn) {
        return pkt.opcode() == Opcode.TID_RDMA_WRITE_REQ && Psn.diff(pkt.psn(), ePsn) < 0;
    }

    @Override
    public boolean holds(PacketView pkt, int ePsn) {
        Opcode.Operation o = pkt.opcode().operation();
        return (o == Opcode.Operation.READ || o == Opcode.Operation.TID_READ_REQUEST) && write.hasActive()
                && Psn.diff(pkt.psn(), ePsn) == 0;
    }

    @Override
    public void execute(PacketView pkt, int psn) {
        switch (pkt.opcode().operation()) {
            case TID_READ_REQUEST -> read.execute(pkt, psn);
            case TID_WRITE_REQUEST -> write.execute(pkt, psn);
            default -> rc.responder.nakError(io.rxe4j.core.wire.Aeth.NAK_INVALID_REQUEST, psn);
        }
    }

    @Override
    public void duplicate(PacketView pkt, int psn) {
        switch (pkt.opcode().operation()) {
            case TID_READ_REQUEST -> read.duplicate(pkt, psn);
            case TID_WRITE_REQUEST -> write.onDuplicate(pkt, psn);
            default -> qp.counters.drop(DropReason.OTHER);
        }
    }

    @Override
    public void sendReply(ResponderResources.Entry e) {
        read.sendResponse(e);
    }
}
