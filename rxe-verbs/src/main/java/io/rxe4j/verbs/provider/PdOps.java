package io.rxe4j.verbs.provider;

/** A provider's protection domain ({@code ibv_pd}). */
public interface PdOps {
    /** @return the PD's handle, unique in its device */
    int handle();
}
