package io.rxe4j.verbs.provider;

/** The provider side of a memory window ({@code ibv_mw}). */
public interface MwOps {
    /** @return the window's rkey now, as the device knows it (changed by a completed bind) */
    int rkey();

    /** @return 1 (IBV_MW_TYPE_1) or 2 (IBV_MW_TYPE_2, with type 2B semantics) */
    int typeNumber();
}
