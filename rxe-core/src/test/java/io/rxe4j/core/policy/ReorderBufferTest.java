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
}
