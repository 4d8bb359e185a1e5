package io.rxe4j.verbs;

/**
 * Access flags for MRs and QPs ({@code enum ibv_access_flags}; {@code rxe-facts.md} §6.2), an
 * int bit set.
 */
public final class Access {
    /** IBV_ACCESS_LOCAL_WRITE. */
    public static final int LOCAL_WRITE = 1;
    /** IBV_ACCESS_REMOTE_WRITE (needs LOCAL_WRITE on an MR). */
    public static final int REMOTE_WRITE = 1 << 1;
    /** IBV_ACCESS_REMOTE_READ. */
    public static final int REMOTE_READ = 1 << 2;
    /** IBV_ACCESS_REMOTE_ATOMIC (needs LOCAL_WRITE on an MR). */
    public static final int REMOTE_ATOMIC = 1 << 3;
    /** IBV_ACCESS_MW_BIND. */
    public static final int MW_BIND = 1 << 4;
    /** IBV_ACCESS_ZERO_BASED. */
    public static final int ZERO_BASED = 1 << 5;
    /** IBV_ACCESS_ON_DEMAND. */
    public static final int ON_DEMAND = 1 << 6;
    /** IBV_ACCESS_HUGETLB. */
    public static final int HUGETLB = 1 << 7;
    /** IBV_ACCESS_FLUSH_GLOBAL. */
    public static final int FLUSH_GLOBAL = 1 << 8;
    /** IBV_ACCESS_FLUSH_PERSISTENT. */
    public static final int FLUSH_PERSISTENT = 1 << 9;
    /** IBV_ACCESS_RELAXED_ORDERING (first optional bit). */
    public static final int RELAXED_ORDERING = 1 << 20;
    /** Bits 20..29: optional flags a device may ignore. */
    public static final int OPTIONAL_RANGE = 0x3FF0_0000;

    private Access() {}

    /** @return a readable form such as {@code LOCAL_WRITE|REMOTE_READ} */
    public static String toString(int flags) {
        StringBuilder sb = new StringBuilder();
        String[] names = {"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC", "MW_BIND",
            "ZERO_BASED", "ON_DEMAND", "HUGETLB", "FLUSH_GLOBAL", "FLUSH_PERSISTENT"};
        for (int i = 0; i < names.length; i++) {
            if ((flags & (1 << i)) != 0) {
                sb.append(sb.isEmpty() ? "" : "|").append(names[i]);
            }
        }
        int rest = flags & ~0x3FF;
        if (rest != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("0x").append(Integer.toHexString(rest));
        }
        return sb.isEmpty() ? "0" : sb.toString();
    }
}
