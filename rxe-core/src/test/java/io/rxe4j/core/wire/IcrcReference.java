package io.rxe4j.core.wire;

import java.util.zip.CRC32;

/**
 * Independent, deliberately naive ICRC for cross-checking {@link Icrc}: zlib CRC-32 over
 * 8 × 0xFF, then the <em>real</em> IP header, UDP header and packet with the fields of
 * {@code rxe-facts.md} §3.2 masked to ones. Unlike {@link Icrc} it does not rebuild the IP header,
 * so it also covers whatever a captured header carries (options, ID, flags).
 */
final class IcrcReference {
    private IcrcReference() {}

    /**
     * @param ipHeader the IP header as on the wire (IPv4 any IHL, or the 40-byte IPv6 header)
     * @param sport UDP source port
     * @param dport UDP destination port
     * @param udpPayload BTH … ICRC (the ICRC bytes themselves are not covered)
     * @param rxeFlushVariant run over BTH+FETH+RETH a second time, unmasked (rxe's FLUSH quirk)
     * @return the ICRC value (written to the wire least-significant byte first)
     */
    static int compute(byte[] ipHeader, int sport, int dport, byte[] udpPayload, boolean rxeFlushVariant) {
        byte[] ip = ipHeader.clone();
        if (((ip[0] >> 4) & 0xF) == 4) {
            ip[1] = (byte) 0xFF; // TOS
            ip[8] = (byte) 0xFF; // TTL
            ip[10] = (byte) 0xFF; // header checksum
            ip[11] = (byte) 0xFF;
        } else {
            ip[0] = (byte) ((ip[0] & 0xF0) | 0x0F); // traffic class + flow label
            ip[1] = (byte) 0xFF;
            ip[2] = (byte) 0xFF;
            ip[3] = (byte) 0xFF;
            ip[7] = (byte) 0xFF; // hop limit
        }
        int udpLength = 8 + udpPayload.length;
        byte[] udp = {(byte) (sport >> 8), (byte) sport, (byte) (dport >> 8), (byte) dport,
            (byte) (udpLength >> 8), (byte) udpLength, (byte) 0xFF, (byte) 0xFF};
        byte[] bth = java.util.Arrays.copyOf(udpPayload, 12);
        bth[4] = (byte) 0xFF; // FECN, BECN, resv6
        CRC32 crc = new CRC32();
        for (int i = 0; i < 8; i++) {
            crc.update(0xFF);
        }
        crc.update(ip);
        crc.update(udp);
        crc.update(bth);
        int end = udpPayload.length - 4;
        crc.update(udpPayload, 12, end - 12);
        if (rxeFlushVariant) {
            crc.update(udpPayload, 0, Math.min(32, end));
        }
        return (int) crc.getValue();
    }

    /** @return the ICRC carried in the last 4 bytes (little-endian) */
    static int carried(byte[] udpPayload) {
        int n = udpPayload.length;
        return (udpPayload[n - 4] & 0xFF) | (udpPayload[n - 3] & 0xFF) << 8 | (udpPayload[n - 2] & 0xFF) << 16
                | (udpPayload[n - 1] & 0xFF) << 24;
    }
}
