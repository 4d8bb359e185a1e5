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
}
