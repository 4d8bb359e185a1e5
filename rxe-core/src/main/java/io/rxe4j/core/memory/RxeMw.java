package io.rxe4j.core.memory;

import io.rxe4j.verbs.Access;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A memory window ({@code ibv_mw}; {@code verbs-surface-facts.md} §5): a remote key for a
 * sub-range of an MR with its own rights, bound and invalidated by work requests, so remote access
 * can be granted and revoked without re-registering memory. Type 1 windows are bound through any
 * QP of their PD ({@code ibv_bind_mw}) and stay VALID; type 2B windows are bound by a BIND_MW work
 * request on one QP, serve that QP only, and go back to FREE when invalidated (LOCAL_INV,
 * SEND_WITH_INV).
 *
 * <p>Every check here is one of rdma_rxe's ({@code rxe_mw.c}), in its order, with the rule's
 * IBTA number; rxe4j adds three where rxe is looser (each in {@code docs/verbs.md}): a remote
 * access must lie inside the window (rxe checks only the MR), the bound MR must belong to the
 * window's PD, and invalidation must come from the window's PD (type 2B: its QP).
 *
 * <p>Thread-safety: the binding is one immutable {@link Binding} swapped by compare-and-set, so a
 * lookup on any lane sees a whole binding, and a bind racing another bind or an invalidation on
 * another lane either wins or re-checks against the winner. No lock.
 */
public final class RxeMw implements io.rxe4j.verbs.provider.MwOps {
    /** The window's type ({@code enum ibv_mw_type}). */
    public enum Type {
        /** IBV_MW_TYPE_1: bound by {@code ibv_bind_mw}, usable through any QP of the PD. */
        TYPE_1,
        /** IBV_MW_TYPE_2 with type 2B semantics: bound by a BIND_MW WR to one QP. */
        TYPE_2B
    }

    /** The window's state ({@code enum rxe_mw_state}). */
    public enum State {
        /** Deallocated: every use fails. */
        INVALID,
        /** A type 2B window not bound (new, or invalidated): it may be bound. */
        FREE,
        /** Bound (type 1 also when new, with length 0 and so unusable). */
        VALID
    }

    /**
     * One binding, immutable.
     *
     * @param rkey the window's rkey now
     * @param mr the MR the window lies in, or null (unbound)
     * @param addr first virtual address of the window
     * @param length bytes
     * @param access the {@link Access} bits the window grants
     * @param qpn type 2B: the QP it is bound to, else -1
     */
    record Binding(int rkey, State state, RxeMr mr, long addr, long length, int access, int qpn) {}

    /** The access bits a window may grant ({@code RXE_ACCESS_SUPPORTED_MW}, less ZERO_BASED: refused). */
    public static final int SUPPORTED_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT | Access.ZERO_BASED;

    private final RxePd pd;
    private final Type type;
    private final int index;
    private final AtomicReference<Binding> binding;

    RxeMw(RxePd pd, Type type, int key) {
        this.pd = pd;
        this.type = type;
        this.index = key >>> 8;
        this.binding = new AtomicReference<>(new Binding(key, type == Type.TYPE_1 ? State.VALID : State.FREE, null,
                0, 0, 0, -1));
    }

    /** @return the owning PD */
    public RxePd pd() {
        return pd;
    }

    /** @return the type */
    public Type type() {
        return type;
    }

    /** @return the slot index: the rkey's upper 24 bits, never changed by a bind */
    public int index() {
        return index;
    }

    @Override
    public int rkey() {
        return binding.get().rkey();
    }

    @Override
    public int typeNumber() {
        return type == Type.TYPE_1 ? 1 : 2;
    }

    /** @return the state now */
    public State state() {
        return binding.get().state();
    }

    /** @return the bound MR now, or null */
    public RxeMr mr() {
        return binding.get().mr();
    }

    /** @return the window's first virtual address now if {@code rkey} is its rkey, else 0 */
    public long address(int rkey) {
        Binding b = binding.get();
        return b.rkey() == rkey ? b.addr() : 0;
    }

    /** @return the window's length in bytes now (0: unbound) */
    public long length() {
        return binding.get().length();
    }

    /**
     * Binds the window ({@code rxe_bind_mw}, checks of {@code verbs-surface-facts.md} §5.3 in
     * rxe's order, effect of §5.4). Runs on the binding QP's loop.
     *
     * @param mwRkey the rkey the WR names the window by (its current rkey)
     * @param newKey the new rkey; only its low 8 bits are used
     * @param mr the MR {@code mrLkey} names now, or null when the table has none
     * @param mrLkey the lkey the WR names the MR by (ignored when {@code length} is 0)
     * @param addr first virtual address of the window
     * @param length bytes; 0 unbinds a type 1 window
     * @param access the {@link Access} bits the window grants
     * @param qpPd the PD of the QP that binds
     * @param qpn that QP's number
     * @return null when bound, else why not (the WR completes with MW_BIND_ERR, the QP enters ERR)
     */
    public String bind(int mwRkey, int newKey, RxeMr mr, int mrLkey, long addr, long length, int access, RxePd qpPd,
            int qpn) {
        while (true) {
            Binding b = binding.get();
            String why = checkBind(b, mwRkey, mr, mrLkey, addr, length, access, qpPd);
            if (why != null) {
                return why;
            }
            RxeMr target = length == 0 ? null : mr;
            Binding next = new Binding((b.rkey() & ~0xFF) | (newKey & 0xFF), State.VALID, target, addr, length,
                    access, type == Type.TYPE_2B ? qpn : -1);
            if (target != null) {
                target.windowBound();
            }
            if (binding.compareAndSet(b, next)) {
                if (b.mr() != null) {
                    b.mr().windowUnbound();
                }
                return null;
            }
            if (target != null) {
                target.windowUnbound(); // lost a race with another bind or an invalidation: check again
            }
        }
    }

    private String checkBind(Binding b, int mwRkey, RxeMr mr, int mrLkey, long addr, long length, int access,
            RxePd qpPd) {
        if (b.state() == State.INVALID) {
            return "the window is deallocated";
        }
        if (b.rkey() != mwRkey) {
            return "stale window rkey 0x" + Integer.toHexString(mwRkey) + " (now 0x" + Integer.toHexString(b.rkey()) + ")";
        }
        if (length != 0 && (mr == null || mr.lkey() != mrLkey)) {
            return "no valid MR with lkey 0x" + Integer.toHexString(mrLkey);
        }
        if ((access & ~SUPPORTED_ACCESS) != 0) {
            return "window access " + Access.toString(access & ~SUPPORTED_ACCESS) + " is not supported (EOPNOTSUPP)";
        }
        if ((access & Access.ZERO_BASED) != 0) {
            return "zero-based windows are not supported (IBV_ACCESS_ZERO_BASED)";
        }
        if (type == Type.TYPE_1) {
            if (b.state() != State.VALID) {
                return "a type 1 window must be VALID to bind (o10-36.2.2)";
            }
        } else {
            if (b.state() != State.FREE) {
                return "a bound type 2B window must be invalidated before it is bound again (o10-37.2.30)";
            }
            if (qpPd != pd) {
                return "the binding QP's " + qpPd + " is not the window's " + pd + " (C10-72)";
            }
            if (length == 0) {
                return "a type 2B window cannot be bound with length 0 (o10-37.2.40)";
            }
        }
        if (length == 0) {
            return null; // type 1: unbound by a zero-length bind (§5.4 rule 5)
        }
        if (mr.pd() != pd) {
            return mr + " is not in the window's " + pd;
        }
        if ((mr.access() & Access.MW_BIND) == 0) {
            return mr + " lacks MW_BIND (C10-73)";
        }
        if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (mr.access() & Access.LOCAL_WRITE) == 0) {
            return "a window with REMOTE_WRITE or REMOTE_ATOMIC needs LOCAL_WRITE on " + mr + " (C10-74)";
        }
        int flush = access & (Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT);
        if ((mr.access() & flush) != flush) {
            return "window FLUSH rights " + Access.toString(flush) + " exceed " + mr;
        }
        if (!mr.contains(addr, length)) {
            return "window [0x" + Long.toHexString(addr) + ", +" + length + ") is not inside " + mr + " (C10-75)";
        }
        return null;
    }

    /**
     * Invalidates the window by LOCAL_INV or SEND_WITH_INV ({@code rxe_invalidate_mw}, {@code
     * verbs-surface-facts.md} §5.6): a type 2B window goes back to FREE and may be bound again.
     *
     * @param rkey the rkey to invalidate (must be the window's exactly)
     * @param qpPd the PD of the QP that invalidates (the one that posted LOCAL_INV, or that received
     *     SEND_WITH_INV)
     * @param qpn that QP's number
     * @return null when invalidated, else why not
     */
    public String invalidate(int rkey, RxePd qpPd, int qpn) {
        while (true) {
            Binding b = binding.get();
            if (b.rkey() != rkey) {
                return "rkey 0x" + Integer.toHexString(rkey) + " does not name a window now";
            }
            if (b.state() == State.INVALID) {
                return "the window with rkey 0x" + Integer.toHexString(rkey) + " is deallocated";
            }
            if (type == Type.TYPE_1) {
                return "a type 1 window cannot be invalidated, rkey 0x" + Integer.toHexString(rkey) + " (o10-37.2.26)";
            }
            if (qpPd != pd) {
                return "the window with rkey 0x" + Integer.toHexString(rkey) + " is in " + pd + ", not in " + qpPd;
            }
            if (b.state() == State.VALID && b.qpn() != qpn) {
                return "the window with rkey 0x" + Integer.toHexString(rkey) + " is bound to QP 0x"
                        + Integer.toHexString(b.qpn()) + ", not to QP 0x" + Integer.toHexString(qpn);
            }
            if (b.state() == State.FREE) {
                return null; // invalidated already: no error (rxe)
            }
            if (binding.compareAndSet(b, new Binding(b.rkey(), State.FREE, null, 0, 0, 0, -1))) {
                if (b.mr() != null) {
                    b.mr().windowUnbound();
                }
                return null;
            }
        }
    }

    /**
     * The remote-access checks of {@code verbs-surface-facts.md} §5.5 (rxe's {@code rxe_lookup_mw}
     * order), plus the window's own bounds.
     *
     * @return the MR to access, or null when refused (NAK 0x62 / REM_ACCESS_ERR)
     */
    public RxeMr grant(int rkey, RxePd qpPd, int qpn, long va, long len, int access) {
        Binding b = binding.get();
        if (b.rkey() != rkey || qpPd != pd || (type == Type.TYPE_2B && b.qpn() != qpn) || b.length() == 0
                || (access & ~b.access()) != 0 || b.state() != State.VALID) {
            return null;
        }
        RxeMr mr = b.mr();
        if (mr == null || !mr.isValid() || len < 0) {
            return null;
        }
        long off = va - b.addr();
        boolean inWindow = Long.compareUnsigned(va, b.addr()) >= 0 && Long.compareUnsigned(off, b.length()) <= 0
                && len <= b.length() - off;
        return inWindow && mr.contains(va, len) ? mr : null;
    }

    /** @return why {@link #grant} refuses this access (an error path: it allocates) */
    public String whyRefused(int rkey, RxePd qpPd, int qpn, long va, long len, int access) {
        Binding b = binding.get();
        String w = "memory window 0x" + Integer.toHexString(b.rkey());
        if (b.state() == State.INVALID) {
            return w + " is deallocated";
        }
        if (b.rkey() != rkey) {
            return "rkey 0x" + Integer.toHexString(rkey) + " is stale: " + w + " was bound or invalidated since";
        }
        if (qpPd != pd) {
            return w + " is in " + pd + ", not in the QP's " + qpPd;
        }
        if (b.state() == State.FREE) {
            return w + " is not bound (invalidated, or never bound)";
        }
        if (type == Type.TYPE_2B && b.qpn() != qpn) {
            return w + " is bound to QP 0x" + Integer.toHexString(b.qpn()) + ", not to QP 0x" + Integer.toHexString(qpn);
        }
        if (b.length() == 0 || b.mr() == null) {
            return w + " is unbound (length 0)";
        }
        if ((access & ~b.access()) != 0) {
            return w + " lacks " + Access.toString(access & ~b.access());
        }
        if (!b.mr().isValid()) {
            return w + " lies in a deregistered MR";
        }
        return "[0x" + Long.toHexString(va) + ", +" + len + ") is not inside " + w + " [0x" + Long.toHexString(b.addr())
                + ", +" + b.length() + ")";
    }

    /**
     * @return whether the window still grants what it granted under {@code rkey} (a multi-packet
     *     READ checks this before each response packet, {@code rxe_recheck_mr})
     */
    public boolean stillGrants(int rkey) {
        Binding b = binding.get();
        return b.rkey() == rkey && b.state() == State.VALID && b.mr() != null && b.mr().isValid();
    }

    /** If this is a type 2B window bound to QP {@code qpn}, it goes back to FREE (the QP is destroyed). */
    void releaseQp(int qpn) {
        while (true) {
            Binding b = binding.get();
            if (type != Type.TYPE_2B || b.state() != State.VALID || b.qpn() != qpn) {
                return;
            }
            if (binding.compareAndSet(b, new Binding(b.rkey(), State.FREE, null, 0, 0, 0, -1))) {
                if (b.mr() != null) {
                    b.mr().windowUnbound();
                }
                return;
            }
        }
    }

    /** Deallocation ({@code rxe_mw_cleanup}): INVALID, the MR released; later uses fail. */
    void deallocate() {
        while (true) {
            Binding b = binding.get();
            if (b.state() == State.INVALID) {
                return;
            }
            if (binding.compareAndSet(b, new Binding(b.rkey(), State.INVALID, null, 0, 0, 0, -1))) {
                if (b.mr() != null) {
                    b.mr().windowUnbound();
                }
                return;
            }
        }
    }

    @Override
    public String toString() {
        Binding b = binding.get();
        return "MW{rkey=0x" + Integer.toHexString(b.rkey()) + ", " + type + ", " + b.state()
                + (b.mr() != null ? ", [0x" + Long.toHexString(b.addr()) + ", +" + b.length() + ") of MR 0x"
                        + Integer.toHexString(b.mr().lkey()) + ", " + Access.toString(b.access()) : "") + ", " + pd + '}';
    }
}
