package io.rxe4j.verbs.cm;

import io.rxe4j.verbs.Mtu;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Test support: the connection manager's TCP messages ({@link CmMessage}, package-private) for tests
 * outside this package that play a peer by hand (a fake client that sends REQ and RTU itself).
 */
public final class CmWire {
    private CmWire() {
    }

    /** Writes a REQ as {@link RdmaConnection#connect} would. */
    public static void writeReq(DataOutputStream out, int qpn, int psn, Mtu mtu, int initiatorDepth,
            int responderResources, InetSocketAddress address, byte[] privateData) throws IOException {
        new CmMessage(CmMessage.Type.REQ, qpn, psn, mtu, initiatorDepth, responderResources, address, privateData, 0)
                .write(out);
    }

    /** Reads one message; @return its type's name (REQ, REP, RTU, REJ, DREQ, DREP) */
    public static String readType(DataInputStream in) throws IOException {
        return CmMessage.read(in).type().name();
    }

    /** Writes a control message (no body) of type {@code type} (RTU, DREQ, DREP). */
    public static void writeControl(DataOutputStream out, String type) throws IOException {
        CmMessage.control(CmMessage.Type.valueOf(type)).write(out);
    }
}
