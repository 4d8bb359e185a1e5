package io.rxe4j.verbs;

import java.net.InetSocketAddress;

/**
 * Port attributes ({@code struct ibv_port_attr}). rxe4j has one port (number 1), always active.
 *
 * @param maxMtu the largest path MTU accepted by modify_qp (4096, as rxe's max_mtu)
 * @param activeMtu the largest path MTU the link carries without IP fragmentation: the largest IB MTU
 *     not above the link's IP MTU − 80 bytes, as rxe computes it from its netdev (1024 on a 1500-byte
 *     Ethernet, 4096 on loopback; see {@link RdmaDevice#queryPort})
 * @param address the (IP, UDP port) peers use to reach this port (the GID and UDP port of RoCEv2)
 * @param gidTableLen GID table entries (1: the address above)
 * @param pkeyTableLen P_Key table entries (1: 0xFFFF)
 */
public record PortAttr(Mtu maxMtu, Mtu activeMtu, InetSocketAddress address, int gidTableLen, int pkeyTableLen) {
}
