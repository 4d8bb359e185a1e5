package io.rxe4j.verbs;

import io.rxe4j.verbs.provider.CqOps;
import io.rxe4j.verbs.provider.DeviceOps;
import io.rxe4j.verbs.provider.MrOps;
import io.rxe4j.verbs.provider.PdOps;
import io.rxe4j.verbs.provider.QpOps;
import io.rxe4j.verbs.provider.VerbsProvider;
import io.rxe4j.verbs.spi.Persistence;
import io.rxe4j.verbs.spi.Transport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A verbs provider that records the calls the API makes (registered in this module's test
 * resources, so {@link RdmaDevice#open} finds it instead of the engine): the API's contract with a
 * provider, tested without one. The last device opened is {@link #last}.
 */
public final class FakeProvider implements VerbsProvider {
    static volatile Device last;

    @Override
    public String name() {
        return "fake";
    }

    @Override
    public DeviceOps open(Transport transport, DeviceConfig config) {
        Device d = new Device(transport, config);
        last = d;
        return d;
    }

    /** A fake device: every call is appended to {@link #calls}. */
    static final class Device implements DeviceOps {
        final Transport transport;
        final DeviceConfig config;
        final List<String> calls = new CopyOnWriteArrayList<>();
        volatile QpFatalListener fatal;
        private volatile boolean closed;
        private int handles;

        Device(Transport transport, DeviceConfig config) {
            this.transport = transport;
            this.config = config;
        }

        @Override
        public InetSocketAddress address() {
            return new InetSocketAddress("192.0.2.1", 4791);
        }

        @Override
        public DeviceConfig config() {
            return config;
        }

        @Override
        public Mtu activeMtu() {
            return Mtu.MTU_1024;
        }

        @Override
        public int linkMtu() {
            return 1500;
        }

        @Override
        public int numCompVectors() {
            return 2;
        }

        @Override
        public Map<String, Long> counterSnapshot() {
            return Map.of("sent_pkts", 7L);
        }

        @Override
        public synchronized PdOps allocPd() {
            calls.add("allocPd");
            int h = ++handles;
            return () -> h;
        }

        @Override
        public MrOps registerMr(PdOps pd, MemorySegment segment, Arena arena, int access, Persistence persistence) {
            calls.add("registerMr");
            throw new UnsupportedOperationException("not used");
        }

        @Override
        public void deregisterMr(MrOps mr) {
            calls.add("deregisterMr");
        }

        @Override
        public CqOps createCq(int cqe, int compVector) {
            calls.add("createCq " + cqe + " " + compVector);
            return new Cq(cqe);
        }

        @Override
        public QpOps createQp(PdOps pd, CqOps sendCq, CqOps recvCq, QpCaps caps, boolean sqSigAll) {
            calls.add("createQp");
            return new Qp();
        }

        @Override
        public void destroyQp(QpOps qp) {
            calls.add("destroyQp");
        }

        @Override
        public void onQpFatal(QpFatalListener listener) {
            fatal = listener;
        }

        @Override
        public void close() {
            calls.add("close");
            closed = true;
        }

        @Override
        public boolean isClosed() {
            return closed;
        }
    }

    /** A CQ that never has completions. */
    record Cq(int capacity) implements CqOps {
        @Override
        public int size() {
            return 0;
        }

        @Override
        public int poll(WorkCompletion[] out, int max) {
            return 0;
        }

        @Override
        public boolean await(long timeoutNanos) {
            return false;
        }

        @Override
        public boolean reqNotify(boolean solicitedOnly) {
            return true;
        }

        @Override
        public void events(Events events) {
        }
    }

    /** A QP numbered 0x11 that stays in RESET. */
    static final class Qp implements QpOps {
        @Override
        public int qpn() {
            return 0x11;
        }

        @Override
        public QpState state() {
            return QpState.RESET;
        }

        @Override
        public void modify(QpAttr attr) {
        }

        @Override
        public QpAttr query(QpAttr out) {
            return out;
        }

        @Override
        public void validatePost(SendWr wr) {
        }

        @Override
        public int postValidated(List<SendWr> wrs, int from, int to) {
            return to - from;
        }

        @Override
        public boolean tryPostSend(SendWr wr) {
            return true;
        }

        @Override
        public boolean tryPostRecv(RecvWr wr) {
            return true;
        }

        @Override
        public String errorReason() {
            return null;
        }

        @Override
        public Map<String, Long> counterSnapshot() {
            return Map.of();
        }

        @Override
        public TidRdmaParams tidRdmaRemote() {
            return null;
        }

        @Override
        public String opfnState() {
            return "";
        }

        @Override
        public String debugState() {
            return "";
        }

        @Override
        public boolean disconnectToError(String reason) {
            return true;
        }
    }
}
