package io.rxe4j.verbs;

/** Send flags ({@code enum ibv_send_flags}; {@code rxe-facts.md} §6.7), an int bit set. */
public final class SendFlags {
    /** IBV_SEND_FENCE: wait for earlier READ/ATOMIC WRs to complete. */
    public static final int FENCE = 1;
    /** IBV_SEND_SIGNALED: generate a CQE on success. */
    public static final int SIGNALED = 1 << 1;
    /** IBV_SEND_SOLICITED: set SE on the last packet. */
    public static final int SOLICITED = 1 << 2;
    /** IBV_SEND_INLINE: data is copied at post time; the lkey is not checked. */
    public static final int INLINE = 1 << 3;

    private SendFlags() {}
}
