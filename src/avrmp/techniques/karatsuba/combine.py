"""Combining a Karatsuba level's products into its result.

With L = A_l B_l at R[0..2k), Hbar = A_h B_h + L_1 at R[2k..4k) and M = |A_l - A_h| |B_l - B_h|
arriving byte by byte, U = (L_0 | Hbar_lo) + Hbar -/+ M goes to R[k..3k) and Hbar_hi + the
carries and borrow to R[3k..4k) (Combination); a node's result may feed the combination one level
up instead of memory (emit_fused_combine); a two-level node adds its parent's L_1 as it goes
(emit_node_addend).  Also the memory passes of deeper levels: the differences into the frame
(emit_mem_absdiffs), Hbar = H + L_1 in memory (emit_mem_add_l1), the combination with M in the
frame (emit_mem_combine).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...blocks.arith import emit_abs_diff, emit_ripple
from ...blocks.carries import ParkedCarries
from ...blocks.pointers import load_disp, load_inc, store_disp
from ...regalloc.vprogram import V, VProgram
from ...target.avr.isa import Mem


@dataclass(frozen=True)
class OuterCombine:
    """The combination one level up, to be fed with this node's result byte by byte (see
    emit_fused_combine): that level's half size k, its result at the entry pointer r plus r_off,
    its t at frame byte t_slot and that entry pointer at r_slot (from SP+1)."""

    k: int
    r_off: int
    t_slot: int
    r_slot: int
    defer: bool = False


def emit_fused_combine(p: VProgram, m: int, product: list[V], t: V | None, zero: V,
                       variant: str, w: int, outer: OuterCombine) -> None:
    """A node's combination whose result bytes go straight into the combination one level up
    instead of memory: the node is that level's M child, so M never goes to the frame and back.
    Y (on the frame) fetches the outer t and the result pointer, then points at the outer result;
    Z stays on the node's result (its L_0 and Hbar).  Branched, the outer combination is the
    signed arm and the node's own M is masked; branch-free, both are masked (the node's may come
    premasked, t in the T flag).  outer.defer: that level's top bytes are left to the caller
    (see Combination)."""
    p.phase("this node's result feeds the combination one level up")
    t_o = p.v("to")
    p.ldd(t_o, Mem("Y", disp=1 + outer.t_slot), comment="the outer level's t")
    y_lo = p.v("y")
    p.ldd(y_lo, Mem("Y", disp=1 + outer.r_slot), comment="Y = the outer result")
    p.ldd(29, Mem("Y", disp=2 + outer.r_slot))
    p.mov(28, y_lo)
    assert not (outer.defer and outer.r_off), "a deferring routine leaves Y on its result"
    if outer.r_off:
        p.adiw(28, outer.r_off)
    branched = variant == "branched"
    # Four carry chains in turns (this node's V and U, the outer V and U): one set of registers.
    carries = ParkedCarries(p, zero)
    up = Combination(p, outer.k, t_o, zero, "signed" if branched else "mask", w, ptr="Y",
                     defer=outer.defer, carries=carries)
    inner = Combination(p, m, t, zero, "mask" if t is not None else "premasked", w,
                        out=up.feed, carries=carries, tag="'")
    if branched:
        p.bst(t_o, 0, comment="T = the outer t: add M")
        p.arm_begin()
    up.start()
    for i in range(m):  # the node's L_0, already final in memory
        v = p.v("m")
        p.ldd(v, Mem("Z", disp=i), comment=f"m[{i}]")
        up.feed(i, v)
    inner.start()
    for i, v in enumerate(product):
        inner.feed(i, v)
    inner.finish()
    up.finish()
    if branched:
        p.arm_end()


TOP_RETURN = frozenset({24, 25})  # where a deferred top's (d, f) is returned


def emit_top_deferred(p: VProgram, d: V, f: V) -> None:
    """Leave a leaf's or a level's top bytes to its caller (large.emit_level folds them into its
    combination): (d, f) to r24:r25 (TOP_RETURN).  Where the caller finds the bytes: a leaf's
    result pointer stays in a register pair (Kernel.r_pair), a level moves Z onto them."""
    p.comment("the top bytes are left unrippled: (d, f) for the caller in r24:r25")
    p.pair_out(d, f, min(TOP_RETURN), comment="(d, f) for the caller")


class HbarLoads:
    """The bytes a combination reads from R[0..4k) (through ptr at R+r_off), Hbar's loaded once:
    Hbar_lo[i] is y_i and later x_{k+i}, Hbar_hi[i] is y_{k+i} and later a top byte, so the
    second use takes the register the first load left it in (the allocator reloads it for free
    if it had to make room)."""

    def __init__(self, p: VProgram, k: int, ptr: str = "Z", r_off: int = 0) -> None:
        self.p, self.k, self.ptr, self.r_off = p, k, ptr, r_off
        self.kept: dict[int, V] = {}

    def load(self, off: int, name: str) -> V:
        if off in self.kept:
            return self.kept.pop(off)
        v = self.p.v(name)
        self.p.ldd(v, Mem(self.ptr, disp=self.r_off + off), comment=f"{name}[{off}]")
        if 2 * self.k <= off < 4 * self.k:
            self.kept[off] = v
        return v


class Combination:
    """A parent's combination U = (L_0 | Hbar_lo) + Hbar - (-1)^t M over R, reached through a
    pointer (Z or Y) at R+r_off: L_0 at R[0..k), Hbar at R[2k..4k); U goes to R[k..3k) and
    Hbar_hi + (d, f) to R[3k..4k), or each result byte i (k <= i < 4k) to out(i, reg).  M's bytes
    arrive in order through feed(i, reg); they are taken in chunks of w bytes, the carry chains'
    carries parked in between (ParkedCarries: one rotation per change of chain), so only M's
    pending bytes and one chunk are live at a time.

    sign says how M's sign is applied: "branch" (t is tested in the T flag: the whole combination
    is a signed arm, added or subtracted, with no masking), "signed" (the same inside an arm the
    caller has opened), "mask" (t is the 0x00/0xFF mask: (M xor t) + (t & 1)) or "premasked" (M's
    bytes come XORed already and t is in the T flag).  A node with an addend (see
    emit_node_addend) hands over X_1 = L_0 + E_1 in place of L_0 at R[x_lo..x_lo+k) and a carry
    byte (0 or 0x80: the carry in bit 7) at carry_k that belongs at U's byte k: a third chain
    adds it there.  keep_c: the last chunk's carry stays in C for the top bytes (else it is
    parked and joined from a register).  defer: the routine is the leaf of a large one, whose
    caller folds the top bytes' (d, f) into its own combination (emit_top_deferred):
    R[3k..4k) is left as Hbar_hi.  carries: chains shared with another combination (the
    fused one, which interleaves its chunks with this one's), named after `tag`.  t_in_c
    (premasked): C holds t already, the +1 that completes M's negation."""

    def __init__(self, p: VProgram, k: int, t: V | None, zero: V, sign: str, w: int = 4,
                 ptr: str = "Z", r_off: int = 0, x_lo: int = 0, carry_k: Mem | None = None,
                 out=None, keep_c: bool = True, defer: bool = False,
                 carries: ParkedCarries | None = None, tag: str = "",
                 t_in_c: bool = False) -> None:
        self.p, self.k, self.t, self.zero, self.sign, self.w = p, k, t, zero, sign, w
        self.ptr, self.r_off, self.x_lo, self.carry_k, self.out = ptr, r_off, x_lo, carry_k, out
        self.defer, self.keep_c, self.t_in_c = defer, keep_c, t_in_c
        # In a signed arm the chains' ADD/ADC become SUB/SBC in the subtracting copy.
        self.signed = sign in ("branch", "signed")
        self.emit = p.signed if self.signed else p.emit
        self.carries = carries or ParkedCarries(p, zero)
        self.v, self.u, self.e = f"V{tag}", f"U{tag}", f"E{tag}"
        self.sum_ve: V | None = None  # V's and E's last carries, added once both chains end
        self.pending: list[tuple[int, V]] = []
        self.hbar = HbarLoads(p, k, ptr, r_off)

    def start(self) -> None:
        p = self.p
        p.phase(f"combine: U = (L_0 | Hbar_lo) + Hbar -/+ M, {2 * self.k} bytes in chunks of "
                f"{self.w}")
        if self.carry_k is not None:
            c3 = p.v("c3")
            p.ldd(c3, self.carry_k, comment="carry of the node's addend (bit 7), at U's byte k")
            self.carries.seed(self.e, c3, 7)
        if self.sign == "branch":
            p.bst(self.t, 0, comment="T = t: add M")
            p.arm_begin()
        elif self.sign == "premasked" and self.t_in_c:
            self.carries.hold(self.v)
        elif self.sign == "premasked":
            c1 = p.v("c1")
            p.clr(c1)
            p.bld(c1, 0, comment="C of M's chain starts as t (M came masked, T = t)")
            self.carries.seed(self.v, c1)

    def _emit(self, i: int, reg: V) -> None:
        if self.out is None:
            self.p.std(Mem(self.ptr, disp=self.r_off + i), reg, comment=f"r[{i}]")
        else:
            self.out(i, reg)

    def feed(self, i: int, m: V) -> None:
        """M's byte i (in order); a full chunk is added at once."""
        self.pending.append((i, m))
        if len(self.pending) == self.w or i == 2 * self.k - 1:
            self._chunk()

    def _chunk(self) -> None:
        """One chunk: the first chain takes V = M + Hbar (or M - Hbar in a subtracting arm) in
        M's registers, the second U = x + V (x - V) byte by byte into x, which is stored at once.
        Only the chunk's Hbar bytes need registers of their own, so chunks can be wide."""
        idx = [i for i, _ in self.pending]
        ms = [m for _, m in self.pending]
        self.pending = []
        self._v_chain(idx, ms)
        if self.carry_k is not None and idx[-1] >= self.k:
            self._e_chain(idx, ms)
        us = self._u_chain(idx, ms)
        if self.out is not None:
            for n, i in enumerate(idx):
                self._emit(self.k + i, us[n])

    def _v_chain(self, idx: list[int], ms: list[V]) -> None:
        """V = M + Hbar (M - Hbar) into M's registers."""
        p, k = self.p, self.k
        first = idx[0] == 0
        self.carries.enter(self.v, fresh=first and self.sign != "premasked")
        if first and self.sign == "mask":  # (another combination's chains may have run before)
            p.com(self.t, comment="t = 0xFF now means: subtract M")
            p.cp(self.zero, self.t, comment="C = t: (M xor t) + t = -M when t = 0xFF")
        for n, i in enumerate(idx):
            op = "add" if first and not n and self.signed else "adc"
            hb = self.hbar.load(2 * k + i, "hb")
            if self.sign == "mask":
                p.eor(ms[n], self.t)  # EOR leaves C alone
            self.emit(op, ms[n], hb)

    def _e_chain(self, idx: list[int], ms: list[V]) -> None:
        """A node's addend carry into V at U's byte k (so into U in a subtracting arm too, where
        U = x - V); once its chain and V's have ended, their carries are added."""
        self.carries.enter(self.e)
        for n, i in enumerate(idx):
            if i >= self.k:
                self.emit("adc", ms[n], self.zero)
        if idx[-1] == 2 * self.k - 1:
            self.sum_ve = self.carries.join(self.v)

    def _u_chain(self, idx: list[int], ms: list[V]) -> list[V]:
        """U = x + V (x - V) into x's registers, each byte stored at once (a store keeps the
        flags; bytes fed to an outer combination are handed over after the chunk)."""
        k = self.k
        first, last = idx[0] == 0, idx[-1] == 2 * k - 1
        # V's last carry is joined with U's in a signed arm, where the order matters: it goes
        # to bit 0, where that takes one instruction (see ParkedCarries.join).
        low = last and self.signed and self.keep_c and self.carry_k is None
        self.carries.enter(self.u, fresh=first, low=low)
        us = []
        for n, i in enumerate(idx):
            u = self.hbar.load(self.x_lo + i if i < k else k + i, "x")
            self.emit("add" if first and not n else "adc", u, ms[n])
            if self.out is None:
                self._emit(k + i, u)
            us.append(u)
        if last and not self.keep_c:
            self.carries.park()
        return us

    def _carries(self) -> V:
        """d = the chains' last carries: V's (with E's) plus U's, U's subtracted in a signed
        arm's subtracting copy (whose chains' carries are borrows: there d = b_V + b_E - b_U,
        and the borrow of that last step is d's sign)."""
        carries = self.carries
        if self.sum_ve is None and self.keep_c:
            carries.enter(self.u)
            return carries.join(self.v, self.emit, self.v if self.signed else None)
        d = self.sum_ve if self.sum_ve is not None else carries.take(self.v)
        if self.keep_c:
            carries.enter(self.u)
            carries.absorb(d, self.emit)
        else:
            self.emit("add", d, carries.take(self.u))
        return d

    def finish(self) -> None:
        p, k, zero = self.p, self.k, self.zero
        p.phase("top bytes: Hbar_hi + (d, f)")
        if self.signed:
            c1 = self._carries()
            f = p.v("f")
            p.sbc(f, f, comment="f = sign of d")
            if self.sign == "branch":
                p.arm_end()
        elif self.sign == "premasked":
            f = p.v("f")
            p.clr(f)  # CLR and BLD keep C
            p.bld(f, 0, comment="T = 1: M was subtracted")
            c1 = self._carries()
            p.sub(c1, f, comment="d = carries - T")
            p.sbc(f, f, comment="f = sign of d")
        else:
            f = self.t
            c1 = self._carries()
            p.add(c1, f, comment="d = carries + sign extension")
            p.adc(f, zero, comment="f = sign of d")
        if self.defer:
            assert self.ptr == "Y" and not self.r_off, "the caller expects Y on the result"
            emit_top_deferred(p, c1, f)
            return
        top = [self.hbar.load(3 * k + i, "hb") for i in range(k)]
        emit_ripple(p, top, c1, f)
        for i, v in enumerate(top):
            self._emit(3 * k + i, v)


def emit_combine(p: VProgram, k: int, m_byte, t: V | None, zero: V, variant: str, w: int = 4,
                 **where) -> None:
    """The whole combination of a parent whose M's byte i is m_byte(i) (see Combination; t None:
    branch-free with M premasked)."""
    sign = "branch" if variant == "branched" else "mask" if t is not None else "premasked"
    c = Combination(p, k, t, zero, sign, w, **where)
    c.start()
    for i in range(2 * k):
        c.feed(i, m_byte(i))
    c.finish()


def emit_node_addend(p: VProgram, low: list[V], e_off: int, out_off: int, zero: V) -> None:
    """A two-level node's addend E (2m bytes at Z+e_off; the parent's L_1 in refined Karatsuba)
    folded into the node's first base, whose product's low m bytes P_0 are in `low`: one carry
    chain gives R_0 = P_0 + E_0 (stored at Z+out_off, final) and X_1 = P_0 + E_1 (stored at
    Z+out_off+m, where the node's combination takes it in place of L_0); its carry goes to the
    byte at Z+e_off (E_0[0], already consumed), to be added at U's byte k (emit_combine's
    carry_k).  This replaces a memory pass H + L_1 over the node's whole result.  Each byte of E
    is loaded just before it is added, and each result byte stored at once (loads and stores
    leave the carry alone), so the chain needs no more registers than P_0."""
    m = len(low)
    p.phase("R_0 = P_0 + E_0, X_1 = P_0 + E_1 (the node's addend)")
    for i, x in enumerate(low):
        e = load_disp(p, "Z", e_off + i, 1, "e", first=i)[0]
        p.emit("adc" if i else "add", e, x)
        p.std(Mem("Z", disp=out_off + i), e, comment=f"r[{i}]")
    for i, x in enumerate(low):
        e = load_disp(p, "Z", e_off + m + i, 1, "e", first=m + i)[0]
        p.adc(x, e)
    ce = p.v("ce")
    p.clr(ce)
    p.ror(ce, comment="in bit 7, where Combination parks it")
    store_disp(p, "Z", out_off + m, low, "x")
    p.std(Mem("Z", disp=e_off), ce, comment="carry of X_1, for U's byte k")



def emit_mem_add_l1(p: VProgram, k: int, w: int = 8) -> None:
    """Hbar = H + L_1 in memory: Z points at L_1, H follows at Z+k (2k bytes)."""
    p.phase(f"Hbar = H + L_1 in memory ({k} bytes, carry rippled through H's top half)")
    zero = p.v("zero")
    p.clr(zero)
    for j in range(0, 2 * k, w):
        cols = range(j, min(j + w, 2 * k))
        hs = load_disp(p, "Z", k + j, len(cols), "h")
        for hv, col in zip(hs, cols):
            lv = load_disp(p, "Z", col, 1, "l", first=col)[0] if col < k else zero
            p.emit("adc" if col else "add", hv, lv)
        store_disp(p, "Z", k + j, hs, "h")


def emit_mem_absdiffs(p: VProgram, k: int, at: int = 1,
                      inner: bool = False) -> tuple[list[V], list[V], V, V | None]:
    """Z[at..at+k) = |A_l - A_h| (A through Y), Z[at+k..at+2k) = |B_l - B_h| (B through X+).
    Returns both differences, still in registers, t, and (inner) the M child's t.  Y is lent
    once A is read and X once B is read: their registers hold data until a caller reclaims
    them to set the pointers again (VProgram.lend_pointer); r1:r0 hold data throughout.

    inner (the M child is a two-level node): while each difference D is still in registers, its
    halves' difference |D_h - D_l| (the child's M operand) is taken in D_h's registers and stored
    in place of D_l, which is not stored at all: the child's first base takes D_l from the
    registers, so no byte of it is loaded again (OsEID's newest 256-bit routine does the same)."""
    p.phase(f"|A_l - A_h|, |B_l - B_h| and t ({k} bytes each) into the frame")
    p.lend_regs(0, 1)  # no MUL runs here
    # Both halves have k bytes: emit_abs_diff never needs a zero register.
    x = load_disp(p, "Y", 0, k, "a")
    mask_a = emit_abs_diff(p, x, lambda i: load_disp(p, "Y", k + i, 1, "a'", first=i)[0], None)
    inner_a = _store_difference(p, x, at, inner)
    p.lend_pointer("Y")  # A is read: Y's registers hold data
    y = load_inc(p, "X", k, "b", 0)
    mask_b = emit_abs_diff(p, y, lambda i: load_inc(p, "X", 1, "b'", k + i)[0], None)
    p.lend_pointer("X")  # B is read
    inner_b = _store_difference(p, y, at + k, inner)
    p.eor(mask_a, mask_b, comment="t")
    if inner:
        p.eor(inner_a, inner_b, comment="the M child's t")
    p.reclaim(0, 1)  # for the MULs that follow in the block
    return x, y, mask_a, inner_a


def _store_difference(p: VProgram, d: list[V], at: int, inner: bool) -> V | None:
    """d to Z+at; inner: only its high half, and |d_h - d_l| where its low half would go
    (returns that difference's sign mask)."""
    if not inner:
        store_disp(p, "Z", at, d, "d")
        return None
    h = len(d) // 2
    store_disp(p, "Z", at + h, d[h:], "d")
    mask = emit_abs_diff(p, d[h:], d[:h], None)
    store_disp(p, "Z", at, d[h:], "d'")
    return mask


def emit_mem_combine(p: VProgram, k: int, m_off: int, variant: str) -> None:
    """The combination with t at Y+0 and M at Y+m_off (2k bytes, in the frame); R through Z."""
    p.lend_regs(0, 1)  # no MUL runs here
    zero, t = p.v("zero"), p.v("t")
    p.clr(zero)
    p.ldd(t, Mem("Y", disp=0), comment="t")
    p.adiw(28, m_off, comment="Y -> M")
    emit_combine(p, k, lambda i: load_disp(p, "Y", i, 1, "m", first=i)[0], t, zero, variant)
