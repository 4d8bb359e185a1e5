/**
 * The IB connection manager's wire format on the GSI QP ({@code cm-facts.md}): the MADs (common
 * header, REQ, REP, RTU, REJ, MRA, DREQ, DREP, SIDR_REQ, SIDR_REP) and rdma_cm's layer on top (service
 * IDs, the 36-byte cma header). Internal to {@code io.rxe4j.verbs}: not exported.
 */
package io.rxe4j.verbs.cm.ib;
