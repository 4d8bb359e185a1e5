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
     * Parses {@link #toBytes()} at the head of a connection's private data, which the IB CM delivers
     * zero-padded to its field (56 bytes from a client, 196 from a server): the second MR is there
     * when its length is not 0.
     *
     * @throws IllegalArgumentException if {@code data} is shorter than 20 bytes, or advertises no
     *     first MR (a length of 0)
     */
    public static BufferAdvert parse(byte[] data) {
        if (data.length < 20) {
            throw new IllegalArgumentException("a buffer advert is 20 or 40 bytes of private data, got " + data.length);
        }
        ByteBuffer b = ByteBuffer.wrap(data);
        int rkey = b.getInt();
        long va = b.getLong();
        long len = b.getLong();
        if (len == 0) {
            throw new IllegalArgumentException("the private data advertises no buffer (length 0)");
        }
        if (data.length < 40) {
            return new BufferAdvert(rkey, va, len);
        }
        int pr = b.getInt();
        long pva = b.getLong();
        long plen = b.getLong();
        return plen == 0 ? new BufferAdvert(rkey, va, len) : new BufferAdvert(rkey, va, len, pr, pva, plen);
    }
}
