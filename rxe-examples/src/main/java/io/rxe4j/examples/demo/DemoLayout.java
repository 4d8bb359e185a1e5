package io.rxe4j.examples.demo;

/**
 * Offsets (bytes) inside each side's 4 MiB MR and inside the server's persistent MR, and the
 * values both processes agree on.
 */
final class DemoLayout {
    static final long MR_BYTES = 4L << 20;
    static final int BULK = 1 << 20;
    static final long WRITE_OFF = 0;
    static final long READ_BACK_OFF = 1L << 20;
    static final long IMM_WRITE_OFF = 2L << 20;
    static final int IMM_WRITE_LEN = 64 << 10;
    static final long RECV_OFF = 3L << 20;
    static final int SEND_LEN = 4000;
    static final int RECV_LEN = 64 << 10;
    static final long CAS_OFF = MR_BYTES - 16;
    static final long FAA_OFF = MR_BYTES - 8;
    static final long SCRATCH_OFF = MR_BYTES - 4096;
    /** Control messages (the client's DONE, the server's verdict), sent as SENDs: receive buffer. */
    static final long CTRL_OFF = MR_BYTES - 8192;
    /** Control message buffer size, bytes; the server sends its verdict from CTRL_OFF + CTRL_LEN. */
    static final int CTRL_LEN = 2048;
    /** Words of the masked atomics and the ATOMIC WRITE (server MR, 8-byte aligned). */
    static final long MASKED_CAS_OFF = MR_BYTES - 40;
    static final long MASKED_FAA_OFF = MR_BYTES - 32;
    static final long ATOMIC_WRITE_OFF = MR_BYTES - 24;
    /** Client-side source of the block written into the persistent MR (unused on the client otherwise). */
    static final long PMEM_SRC_OFF = RECV_OFF;
    /** Size of the server's persistent (file-backed) MR. */
    static final long PMEM_BYTES = 1L << 20;
    /** The block the client WRITEs into the persistent MR and FLUSHes. */
    static final long PMEM_BLOCK_OFF = 64L << 10;
    static final int PMEM_BLOCK_LEN = 256 << 10;
    static final long PMEM_SEED = 14;
    static final int SEND_IMM = 0x5EED;
    static final int WRITE_IMM = 0xC0FFEE;
    static final long SEND_SEED = 11;
    static final long IMM_WRITE_SEED = 12;
    static final long BULK_SEED = 13;

    private DemoLayout() {}
}
