package io.rxe4j.verbs.provider;

import java.net.InetSocketAddress;

/**
 * A device's general services interface QP, QP1 ({@code IB_QPT_GSI}; {@code verbs-surface-facts.md}
 * §2.3, §2.8, §2.9; {@code cm-facts.md} §1.1): a UD QP of the library itself, not of any application,
 * that carries management datagrams (MADs) of 256 bytes, the IB connection manager's above all. It
 * sends with DETH source QP 1 and Q_Key {@link #QKEY} whatever the WR says, accepts only datagrams to
 * QPN 1 with exactly that Q_Key, and keeps receive buffers of its own posted (a datagram that finds
 * none is dropped, {@code drop_no_recv_wqe}). It is not a user QP: no PD, CQ or QPN of the
 * application's is taken, and QPN 1 is never handed out.
 *
 * <p>Threading: {@link #send} from any thread; the listener runs on the device's first event loop
 * (lane 0), one MAD at a time, and must not block.
 */
public interface GsiOps {
    /** The GSI QP's number. */
    int QPN = 1;
    /** IB_QP1_QKEY: the only Q_Key QP1 sends and accepts. */
    int QKEY = 0x80010000;
    /** A MAD's size: {@code IB_MGMT_MAD_SIZE}, 256 bytes. */
    int MAD_BYTES = 256;

    /** Receives MADs. */
    @FunctionalInterface
    interface MadListener {
        /**
         * One received MAD.
         *
         * @param from the (IP, UDP port) the datagram came from: the peer's address, and its source port
         *     (a RoCE peer sends from a port of its own, 0xC000 and up, and receives on 4791)
         * @param srcQp the DETH source QP (1 for a peer's GSI QP)
         * @param grh the 40 bytes rxe puts ahead of a UD payload (the IPv4 header at offset 20, or the
         *     IPv6 header; {@code verbs-surface-facts.md} §2.6), a copy
         * @param mad the datagram's payload, a copy (256 bytes for a MAD)
         */
        void onMad(InetSocketAddress from, int srcQp, byte[] grh, byte[] mad);
    }

    /**
     * @return the event loop the listener runs on: the connection manager keeps its state and timers
     *     there (virtual time on a virtual-time device)
     */
    io.rxe4j.verbs.spi.Scheduler scheduler();

    /**
     * Counts one event of the device's management layer ({@link io.rxe4j.verbs.Counter#CM_DROP_MALFORMED},
     * {@link io.rxe4j.verbs.Counter#CM_DROP_STALE}) in the device's counters. On {@link #scheduler()}'s loop, where the listener runs.
     */
    void count(io.rxe4j.verbs.Counter counter);

    /** Sets the one listener of received MADs; null: none (received MADs are counted and dropped). */
    void listener(MadListener listener);

    /**
     * Sends {@code mad} as a UD SEND ONLY from QP1 to QP {@code remoteQpn} of {@code to}, with Q_Key
     * {@link #QKEY}. Unreliable, as every UD datagram.
     *
     * @param to the peer device's (IP, UDP port): 4791 for a RoCE peer
     * @param remoteQpn the destination QP, 24 bits (1 for the peer's GSI QP)
     * @param mad 1 … {@link #MAD_BYTES} bytes, copied before this returns
     * @return false if the send queue is full (the MAD was not sent): on the loop only once the MADs
     *     already queued were sent and still no slot is free (the transport is full)
     * @throws IllegalArgumentException for an empty or oversized MAD or a QPN beyond 24 bits
     * @throws IllegalStateException if the device is closed
     */
    boolean send(InetSocketAddress to, int remoteQpn, byte[] mad);
}
