package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.cm.ib.CmMad;
import io.rxe4j.verbs.cm.ib.IbCm;
import io.rxe4j.verbs.provider.QpOps;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the REQ and REP carry in the IB CM's ECE fields between rxe4j devices (vendor ID 0x525845,
 * options in the attribute modifier: the device's UDP port, the passive side's path MTU, the
 * extension bits; {@code docs/ib-cm.md}), and what happens towards a peer that sends none (kernel
 * rdma_cm) or echoes the vendor ID with options 0 (librdmacm's passive side). On virtual time,
 * through the public connection manager; MADs are read (and, to play the other peer, rewritten with
 * a fresh ICRC) as they cross the fabric.
 */
class CmEceTest {
    private static final InetSocketAddress SERVER = new InetSocketAddress("10.0.0.1", 4791);
    private static final long MAX = 60_000_000_000L;
    private static final int BOTH = QpOps.EXT_HOLDS_OUT_OF_ORDER | QpOps.EXT_SELECTIVE_NAK;
    /** The MAD's offset in a UD packet to QP1: BTH 12 + DETH 8. */
    private static final int MAD = 20;

    private VirtualScheduler vs;
    private InJvmFabric fabric;
    private final List<RdmaDevice> devices = new ArrayList<>();
    /** Copies of the CM MADs that crossed the fabric (as delivered, after any rewrite). */
    private final List<byte[]> mads = new ArrayList<>();
    /** Rewrites a MAD in place (offsets from the MAD's start) before it is delivered. */
    private Consumer<Mad> rewrite = m -> { };

    /** A MAD in a packet crossing the fabric. */
    record Mad(ByteBuf b, int at) {
        int attribute() {
            return b.getUnsignedShort(at + 16);
        }
    }

    @AfterEach
    void close() {
        for (RdmaDevice d : devices) {
            d.closeAll();
        }
        if (fabric != null) {
            fabric.closeAll();
        }
        if (vs != null) {
            vs.shutdown();
        }
    }

    private RdmaDevice open(InetSocketAddress at) {
        RdmaDevice d = RdmaDevice.open(fabric.newTransport(at), DeviceConfig.defaults().withSeed(devices.size() + 1));
        devices.add(d);
        return d;
    }

    private void fabric() {
        vs = new VirtualScheduler();
        fabric = InJvmFabric.builder().sharedScheduler(vs).latencyNanos(20_000).build();
        Icrc icrc = new Icrc();
        fabric.setFilter((b, from, to) -> {
            int at = b.readerIndex();
            if ((b.getInt(at + 4) & 0xFFFFFF) != 1) {
                return true; // not to QP1
            }
            Mad m = new Mad(b, at + MAD);
            rewrite.accept(m);
            icrc.write(b, at, b.readableBytes(), from, to);
            byte[] copy = new byte[256];
            b.getBytes(at + MAD, copy);
            mads.add(copy);
            return true;
        });
    }

    private byte[] mad(int attribute) {
        for (byte[] m : mads) {
            if ((((m[16] & 0xFF) << 8) | (m[17] & 0xFF)) == attribute) {
                return m;
            }
        }
        throw new AssertionError("no MAD of attribute 0x" + Integer.toHexString(attribute) + " crossed");
    }

    private static int u24(byte[] m, int off) {
        return ((m[off] & 0xFF) << 16) | ((m[off + 1] & 0xFF) << 8) | (m[off + 2] & 0xFF);
    }

    private static int attrMod(byte[] m) {
        return java.nio.ByteBuffer.wrap(m).getInt(20);
    }

    private static int repVendor(byte[] m) {
        return ((m[24 + 15] & 0xFF) << 16) | ((m[24 + 19] & 0xFF) << 8) | (m[24 + 23] & 0xFF);
    }

    /** Connects a client device at {@code clientAt} to a listener on SERVER; @return {client, server}. */
    private RdmaConnection[] connect(InetSocketAddress clientAt, ConnectionParams serverParams) {
        RdmaDevice server = open(SERVER);
        RdmaDevice client = open(clientAt);
        ProtectionDomain spd = server.allocPd();
        ProtectionDomain cpd = client.allocPd();
        CompletionQueue scq = server.createCq(16);
        CompletionQueue ccq = client.createCq(16);
        RdmaListener listener = RdmaListener.listen(server, 7471);
        CompletableFuture<RdmaConnection> s = listener.acceptAsync(spd, scq, scq, serverParams);
        CompletableFuture<RdmaConnection> c = RdmaConnection.connectAsync(cpd, ccq, ccq, SERVER, 7471,
                ConnectionParams.defaults(), qp -> { });
        assertThat(vs.runUntil(() -> s.isDone() && c.isDone(), MAX)).as("connected: %s %s", c, s).isTrue();
        return new RdmaConnection[] {c.join(), s.join()};
    }

    @Test
    void rxe4jDevicesTellTheirPortTheServersMtuAndAgreeOnTheExtensions() {
        fabric();
        // a client on another port than 4791: the server can only answer it because the REQ names the port
        RdmaConnection[] cs = connect(new InetSocketAddress("10.0.0.2", 5000),
                ConnectionParams.defaults().withPathMtu(Mtu.MTU_1024));
        byte[] req = mad(CmMad.ATTR_REQ);
        assertThat(u24(req, 24 + 5)).as("REQ vendor ID").isEqualTo(IbCm.ECE_VENDOR_ID);
        assertThat(attrMod(req) >>> 16).as("the client device's UDP port").isEqualTo(5000);
        assertThat(attrMod(req) & 0xFFF).as("extensions offered").isEqualTo(BOTH);
        byte[] rep = mad(CmMad.ATTR_REP);
        assertThat(repVendor(rep)).isEqualTo(IbCm.ECE_VENDOR_ID);
        assertThat(attrMod(rep) >>> 16).as("4791 is said as 0").isZero();
        assertThat((attrMod(rep) >>> 12) & 0xF).as("the server's path MTU, IB enum 3 = 1024").isEqualTo(3);
        assertThat(attrMod(rep) & 0xFFF).as("extensions agreed").isEqualTo(BOTH);
        assertThat(cs[1].remoteAddress()).isEqualTo(new InetSocketAddress("10.0.0.2", 5000));
        assertThat(cs[0].pathMtu()).as("the client takes the server's smaller MTU").isEqualTo(Mtu.MTU_1024);
        assertThat(cs[0].qp().query().pathMtu).isEqualTo(Mtu.MTU_1024);
        assertThat(cs[1].qp().query().pathMtu).isEqualTo(Mtu.MTU_1024);
        assertThat(cs[0].qp().core.peerExtensions()).isEqualTo(BOTH);
        assertThat(cs[1].qp().core.peerExtensions()).isEqualTo(BOTH);
    }

    @Test
    void aReqWithoutEceIsAnsweredWithoutItAndItsMtuIsUsed() {
        fabric();
        rewrite = m -> { // the client plays a kernel rdma_cm: no ECE in its REQ
            if (m.attribute() == CmMad.ATTR_REQ) {
                m.b().setMedium(m.at() + 24 + 5, 0);
                m.b().setInt(m.at() + 20, 0);
            }
        };
        RdmaConnection[] cs = connect(new InetSocketAddress("10.0.0.2", 4791),
                ConnectionParams.defaults().withPathMtu(Mtu.MTU_1024));
        byte[] rep = mad(CmMad.ATTR_REP);
        assertThat(repVendor(rep)).as("librdmacm refuses a REP with a vendor its REQ did not name").isZero();
        assertThat(attrMod(rep)).isZero();
        // the server cannot tell such a peer a smaller MTU: it uses the REQ's, as Linux does (cm-facts §3.1)
        assertThat(cs[1].qp().query().pathMtu).isEqualTo(Mtu.MTU_4096);
        assertThat(cs[0].qp().query().pathMtu).isEqualTo(Mtu.MTU_4096);
        assertThat(cs[0].qp().core.peerExtensions()).isZero();
        assertThat(cs[1].qp().core.peerExtensions()).isZero();
    }

    @Test
    void aRepThatEchoesTheVendorWithOptionsZeroAgreesToNothing() {
        fabric();
        rewrite = m -> { // the server plays librdmacm's passive side: our vendor ID back, options 0
            if (m.attribute() == CmMad.ATTR_REP) {
                m.b().setInt(m.at() + 20, 0);
            }
        };
        RdmaConnection[] cs = connect(new InetSocketAddress("10.0.0.2", 4791), ConnectionParams.defaults());
        assertThat(repVendor(mad(CmMad.ATTR_REP))).isEqualTo(IbCm.ECE_VENDOR_ID);
        assertThat(cs[0].qp().core.peerExtensions()).as("options 0: no extensions").isZero();
        assertThat(cs[0].pathMtu()).as("no MTU stated: the REQ's").isEqualTo(Mtu.MTU_4096);
        assertThat(cs[0].qp().state()).isEqualTo(QpState.RTS);
    }
}
