package io.rxe4j.examples.persist;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Test-only checker process for {@link PersistenceTest}: opens {@code <file>} afresh (plain file
 * reads, no mapping) and looks for the seeded block of {@link PersistenceTest#block} at {@code
 * <offset>}.
 *
 * <p>Usage: {@code PmemChecker <file> <offset> <length> <seed>}. Exit code 0 = the block is there,
 * 1 = it is not (the first differing byte is printed), 2 = usage or I/O error.
 */
public final class PmemChecker {
    private PmemChecker() {}

    /** Entry point. */
    public static void main(String[] args) {
        System.exit(check(args));
    }

    private static int check(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: PmemChecker <file> <offset> <length> <seed>");
            return 2;
        }
        Path file = Path.of(args[0]);
        long offset = Long.parseLong(args[1]);
        int length = Integer.parseInt(args[2]);
        byte[] expect = PersistenceTest.block(length, Long.parseLong(args[3]));
        ByteBuffer buf = ByteBuffer.allocate(length);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buf.hasRemaining()) {
                if (ch.read(buf, offset + buf.position()) < 0) {
                    System.out.println("NOT FOUND: " + file + " ends after " + (offset + buf.position()) + " bytes");
                    return 1;
                }
            }
        } catch (IOException e) {
            System.out.println("ERROR: " + e);
            return 2;
        }
        for (int i = 0; i < length; i++) {
            if (buf.get(i) != expect[i]) {
                System.out.printf("NOT FOUND: byte %d at offset %d is 0x%02x, expected 0x%02x%n", i, offset + i,
                        buf.get(i), expect[i]);
                return 1;
            }
        }
        System.out.println("FOUND " + length + " bytes at offset " + offset + " of " + file);
        return 0;
    }
}
