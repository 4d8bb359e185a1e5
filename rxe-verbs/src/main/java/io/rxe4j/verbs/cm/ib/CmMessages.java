package io.rxe4j.verbs.cm.ib;

/**
 * Typed views of the CM messages over a {@link CmMad} ({@code cm-facts.md} §2; IBTA vol. 1 tables
 * 106–120). Offsets are data offsets (byte 24 of the MAD is 0); bit positions count 7 as the MSB of
 * a byte. Each setter returns the view; getters return unsigned values in {@code int}s.
 */
public final class CmMessages {
    private CmMessages() {}

    /** REQ (attribute 0x0010; §2.1). */
    public static final class Req {
        /** Bytes of private data a REQ carries. */
        public static final int PRIVATE_DATA = 92;
        /** Transport service types (data 43 bits 2..1). */
        public static final int RC = 0;
        public static final int UC = 1;
        public static final int XRC = 3;

        final CmMad m;

        public Req(CmMad m) {
            this.m = m;
        }

        public static Req create(long tid) {
            return new Req(CmMad.create(CmMad.ATTR_REQ, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public Req localCommId(int v) { m.u32(0, v); return this; }
        /** @return the ECE vendor ID (data 5..7; 0 = no ECE) */
        public int vendorId() { return m.u24(5); }
        public Req vendorId(int v) { m.u24(5, v); return this; }
        public long serviceId() { return m.u64(8); }
        public Req serviceId(long v) { m.u64(8, v); return this; }
        public long localCaGuid() { return m.u64(16); }
        public Req localCaGuid(long v) { m.u64(16, v); return this; }
        public int localQkey() { return m.u32(28); }
        public Req localQkey(int v) { m.u32(28, v); return this; }
        public int localQpn() { return m.u24(32); }
        public Req localQpn(int v) { m.u24(32, v); return this; }
        /** @return what the sender serves at once (its max_dest_rd_atomic) */
        public int responderResources() { return m.u8(35); }
        public Req responderResources(int v) { m.u8(35, v); return this; }
        /** @return what the sender issues at once (its max_rd_atomic) */
        public int initiatorDepth() { return m.u8(39); }
        public Req initiatorDepth(int v) { m.u8(39, v); return this; }
        public int remoteCmResponseTimeout() { return m.bits(43, 7, 3); }
        public Req remoteCmResponseTimeout(int v) { m.bits(43, 7, 3, v); return this; }
        public int transportType() { return m.bits(43, 2, 1); }
        public Req transportType(int v) { m.bits(43, 2, 1, v); return this; }
        public boolean flowControl() { return m.bits(43, 0, 0) != 0; }
        public Req flowControl(boolean v) { m.bits(43, 0, 0, v ? 1 : 0); return this; }
        /** @return the PSN the REQ's sender will receive (the peer's SQ PSN; §3.2 rule 2) */
        public int startingPsn() { return m.u24(44); }
        public Req startingPsn(int v) { m.u24(44, v); return this; }
        public int localCmResponseTimeout() { return m.bits(47, 7, 3); }
        public Req localCmResponseTimeout(int v) { m.bits(47, 7, 3, v); return this; }
        public int retryCount() { return m.bits(47, 2, 0); }
        public Req retryCount(int v) { m.bits(47, 2, 0, v); return this; }
        public int pkey() { return m.u16(48); }
        public Req pkey(int v) { m.u16(48, v); return this; }
        /** @return the path MTU as IB's enum (1 = 256 … 5 = 4096) */
        public int pathMtu() { return m.bits(50, 7, 4); }
        public Req pathMtu(int v) { m.bits(50, 7, 4, v); return this; }
        public boolean rdcExists() { return m.bits(50, 3, 3) != 0; }
        public int rnrRetryCount() { return m.bits(50, 2, 0); }
        public Req rnrRetryCount(int v) { m.bits(50, 2, 0, v); return this; }
        public int maxCmRetries() { return m.bits(51, 7, 4); }
        public Req maxCmRetries(int v) { m.bits(51, 7, 4, v); return this; }
        public boolean srq() { return m.bits(51, 3, 3) != 0; }
        public Req srq(boolean v) { m.bits(51, 3, 3, v ? 1 : 0); return this; }
        public int extendedTransportType() { return m.bits(51, 2, 0); }
        public int primaryLocalLid() { return m.u16(52); }
        public Req primaryLocalLid(int v) { m.u16(52, v); return this; }
        public int primaryRemoteLid() { return m.u16(54); }
        public Req primaryRemoteLid(int v) { m.u16(54, v); return this; }
        /** @return the REQ sender's GID (16 bytes, wire order) */
        public byte[] primaryLocalGid() { return m.slice(56, 16); }
        public Req primaryLocalGid(byte[] gid) { m.put(56, gid, 16); return this; }
        /** @return the receiver's GID as the sender addressed it */
        public byte[] primaryRemoteGid() { return m.slice(72, 16); }
        public Req primaryRemoteGid(byte[] gid) { m.put(72, gid, 16); return this; }
        /** @return the 20-bit flow label (bits 31..12 of the word at data 88) */
        public int primaryFlowLabel() { return m.u32(88) >>> 12; }
        public Req primaryFlowLabel(int v) { m.u32(88, (m.u32(88) & 0xFFF) | (v << 12)); return this; }
        public int primaryPacketRate() { return m.bits(91, 5, 0); }
        public Req primaryPacketRate(int v) { m.bits(91, 5, 0, v); return this; }
        public int primaryTrafficClass() { return m.u8(92); }
        public Req primaryTrafficClass(int v) { m.u8(92, v); return this; }
        public int primaryHopLimit() { return m.u8(93); }
        public Req primaryHopLimit(int v) { m.u8(93, v); return this; }
        public int primarySl() { return m.bits(94, 7, 4); }
        public Req primarySl(int v) { m.bits(94, 7, 4, v); return this; }
        public boolean primarySubnetLocal() { return m.bits(94, 3, 3) != 0; }
        public Req primarySubnetLocal(boolean v) { m.bits(94, 3, 3, v ? 1 : 0); return this; }
        public int primaryLocalAckTimeout() { return m.bits(95, 7, 3); }
        public Req primaryLocalAckTimeout(int v) { m.bits(95, 7, 3, v); return this; }
        /** @return the 92 bytes of private data (rdma_cm: the cma header, then 56 user bytes) */
        public byte[] privateData() { return m.slice(140, PRIVATE_DATA); }
        public Req privateData(byte[] v) { m.put(140, v, PRIVATE_DATA); return this; }
    }

    /** REP (attribute 0x0013; §2.2). */
    public static final class Rep {
        public static final int PRIVATE_DATA = 196;
        final CmMad m;

        public Rep(CmMad m) {
            this.m = m;
        }

        public static Rep create(long tid) {
            return new Rep(CmMad.create(CmMad.ATTR_REP, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public Rep localCommId(int v) { m.u32(0, v); return this; }
        public int remoteCommId() { return m.u32(4); }
        public Rep remoteCommId(int v) { m.u32(4, v); return this; }
        public int localQkey() { return m.u32(8); }
        public Rep localQkey(int v) { m.u32(8, v); return this; }
        public int localQpn() { return m.u24(12); }
        public Rep localQpn(int v) { m.u24(12, v); return this; }
        public int localEecn() { return m.u24(16); }
        /** @return the ECE vendor ID, split over data 15, 19 and 23 (0 = no ECE) */
        public int vendorId() { return (m.u8(15) << 16) | (m.u8(19) << 8) | m.u8(23); }
        public Rep vendorId(int v) { m.u8(15, v >>> 16); m.u8(19, v >>> 8); m.u8(23, v); return this; }
        /** @return the PSN the REP's sender will receive */
        public int startingPsn() { return m.u24(20); }
        public Rep startingPsn(int v) { m.u24(20, v); return this; }
        public int responderResources() { return m.u8(24); }
        public Rep responderResources(int v) { m.u8(24, v); return this; }
        public int initiatorDepth() { return m.u8(25); }
        public Rep initiatorDepth(int v) { m.u8(25, v); return this; }
        public int targetAckDelay() { return m.bits(26, 7, 3); }
        public Rep targetAckDelay(int v) { m.bits(26, 7, 3, v); return this; }
        public int failoverAccepted() { return m.bits(26, 2, 1); }
        public boolean flowControl() { return m.bits(26, 0, 0) != 0; }
        public Rep flowControl(boolean v) { m.bits(26, 0, 0, v ? 1 : 0); return this; }
        public int rnrRetryCount() { return m.bits(27, 7, 5); }
        public Rep rnrRetryCount(int v) { m.bits(27, 7, 5, v); return this; }
        public boolean srq() { return m.bits(27, 4, 4) != 0; }
        public Rep srq(boolean v) { m.bits(27, 4, 4, v ? 1 : 0); return this; }
        public long localCaGuid() { return m.u64(28); }
        public Rep localCaGuid(long v) { m.u64(28, v); return this; }
        public byte[] privateData() { return m.slice(36, PRIVATE_DATA); }
        public Rep privateData(byte[] v) { m.put(36, v, PRIVATE_DATA); return this; }
    }

    /** REJ (attribute 0x0012; §2.4). */
    public static final class Rej {
        public static final int ARI = 72;
        public static final int PRIVATE_DATA = 148;
        /** "Message REJected" (data 8 bits 7..6). */
        public static final int REJECTED_REQ = 0;
        public static final int REJECTED_REP = 1;
        public static final int REJECTED_OTHER = 2;
        final CmMad m;

        public Rej(CmMad m) {
            this.m = m;
        }

        public static Rej create(long tid) {
            return new Rej(CmMad.create(CmMad.ATTR_REJ, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public Rej localCommId(int v) { m.u32(0, v); return this; }
        public int remoteCommId() { return m.u32(4); }
        public Rej remoteCommId(int v) { m.u32(4, v); return this; }
        public int messageRejected() { return m.bits(8, 7, 6); }
        public Rej messageRejected(int v) { m.bits(8, 7, 6, v); return this; }
        public int rejectInfoLength() { return m.bits(9, 7, 1); }
        public int reason() { return m.u16(10); }
        public Rej reason(int v) { m.u16(10, v); return this; }
        /** @return the additional rejection information (ARI), its length bytes */
        public byte[] ari() { return m.slice(12, Math.min(ARI, rejectInfoLength())); }
        public Rej ari(byte[] v) { m.put(12, v, ARI); m.bits(9, 7, 1, v.length); return this; }
        public byte[] privateData() { return m.slice(84, PRIVATE_DATA); }
        public Rej privateData(byte[] v) { m.put(84, v, PRIVATE_DATA); return this; }
    }

    /** MRA (attribute 0x0011; §2.5). */
    public static final class Mra {
        public static final int PRIVATE_DATA = 222;
        final CmMad m;

        public Mra(CmMad m) {
            this.m = m;
        }

        public static Mra create(long tid) {
            return new Mra(CmMad.create(CmMad.ATTR_MRA, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public Mra localCommId(int v) { m.u32(0, v); return this; }
        public int remoteCommId() { return m.u32(4); }
        public Mra remoteCommId(int v) { m.u32(4, v); return this; }
        /** @return 0 REQ, 1 REP, 2 other */
        public int messageMraed() { return m.bits(8, 7, 6); }
        public Mra messageMraed(int v) { m.bits(8, 7, 6, v); return this; }
        public int serviceTimeout() { return m.bits(9, 7, 3); }
        public Mra serviceTimeout(int v) { m.bits(9, 7, 3, v); return this; }
    }

    /** DREQ (attribute 0x0015; §2.3). */
    public static final class Dreq {
        public static final int PRIVATE_DATA = 220;
        final CmMad m;

        public Dreq(CmMad m) {
            this.m = m;
        }

        public static Dreq create(long tid) {
            return new Dreq(CmMad.create(CmMad.ATTR_DREQ, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public Dreq localCommId(int v) { m.u32(0, v); return this; }
        public int remoteCommId() { return m.u32(4); }
        public Dreq remoteCommId(int v) { m.u32(4, v); return this; }
        /** @return the QPN of the receiver the DREQ means (a mismatch: the DREQ is ignored) */
        public int remoteQpn() { return m.u24(8); }
        public Dreq remoteQpn(int v) { m.u24(8, v); return this; }
    }

    /** RTU (0x0014) and DREP (0x0016): two comm IDs and 224 bytes of private data (§2.3). */
    public static final class RtuOrDrep {
        public static final int PRIVATE_DATA = 224;
        final CmMad m;

        public RtuOrDrep(CmMad m) {
            this.m = m;
        }

        public static RtuOrDrep rtu(long tid) {
            return new RtuOrDrep(CmMad.create(CmMad.ATTR_RTU, tid));
        }

        public static RtuOrDrep drep(long tid) {
            return new RtuOrDrep(CmMad.create(CmMad.ATTR_DREP, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int localCommId() { return m.u32(0); }
        public RtuOrDrep localCommId(int v) { m.u32(0, v); return this; }
        public int remoteCommId() { return m.u32(4); }
        public RtuOrDrep remoteCommId(int v) { m.u32(4, v); return this; }
        public byte[] privateData() { return m.slice(8, PRIVATE_DATA); }
    }

    /** SIDR_REQ (attribute 0x0017; §2.6). */
    public static final class SidrReq {
        public static final int PRIVATE_DATA = 216;
        final CmMad m;

        public SidrReq(CmMad m) {
            this.m = m;
        }

        public static SidrReq create(long tid) {
            return new SidrReq(CmMad.create(CmMad.ATTR_SIDR_REQ, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int requestId() { return m.u32(0); }
        public SidrReq requestId(int v) { m.u32(0, v); return this; }
        public int pkey() { return m.u16(4); }
        public SidrReq pkey(int v) { m.u16(4, v); return this; }
        public long serviceId() { return m.u64(8); }
        public SidrReq serviceId(long v) { m.u64(8, v); return this; }
        public byte[] privateData() { return m.slice(16, PRIVATE_DATA); }
        public SidrReq privateData(byte[] v) { m.put(16, v, PRIVATE_DATA); return this; }
    }

    /** SIDR_REP (attribute 0x0018; §2.6). */
    public static final class SidrRep {
        public static final int PRIVATE_DATA = 136;
        /** Statuses ({@code ib_cm.h}). */
        public static final int SUCCESS = 0;
        public static final int UNSUPPORTED = 1;
        public static final int REJECT = 2;
        public static final int NO_QP = 3;
        public static final int REDIRECT = 4;
        public static final int UNSUPPORTED_VERSION = 5;
        final CmMad m;

        public SidrRep(CmMad m) {
            this.m = m;
        }

        public static SidrRep create(long tid) {
            return new SidrRep(CmMad.create(CmMad.ATTR_SIDR_REP, tid));
        }

        public CmMad mad() {
            return m;
        }

        public int requestId() { return m.u32(0); }
        public SidrRep requestId(int v) { m.u32(0, v); return this; }
        public int status() { return m.u8(4); }
        public SidrRep status(int v) { m.u8(4, v); return this; }
        public int qpn() { return m.u24(8); }
        public SidrRep qpn(int v) { m.u24(8, v); return this; }
        public long serviceId() { return m.u64(12); }
        public SidrRep serviceId(long v) { m.u64(12, v); return this; }
        public int qkey() { return m.u32(20); }
        public SidrRep qkey(int v) { m.u32(20, v); return this; }
        public byte[] privateData() { return m.slice(96, PRIVATE_DATA); }
        public SidrRep privateData(byte[] v) { m.put(96, v, PRIVATE_DATA); return this; }
    }
}
