package io.rxe4j.verbs.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * A send the socket refuses for a transient reason (the link is down: "Network is unreachable") is
 * a loss, not a fatal local error (issue 19 items 2 and 6): the QP's timers resend it once the link
 * is back, so a 2 s link flap costs nothing but time with the tools' ACK timeout 17; an outage that
 * outlasts the retry budget ends in RETRY_EXC_ERR whose reason names the local refusal, not just the
 * silent peer. (A datagram larger than the link carries fails at once: {@link PathMtuTest}.)
 * Virtual time.
 */
class LocalSendFailureTest {
    private static final long SECOND = 1_000_000_000L;

    @Test
    void aTwoSecondLinkFlapIsRecoveredByTheRetransmitTimer() {
        try (VirtualRcPair p = new VirtualRcPair(1 << 20, new VirtualRcPair.Params(Mtu.MTU_1024, 17, 7, 0x100, 0x200))) {
            p.tap(true).refuseWith = new IOException("sendmmsg(..) failed with error(-101): Network is unreachable");
            p.a.qp.postSend(write(p, 1));
            p.vs.runFor(2 * SECOND);
            assertThat(p.a.dev.counter("send_err")).as("the refusals were counted").isPositive();
            assertThat(p.a.qp.state()).as("a link down does not fail the QP").isEqualTo(QpState.RTS);
            p.tap(true).refuseWith = null; // the link is back
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.SUCCESS);
            assertThat(wc.wrId).isEqualTo(1);
            assertThat(p.a.dev.counter("retransmit_timeouts")).as("recovered by the timer").isPositive();
            assertThat(p.a.qp.state()).isEqualTo(QpState.RTS);
        }
    }

    @Test
    void anOutageLongerThanTheRetryBudgetNamesTheLocalRefusal() {
        try (VirtualRcPair p = new VirtualRcPair(1 << 20, new VirtualRcPair.Params(Mtu.MTU_1024, 14, 3, 0x100, 0x200))) {
            p.tap(true).refuseWith = new IOException("Network is unreachable");
            p.a.qp.postSend(write(p, 7));
            WorkCompletion wc = p.next(p.a);
            assertThat(wc.status).isEqualTo(WcStatus.RETRY_EXC_ERR);
            assertThat(p.a.qp.errorReason())
                    .contains("no acknowledgement from")
                    .contains("this side could not send either")
                    .contains("Network is unreachable");
        }
    }

    private static SendWr write(VirtualRcPair p, long wrId) {
        return new SendWr().rdmaWrite(wrId, p.b.mr.addr(), p.b.mr.rkey(), new Sge(p.a.mr.addr(), 8192, p.a.mr.lkey()))
                .signaled();
    }
}
