package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.Mtu;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * One message of rxe4j's connection protocol over TCP, in the roles of the IB CM's MADs (IBTA
 * chapter 12): REQ, REP, REJ, RTU, DREQ, DREP. Big-endian on the wire:
 *
 * <pre>
 * header  u32 magic 0x5258434D ("RXCM") | u8 version 2 | u8 type | u16 body length (bytes, &le; 512)
 * REQ/REP u32 QPN (24 bits) | u32 PSN (24 bits) | u8 path MTU (IBTA code 1..5)
 *         | u8 initiator depth | u8 responder resources | u8 address length (4 or 16) | address
 *         | u16 UDP port | u8 private data length | private data | u32 extensions
 * REJ     u8 private data length | private data
 * RTU, DREQ, DREP: empty body
 * </pre>
 *
 * {@code extensions} carries rxe4j's extension bits ({@code QpOps.EXT_*}, {@code docs/wire.md}
 * "Extensions negotiated at connection setup"), in the role of the IB CM's ECE options (Enhanced
 * Connection Establishment: vendor ID and options in REQ and REP): the REQ offers what the client's
 * device has, the REP answers with the part of it the server's device has too, and both QPs use
 * exactly the REP's bits. Version 2 added them; version 1 had none.
 *
 * <p>A peer that sends anything else is answered by closing the connection ({@link
 * RdmaCmException.Reason#PROTOCOL}).
 */
record CmMessage(Type type, int qpn, int psn, Mtu mtu, int initiatorDepth, int responderResources,
        InetSocketAddress udp, byte[] privateData, int extensions) {
    static final int MAGIC = 0x5258434D;
    static final int VERSION = 2;
    static final int MAX_BODY = 512;

    enum Type {
        REQ(1), REP(2), REJ(3), RTU(4), DREQ(5), DREP(6);

        final int code;

        Type(int code) {
            this.code = code;
        }

        static Type of(int code) {
            for (Type t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    static CmMessage control(Type type) {
        return new CmMessage(type, 0, 0, null, 0, 0, null, new byte[0], 0);
    }

    static CmMessage reject(byte[] privateData) {
        return new CmMessage(Type.REJ, 0, 0, null, 0, 0, null, privateData, 0);
    }

    void write(DataOutputStream out) throws IOException {
        java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
        DataOutputStream b = new DataOutputStream(body);
        switch (type) {
            case REQ, REP -> {
                b.writeInt(qpn);
                b.writeInt(psn);
                b.writeByte(mtu.value());
                b.writeByte(initiatorDepth);
                b.writeByte(responderResources);
                byte[] ip = udp.getAddress().getAddress();
                b.writeByte(ip.length);
                b.write(ip);
                b.writeShort(udp.getPort());
                b.writeByte(privateData.length);
                b.write(privateData);
                b.writeInt(extensions);
            }
            case REJ -> {
                b.writeByte(privateData.length);
                b.write(privateData);
            }
            default -> { }
        }
        out.writeInt(MAGIC);
        out.writeByte(VERSION);
        out.writeByte(type.code);
        out.writeShort(body.size());
        body.writeTo(out);
        out.flush();
    }

    /**
     * Reads one message.
     *
     * @throws EOFException if the peer closed the connection before a message began
     * @throws RdmaCmException (PROTOCOL) for anything malformed, or a close mid-message
     * @throws IOException for a socket error or a read timeout ({@link java.net.SocketTimeoutException})
     */
    static CmMessage read(DataInputStream in) throws IOException {
        int magic = in.readInt(); // EOFException: closed between messages
        try {
            int version = in.readUnsignedByte();
            int code = in.readUnsignedByte();
            int len = in.readUnsignedShort();
            if (magic != MAGIC || version != VERSION) {
                throw bad("magic 0x" + Integer.toHexString(magic) + " version " + version
                        + " is not rxe4j's connection protocol " + VERSION);
            }
            Type type = Type.of(code);
            if (type == null || len > MAX_BODY) {
                throw bad("message type " + code + " with a body of " + len + " bytes");
            }
            byte[] body = new byte[len];
            in.readFully(body);
            DataInputStream b = new DataInputStream(new java.io.ByteArrayInputStream(body));
            CmMessage m = switch (type) {
                case REQ, REP -> {
                    int qpn = b.readInt();
                    int psn = b.readInt();
                    int mtuCode = b.readUnsignedByte();
                    int init = b.readUnsignedByte();
                    int resp = b.readUnsignedByte();
                    int alen = b.readUnsignedByte();
                    if ((qpn & ~0xFFFFFF) != 0 || (psn & ~0xFFFFFF) != 0 || mtuCode < 1 || mtuCode > 5
                            || (alen != 4 && alen != 16) || init > 128 || resp > 128) {
                        throw bad(type + " with QPN 0x" + Integer.toHexString(qpn) + ", PSN 0x"
                                + Integer.toHexString(psn) + ", MTU code " + mtuCode + ", depths " + init + "/"
                                + resp + ", address length " + alen);
                    }
                    byte[] ip = new byte[alen];
                    b.readFully(ip);
                    int port = b.readUnsignedShort();
                    if (port == 0) {
                        throw bad(type + " with UDP port 0");
                    }
                    byte[] priv = new byte[b.readUnsignedByte()];
                    if (type == Type.REQ && priv.length > ConnectionParams.MAX_CONNECT_PRIVATE_DATA) {
                        throw bad("REQ with " + priv.length + " bytes of private data (at most "
                                + ConnectionParams.MAX_CONNECT_PRIVATE_DATA + ")");
                    }
                    b.readFully(priv);
                    int extensions = b.readInt();
                    Mtu mtu = Mtu.values()[mtuCode - 1];
                    yield new CmMessage(type, qpn, psn, mtu, init, resp,
                            new InetSocketAddress(InetAddress.getByAddress(ip), port), priv, extensions);
                }
                case REJ -> {
                    byte[] priv = new byte[b.readUnsignedByte()];
                    b.readFully(priv);
                    yield reject(priv);
                }
                default -> control(type);
            };
            if (b.available() != 0) {
                throw bad(type + " has " + b.available() + " bytes after its fields");
            }
            return m;
        } catch (EOFException e) {
            throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "the peer closed the connection mid-message", e);
        } catch (UnknownHostException e) {
            throw new RdmaCmException(RdmaCmException.Reason.PROTOCOL, "bad address in a message", e);
        }
    }

    private static RdmaCmException bad(String what) {
        return new RdmaCmException(RdmaCmException.Reason.PROTOCOL, what, null);
    }
}
