package io.rxe4j.core.rc;

import io.rxe4j.core.wire.PacketView;

/**
 * How an extension of RC (TID RDMA, {@code tid-opfn-facts.md} §5.3, §5.6, §6.2–§6.4, §7) executes
 * the requests it owns at the responder without the responder knowing it: requests of
 * {@link io.rxe4j.core.wire.Opcode.Transport#TID} pass the responder's checks up to CHK_LENGTH,
 * then go to {@link #execute} (or {@link #duplicate}); replies recorded as {@link
 * ResponderResources.Type#TID_READ} are sent by {@link #sendReply}. The extension uses the
 * responder through {@link ResponderOps}.
 *
 * <p>Called on the QP's loop only; implementations allocate nothing per packet. Registered with
 * {@link Responder#hook(ResponderHook)} when the QP is built; {@link #NONE} until then.
 */
public interface ResponderHook {
    /** No extension: its requests never pass CHK_OP_VALID, so none of these is called. */
    ResponderHook NONE = new ResponderHook() {
        @Override
        public boolean actsAtOnce(PacketView pkt, int ePsn) {
            return false;
        }

        @Override
        public boolean holds(PacketView pkt, int ePsn) {
            return false;
        }

        @Override
        public void execute(PacketView pkt, int psn) {
            throw new IllegalStateException("no extension executes " + pkt.opcode());
        }

        @Override
        public void duplicate(PacketView pkt, int psn) {
            throw new IllegalStateException("no extension answers " + pkt.opcode());
        }

        @Override
        public void sendReply(ResponderResources.Entry e) {
            throw new IllegalStateException("no extension replies to a " + e.type + " resource");
        }
    };

    /**
     * @return whether {@code pkt} is a duplicate the extension answers at once, ahead of the
     *     responder's queue (a duplicate TID WRITE_REQ only re-sends WRITE_RESPs; then {@link
     *     #duplicate} is called for it)
     */
    boolean actsAtOnce(PacketView pkt, int ePsn);

    /**
     * @return whether {@code pkt}, the next request in order, must wait for the extension (the
     *     READ-after-TID-WRITE interlock of §7); the extension releases it with {@link
     *     Responder#releaseInterlock()}
     */
    boolean holds(PacketView pkt, int ePsn);

    /** EXECUTE for a request the extension owns (PSN {@code psn} = the expected PSN; checks passed up to CHK_LENGTH). */
    void execute(PacketView pkt, int psn);

    /** DUPLICATE_REQUEST for a request the extension owns (PSN {@code psn} behind the expected PSN). */
    void duplicate(PacketView pkt, int psn);

    /** Sends the next packet of a reply recorded by the extension (the reply under way). */
    void sendReply(ResponderResources.Entry e);
}
