package io.rxe4j.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
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
 * Negative control of {@link AtomicWriteFlagAfterPayloadDirectTest}: the same writer and reader,
 * except that the flag is stored with a <em>plain</em> store instead of {@code setLongRelease}
 * (and read with a plain load). Nothing then orders the payload before the flag, so "flag seen,
 * payload old or partial" is allowed by the Java memory model; it is ACCEPTABLE_INTERESTING here,
 * not FORBIDDEN. Whether this machine ever shows it tells how much the positive tests prove: if the
 * control shows the reordering, the harness can catch it; if it never does, the positive result
 * rests on the memory model (the release/acquire pair) more than on observation
 * ({@code docs/jcstress.md}).
 */
@JCStressTest
@Description("Negative control: ATOMIC WRITE flag stored with a plain store after a WRITE payload; "
        + "the reader may see the flag before the payload")
@Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Flag not seen yet, payload not seen yet.")
@Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Flag not seen yet, payload seen partly (copy in flight).")
@Outcome(id = "0, 2", expect = ACCEPTABLE, desc = "Flag not seen yet, whole payload seen.")
@Outcome(id = "1, 2", expect = ACCEPTABLE, desc = "Flag seen and the whole payload seen.")
@Outcome(id = {"1, 0", "1, 1"}, expect = ACCEPTABLE_INTERESTING,
        desc = "Flag seen with an old or partial payload: the reordering a plain store allows.")
@Outcome(expect = FORBIDDEN, desc = "A torn flag or bytes never written.")
@State
public class AtomicWriteFlagAfterPayloadPlainStoreControlTest {
    private final RxeMr mr = Placement.newMr(Placement.MR_LEN);
    private final long payloadVa = mr.iova();
    private final long flagVa = mr.iova() + Placement.PAYLOAD_LEN;
    private final ByteBuf writePacket = Placement.writePacket(Placement.Kind.DIRECT);

    @Actor
    public void responder() {
        Placement.placeWrite(mr, payloadVa, writePacket);
        Placement.placeAtomicWritePlain(mr, flagVa, Placement.FLAG_PACKET);
    }

    @Actor
    public void localReader(II_Result r) {
        r.r1 = Placement.flagState(mr.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, mr.offset(flagVa)));
        r.r2 = Placement.payloadState(mr, payloadVa);
    }
}
