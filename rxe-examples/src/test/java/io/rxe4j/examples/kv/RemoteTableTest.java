package io.rxe4j.examples.kv;

import static org.assertj.core.api.Assertions.assertThat;

import io.rxe4j.test.ConnectedPair;
import io.rxe4j.test.RxeFabric;
import io.rxe4j.test.RxeTest;
import io.rxe4j.verbs.cm.ConnectionParams;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Application code tested with rxe4j's test kit ({@code docs/testing.md}): a remote table's puts,
 * gets and counters are exact over a link that drops, duplicates and reorders packets, on virtual
 * time, with a fixed seed; the kit's leak check makes sure the application closes its memory.
 */
@RxeTest(faults = "drop=0.03,dup=0.01,reorder=0.02,dir=out", seed = 2026)
class RemoteTableTest {
    /** Waits for {@code f} while driving the client's completions (the application's progress loop). */
    private static <T> T await(RxeFabric fabric, RemoteTableClient client, CompletableFuture<T> f) {
        fabric.await(() -> {
            client.progress();
            return f.isDone();
        }, RxeFabric.DEFAULT_TIMEOUT, "a table operation");
        return f.join();
    }

    @Test
    void putsGetsAndCountersAreExactUnderLoss(RxeFabric fabric) {
        try (RemoteTable table = RemoteTable.create(fabric.pd(1), 64, 256)) {
            ConnectedPair pair = fabric.connect(0, 1, ConnectionParams.defaults().withAcceptPrivateData(table.advert()));
            try (RemoteTableClient client = RemoteTableClient.open(pair.client().connection(), pair.client().pd(),
                    pair.client().cq(), 8)) {
                for (int i = 0; i < client.slots(); i++) {
                    byte[] v = new byte[256];
                    for (int k = 8; k < v.length; k++) {
                        v[k] = (byte) (i * 31 + k);
                    }
                    await(fabric, client, client.put(i, v));
                }
                for (int i = 0; i < client.slots(); i++) {
                    byte[] got = await(fabric, client, client.get(i));
                    for (int k = 8; k < got.length; k++) {
                        assertThat(got[k]).as("slot %d byte %d", i, k).isEqualTo((byte) (i * 31 + k));
                    }
                }
                // 8 increments in flight at a time, 400 in all, on one counter: each value seen once
                List<Long> seen = new ArrayList<>();
                List<CompletableFuture<Long>> inFlight = new ArrayList<>();
                for (int n = 0; n < 400; n++) {
                    if (inFlight.size() == 8) {
                        seen.add(await(fabric, client, inFlight.remove(0)));
                    }
                    inFlight.add(client.increment(5));
                }
                for (CompletableFuture<Long> f : inFlight) {
                    seen.add(await(fabric, client, f));
                }
                assertThat(seen).as("FETCH_AND_ADD results: no increment lost or applied twice").doesNotHaveDuplicates()
                        .hasSize(400).allMatch(v -> v >= 0 && v < 400);
                assertThat(table.slot(5).get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.nativeOrder()), 0))
                        .isEqualTo(400);
                assertThat(fabric.faultsInjected()).as("the link did lose, duplicate and reorder").isPositive();
            }
        }
    }
}
