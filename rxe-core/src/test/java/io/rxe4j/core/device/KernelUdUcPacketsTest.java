package io.rxe4j.core.device;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rxe4j.core.cq.RxeCq;
import io.rxe4j.core.memory.RxeMr;
import io.rxe4j.core.memory.RxePd;
import io.rxe4j.core.qp.RxeQp;
import io.rxe4j.core.wire.Deth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Icrc;
import io.rxe4j.core.wire.Opcode;
import io.rxe4j.core.wire.PacketView;
import io.rxe4j.testing.Pcap;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.DeviceConfig;
import io.rxe4j.verbs.Mtu;
import io.rxe4j.verbs.QpAttr;
import io.rxe4j.verbs.QpCaps;
import io.rxe4j.verbs.QpState;
import io.rxe4j.verbs.QpType;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WcOpcode;
import io.rxe4j.verbs.WcStatus;
import io.rxe4j.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Golden input from the live kernel ({@code kernel-ud-uc.pcap}: frames of {@code scripts/interop-live.sh
 * /tmp/rp14}, Linux 6.12 {@code rdma_rxe}): a UD SEND ONLY of {@code ibv_ud_pingpong} over IPv4 and one over
 * IPv6 (Q_Key 0x11111111, 1024 bytes of 0x7b), and a 4096-byte {@code ibv_uc_pingpong} SEND as UC FIRST,
 * MIDDLE, MIDDLE, LAST over IPv4, each sent by the kernel to rxe4j's QP 0x10. Each parses; the IPv6 one's ICRC
 * checks out the way a UDP socket sees it, the IPv4 ones' with the captured IP ID; delivered to a UD and a
 * UC QP 0x10 they complete as the kernel peer's pingpong expects: src_qp, byte_len 40 + 1024 and the GRH
 * with the packet's addresses; 4096 bytes on the UC QP.
 */
class KernelUdUcPacketsTest {
    private static List<Pcap.UdpPacket> packets() throws Exception {
        Path p = Path.of(KernelUdUcPacketsTest.class.getResource("/io/rxe4j/core/wire/kernel-ud-uc.pcap").toURI());
        return Pcap.readUdp(p, 4791);
    }

    private static ByteBuf buf(Pcap.UdpPacket p) {
        return Unpooled.wrappedBuffer(p.udpPayload());
    }

    @Test
    void theKernelsUdAndUcPacketsParseAndTheirIcrcsCheck() throws Exception {
        List<Pcap.UdpPacket> all = packets();
        assertThat(all).hasSize(6);
        Icrc icrc = new Icrc();
        Opcode[] expected = {Opcode.UD_SEND_ONLY, Opcode.UC_SEND_FIRST, Opcode.UC_SEND_MIDDLE, Opcode.UC_SEND_MIDDLE,
            Opcode.UC_SEND_LAST, Opcode.UD_SEND_ONLY};
        for (int i = 0; i < all.size(); i++) {
            Pcap.UdpPacket p = all.get(i);
            ByteBuf b = buf(p);
            PacketView v = new PacketView();
            assertThat(v.parse(b, 0, b.readableBytes())).as("%s parses", p).isNull();
            assertThat(v.opcode()).as("%s", p).isEqualTo(expected[i]);
            assertThat(v.destQp()).isEqualTo(0x10);
            assertThat(icrc.check(b, 0, b.readableBytes(), p.srcSocket(), p.dstSocket(), p.ipv4Id()))
                    .as("%s: ICRC", p).isTrue();
            if (p.ipVersion() == 6) {
                assertThat(icrc.check(b, 0, b.readableBytes(), p.srcSocket(), p.dstSocket()))
                        .as("IPv6: as a socket sees it, no IP ID needed").isTrue();
            }
            if (v.opcode() == Opcode.UD_SEND_ONLY) {
                assertThat(Deth.qkey(b, v.index(Header.DETH))).isEqualTo(0x11111111);
                assertThat(v.payloadLength()).isEqualTo(1024);
                assertThat(v.ackReq()).as("AckReq is never set on UD").isFalse();
            }
        }
    }

    @Test
    void theKernelsDatagramsCompleteOnAUdQp() throws Exception {
        for (Pcap.UdpPacket p : packets()) {
            if (Opcode.of(p.udpPayload()[0] & 0xFF) != Opcode.UD_SEND_ONLY) {
                continue;
            }
            InetSocketAddress local = p.dstSocket();
            try (Arena arena = Arena.ofConfined()) {
                RxeDevice dev = new RxeDevice(new FakeTransport(local), DeviceConfig.defaults().withCheckIcrc(false));
                try {
                    RxePd pd = dev.allocPd();
                    RxeCq cq = dev.createCq(16);
                    RxeQp qp = dev.createQp(pd, cq, cq, new QpCaps(4, 4, 1, 1, 0), false, QpType.UD);
                    assertThat(qp.qpn()).isEqualTo(0x10);
                    MemorySegment seg = arena.allocate(2048);
                    RxeMr mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE);
                    qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(0x11111111));
                    qp.modify(new QpAttr().state(QpState.RTR));
                    qp.postRecv(new RecvWr().set(7, new Sge(mr.iova(), 40 + 1024, mr.lkey())));
                    ByteBuf b = buf(p);
                    dev.onPacket(b, p.srcSocket(), local);
                    WorkCompletion[] wc = {new WorkCompletion()};
                    assertThat(cq.poll(wc, 1)).as("%s completes", p).isEqualTo(1);
                    assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
                    assertThat(wc[0].opcode).isEqualTo(WcOpcode.RECV);
                    assertThat(wc[0].byteLen).isEqualTo(40 + 1024);
                    assertThat(wc[0].srcQp).as("the kernel QP's number, from the DETH").isEqualTo(
                            Deth.srcQp(b, Opcode.UD_SEND_ONLY.offset(Header.DETH)));
                    byte[] grh = seg.asSlice(0, 40).toArray(ValueLayout.JAVA_BYTE);
                    if (p.ipVersion() == 6) {
                        assertThat(Arrays.copyOfRange(grh, 8, 24)).isEqualTo(p.srcIp().getAddress());
                        assertThat(Arrays.copyOfRange(grh, 24, 40)).isEqualTo(p.dstIp().getAddress());
                        assertThat(Arrays.copyOfRange(grh, 4, 6)).as("payload length as the kernel's own header")
                                .isEqualTo(Arrays.copyOfRange(p.ipHeader(), 4, 6));
                    } else {
                        assertThat(Arrays.copyOfRange(grh, 32, 36)).isEqualTo(p.srcIp().getAddress());
                        assertThat(Arrays.copyOfRange(grh, 36, 40)).isEqualTo(p.dstIp().getAddress());
                        assertThat(Arrays.copyOfRange(grh, 22, 24)).as("total length as the kernel's own header")
                                .isEqualTo(Arrays.copyOfRange(p.ipHeader(), 2, 4));
                    }
                    for (int i = 0; i < 1024; i++) {
                        assertThat(seg.get(ValueLayout.JAVA_BYTE, 40 + i)).isEqualTo((byte) 0x7b);
                    }
                } finally {
                    dev.close();
                }
            }
        }
    }

    @Test
    void theKernelsUcMessageCompletesOnAUcQp() throws Exception {
        List<Pcap.UdpPacket> uc = packets().stream()
                .filter(p -> Opcode.of(p.udpPayload()[0] & 0xFF).transport() == Opcode.Transport.UC).toList();
        assertThat(uc).hasSize(4);
        Pcap.UdpPacket first = uc.get(0);
        InetSocketAddress local = first.dstSocket();
        try (Arena arena = Arena.ofConfined()) {
            RxeDevice dev = new RxeDevice(new FakeTransport(local), DeviceConfig.defaults().withCheckIcrc(false));
            try {
                RxePd pd = dev.allocPd();
                RxeCq cq = dev.createCq(16);
                RxeQp qp = dev.createQp(pd, cq, cq, new QpCaps(4, 4, 1, 1, 0), false, QpType.UC);
                MemorySegment seg = arena.allocate(4096);
                RxeMr mr = dev.registerMr(pd, seg, null, Access.LOCAL_WRITE);
                int psn = new PacketView().parse(buf(first), 0, first.udpPayload().length) == null
                        ? io.rxe4j.core.wire.Bth.psn(buf(first), 0) : -1;
                qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0));
                qp.modify(new QpAttr().state(QpState.RTR).av(first.srcSocket()).pathMtu(Mtu.MTU_1024).destQpNum(0x2f)
                        .rqPsn(psn));
                qp.postRecv(new RecvWr().set(9, new Sge(mr.iova(), 4096, mr.lkey())));
                for (Pcap.UdpPacket p : uc) {
                    dev.onPacket(buf(p), p.srcSocket(), local);
                }
                WorkCompletion[] wc = {new WorkCompletion()};
                assertThat(cq.poll(wc, 1)).isEqualTo(1);
                assertThat(wc[0].status).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc[0].byteLen).isEqualTo(4096);
                for (int i = 0; i < 4096; i++) {
                    assertThat(seg.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) 0x7b);
                }
            } finally {
                dev.close();
            }
        }
    }
}
