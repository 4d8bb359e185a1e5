package io.rxe4j.core.device;

/** Test access to the package-private {@link LaneInbox} class. */
public final class LaneInboxLayout {
    private LaneInboxLayout() {}

    /** @return {@link LaneInbox}'s class */
    public static Class<?> inboxClass() {
        return LaneInbox.class;
    }
}
