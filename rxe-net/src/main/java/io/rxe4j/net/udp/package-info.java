/**
 * RoCEv2 over real UDP sockets: {@link io.rxe4j.net.udp.UdpTransport}, a Netty NIO datagram
 * channel (NIO, or opt-in native epoll with optional UDP GSO/GRO) bound to one concrete (IP, UDP
 * port), IPv4 or IPv6.
 */
package io.rxe4j.net.udp;
