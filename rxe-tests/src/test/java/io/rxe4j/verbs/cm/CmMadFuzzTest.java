package io.rxe4j.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.Counter;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import io.rxe4j.verbs.cm.ib.CmMad;
import io.rxe4j.verbs.cm.ib.IbCm;
import io.rxe4j.verbs.internal.VerbsAccess;
import io.rxe4j.verbs.provider.GsiOps;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The connection manager under hostile MADs (issue 23 item 6): a server device with a listener and
 * a client device on virtual time, one connection established between them and one request waiting
 * in the listener; then a third device sends their QP1s MADs that are replays of the ones that
 * crossed (the REQ, REP, RTU, DREQ of the connection, verbatim or with bytes changed, under another
 * attribute), truncated ones, ones with a broken common header, and ones with a valid header and
 * random bytes. After each MAD no object leaks (the devices' open objects never grow) and the
 * CM's table stays bounded; nothing reaches the log as a failure of the MAD listener; at the end,
 * after the CM's longest timers (40 hours of virtual time), the tables hold only what is still
 * connected, and a new connection through the same listener carries a SEND: the CM survived.
 *
 * <p>{@link #seededInputs} runs 12 seeds × 150 MADs in every build, with the checked-in Jazzer
 * inputs of {@link #cmMads} (regression mode); {@code JAZZER_FUZZ=1} fuzzes ({@code docs/fuzzing.md}).
 */
class CmMadFuzzTest {
    private static final InetSocketAddress SERVER = new InetSocketAddress("10.0.0.1", 4791);
    private static final InetSocketAddress CLIENT = new InetSocketAddress("10.0.0.2", 4791);
    private static final InetSocketAddress STRANGER = new InetSocketAddress("10.0.0.3", 4791);
    private static final long MS = 1_000_000L;
    private static final long MAX = 200_000 * MS;
    private static final int PORT = 7471;
    private static final int[] ATTRS = {CmMad.ATTR_CLASS_PORT_INFO, CmMad.ATTR_REQ, CmMad.ATTR_MRA, CmMad.ATTR_REJ,
        CmMad.ATTR_REP, CmMad.ATTR_RTU, CmMad.ATTR_DREQ, CmMad.ATTR_DREP, CmMad.ATTR_SIDR_REQ, CmMad.ATTR_SIDR_REP,
        CmMad.ATTR_LAP, CmMad.ATTR_APR, 0x7FFF};

    /** One input's source of choices: a seeded generator or Jazzer's data. */
    private interface Choices {
        int nextInt(int from, int toInclusive);

        byte nextByte();
    }

    @Test
    void seededInputs() {
        long malformed = 0;
        long stale = 0;
        for (int seed = 1; seed <= 12; seed++) {
            SplittableRandom rnd = new SplittableRandom(seed);
            long[] c = run(new Choices() {
                @Override
                public int nextInt(int from, int toInclusive) {
                    return rnd.nextInt(from, toInclusive + 1);
                }

                @Override
                public byte nextByte() {
                    return (byte) rnd.nextInt(256);
                }
            }, 150, "seed " + seed);
            malformed += c[0];
            stale += c[1];
        }
        assertThat(malformed).as("the inputs reach the malformed drops (cm_drop_malformed)").isPositive();
        assertThat(stale).as("the inputs reach the stale drops (cm_drop_stale)").isPositive();
    }

    @FuzzTest(maxDuration = "5m")
    void cmMads(FuzzedDataProvider data) {
        run(new Choices() {
            @Override
            public int nextInt(int from, int toInclusive) {
                return data.remainingBytes() == 0 ? from : data.consumeInt(from, toInclusive);
            }

            @Override
            public byte nextByte() {
                return data.remainingBytes() == 0 ? 0 : data.consumeByte();
            }
        }, 100, "jazzer input");
    }

    /** @return {cm_drop_malformed, cm_drop_stale} summed over both devices */
    private long[] run(Choices ch, int mads, String what) {
        VirtualScheduler vs = new VirtualScheduler();
        List<byte[]> seen = new ArrayList<>();
        InJvmFabric fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(20_000).build();
        fabric.setFilter((ByteBuf b, InetSocketAddress from, InetSocketAddress to) -> {
            int at = b.readerIndex();
            if (!from.equals(STRANGER) && b.readableBytes() >= 20 + CmMad.SIZE && (b.getInt(at + 4) & 0xFFFFFF) == 1) {
                byte[] mad = new byte[CmMad.SIZE];
                b.getBytes(at + 20, mad); // after the BTH and the DETH
                seen.add(mad);
            }
            return true;
        });
        Logger gsiLog = (Logger) LoggerFactory.getLogger("io.rxe4j.core.device.GsiQp");
        Logger cmLog = (Logger) LoggerFactory.getLogger(IbCm.class);
        ListAppender<ILoggingEvent> warnings = new ListAppender<>();
        warnings.start();
        gsiLog.addAppender(warnings);
        cmLog.addAppender(warnings);
        RdmaDevice server = RdmaDevice.open(fabric.newTransport(SERVER), DeviceConfig.defaults().withSeed(1));
        RdmaDevice client = RdmaDevice.open(fabric.newTransport(CLIENT), DeviceConfig.defaults().withSeed(2));
        RdmaDevice stranger = RdmaDevice.open(fabric.newTransport(STRANGER), DeviceConfig.defaults().withSeed(3));
        try {
            ProtectionDomain spd = server.allocPd();
            CompletionQueue scq = server.createCq(64);
            ProtectionDomain cpd = client.allocPd();
            CompletionQueue ccq = client.createCq(64);
            RdmaListener listener = RdmaListener.listen(server, PORT, 4);
            CompletableFuture<RdmaConnection> s = listener.acceptAsync(spd, scq, scq, ConnectionParams.defaults());
            CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(cpd, ccq, ccq, SERVER, PORT,
                    ConnectionParams.defaults(), qp -> { });
            assertThat(vs.runUntil(() -> s.isDone() && c.isDone(), MAX)).as("%s: connected", what).isTrue();
            RdmaConnection established = c.join();
            // a disconnect and its DREQ/DREP to replay, on a second connection
            CompletableFuture<RdmaConnection> s3 = listener.acceptAsync(spd, scq, scq, ConnectionParams.defaults());
            vs.runFor(10 * MS);
            CompletableFuture<RdmaConnection> c3 = RdmaConnection.connectAsync(cpd, ccq, ccq, SERVER,
                    PORT, ConnectionParams.defaults(), qp -> { });
            assertThat(vs.runUntil(() -> s3.isDone() && c3.isDone(), MAX)).as("%s: connected", what).isTrue();
            assertThat(vs.runUntil(() -> c3.join().disconnectAsync().isDone(), MAX)).isTrue();
            c3.join().close();
            s3.join().close();
            vs.runFor(10 * MS);
            // one more request, left waiting in the listener
            CompletableFuture<RdmaConnection> waiting = RdmaConnection.connectAsync(cpd, ccq, ccq, SERVER,
                    PORT, ConnectionParams.defaults().withTimeout(java.time.Duration.ofHours(1)), qp -> { });
            vs.runFor(10 * MS);
            assertThat(seen).as("%s: the MADs to replay", what).hasSizeGreaterThanOrEqualTo(8);
            int serverObjects = server.openObjects();
            int clientObjects = client.openObjects();
            GsiOps evil = VerbsAccess.get().gsi(stranger);
            IbCm serverCm = IbCm.of(server);
            IbCm clientCm = IbCm.of(client);
            warnings.list.clear();

            for (int i = 0; i < mads; i++) {
                byte[] mad = mad(ch, seen);
                InetSocketAddress to = ch.nextInt(0, 3) == 0 ? CLIENT : SERVER;
                evil.send(to, ch.nextInt(0, 15) == 0 ? ch.nextInt(0, 0xFFFFFF) : GsiOps.QPN, mad);
                vs.runFor(ch.nextInt(0, 20) == 0 ? ch.nextInt(1, 10_000) * MS : MS);
                // (a MAD that fails the waiting connect destroys its QP: fewer objects, never more)
                assertThat(server.openObjects()).as("%s, MAD %d: no object leaks on the server", what, i)
                        .isLessThanOrEqualTo(serverObjects);
                assertThat(client.openObjects()).as("%s, MAD %d: no object leaks on the client", what, i)
                        .isLessThanOrEqualTo(clientObjects);
                int[] n = new int[2];
                vs.execute(() -> {
                    n[0] = serverCm.idCount();
                    n[1] = clientCm.idCount();
                });
                vs.runFor(0);
                assertThat(n[0]).as("%s, MAD %d: the server's CM table is bounded", what, i).isLessThanOrEqualTo(1030);
                assertThat(n[1]).as("%s, MAD %d: the client's CM table is bounded", what, i).isLessThanOrEqualTo(1030);
            }
            assertThat(warnings.list).as("%s: no MAD made the CM or QP1 fail", what)
                    .noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.WARN));

            // the requests the fuzz queued are answered, and the CM's longest timers run out
            for (ConnectRequest r; (r = take(listener)) != null; ) {
                r.reject(new byte[0]);
            }
            vs.runFor(TimeUnit.HOURS.toNanos(40));
            assertThat(waiting).as("%s: the waiting connect has ended", what).isDone();
            int[] n = new int[2];
            vs.execute(() -> {
                n[0] = serverCm.idCount();
                n[1] = clientCm.idCount();
            });
            vs.runFor(0);
            int up = established.isConnected() ? 1 : 0;
            assertThat(n[1]).as("%s: the client's CM holds only its live connection", what).isEqualTo(up);
            assertThat(n[0]).as("%s: the server's CM holds only its live connection", what)
                    .isLessThanOrEqualTo(1);

            // the CM still connects, and the connection carries data
            CompletableFuture<RdmaConnection> s4 = listener.acceptAsync(spd, scq, scq, ConnectionParams.defaults());
            CompletableFuture<RdmaConnection> c4 = RdmaConnection.connectAsync(cpd, ccq, ccq, SERVER,
                    PORT, ConnectionParams.defaults(), qp -> { });
            assertThat(vs.runUntil(() -> s4.isDone() && c4.isDone(), MAX)).as("%s: a new connection", what).isTrue();
            MemoryRegion smr = spd.allocMr(64, Access.LOCAL_WRITE);
            MemoryRegion cmr = cpd.allocMr(64, Access.LOCAL_WRITE);
            cmr.segment().fill((byte) 0x5A);
            s4.join().qp().postRecv(new RecvWr().set(1, new Sge(smr.addr(), 64, smr.lkey())));
            c4.join().qp().postSend(new SendWr().send(2, new Sge(cmr.addr(), 64, cmr.lkey())).signaled());
            WorkCompletion[] wc = {new WorkCompletion()};
            assertThat(vs.runUntil(() -> scq.poll(wc) == 1, MAX)).as("%s: the SEND arrives", what).isTrue();
            assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
            byte[] want = new byte[64];
            Arrays.fill(want, (byte) 0x5A);
            assertThat(smr.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).isEqualTo(want);
            listener.close();
            return new long[] {
                server.counters().get(Counter.CM_DROP_MALFORMED.rxeName())
                        + client.counters().get(Counter.CM_DROP_MALFORMED.rxeName()),
                server.counters().get(Counter.CM_DROP_STALE.rxeName())
                        + client.counters().get(Counter.CM_DROP_STALE.rxeName())};
        } finally {
            gsiLog.detachAppender(warnings);
            cmLog.detachAppender(warnings);
            server.closeAll();
            client.closeAll();
            stranger.closeAll();
            fabric.closeAll();
            vs.shutdown();
        }
    }

    private static ConnectRequest take(RdmaListener l) {
        try {
            return l.getRequest(java.time.Duration.ZERO);
        } catch (InterruptedException | RdmaCmException e) {
            throw new AssertionError(e);
        }
    }

    /** A hostile MAD: a replay (maybe changed), a truncated one, a broken header, or random bytes under a valid header. */
    private static byte[] mad(Choices ch, List<byte[]> seen) {
        int kind = ch.nextInt(0, 5);
        byte[] m;
        if (kind <= 2 || kind == 5) {
            m = seen.get(ch.nextInt(0, seen.size() - 1)).clone();
        } else {
            m = new byte[CmMad.SIZE];
            for (int i = CmMad.DATA; i < m.length; i++) {
                m[i] = ch.nextByte();
            }
            m[0] = CmMad.BASE_VERSION;
            m[1] = CmMad.CLASS_CM;
            m[2] = CmMad.CLASS_VERSION;
            m[3] = CmMad.METHOD_SEND;
            int attr = ATTRS[ch.nextInt(0, ATTRS.length - 1)];
            m[16] = (byte) (attr >>> 8);
            m[17] = (byte) attr;
        }
        switch (kind) {
            case 1 -> { // a few bytes changed, mostly in the fields (comm IDs, QPN, lengths, the private data header)
                int n = ch.nextInt(1, 4);
                for (int i = 0; i < n; i++) {
                    m[ch.nextInt(0, 150)] = ch.nextByte();
                }
            }
            case 2 -> { // under another attribute
                int attr = ATTRS[ch.nextInt(0, ATTRS.length - 1)];
                m[16] = (byte) (attr >>> 8);
                m[17] = (byte) attr;
            }
            case 4 -> m[ch.nextInt(0, 3)] ^= (byte) ch.nextInt(1, 255); // a broken common header
            case 5 -> m = Arrays.copyOf(m, ch.nextInt(1, CmMad.SIZE - 1)); // truncated
            default -> { }
        }
        return m;
    }
}
