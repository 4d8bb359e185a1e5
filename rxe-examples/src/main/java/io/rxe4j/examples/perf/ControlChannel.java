package io.rxe4j.examples.perf;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * rxe-perf's control channel between its two processes, like perftest's own TCP exchange: test
 * parameters, the raw-UDP and connection-manager addresses, and short words ({@code READY},
 * {@code DONE}, {@code OK}, {@code FAIL ...}), one line each. The QPs themselves are connected by
 * the connection manager ({@link io.rxe4j.verbs.cm.RdmaConnection}).
 */
final class ControlChannel implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final PrintWriter out;

    /** Wraps a connected socket. */
    ControlChannel(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        this.out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.US_ASCII);
    }

    /** Sends one line. */
    public void send(String line) {
        out.println(line);
    }

    /**
     * @return the next line
     * @throws IOException if the peer closed the connection
     */
    public String receive() throws IOException {
        String line = in.readLine();
        if (line == null) {
            throw new IOException("bootstrap peer closed the connection");
        }
        return line;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
