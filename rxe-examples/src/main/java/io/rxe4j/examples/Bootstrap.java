package io.rxe4j.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A line-oriented TCP side channel: exchange {@link ConnectionInfo} and short control words
 * ({@code DONE}, {@code OK}, {@code FAIL ...}), as {@code ibv_rc_pingpong} does over TCP.
 */
public final class Bootstrap implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final PrintWriter out;

    /** Wraps a connected socket. */
    public Bootstrap(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        this.out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.US_ASCII);
    }

    /** Sends ours, then reads theirs. */
    public ConnectionInfo exchange(ConnectionInfo mine) throws IOException {
        send(mine.toLine());
        return ConnectionInfo.parse(receive());
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
