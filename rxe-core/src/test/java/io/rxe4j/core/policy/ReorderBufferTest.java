package io.rxe4j.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.wire.Psn;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link ReorderBuffer}: held by PSN, duplicates, the packet and byte bounds, stale PSNs, ownership. */
class ReorderBufferTest {
    private final List<ByteBuf> made = new ArrayList<>();

    private ByteBuf pkt(int bytes) {
        ByteBuf b = Unpooled.buffer(bytes).writerIndex(bytes);
        made.add(b);
        return b;
    }

    @AfterEach
    void everyBufferIsReleasedExactlyOnce() {
        for (ByteBuf b : made) {
            assertThat(b.refCnt()).as("released by the buffer or the test").isZero();
        }
    }

    @Test
    void packetsAheadAreHeldAndTakenInSequence() {
        ReorderBuffer r = new ReorderBuffer();
        assertThat(r.offer(12, 10, pkt(100), 5)).isEqualTo(ReorderBuffer.Offer.HELD);
        assertThat(r.offer(11, 10, pkt(100), 7)).isEqualTo(ReorderBuffer.Offer.HELD);
        ByteBuf dup = pkt(100);
        assertThat(r.offer(12, 10, dup, 8)).isEqualTo(ReorderBuffer.Offer.DUPLICATE);
        dup.release();
        assertThat(r.size()).isEqualTo(2);
        assertThat(r.bytes()).isEqualTo(200);
        assertThat(r.oldestArrival()).isEqualTo(5);
        assertThat(r.take(10)).isNull();
        r.take(11).release();
        r.take(12).release();
        assertThat(r.isEmpty()).isTrue();
        assertThat(r.oldestArrival()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void theBoundsRefuseAndTheCallerKeepsThePacket() {
        ReorderBuffer r = new ReorderBuffer();
        ByteBuf far = pkt(10);
        assertThat(r.offer(Psn.add(10, ReorderBuffer.MAX_PACKETS), 10, far, 0)).isEqualTo(ReorderBuffer.Offer.FULL);
        far.release();
        ByteBuf behind = pkt(10);
        assertThat(r.offer(10, 10, behind, 0)).as("ePsn itself is never held").isEqualTo(ReorderBuffer.Offer.FULL);
        behind.release();
        int n = 0;
        while (r.offer(Psn.add(10, 1 + n), 10, pkt(4096), 0) == ReorderBuffer.Offer.HELD) {
            n++;
        }
        made.get(made.size() - 1).release(); // the refused one
        assertThat((long) n * 4096).isLessThanOrEqualTo(ReorderBuffer.MAX_BYTES).isGreaterThan(ReorderBuffer.MAX_BYTES - 4096);
        r.clear();
        assertThat(r.bytes()).isZero();
    }

    @Test
    void theRingGrowsAcrossThe24BitWrapAndStalePacketsAreDropped() {
        ReorderBuffer r = new ReorderBuffer();
        int e = 0xFFFFF0;
        for (int d = 1; d < 300; d += 7) {
            assertThat(r.offer(Psn.add(e, d), e, pkt(8), d)).isEqualTo(ReorderBuffer.Offer.HELD);
        }
        assertThat(r.holds(Psn.add(e, 295))).isTrue();
        r.dropBefore(Psn.add(e, 100)); // a READ moved ePsn past them
        assertThat(r.holds(Psn.add(e, 99))).isFalse();
        assertThat(r.holds(Psn.add(e, 106))).isTrue();
        r.clear();
    }

    /**
     * The missing ranges: holes before a packet that arrived by the deadline, ascending, split at
     * the run limit, bounded by the output, across the 24-bit wrap; holes after the newest old
     * packet are left out (they may still be reordered, not lost).
     */
    @Test
    void missingRangesAreTheHolesBeforeTheNewestOldPacket() {
        ReorderBuffer r = new ReorderBuffer();
        int e = Psn.MASK - 2; // ePsn three below the wrap
        // held: e+2, e+3 (arrived at 10), e+7 (at 20), e+12 (at 100: too young)
        r.offer(Psn.add(e, 2), e, pkt(10), 10);
        r.offer(Psn.add(e, 3), e, pkt(10), 10);
        r.offer(Psn.add(e, 7), e, pkt(10), 20);
        r.offer(Psn.add(e, 12), e, pkt(10), 100);
        int[] out = new int[16];
        int n = r.missing(e, 50, 256, out);
        assertThat(n).isEqualTo(2);
        assertThat(out[0]).isEqualTo(e);
        assertThat(out[1]).isEqualTo(2); // e, e+1
        assertThat(out[2]).isEqualTo(Psn.add(e, 4));
        assertThat(out[3]).isEqualTo(3); // e+4..e+6, across the wrap
        // with the young packet old enough, the holes before it count too
        n = r.missing(e, 100, 256, out);
        assertThat(n).isEqualTo(3);
        assertThat(out[4]).isEqualTo(Psn.add(e, 8));
        assertThat(out[5]).isEqualTo(4);
        // a run limit of 2 splits e+4..e+6 and e+8..e+11
        n = r.missing(e, 100, 2, out);
        assertThat(n).isEqualTo(5);
        assertThat(java.util.Arrays.copyOf(out, 10)).containsExactly(e, 2, Psn.add(e, 4), 2, Psn.add(e, 6), 1,
                Psn.add(e, 8), 2, Psn.add(e, 10), 2);
        // the output bounds the ranges
        int[] two = new int[4];
        assertThat(r.missing(e, 100, 256, two)).isEqualTo(2);
        // nothing old enough, or nothing held: none
        assertThat(r.missing(e, 5, 256, out)).isZero();
        r.clear();
        assertThat(r.missing(e, 1000, 256, out)).isZero();
    }

    @Test
    void theSpanIsThePsnBoundOrTheByteBoundInPacketsOfThePathMtu() {
        assertThat(ReorderBuffer.spanPackets(256)).isEqualTo(ReorderBuffer.MAX_PACKETS - 1);
        assertThat(ReorderBuffer.spanPackets(1024)).isEqualTo(ReorderBuffer.MAX_PACKETS - 1);
        assertThat(ReorderBuffer.spanPackets(4096)).isEqualTo((int) (ReorderBuffer.MAX_BYTES / (4096 + 64))).isEqualTo(2016);
        // a full span of the largest packets fits the byte bound: the buffer can hold all of it
        assertThat((long) ReorderBuffer.spanPackets(4096) * (4096 + ReorderBuffer.HEADER_ALLOWANCE_BYTES))
                .isLessThanOrEqualTo(ReorderBuffer.MAX_BYTES);
    }
}
