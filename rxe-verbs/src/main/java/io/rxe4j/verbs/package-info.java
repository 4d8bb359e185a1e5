/**
 * The rxe4j verbs API ({@code ibv_*} in Java). Ownership follows libibverbs: a device owns PDs
 * and CQs; a PD owns MRs and QPs. Every resource is {@link java.lang.AutoCloseable}; closing a
 * parent with live children throws {@link java.lang.IllegalStateException} (libibverbs: EBUSY).
 */
package io.rxe4j.verbs;
