package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.core.wire.Psn;
import org.junit.jupiter.api.Test;

/** {@link UnackedPackets}: order, the 64-packet bound, budget bytes held, the 24-bit wrap, coalescing. */
class UnackedPacketsTest {
    @Test
    void acknowledgementForgetsThePacketsBeforeCompPsnAndReturnsTheirBytes() {
        UnackedPackets u = new UnackedPackets();
        u.add(10, 100, 1000, 0);
        u.add(11, 200, 2000, 0);
        u.add(15, 300, 64, 3); // a READ request covering PSNs 12..15
        assertThat(u.size()).isEqualTo(3);
        assertThat(u.heldBytes()).isEqualTo(3064);
        assertThat(u.acknowledgeBefore(11)).as("only PSN 10 is before 11").isEqualTo(1000);
        assertThat(u.oldestSentAt()).isEqualTo(200);
        assertThat(u.acknowledgeBefore(15)).as("the READ covers up to 15").isEqualTo(2000);
        assertThat(u.oldestTimeoutShift()).isEqualTo(3);
        assertThat(u.acknowledgeBefore(16)).isEqualTo(64);
        assertThat(u.isEmpty()).isTrue();
        assertThat(u.heldBytes()).isZero();
    }

    @Test
    void theBoundIs64AndAFullRingRefusesAnotherPacket() {
        UnackedPackets u = new UnackedPackets();
        for (int i = 0; i < UnackedPackets.CAPACITY; i++) {
            u.add(i, i, 1, 0);
        }
        assertThat(u.isFull()).isTrue();
        assertThatThrownBy(() -> u.add(64, 64, 1, 0)).isInstanceOf(IllegalStateException.class).hasMessageContaining("64");
        assertThat(u.clear()).isEqualTo(64);
        assertThat(u.size()).isZero();
    }

    @Test
    void psnsAcrossThe24BitWrapKeepTheirOrder() {
        UnackedPackets u = new UnackedPackets();
        u.add(0xFFFFFE, 1, 10, 0);
        u.add(0xFFFFFF, 2, 10, 0);
        u.add(0, 3, 10, 0);
        assertThat(u.acknowledgeBefore(0)).isEqualTo(20);
        assertThat(u.acknowledgeBefore(Psn.next(0))).isEqualTo(10);
    }

    @Test
    void coalescingExtendsTheNewestPacketWhenTheRingIsFull() {
        UnackedPackets u = new UnackedPackets();
        for (int i = 0; i < UnackedPackets.CAPACITY; i++) {
            u.add(i, i, 100, 0);
        }
        u.addOrCoalesce(99, 1000); // PSNs 64..99 sent before a rewind: the newest packet now covers them
        assertThat(u.size()).isEqualTo(UnackedPackets.CAPACITY);
        assertThat(u.acknowledgeBefore(64)).as("the newest packet now ends at 99").isEqualTo(63 * 100);
        assertThat(u.size()).isEqualTo(1);
        assertThat(u.acknowledgeBefore(100)).isEqualTo(100);
        u.addOrCoalesce(120, 5);
        assertThat(u.size()).as("with room it is a packet of its own, holding no bytes").isEqualTo(1);
        assertThat(u.heldBytes()).isZero();
        assertThat(u.oldestSentAt()).isEqualTo(5);
    }

    @Test
    void karnsRuleOnlyPacketsSentOnceGiveAnRttSample() {
        UnackedPackets u = new UnackedPackets();
        u.add(1, 1, 100, 64, 0, false);
        u.add(2, 2, 200, 64, 0, true); // a retransmission
        u.add(3, 10, 300, 64, 0, false); // a READ request, PSNs 3..10
        assertThat(u.sampleSentAt(2, Long.MIN_VALUE)).as("PSN 1, sent once").isEqualTo(100);
        u.acknowledgeBefore(2);
        assertThat(u.sampleSentAt(3, Long.MIN_VALUE)).as("PSN 2 was resent").isEqualTo(Long.MIN_VALUE);
        u.acknowledgeBefore(3);
        assertThat(u.sampleSentAt(4, Long.MIN_VALUE)).as("the READ's first response").isEqualTo(300);
        assertThat(u.sampleSentAt(5, Long.MIN_VALUE)).as("sampled once").isEqualTo(Long.MIN_VALUE);
        UnackedPackets q = new UnackedPackets();
        q.add(20, 30, 1000, 64, 0, false); // a READ sent at 1000
        assertThat(q.sampleSentAt(31, Long.MIN_VALUE)).as("a READ whole: no sample").isEqualTo(Long.MIN_VALUE);
        assertThat(q.sampleSentAt(21, 1500)).as("another response arrived after it was sent: queued, no sample")
                .isEqualTo(Long.MIN_VALUE);
        u.markRetransmitted(7);
        u.add(11, 11, 400, 64, 0, false);
        u.markRetransmitted(11);
        assertThat(u.sampleSentAt(12, Long.MIN_VALUE)).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void theLimitGrowsTheRingUpToTheMaximum() {
        UnackedPackets u = new UnackedPackets();
        u.limit(1000);
        for (int i = 0; i < 1000; i++) {
            u.add(i, i, i, 1, 0, false);
        }
        assertThat(u.isFull()).isTrue();
        assertThat(u.oldestSentAt()).isZero();
        assertThat(u.newestLastPsn()).isEqualTo(999);
        assertThat(u.acknowledgeBefore(500)).isEqualTo(500);
        assertThat(u.oldestSentAt()).isEqualTo(500);
        u.limit(1 << 30);
        assertThat(u.limit()).isEqualTo(UnackedPackets.MAX_CAPACITY);
        u.limit(1);
        assertThat(u.limit()).isEqualTo(UnackedPackets.CAPACITY);
    }
}
