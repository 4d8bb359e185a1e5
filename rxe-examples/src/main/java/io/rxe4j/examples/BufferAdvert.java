package io.rxe4j.examples;

import java.nio.ByteBuffer;

/**
 * The buffers one side lets its peer use, carried as connection private data (see {@link
 * io.rxe4j.verbs.cm.ConnectionParams#withPrivateData}): the rkey, virtual address and length (bytes)
 * of an MR and, optionally, of a second, persistent (file-backed) MR the peer may WRITE, READ and
 * FLUSH. Encoded big-endian: {@code u32 rkey | u64 va | u64 length}, once or twice (20 or 40
 * bytes), which fits a connect request's 56 bytes.
 */
public record BufferAdvert(int rkey, long va, long length, int pmemRkey, long pmemVa, long pmemLength) {
    /** An advert without a persistent MR. */
    public BufferAdvert(int rkey, long va, long length) {
        this(rkey, va, length, 0, 0, 0);
    }

    /** @return whether a persistent MR is advertised */
    public boolean hasPmem() {
        return pmemLength != 0;
    }

    /** @return the private-data bytes */
    public byte[] toBytes() {
        ByteBuffer b = ByteBuffer.allocate(hasPmem() ? 40 : 20).putInt(rkey).putLong(va).putLong(length);
        if (hasPmem()) {
            b.putInt(pmemRkey).putLong(pmemVa).putLong(pmemLength);
        }
        return b.array();
    }

    /**
     * Parses {@link #toBytes()}.
     *
     * @throws IllegalArgumentException unless {@code data} is 20 or 40 bytes
     */
    public static BufferAdvert parse(byte[] data) {
        if (data.length != 20 && data.length != 40) {
            throw new IllegalArgumentException("a buffer advert is 20 or 40 bytes of private data, got " + data.length);
        }
        ByteBuffer b = ByteBuffer.wrap(data);
        int rkey = b.getInt();
        long va = b.getLong();
        long len = b.getLong();
        return data.length == 20 ? new BufferAdvert(rkey, va, len)
                : new BufferAdvert(rkey, va, len, b.getInt(), b.getLong(), b.getLong());
    }
}
