package io.rxe4j.verbs;

/**
 * A scatter/gather element ({@code struct ibv_sge}): {@code addr} is a virtual address inside a
 * registered MR (its {@code iova} + offset), {@code length} in bytes, {@code lkey} the MR's
 * local key. Mutable and reusable.
 */
public final class Sge {
    /** Virtual address in bytes. */
    public long addr;
    /** Length in bytes (unsigned 32-bit in verbs; here 0..2^31). */
    public int length;
    /** Local key of the MR holding [addr, addr+length). */
    public int lkey;

    /** Creates a zero SGE. */
    public Sge() {}

    /** Creates an SGE. */
    public Sge(long addr, int length, int lkey) {
        set(addr, length, lkey);
    }

    /** Sets all fields. @return this */
    public Sge set(long addr, int length, int lkey) {
        this.addr = addr;
        this.length = length;
        this.lkey = lkey;
        return this;
    }

    @Override
    public String toString() {
        return "Sge{addr=0x" + Long.toHexString(addr) + ", length=" + length + ", lkey=0x" + Integer.toHexString(lkey) + '}';
    }
}
