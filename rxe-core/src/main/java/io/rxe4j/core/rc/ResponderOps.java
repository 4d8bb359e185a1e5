package io.rxe4j.core.rc;

import io.netty.buffer.ByteBuf;
import io.rxe4j.core.memory.RxeMr;

/**
 * What an extension executing its own requests ({@link ResponderHook}) may do at the responder:
 * record a resource, check an R_Key, accept a request, reply from a resource, NAK. The responder's
 * states stay its own ({@link Responder.State}). Loop only.
 */
public interface ResponderOps {
    /** @return the responder resources (duplicates are answered from them, {@code rxe-facts.md} §5.5) */
    ResponderResources resources();

    /**
     * CHK_RKEY: the MR named by {@code rkey}, if it is valid, of this QP's PD, holds
     * {@code [va, va+len)} and grants {@code access}; else null (the caller NAKs 0x62).
     */
    RxeMr remoteMr(int rkey, long va, long len, int access);

    /** The request with PSN {@code psn} is accepted and covers {@code npkts} PSNs: MSN + 1, ePSN = psn + npkts. */
    void accept(int psn, int npkts);

    /** Class C error ({@code rxe-facts.md} §6.3): NAK {@code syndrome} with PSN {@code psn}, the QP enters ERR. */
    void nakError(int syndrome, int psn);

    /** Answers RNR NAK with RNR timer index {@code timerIndex} (0..31) for PSN {@code psn} (counted as send_rnr_err). */
    void rnrNak(int timerIndex, int psn);

    /**
     * Starts (or restarts) the reply of resource {@code e} for {@code [va, va+len)} of {@code mr}
     * from PSN {@code psn}, sent in bounded batches by {@link ResponderHook#sendReply}.
     *
     * @param sendNow whether to send the first batch at once (else at the QP's next turn)
     */
    void startReply(ResponderResources.Entry e, RxeMr mr, long va, long len, int psn, boolean sendNow);

    /**
     * Completes reply packet {@code b} of {@code e} (headers written): copies {@code n} bytes from
     * the MR at {@code e.curVa} after the {@code hdr}-byte headers, pads, transmits.
     *
     * @return false if the MR was released under the copy (the reply ended with NAK 0x62, {@code b} is freed)
     */
    boolean transmitPayload(ResponderResources.Entry e, ByteBuf b, int hdr, int n);

    /** The reply under way is complete. */
    void endReply();

    /** The memory under reply {@code e} became unreadable: NAK 0x62 with the request's PSN ({@code extensions.md} §6). */
    void readFault(ResponderResources.Entry e);

    /** @return the current MSN (24 bits), for the AETH of the extension's responses */
    int msn();

    /** @return the next request PSN expected (resp.psn) */
    int expectedPsn();
}
