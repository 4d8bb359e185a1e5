package app;

import io.rxe4j.test.ConnectedPair;
import io.rxe4j.test.RxeFabric;
import io.rxe4j.test.RxeTest;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** A consumer's test with the kit: a pair through the CM on virtual time, loss injected, data checked. */
@RxeTest(faults = "drop=0.05", seed = 7)
class AppTest {
    @Test
    void aWriteArrivesUnderLoss(RxeFabric fabric) {
        ConnectedPair pair = fabric.connect();
        try (MemoryRegion src = pair.client().pd().allocMr(65536, Access.LOCAL_WRITE);
                MemoryRegion dst = pair.server().pd().allocMr(65536, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            for (int i = 0; i < 65536; i++) {
                src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            fabric.execute(pair.client().qp(), new SendWr().rdmaWrite(1, dst.addr(), dst.rkey(),
                    new Sge(src.addr(), 65536, src.lkey())));
            Assertions.assertArrayEquals(src.segment().toArray(ValueLayout.JAVA_BYTE),
                    dst.segment().toArray(ValueLayout.JAVA_BYTE));
            Assertions.assertTrue(fabric.faultsInjected() > 0, "loss was injected");
        }
    }

    /** Runs only with -Dconsumer.leak=true: leaks an MR, so the kit must fail it naming the MR. */
    @Test
    void leaksAnMrOnPurpose(RxeFabric fabric) {
        Assumptions.assumeTrue(Boolean.getBoolean("consumer.leak"), "the leak run only");
        fabric.connect().server().pd().allocMr(4096, Access.LOCAL_WRITE);
    }
}
