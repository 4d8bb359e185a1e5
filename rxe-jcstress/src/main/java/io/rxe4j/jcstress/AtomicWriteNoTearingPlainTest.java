package io.rxe4j.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import io.rxe4j.core.memory.RxeMr;
import java.lang.foreign.ValueLayout;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.J_Result;

/**
 * Issue 3 (b): an ATOMIC WRITE is single-copy atomic for a local reader using a plain aligned MemorySegment load (JAVA_LONG).
 *
 * <p>The word starts as {@link Tearing#OLD} = 0x00000000_FFFFFFFF; the responder's
 * {@code executeAtomicWrite} path stores {@link Tearing#NEW} = 0xFFFFFFFF_00000000. Every byte
 * differs between the two, so a tear at any granularity reads as neither (a 32-bit tear reads 0
 * or -1).
 */
@JCStressTest
@Description("ATOMIC WRITE (setLongRelease) vs a concurrent plain 64-bit load: no torn value")
@Outcome(id = "4294967295", expect = ACCEPTABLE, desc = "Old value 0x00000000_FFFFFFFF.")
@Outcome(id = "-4294967296", expect = ACCEPTABLE, desc = "New value 0xFFFFFFFF_00000000.")
@Outcome(expect = FORBIDDEN, desc = "Torn value: a mix of the old and the new bytes.")
@State
public class AtomicWriteNoTearingPlainTest {
    private final RxeMr mr = Tearing.newWord();
    private final long va = mr.iova();

    @Actor
    public void responder() {
        Placement.placeAtomicWrite(mr, va, Tearing.NEW_PACKET);
    }

    @Actor
    public void localReader(J_Result r) {
        r.r1 = mr.segment().get(ValueLayout.JAVA_LONG, mr.offset(va));
    }
}
