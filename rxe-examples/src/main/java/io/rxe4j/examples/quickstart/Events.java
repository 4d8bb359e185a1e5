package io.rxe4j.examples.quickstart;

import io.rxe4j.net.inproc.InJvmFabric;
import io.rxe4j.verbs.Access;
import io.rxe4j.verbs.AsyncEventType;
import io.rxe4j.verbs.CompletionChannel;
import io.rxe4j.verbs.CompletionQueue;
import io.rxe4j.verbs.cm.ConnectionParams;
import io.rxe4j.verbs.MemoryRegion;
import io.rxe4j.verbs.ProtectionDomain;
import io.rxe4j.verbs.cm.RdmaConnection;
import io.rxe4j.verbs.RdmaDevice;
import io.rxe4j.verbs.cm.RdmaListener;
import io.rxe4j.verbs.RecvWr;
import io.rxe4j.verbs.SendWr;
import io.rxe4j.verbs.Sge;
import io.rxe4j.verbs.WorkCompletion;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Events instead of polling. The server's receive CQ reports to a {@link CompletionChannel},
 * armed for solicited completions only: its thread sleeps through an ordinary SEND and wakes for
 * the SEND marked solicited. The client's WRITE completes a future. Both devices report the
 * connection's asynchronous events (ESTABLISHED, then DISCONNECTED when the client disconnects).
 */
public final class Events {
    private Events() {}

    public static void main(String[] args) throws Exception {
        InJvmFabric fabric = new InJvmFabric();
        RdmaDevice serverDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.1", 4791)));
        RdmaDevice clientDev = RdmaDevice.open(fabric.newTransport(new InetSocketAddress("10.0.0.2", 4791)));
        try (RdmaListener listener = RdmaListener.listen(serverDev, 7471)) {
            ProtectionDomain spd = serverDev.allocPd();
            ProtectionDomain cpd = clientDev.allocPd();
            CompletionChannel channel = serverDev.createCompletionChannel();
            CompletionQueue scq = serverDev.createCq(64, channel);
            CompletionQueue ccq = clientDev.createCq(64);
            MemoryRegion smr = spd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            CountDownLatch disconnected = new CountDownLatch(1);
            serverDev.addAsyncEventListener(e -> {
                System.out.println("server event: " + e.type() + " (" + e.reason() + ")");
                if (e.type() == AsyncEventType.DISCONNECTED) {
                    disconnected.countDown();
                }
            });
            clientDev.addAsyncEventListener(e -> System.out.println("client event: " + e.type()));

            CompletableFuture<RdmaConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.accept(spd, scq, scq, ConnectionParams.defaults(), qp -> {
                        for (int i = 0; i < 2; i++) {
                            qp.postRecv(new RecvWr().set(i, new Sge(smr.addr() + 64L * i, 64, smr.lkey())));
                        }
                    });
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            try (RdmaConnection client = RdmaConnection.connect(cpd, ccq, new InetSocketAddress("10.0.0.1", listener.port()));
                    RdmaConnection _ = accepted.join()) {
                scq.reqNotify(true); // wake only for a solicited completion (or an error)

                client.qp().postSend(new SendWr().send(10).inline(new byte[] {1}));
                client.qp().postSend(new SendWr().send(11).inline(new byte[] {2}).solicited());
                CompletionQueue woken = channel.getCqEvent(Duration.ofSeconds(10));
                if (woken != scq) {
                    throw new IllegalStateException("no completion event");
                }
                scq.reqNotify(true); // re-arm before polling, so nothing is missed
                WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion()};
                int n = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (n < 2 && System.nanoTime() < deadline) {
                    n += scq.poll(wcs, 2 - n);
                    if (n < 2) {
                        scq.await(TimeUnit.MILLISECONDS.toNanos(100));
                    }
                }
                System.out.println("server woke once for the solicited SEND; receive completions polled: " + n);

                // a one-off operation with a future (the client's send CQ is dispatched from now on)
                MemoryRegion cmr = cpd.allocMr(64, Access.LOCAL_WRITE);
                try {
                    WorkCompletion wc = client.qp().postSendAsync(new SendWr().rdmaWrite(12, smr.addr() + 512,
                            smr.rkey(), new Sge(cmr.addr(), 64, cmr.lkey()))).get(10, TimeUnit.SECONDS);
                    System.out.println("WRITE future completed: " + wc.status);
                } finally {
                    cmr.close();
                }
                client.disconnect();
                if (!disconnected.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the server saw no DISCONNECTED event");
                }
            }
        } finally {
            // each device's connections, QPs, MRs, CQs and PDs, newest first, then the device: never EBUSY,
            // so an error above does not leave everything open (as closing each in try-with-resources would)
            try {
                clientDev.closeAll();
            } finally {
                serverDev.closeAll();
            }
        }
        System.out.println("OK");
    }
}
