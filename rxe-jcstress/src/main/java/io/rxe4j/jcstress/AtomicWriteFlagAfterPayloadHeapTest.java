package io.rxe4j.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.RxeMr;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * Issue 3 (a), {@code ATOMIC WRITE} as a completion flag, with a heap packet buffer: MemoryCopy.fromBuf's MemorySegment.copy-from-array branch.
 *
 * <p>Writer = the responder: an RDMA WRITE payload placed with plain stores
 * ({@code MemoryCopy.fromBuf}, as {@code Responder.executeWrite}), then the ATOMIC WRITE flag
 * stored with {@code RxeMr.setLongRelease} (as {@code Responder.executeAtomicWrite}).
 * Reader = a local thread polling the flag with {@code RxeMr.getLongAcquire}, then reading
 * the payload with plain loads. Result: (flag: 0 unset, 1 set, -1 torn; payload: 0 old, 1 partial,
 * 2 complete, -1 a byte that was never written). Forbidden: "1, 0", "1, 1" (flag seen, payload
 * old or partial) and anything with -1.
 */
@JCStressTest
@Description("ATOMIC WRITE flag (setLongRelease) after a WRITE payload (MemoryCopy.fromBuf, heap buffer): "
        + "a reader that sees the flag (getLongAcquire) sees the whole payload")
@Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Flag not seen yet, payload not seen yet.")
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Flag not seen yet, payload seen partly (copy in flight).")
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "Flag not seen yet, whole payload seen.")
@Outcome(id = "1, 2", expect = ACCEPTABLE, desc = "Flag seen and the whole payload seen.")
@Outcome(expect = FORBIDDEN, desc = "Flag seen with an old or partial payload, a torn flag, or bytes never written.")
@State
public class AtomicWriteFlagAfterPayloadHeapTest {
    private final RxeMr mr = Placement.newMr(Placement.MR_LEN);
    private final long payloadVa = mr.iova();
    private final long flagVa = mr.iova() + Placement.PAYLOAD_LEN;
    private final ByteBuf writePacket = Placement.writePacket(Placement.Kind.HEAP);

    @Actor
    public void responder() {
        Placement.placeWrite(mr, payloadVa, writePacket);
        Placement.placeAtomicWrite(mr, flagVa, Placement.FLAG_PACKET);
    }

    @Actor
    public void localReader(II_Result r) {
        r.r1 = Placement.flagState(mr.getLongAcquire(flagVa));
        r.r2 = Placement.payloadState(mr, payloadVa);
    }
}
