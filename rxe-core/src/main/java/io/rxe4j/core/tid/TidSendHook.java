package io.rxe4j.core.tid;

import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.qp.SendWqe;
import io.rxe4j.core.rc.RcEngines;
import io.rxe4j.core.rc.Requester;
import io.rxe4j.core.rc.RequesterHook;

/**
 * TID RDMA in the requester's send loop ({@code tid-opfn-facts.md} §5.2, §6.2, §7): the WQEs
 * converted to TID READ or TID WRITE at post time are carried here (their READ_REQs and WRITE_REQs
 * built by {@link TidReadRequester} and {@link TidWriteRequester}), TID WRITE data goes out at the
 * start of every run, and the §7 ordering rules hold other WQEs back. Loop only; allocates nothing.
 */
public final class TidSendHook implements RequesterHook {
    private final RxeQp qp;
    private final TidReadRequester read;
    private final TidWriteRequester write;

    private final RcEngines rc;

    /** Hooks the TID halves {@code read} and {@code write} of {@code qp} into its requester. */
    public TidSendHook(RxeQp qp, RcEngines rc, TidReadRequester read, TidWriteRequester write) {
        this.qp = qp;
        this.rc = rc;
        this.read = read;
        this.write = write;
    }

    @Override
    public void onRun() {
        // a TID WRITE in progress was seen by an earlier run of the requester, after which the sticky
        // flag reads true; the interlock of gate() reads it again after the acquire load of sqProd
        if (qp.tidWritesPosted() && write.sendData()) {
            qp.host().requestService(qp); // TID WRITE data left: another turn after the other QPs
        }
    }

    @Override
    public Requester.Stall gate(SendWqe w, boolean tidWritesPosted) {
        if (w.isTidWrite()) {
            // at most WRITE_CNT TID WRITEs outstanding; none new while a RESYNC is out (WAIT_HALT);
            // and (rxe4j, docs/tid-rdma.md) none while a READ or atomic before it is unanswered: its
            // WRITE_RESPs would overtake a READ still being received and restart it
            if (write.halted() || write.outstandingBefore(qp.sqReq()) >= TidLimits.WRITE_CNT) {
                return Requester.Stall.EXTENSION_WINDOW;
            }
            if (rc.requester.readOrAtomicOutstandingBefore(w)) {
                return Requester.Stall.EXTENSION_INTERLOCK;
            }
        } else if (tidWritesPosted && write.outstandingBefore(qp.sqReq()) > 0) {
            return Requester.Stall.EXTENSION_INTERLOCK; // §7: after a TID WRITE only TID WRITEs go before it is fully TID-ACKed
        }
        return null;
    }

    @Override
    public boolean carries(SendWqe w) {
        return w.tid || w.isTidWrite();
    }

    @Override
    public Requester.Stall send(SendWqe w) {
        if (w.isTidWrite()) {
            write.sendRequest(w);
            return null;
        }
        return read.sendSegment(w);
    }

    @Override
    public void onRewind(SendWqe w) {
        if (w.tid) {
            read.onRewind(w); // resend from its oldest incomplete segment, same flows
        }
    }
}
