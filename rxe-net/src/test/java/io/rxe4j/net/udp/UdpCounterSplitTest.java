package io.rxe4j.net.udp;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/**
 * Issue 19 item 7: a socket's {@code drops} ({@code rcv_queue_drops}) counts a full receive buffer
 * and a bad UDP checksum alike; the namespace's {@code /proc/net/snmp} and {@code snmp6} counters
 * tell them apart ({@code udp_rcvbuf_errors}, {@code udp_in_csum_errors}).
 */
class UdpCounterSplitTest {
    /** A real /proc/net/snmp's UDP part (Linux 6.12), with UdpLite after it. */
    private static final String SNMP = """
            Ip: Forwarding DefaultTTL InReceives InHdrErrors
            Ip: 1 64 100 0
            Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
            Udp: 48646 19 240 48927 200 0 40 0 0
            UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
            UdpLite: 0 0 0 0 7 0 9 0 0
            """;
    private static final String SNMP6 = """
            Udp6InDatagrams                 \t9
            Udp6InErrors                    \t3
            Udp6RcvbufErrors                \t1
            Udp6InCsumErrors                \t3
            UdpLite6RcvbufErrors            \t5
            """;

    @Test
    void rcvbufAndChecksumErrorsAreReadApartFromBothFiles() {
        long[] e = ProcNetUdp.udpErrors(SNMP, SNMP6);
        assertThat(e[ProcNetUdp.RCVBUF_ERRORS]).isEqualTo(201); // Udp 200 + Udp6 1, not UdpLite's
        assertThat(e[ProcNetUdp.IN_CSUM_ERRORS]).isEqualTo(43); // Udp 40 + Udp6 3
    }

    @Test
    void missingOrMalformedFilesCountZero() {
        assertThat(ProcNetUdp.udpErrors("", "")).containsExactly(0, 0);
        assertThat(ProcNetUdp.udpErrors("Udp: RcvbufErrors InCsumErrors\nUdp: x -4\n", "Udp6InCsumErrors\n"))
                .containsExactly(0, 0);
        // another kernel's column order
        assertThat(ProcNetUdp.udpErrors("Udp: InCsumErrors RcvbufErrors\nUdp: 5 6\n", "")).containsExactly(6, 5);
    }

    @Test
    void aFreshTransportReportsNoErrorsOfItsOwn() {
        try (UdpTransport t = UdpTransport.builder(InetAddress.getLoopbackAddress()).port(0).bind()) {
            // deltas since the bind: nothing was received, and the namespace is idle enough in a unit test
            assertThat(t.receiveBufferErrors()).isGreaterThanOrEqualTo(0);
            assertThat(t.receiveChecksumErrors()).isGreaterThanOrEqualTo(0);
            assertThat(t.receiveQueueDrops()).isZero();
        }
    }
}
