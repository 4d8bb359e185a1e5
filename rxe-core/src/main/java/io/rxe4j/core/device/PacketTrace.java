package io.rxe4j.core.device;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.wire.Aeth;
import io.rxe4j.core.wire.Bth;
import io.rxe4j.core.wire.Header;
import io.rxe4j.core.wire.Opcode;
import java.net.InetSocketAddress;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The packet trace: one line per packet sent ({@code tx}) or received ({@code rx}) at TRACE on
 * logger {@code io.rxe4j.trace}, e.g.
 * {@code rx 10.0.0.2:4791 -> 10.0.0.1:4791 RC_ACKNOWLEDGE qpn=0x000011 psn=0x00a1b2 len=32 aeth=ACK:31/msn=0x000007}.
 * Fields: direction, sender and recipient, opcode (or its number if unknown), destination QPN
 * and PSN (24 bits, hex), UDP payload length in bytes (BTH to ICRC), the SE/AckReq/extended (OPFN)
 * flags when set, and the AETH (type: credits or NAK code, MSN) when present. Received packets are
 * traced before any check, so malformed ones appear too (as far as they parse).
 *
 * <p>Cost when disabled: one {@code isTraceEnabled()} call per packet (a level comparison in
 * logback and slf4j-simple); no formatting, no allocation. Enable with the logging backend, e.g.
 * {@code <logger name="io.rxe4j.trace" level="TRACE"/>} in logback.xml.
 */
final class PacketTrace {
    static final Logger LOG = LoggerFactory.getLogger("io.rxe4j.trace");

    private PacketTrace() {}

    static void trace(String dir, ByteBuf b, int at, int len, InetSocketAddress from, InetSocketAddress to) {
        if (len < Bth.LENGTH) {
            LOG.trace("{} {} -> {} runt len={}", dir, addr(from), addr(to), len);
            return;
        }
        int code = Bth.opcode(b, at);
        Opcode op = Opcode.of(code);
        StringBuilder s = new StringBuilder(120).append(dir).append(' ').append(addr(from)).append(" -> ")
                .append(addr(to)).append(' ').append(op != null ? op.name() : "opcode_0x" + Integer.toHexString(code))
                .append(String.format(Locale.ROOT, " qpn=0x%06x psn=0x%06x len=%d", Bth.destQp(b, at), Bth.psn(b, at),
                        len));
        if (Bth.se(b, at)) {
            s.append(" se");
        }
        if (Bth.ackReq(b, at)) {
            s.append(" ackreq");
        }
        if (Bth.extended(b, at)) {
            s.append(" ext");
        }
        if (op != null && op.has(Header.AETH) && len >= op.offset(Header.AETH) + Aeth.LENGTH) {
            int aeth = at + op.offset(Header.AETH);
            int syn = Aeth.syndrome(b, aeth);
            String type = switch (syn & Aeth.TYPE_MASK) {
                case Aeth.TYPE_ACK -> "ACK:" + (syn & 0x1F);
                case Aeth.TYPE_RNR_NAK -> "RNR:" + (syn & 0x1F);
                case Aeth.TYPE_NAK -> "NAK:0x" + Integer.toHexString(syn);
                default -> "0x" + Integer.toHexString(syn);
            };
            s.append(String.format(Locale.ROOT, " aeth=%s/msn=0x%06x", type, Aeth.msn(b, aeth)));
        }
        LOG.trace(s.toString());
    }

    private static String addr(InetSocketAddress a) {
        return a == null ? "?" : a.getAddress().getHostAddress() + ":" + a.getPort();
    }
}
