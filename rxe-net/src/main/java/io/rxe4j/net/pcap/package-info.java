/**
 * Packet capture: {@link io.rxe4j.net.pcap.CapturingTransport} wraps any transport and writes
 * every packet to a pcap file ({@link io.rxe4j.net.pcap.PcapWriter}) that Wireshark decodes as
 * RoCEv2, with ICRCs that check out.
 */
package io.rxe4j.net.pcap;
