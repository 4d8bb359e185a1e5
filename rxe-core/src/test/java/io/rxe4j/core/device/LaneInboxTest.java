package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LaneInboxTest {
    private static final InetSocketAddress S = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress R = new InetSocketAddress("10.0.0.2", 4791);

    @Test
    void boundedFifoThatRefusesWhenFullAndFreesSlotsOnDrain() {
        LaneInbox box = new LaneInbox(4);
        List<ByteBuf> in = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            ByteBuf b = Unpooled.buffer(4).writeInt(i);
            in.add(b);
            assertThat(box.offer(b, S, R, i == 2)).isTrue();
        }
        ByteBuf extra = Unpooled.buffer(4).writeInt(99);
        assertThat(box.offer(extra, S, R, false)).as("full: the caller keeps the packet").isFalse();
        assertThat(extra.refCnt()).isEqualTo(1);
        List<Integer> out = new ArrayList<>();
        List<Boolean> ce = new ArrayList<>();
        assertThat(box.drain((p, s, r, c) -> {
            assertThat(s).isEqualTo(S);
            assertThat(r).isEqualTo(R);
            out.add(p.getInt(0));
            ce.add(c);
        })).isEqualTo(4);
        assertThat(out).containsExactly(0, 1, 2, 3);
        assertThat(ce).containsExactly(false, false, true, false);
        assertThat(box.isEmpty()).isTrue();
        assertThat(box.offer(extra, S, R, false)).as("slots are free again").isTrue();
        assertThat(box.drain((p, s, r, c) -> out.add(p.getInt(0)))).isEqualTo(1);
        assertThat(out).endsWith(99);
        assertThatThrownBy(() -> new LaneInbox(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 3");
    }

    @Test
    void oneProducerThreadAndOneConsumerThreadLoseNothingAndKeepOrder() throws Exception {
        LaneInbox box = new LaneInbox(64);
        int n = 200_000;
        AtomicLong next = new AtomicLong();
        Thread producer = new Thread(() -> {
            for (int i = 0; i < n; i++) {
                ByteBuf b = Unpooled.buffer(4).writeInt(i);
                while (!box.offer(b, S, R, false)) {
                    Thread.onSpinWait();
                }
            }
        });
        producer.start();
        long[] bad = {0};
        while (next.get() < n) {
            box.drain((p, s, r, c) -> {
                if (p.getInt(0) != next.getAndIncrement()) {
                    bad[0]++;
                }
            });
        }
        producer.join();
        assertThat(bad[0]).isZero();
        assertThat(next.get()).isEqualTo(n);
    }
}
