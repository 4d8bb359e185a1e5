package io.rxe4j.verbs.cm.ib;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * One IB CM MAD of 256 bytes ({@code cm-facts.md} §1.2, §2): the 24-byte common MAD header and the
 * 232 bytes of CM data of one attribute, big-endian. A flyweight over its own array: the typed
 * accessors read and write fields in place at the offsets of IBTA's tables (data offsets are counted
 * from byte 24, {@link #DATA}). Not thread-safe; one MAD per message.
 */
public final class CmMad {
    /** A MAD's size ({@code IB_MGMT_MAD_SIZE}). */
    public static final int SIZE = 256;
    /** Where the CM data starts (after the common header). */
    public static final int DATA = 24;
    /** {@code IB_MGMT_BASE_VERSION}. */
    public static final int BASE_VERSION = 1;
    /** {@code IB_MGMT_CLASS_CM}. */
    public static final int CLASS_CM = 0x07;
    /** {@code IB_CM_CLASS_VERSION} ("IB spec 1.2"). */
    public static final int CLASS_VERSION = 2;
    /** Method Send: every CM message. */
    public static final int METHOD_SEND = 0x03;

    /** CM attribute IDs ({@code ib_cm.h}, {@code cm-facts.md} §1.3). */
    public static final int ATTR_CLASS_PORT_INFO = 0x0001;
    public static final int ATTR_REQ = 0x0010;
    public static final int ATTR_MRA = 0x0011;
    public static final int ATTR_REJ = 0x0012;
    public static final int ATTR_REP = 0x0013;
    public static final int ATTR_RTU = 0x0014;
    public static final int ATTR_DREQ = 0x0015;
    public static final int ATTR_DREP = 0x0016;
    public static final int ATTR_SIDR_REQ = 0x0017;
    public static final int ATTR_SIDR_REP = 0x0018;
    public static final int ATTR_LAP = 0x0019;
    public static final int ATTR_APR = 0x001A;

    private final byte[] bytes;
    private final ByteBuffer b;

    private CmMad(byte[] bytes) {
        this.bytes = bytes;
        this.b = ByteBuffer.wrap(bytes); // big-endian
    }

    /** @return a zeroed CM MAD with the common header of a CM Send of {@code attribute} and {@code tid} */
    public static CmMad create(int attribute, long tid) {
        CmMad m = new CmMad(new byte[SIZE]);
        m.b.put(0, (byte) BASE_VERSION).put(1, (byte) CLASS_CM).put(2, (byte) CLASS_VERSION).put(3, (byte) METHOD_SEND);
        m.b.putLong(8, tid).putShort(16, (short) attribute);
        return m;
    }

    /**
     * @return the MAD in {@code mad} (a copy), or null when it is not one the CM takes: shorter than
     *     256 bytes, another base version, class or class version, or not a Send ({@code
     *     mad.c:validate_mad}; the kernel's CM agent is registered for class 7 version 2, Send)
     */
    public static CmMad parse(byte[] mad) {
        if (mad == null || mad.length < SIZE) {
            return null;
        }
        CmMad m = new CmMad(Arrays.copyOf(mad, SIZE));
        if (m.baseVersion() != BASE_VERSION || m.mgmtClass() != CLASS_CM || m.classVersion() != CLASS_VERSION
                || m.method() != METHOD_SEND) {
            return null;
        }
        return m;
    }

    /** @return the 256 bytes (the array itself) */
    public byte[] bytes() {
        return bytes;
    }

    // ---- common header (§1.2)

    public int baseVersion() {
        return b.get(0) & 0xFF;
    }

    public int mgmtClass() {
        return b.get(1) & 0xFF;
    }

    public int classVersion() {
        return b.get(2) & 0xFF;
    }

    /** @return bits 6..0 of byte 3 (the response bit 7 is never set on CM Sends) */
    public int method() {
        return b.get(3) & 0xFF;
    }

    public int status() {
        return b.getShort(4) & 0xFFFF;
    }

    public long tid() {
        return b.getLong(8);
    }

    public int attribute() {
        return b.getShort(16) & 0xFFFF;
    }

    public int attributeModifier() {
        return b.getInt(20);
    }

    /** Sets the attribute modifier (ECE's {@code attr_mod} on REQ, REP and SIDR_REP). */
    public CmMad attributeModifier(int v) {
        b.putInt(20, v);
        return this;
    }

    // ---- field access by data offset

    int u8(int off) {
        return b.get(DATA + off) & 0xFF;
    }

    void u8(int off, int v) {
        b.put(DATA + off, (byte) v);
    }

    int u16(int off) {
        return b.getShort(DATA + off) & 0xFFFF;
    }

    void u16(int off, int v) {
        b.putShort(DATA + off, (short) v);
    }

    int u24(int off) {
        return (u8(off) << 16) | (u8(off + 1) << 8) | u8(off + 2);
    }

    void u24(int off, int v) {
        u8(off, v >>> 16);
        u8(off + 1, v >>> 8);
        u8(off + 2, v);
    }

    int u32(int off) {
        return b.getInt(DATA + off);
    }

    void u32(int off, int v) {
        b.putInt(DATA + off, v);
    }

    long u64(int off) {
        return b.getLong(DATA + off);
    }

    void u64(int off, long v) {
        b.putLong(DATA + off, v);
    }

    /** @return bits {@code hi..lo} (7 = MSB) of the byte at data offset {@code off} */
    int bits(int off, int hi, int lo) {
        return (u8(off) >>> lo) & ((1 << (hi - lo + 1)) - 1);
    }

    /** Sets bits {@code hi..lo} of the byte at data offset {@code off} to {@code v}. */
    void bits(int off, int hi, int lo, int v) {
        int mask = ((1 << (hi - lo + 1)) - 1) << lo;
        u8(off, (u8(off) & ~mask) | ((v << lo) & mask));
    }

    byte[] slice(int off, int len) {
        return Arrays.copyOfRange(bytes, DATA + off, DATA + off + len);
    }

    void put(int off, byte[] v, int max) {
        if (v.length > max) {
            throw new IllegalArgumentException(v.length + " bytes do not fit a field of " + max);
        }
        Arrays.fill(bytes, DATA + off, DATA + off + max, (byte) 0);
        System.arraycopy(v, 0, bytes, DATA + off, v.length);
    }

    // ---- fields every message but the SIDR ones has first (§2.2-§2.5)

    /** @return the sender's communication ID (data 0-3; SIDR: the request ID) */
    public int localCommId() {
        return u32(0);
    }

    /** Sets data 0-3. @return this */
    public CmMad localCommId(int id) {
        u32(0, id);
        return this;
    }

    /** @return the receiver's communication ID (data 4-7; not in REQ or the SIDR messages) */
    public int remoteCommId() {
        return u32(4);
    }

    /** Sets data 4-7. @return this */
    public CmMad remoteCommId(int id) {
        u32(4, id);
        return this;
    }

    @Override
    public String toString() {
        return String.format("CmMad{attr=0x%04x, tid=0x%016x, local=0x%08x, remote=0x%08x}", attribute(), tid(),
                localCommId(), remoteCommId());
    }
}
