package io.rxe4j.core.rc;

import io.rxe4j.core.qp.SendWqe;

/**
 * How an extension of RC (TID RDMA, {@code tid-opfn-facts.md} §5–§7) takes part in the
 * requester's send loop without the requester knowing it: its own send gates and interlocks, the
 * WQEs it carries (it builds their packets instead of {@link Requester}), and their rewind. The
 * extension sends through the requester's {@code *ForHook} methods, so PSNs, credits, the
 * retransmit timer and the output bound stay the requester's.
 *
 * <p>Called on the QP's loop only, once per packet at most: implementations allocate nothing.
 * Registered with {@link Requester#hook(RequesterHook)} when the QP is built; {@link #NONE} until then.
 */
public interface RequesterHook {
    /** No extension: every WQE is an RC WQE. */
    RequesterHook NONE = new RequesterHook() {
        @Override
        public void onRun() {
        }

        @Override
        public Requester.Stall gate(SendWqe w, boolean extensionPosted) {
            return null;
        }

        @Override
        public boolean carries(SendWqe w) {
            return false;
        }

        @Override
        public Requester.Stall send(SendWqe w) {
            throw new IllegalStateException("no extension carries " + w.opcode);
        }

        @Override
        public void onRewind(SendWqe w) {
        }
    };

    /** A run of the requester starts (the extension's own output, e.g. TID WRITE data, goes first). */
    void onRun();

    /**
     * The extension's send gate for {@code w}, a POSTED WQE at the requester's position, checked
     * after SQD and the fence and before credits.
     *
     * @param extensionPosted whether a WQE of the extension was ever posted (read after the acquire
     *     of the SQ producer index: it covers every WQE up to it)
     * @return the stall that holds {@code w} back, or null when it may go
     */
    Requester.Stall gate(SendWqe w, boolean extensionPosted);

    /** @return whether the extension builds the packets of {@code w} (then {@link #send} is called for it) */
    boolean carries(SendWqe w);

    /**
     * Sends the next request packet of a WQE {@link #carries carried} by the extension.
     *
     * @return null if a packet went out; a stall if {@code w} must wait ({@link Requester.Stall#QP_ERROR}
     *     if the QP entered ERR: the run ends)
     */
    Requester.Stall send(SendWqe w);

    /** The requester rewinds to comp.psn and {@code w}, a WQE the extension carries, is sent again. */
    void onRewind(SendWqe w);
}
