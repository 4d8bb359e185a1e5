package io.rxe4j.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.net.sim.VirtualScheduler;
import io.rxe4j.verbs.spi.PacketReceiver;
import io.rxe4j.verbs.spi.Scheduler;
import io.rxe4j.verbs.spi.Transport;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/**
 * One flush per read batch (issue 13, item 3): when the transport signals the end of each read
 * batch ({@link Transport#signalsReadComplete()}), the device flushes the replies to a whole batch
 * of received packets once, instead of once per packet.
 */
class ReadBatchFlushTest {

    /** Counts flushes; forwards everything, and signals read batches only if told to. */
    private static final class CountingTransport implements Transport {
        final Transport inner;
        final boolean signal;
        long flushes;
        long receivedPackets;

        CountingTransport(Transport inner, boolean signal) {
            this.inner = inner;
            this.signal = signal;
        }

        @Override
        public InetSocketAddress localAddress() {
            return inner.localAddress();
        }

        @Override
        public Scheduler scheduler() {
            return inner.scheduler();
        }

        @Override
        public ByteBufAllocator allocator() {
            return inner.allocator();
        }

        @Override
        public void start(PacketReceiver receiver) {
            inner.start(new PacketReceiver() {
                @Override
                public void onPacket(ByteBuf packet, InetSocketAddress sender, InetSocketAddress recipient) {
                    receivedPackets++;
                    receiver.onPacket(packet, sender, recipient);
                }

                @Override
                public void onReadComplete() {
                    receiver.onReadComplete();
                }
            });
        }

        @Override
        public boolean signalsReadComplete() {
            return signal && inner.signalsReadComplete();
        }

        @Override
        public void send(ByteBuf packet, InetSocketAddress peer) {
            inner.send(packet, peer);
        }

        @Override
        public void flush() {
            flushes++;
            inner.flush();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    /** 64 one-packet WRITEs posted at once; returns the responder's transport after they all completed. */
    private static CountingTransport run(boolean signal) {
        VirtualScheduler vs = new VirtualScheduler();
        InJvmFabric fabric = InJvmFabric.withScheduler(vs);
        CountingTransport tb = new CountingTransport(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)), signal);
        RdmaDevice a = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice b = RdmaDevice.open(tb);
        ProtectionDomain pa = a.allocPd();
        ProtectionDomain pb = b.allocPd();
        MemoryRegion ma = pa.allocMr(1 << 16, RcPair.ALL_REMOTE);
        MemoryRegion mb = pb.allocMr(1 << 16, RcPair.ALL_REMOTE);
        CompletionQueue ca = a.createCq(256);
        CompletionQueue cb = b.createCq(256);
        QueuePair qa = pa.createQp(QpInitAttr.rc(ca, ca));
        QueuePair qb = pb.createQp(QpInitAttr.rc(cb, cb));
        MultiLoopDeviceTest.wire(qa, a, qb, b);
        for (int i = 0; i < 64; i++) {
            ma.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i);
            qa.postSend(new SendWr().rdmaWrite(i, mb.addr() + i * 256L, mb.rkey(), new Sge(ma.addr() + i, 1, ma.lkey()))
                    .signaled());
        }
        vs.runUntilIdle();
        WorkCompletion[] wc = new WorkCompletion[64];
        for (int i = 0; i < wc.length; i++) {
            wc[i] = new WorkCompletion();
        }
        assertThat(ca.poll(wc)).isEqualTo(64);
        for (WorkCompletion w : wc) {
            assertThat(w.status).isEqualTo(WcStatus.SUCCESS);
        }
        for (int i = 0; i < 64; i++) {
            assertThat(mb.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, i * 256L)).isEqualTo((byte) i);
        }
        qa.close();
        qb.close();
        ma.close();
        mb.close();
        ca.close();
        cb.close();
        pa.close();
        pb.close();
        a.close();
        b.close();
        return tb;
    }

    @Test
    void theResponderFlushesOncePerReadBatchNotOncePerPacket() {
        CountingTransport batched = run(true);
        CountingTransport perPacket = run(false);
        assertThat(batched.receivedPackets).isEqualTo(64);
        assertThat(perPacket.receivedPackets).isEqualTo(64);
        // the fabric delivers the requester's flush as one batch: one flush for all the ACKs
        assertThat(perPacket.flushes).as("without batch signals: a flush per packet").isGreaterThanOrEqualTo(64);
        assertThat(batched.flushes).as("with batch signals").isLessThanOrEqualTo(8);
    }
}
