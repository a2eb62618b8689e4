"""The memory passes of a large Karatsuba level (straight-line, over virtual registers): the
absolute differences of the operands' halves (emit_sub_absdiff) and the combination of the level's
products with Hbar = H + L_1 fused in (level_combine)."""

from __future__ import annotations

from functools import partial
from itertools import pairwise

from ...blocks.arith import emit_ripple_mem
from ...blocks.carries import ParkedCarries
from ...regalloc.vprogram import V, VProgram
from ...target.avr.isa import Mem
from .combine import emit_top_deferred
from .frame import add_const

ABSDIFF_KEPT = 23  # leading bytes of D held in registers between its two chains
MID_RETURN = 26  # where an interleaved level leaves its middle value e for its caller
# an interleaved combination's chunks: U_lo's and U_hi's bytes live at once, and from byte k/2
# on, where the children's values fold in, two more chains with their sign bytes
INTERLEAVE_W = (8, 6)
# Hbar_lo's leading bytes a level in the near layout keeps in registers from the low half to
# the high half (neither stored nor read back), and the width of the low half's later chunks,
# which form U in Hbar's registers to leave them room: 14 and 4 where the halves have at most
# 32 bytes and L's chain starts at U_lo[k/2], else (48-byte halves, whose deferred values end
# chunks more often, or L's chain from U_lo[0] with the children's middle values) 8 and 8.
HBAR_KEPT_MOST, HBAR_KEPT_FEWER = (14, 4), (8, 8)
# the bytes of the high half's last chunk, whose H_hi stay in registers for the top bytes'
# ripple (a level that ripples its own), which then stores them without loading them again;
# each takes the register of the byte of U stored just before it
TOP_KEPT = 16


def hbar_kept(k: int, mid: bool) -> tuple[int, int]:
    """(bytes of Hbar_lo kept, width of the chunks after them) for a near level of k-byte
    halves (mid: see level_combine)."""
    n, w = HBAR_KEPT_MOST if k <= 32 and not mid else HBAR_KEPT_FEWER
    return min(n, k), w


def absdiff_kept(k: int) -> int:
    """How many leading bytes of a k-byte difference emit_sub_absdiff keeps in registers."""
    return min(ABSDIFF_KEPT, k)


def emit_sub_absdiff(p: VProgram, k: int, name: str) -> object:
    """X -> S_l, Y -> S_h (k bytes each), Z -> D + absdiff_kept(k), where the first chain
    stores D's bytes (the caller points Z there: one pointer move instead of two).  D = S_l -
    S_h in one borrow chain (LD and ST leave the carry alone), then D = (D xor mask) - mask in a
    second one.  D's first absdiff_kept(k) bytes stay in registers between the chains: neither
    stored nor reloaded.  Z ends at D + k.  Returns the mask V (0xFF when S_l < S_h)."""
    keep = absdiff_kept(k)
    p.phase(f"D = {name}_l - {name}_h ({k} bytes, the first {keep} kept in registers)")
    kept = []
    for col in range(k):
        x, y = p.v("x"), p.v("y")
        p.ld(x, Mem("X", "+"), comment=f"{name}[{col}]")
        p.ld(y, Mem("Y", "+"), comment=f"{name}[{k + col}]")
        p.emit("sbc" if col else "sub", x, y)
        if col < keep:
            kept.append(x)
        else:
            p.st(Mem("Z", "+"), x)
    mask = p.v("mask")
    p.sbc(mask, mask, comment="mask = 0xFF when the subtraction borrowed")
    add_const(p, 30, -k)
    p.phase(f"D = (D xor mask) - mask ({k} bytes)")
    for col in range(k):
        if col < keep:
            x = kept[col]
        else:
            x = p.v("d")
            p.ld(x, Mem("Z"))
        p.eor(x, mask)
        p.emit("sbc" if col else "sub", x, mask)
        p.st(Mem("Z", "+"), x)
    return mask


def interleavable(n: int) -> bool:
    """Whether a level for n bytes can combine in one interleaved pass (level_combine): L_1 and
    H_hi within LDD's reach of Y on L_0 and Z on H_lo (2k <= 64)."""
    return n <= 64


def level_combine(k: int, signed: bool, w: int = 8, w_high: int | None = None,
                  values: int = 0, defer: bool = False, branched: bool = False,
                  mid: bool = False, interleave: bool = False,
                  t_reg: int | None = None) -> VProgram:
    """A memory level's combination with Hbar = H + L_1 fused in (no separate Hbar pass): R holds
    L at R[0..2k) and H at R[2k..4k), the frame M (2k bytes).  Two passes over k bytes, in chunks
    of w (low half) and w_high (the high half keeps fewer bytes live, so its chunks can be wider
    and park the carries of the chains (Hbar, U's addition, M) less often; by default 16, 14
    when t takes a register and pointers are parked), then the top bytes:

      low:  Hbar_lo = H_lo + L_1 (to R[2k..3k)),  U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k))
      high: U_hi = Hbar_lo + H_hi + c -/+ M_hi (to R[2k..3k)), c the carry of Hbar_lo, its own chain
      top:  R[3k..4k) = H_hi + (d, f), d = c + the chains' carries (and M's sign extension)

    Where Y reaches L_1 and H at once (the near layout, k <= 48), Hbar_lo's first bytes
    (hbar_kept) stay in registers from the low half to the high half, and the low half's later
    chunks form U_lo in Hbar's own registers once Hbar is stored (low_chunk_in_place).  Without
    defer, the high half's last TOP_KEPT bytes of H_hi stay in registers for the top bytes.

    Squaring always subtracts M.  signed (multiplication): the byte t before M says how (0xFF: add;
    M's chain adds (M xor ~t) + (~t & 1), an EOR per byte of M, which leaves the carry alone;
    branched: t goes to the T flag and each half runs as a signed arm, whose subtracting copy
    takes SUB/SBC for M's ADD/ADC: no EOR, and no register for t).

    values: the children left that many small signed values unrippled in their top quarters (1:
    d at the quarter's start, byte 3k/2 of each child's product; 2: also d_2 at byte 7k/4).  The
    level's prologue (large.emit_level) pushed, to be popped in this order: L's d (and d_2),
    which the low half adds to U_lo from byte k/2 (and 3k/4) in a fourth carry chain (L_1 is
    read only inside Hbar_lo; branch-free multiplication, whose t takes a register, runs there
    in chunks of w - 2 to leave that chain registers; its carry and sign byte join c at
    U_hi[0]); s = d_L - d_M + d_H (and s_2 from the second values) for U_hi[k/2] (and 3k/4),
    where L_1's, M's and H_hi's quarters land, each joining the Hbar chain as one signed addend
    whose sign byte that chain carries on; then H's d (and d_2 at the top level), for the top
    bytes, H_hi again: from byte k/2 (and 3k/4) the ripple of (d, f) switches to d_H + f (and
    d_H2 + its sign).  defer: leave the top bytes to the caller (combine.emit_top_deferred:
    (d, f) in r24:r25) and, with values, H's d with its sign byte in r22:r23 (H_hi's quarter,
    unrippled).

    mid: the children are interleaved levels, each short by its middle value e at byte 2k of
    its product (see interleave): the prologue pushed e_L, which starts L's chain at U_lo[0]
    (so the whole low half runs in the chunks L's chain allows), s_e = e_L -/+ e_M + e_H, which
    joins U_lo's overflow at U_hi[0], and e_H, which joins d at the top bytes (all before the
    children's other values in their pass: e_L, d_L, ...; s_e, s, ...; e_H, d_H, ...).

    interleave (a level below the top whose children are leaves, 2k <= 64): one pass over k
    bytes forms Hbar_lo in registers and uses it at once for U_lo and U_hi (both_halves), so
    Hbar_lo is neither stored nor read again; what U_hi[0] then lacks (Hbar_lo's carry, U_lo's
    chains' carries) is the level's middle value e, left to the caller in r26 (MID_RETURN).

    t_reg: branch-free multiplication whose caller has t already, complemented (0xFF:
    subtract M), in that register; X then points at M, not at t.

    On entry X points at M (signed: at t) and r25:r24 at R (Y and Z are set here)."""
    assert signed or not branched, "squaring always subtracts M"
    assert not (mid and interleave) and (values or not mid) and (defer or not interleave)
    if w_high is None:
        # branch-free multiplication's t takes a register: 14 where pointers are parked (k > 64)
        w_high = 14 if signed and not branched and k > 64 else 16
    if interleave:
        w, w_high = INTERLEAVE_W
    return LevelCombine(k, signed, w, w_high, values, branched, mid, t_reg).emit(defer,
                                                                                interleave)


class LevelCombine:
    """The passes of level_combine over one VProgram; the chains' carries are parked in
    registers between chunks (ParkedCarries: one rotation through C per change of chain; a
    chunk's last chain leaves its carry in C, where the next chunk may start with it; park()
    before anything that changes C)."""

    def __init__(self, k: int, signed: bool, w: int, w_high: int, values: int,
                 branched: bool = False, mid: bool = False, t_reg: int | None = None) -> None:
        self.k, self.w, self.w_high, self.mid = k, w, w_high, mid
        # where the children's deferred values land in U's halves and the top bytes
        self.folds = [k // 2, 3 * k // 4][:values]
        self.l_folds = [0] * mid + self.folds  # where L's chain takes a value (e_L at 0)
        # the sign byte a chain of the children's values adds ("cl": L's, through U_lo's upper
        # half; "cs", interleaved: theirs through U_hi's)
        self.signs: dict[str, V] = {}
        p = self.p = VProgram()
        self.t, self.arm = None, branched
        if branched:
            t = p.v("t")
            p.ld(t, Mem("X", "+"), comment="t")
            p.bst(t, 0, comment="T = t: add M")
        elif signed and t_reg is not None:  # first, before anything can take its register
            self.t = p.v("t")
            p.mov(self.t, t_reg, comment="t = 0xFF: subtract M (the caller's sums read it)")
        elif signed:
            self.t = p.v("t")
            p.ld(self.t, Mem("X", "+"), comment="t")
            p.com(self.t, comment="t = 0xFF now means: subtract M")
        self.zero = p.v("zero")
        p.clr(self.zero)
        # Hbar's ("ch"), U's addition's ("cu") and M's ("cm") chains, and the one adding L's
        # deferred top ("cl"); interleaved, U_hi's own: H_hi's ("cv"), M_hi's ("cn") and the
        # children's values' ("cs").
        self.carries = ParkedCarries(p, self.zero)
        self.s0: V | None = None  # U_lo's overflow, for U_hi[0] (with the children's values)
        # With k + w <= 64 (k + w_high in the high half), Y reaches both L_1 (or Hbar_lo) and
        # H, k bytes further: Z streams L_0 and X stays on M.  Else, with k <= 64, Z streams
        # L_0 and reaches L_1 by displacement from where the stream left it (k - w..k - 1),
        # Y addresses H_lo and X stays on M in the low half; the high half takes Z to H_hi.
        # Otherwise Z addresses H and X is time-shared between L_0 and M (pointers parked in
        # r25:r24 and r1:r0).
        self.near = k + max(w, w_high) <= 64
        self.stream = not self.near and k <= 64
        self.lp = "Z" if self.stream else "Y"  # L_1's and U_lo's pointer
        self.hp = "Y" if self.near or self.stream else "Z"  # H_lo's and Hbar_lo's
        self.hp_high = "Y" if self.near else "Z"  # H_hi's
        self.parked = not (self.near or self.stream)  # X time-shared, pointers parked
        # Y and Z address R by displacement and move only when a chunk's bytes lie beyond it
        # (ADIW changes C, so between chunks, where the carries are parked): the byte of R each
        # points at.
        self.pos = {"Y": k, "Z": 2 * k}
        self.kept_n, self.in_place_w = hbar_kept(k, mid) if self.near else (0, w)
        self.kept: list[V] = []  # Hbar_lo's leading bytes, in registers for the high half
        self.kept_hi: list[V] = []  # H_hi's last bytes, in registers for the top bytes
        # the byte of H_hi from which on the high half keeps them for the top bytes (a level
        # that ripples its own: the last TOP_KEPT)
        self.kept_hi_from = k

    def emit(self, defer: bool, interleave: bool = False) -> VProgram:
        """Branched, each half is a signed arm (the high half's with the top bytes' (d, f));
        interleaved, the one pass is."""
        p = self.p
        if interleave:
            d, f, e = self.in_arm(self.both_halves)
            # e first: the pairs handed over below may lie where the allocator put it
            p.mov(MID_RETURN, e, comment="e, U_hi's carry-in, for the caller")
            self.top(d, f, defer=True)
            return p
        if not defer:
            self.kept_hi_from = max(self.k - TOP_KEPT, 0)
        y = 2 * self.k if self.stream else self.k  # where the low half's first chunk needs it
        p.movw(28, 24)
        add_const(p, 28, y)
        self.pos["Y"] = y
        self.in_arm(self.low_half)
        d, f = self.in_arm(lambda: self.top_carry(self.high_half()))
        self.move("Y", 3 * self.k)
        self.top(d, f, defer)
        return p

    def in_arm(self, emit):
        """emit()'s code, as a signed arm when branched (its copies add and subtract M)."""
        if self.arm:
            self.p.arm_begin()
        out = emit()
        if self.arm:
            self.p.arm_end()
        return out

    def reach(self, ptr: str, lo: int, hi: int) -> None:
        """Move Y or Z, if need be, so that R[lo..hi) lies within its displacement (back only
        where the stream layout's high half returns Y from H_lo's end to its start)."""
        pos = self.pos[ptr]
        assert hi - lo <= 64 and (lo >= pos or self.stream), (ptr, lo, hi, pos)
        if lo < pos or hi - 1 - pos > 63:
            self.move(ptr, lo)

    def move(self, ptr: str, rel: int) -> None:
        """Y or Z to R+rel (ADIW or SUBI/SBCI change C: a carry left there is parked first)."""
        if rel != self.pos[ptr]:
            self.carries.park()
            add_const(self.p, 28 if ptr == "Y" else 30, rel - self.pos[ptr])
            self.pos[ptr] = rel

    def at(self, ptr: str, rel: int) -> int:
        """The displacement from Y or Z of R[rel]."""
        return rel - self.pos[ptr]

    def chain(self, name: str, dst: list, src, first: bool, op: str = "add",
              signed: bool = False, then=None) -> None:
        """dst += src (or -= with op "sub"; op "adc" adds with the carry already set; src a list,
        a function of the byte's index that loads it just before it is needed, or one register
        for every byte), the carry revived before (unless this is the chain's first chunk, or
        C still holds it) and left in C.  signed: the additions subtract in a signed arm's
        subtracting copy.  then(q, x): called after byte q's instruction (a store, which frees
        x's register for the next byte's load)."""
        p = self.p
        self.carries.enter(name, fresh=first)
        for q, x in enumerate(dst):
            y = src[q] if isinstance(src, list) else src(q) if callable(src) else src
            mnemonic = op if first and q == 0 else {"add": "adc", "sub": "sbc", "adc": "adc"}[op]
            if signed:
                p.signed(mnemonic, x, y)
            else:
                p.emit(mnemonic, x, y)
            if then is not None:
                then(q, x)

    def m_chain(self, u: list, j: int, first: bool, name: str = "cm") -> None:
        """U -/+= M's bytes j.. (through X).  Chain "cn" (interleaved: M_hi's own chain) starts
        without the + (~t & 1) of the negation, which M_lo's chain has added."""
        p, t = self.p, self.t
        if t is None:
            self.chain(name, u, self.lazy("X", "M", j), first,
                       *(("add", True) if self.arm else ("sub", False)))
            return

        def m_byte(q: int):
            v = self.load("X", 1, "M", j + q)[0]
            p.eor(v, t)
            return v

        if first and name == "cm":
            self.carries.enter("cm", fresh=True)
            p.cp(self.zero, t, comment="C = t: (M xor t) + t = -M when t = 0xFF")
            self.chain(name, u, m_byte, first, "adc")
        else:
            self.chain(name, u, m_byte, first)

    def sign_byte(self, dst, src, comment: str) -> None:
        """dst = 0xFF if src (a small signed value) is negative, else 0."""
        self.p.mov(dst, src)
        self.p.lsl(dst)
        self.p.sbc(dst, dst, comment=comment)

    def lazy(self, ptr: str, name: str, first: int, at: int = 0):
        """A byte source for chain(): byte q loaded when the chain reaches it."""
        return lambda q: self.load(ptr, 1, name, first + q, at + q)[0]

    def load(self, ptr: str, n: int, name: str, first: int, disp: int = 0) -> list:
        p = self.p
        out = [p.v(name) for _ in range(n)]
        for q, v in enumerate(out):
            if ptr == "X":
                p.ld(v, Mem("X", "+"), comment=f"{name}[{first + q}]")
            else:
                p.ldd(v, Mem(ptr, disp=disp + q), comment=f"{name}[{first + q}]")
        return out

    def store(self, ptr: str, vals: list, name: str, first: int, at: int = 0) -> None:
        for q, v in enumerate(vals):
            self.p.std(Mem(ptr, disp=at + q), v, comment=f"{name}[{first + q}]")

    def low_half(self) -> None:
        """Hbar_lo = H_lo + L_1 (to R[2k..3k)), U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k))."""
        p, k, w = self.p, self.k, self.w
        if not self.parked:
            p.movw(30, 24, comment="Z -> L_0")
            p.release(0, 1)  # no pointer is parked in r1:r0: they join the pool
        else:
            p.movw(30, 24, comment="Z -> H")
            add_const(p, 30, 2 * k)
            p.movw(0, 26, comment="park the M pointer in r1:r0")
        p.phase(f"low half: Hbar_lo = H_lo + L_1, U_lo = L_0 + Hbar_lo -/+ M_lo ({k} bytes)")
        if self.kept_n:  # chunks of w up to the kept bytes' end, then narrower ones in place
            starts = sorted({*range(0, self.kept_n, w), *range(self.kept_n, k, self.in_place_w),
                             *self.folds} - {k})
        else:
            # where L's chain runs, branch-free multiplication's t leaves it two registers
            # fewer (where no pointer is parked, r1:r0 make up for it)
            narrow = w - 2 if self.t is not None and self.parked else w
            bounds = [0, *self.folds, k]
            starts = [j for i, (lo, hi) in enumerate(pairwise(bounds))
                      for j in range(lo, hi, narrow if i or self.mid else w)]
        for j, end in zip(starts, starts[1:] + [k]):
            if self.kept_n and j >= self.kept_n:
                self.low_chunk_in_place(j, end)
            else:
                self.low_chunk(j, end)

    def low_chunk(self, j: int, end: int) -> None:
        """U_lo's bytes j..end: L_0 loaded, Hbar's chunk formed and stored, U's chains."""
        p, k, n, near, hp, lp = self.p, self.k, end - j, self.near, self.hp, self.lp
        if not self.parked:
            u = [p.v("L_0") for _ in range(n)]
            for q, v in enumerate(u):
                p.ld(v, Mem("Z", "+"), comment=f"L_0[{j + q}]")
            self.pos["Z"] = j + n
        else:
            p.movw(26, 24, comment="X -> L_0")
            u = self.load("X", n, "L_0", j)
            p.movw(24, 26)
            p.movw(26, 0, comment="X -> M")
        if self.stream:
            self.reach("Y", 2 * k + j, 2 * k + j + n)
        else:
            self.reach("Y", k + j, (2 * k if near else k) + j + n)
        if self.parked:
            self.reach("Z", 2 * k + j, 2 * k + j + n)
        hb = self.load(hp, n, "H", j, self.at(hp, 2 * k + j))
        keep = j < self.kept_n
        if keep:
            self.kept += hb
        ops = {"ch": partial(self.hbar_chain, hb, j, not keep),
               "cu": partial(self.chain, "cu", u, hb, j == 0),
               "cm": partial(self.m_chain, u, j, j == 0)}
        if self.l_folds and j >= self.l_folds[0]:
            ops["cl"] = partial(self.l_chain, u, j)
        self.run_chains(ops, leaders=("cm", "cl"))  # U += Hbar needs Hbar first
        if self.parked:
            p.movw(0, 26)
        self.store(lp, u, "U", j, self.at(lp, k + j))

    def low_chunk_in_place(self, j: int, end: int) -> None:
        """U_lo's bytes j..end in Hbar's registers (near layout, past the kept bytes): Hbar's
        chunk formed and stored, then M's and L_0's chains (L_0 streamed through Z) turn it
        into U: half the registers of low_chunk, one more change of chain."""
        k, n = self.k, end - j
        self.reach("Y", k + j, 2 * k + j + n)
        hb = self.load("Y", n, "H", j, self.at("Y", 2 * k + j))
        self.hbar_chain(hb, j)
        ops = {"cm": partial(self.m_chain, hb, j, False),
               "cu": partial(self.chain, "cu", hb, partial(self.stream_l0, j), False)}
        if self.l_folds and j >= self.l_folds[0]:
            ops["cl"] = partial(self.l_chain, hb, j)
        self.run_chains(ops, leaders=tuple(ops))
        self.pos["Z"] = end
        self.store("Y", hb, "U", j, self.at("Y", k + j))

    def stream_l0(self, j: int, q: int) -> V:
        """L_0's byte j + q, the next one Z streams."""
        v = self.p.v("L_0")
        self.p.ld(v, Mem("Z", "+"), comment=f"L_0[{j + q}]")
        return v

    def hbar_chain(self, hb: list, j: int, store: bool = True) -> None:
        """Hbar_lo's bytes j..: H's (in hb) += L_1's, stored over H_lo (unless kept)."""
        k = self.k
        self.chain("ch", hb, self.lazy(self.lp, "L_1", j, self.at(self.lp, k + j)), j == 0)
        if store:
            self.store(self.hp, hb, "Hbar_lo", j, self.at(self.hp, 2 * k + j))

    def run_chains(self, ops: dict, leaders: tuple = ("cu", "cm", "cl")) -> None:
        """A chunk's chains (name -> emitter), in their order but first the one whose carry C
        still holds, if it may lead (`leaders`: it needs nothing the others make first): an
        order that ends with such a chain lets the next chunk start with it."""
        in_c = self.carries.in_c
        order = [in_c] if in_c in ops and in_c in leaders else []
        order += [name for name in ops if name not in order]
        for name in order:
            ops[name]()

    def l_chain(self, u: list, j: int) -> None:
        """U_lo's bytes j.. += L's deferred values (e_L popped at byte 0, d_L at k/2, d_L2 at
        3k/4, each joining the sign byte there), sign-extended."""
        if j in self.l_folds:
            name = (["e_L"] * self.mid + ["d_L", "d_L2"])[self.l_folds.index(j)]
            what = "middle value" if name == "e_L" else "top quarter"
            self.p.comment(f"L's {what} is short by {name} from U_lo[{j}] on")
        self.fold_chain("cl", u, j, self.l_folds)

    def s_chain(self, u: list, j: int) -> None:
        """Interleaved: U_hi's bytes j.. += s (popped at byte k/2, s_2 at 3k/4), sign-extended."""
        if j in self.folds:
            self.p.comment(f"the children's top quarters are short at U_hi[{j}]: + s")
        self.fold_chain("cs", u, j, self.folds)

    def fold_chain(self, name: str, u: list, j: int, at: list[int]) -> None:
        """u += small signed values popped at the bytes `at` (from the first on), sign-extended
        (the sign byte so far in signs[name]), in chain `name`."""
        p = self.p
        if j not in at:
            self.chain(name, u, self.signs[name], False)
            return
        d = p.v("d")
        p.pop(d)
        self.carries.park()  # the sums below change C
        if j != at[0]:
            p.add(d, self.signs[name], comment="+ the sign byte so far (-1 or 0)")
        ext = p.v("f")
        self.sign_byte(ext, d, "its sign byte")
        self.signs[name] = ext
        self.chain(name, u, lambda q: d if q == 0 else ext, j == at[0])

    def high_half(self) -> V:
        """U_hi = Hbar_lo + H_hi + c -/+ M_hi (to R[2k..3k)), c the carry of Hbar_lo in its own
        chain; returns what that chain adds above its last signed addend (zero, or the sign byte
        of U_lo's overflow at U_hi[0] or of the children's values at U_hi[k/2] and [3k/4])."""
        p, k = self.p, self.k
        p.phase(f"high half: U_hi = Hbar_lo + H_hi + carry(Hbar_lo) -/+ M_hi ({k} bytes)")
        # Hbar_hi = H_hi + Hbar_lo's carry is never formed: that carry ripples through U_hi in
        # its own chain and joins (d, f) for the top bytes, so H_hi stays in place.
        if self.parked:
            p.movw(26, 0, comment="X -> M (no longer shared)")
        self.c_hbar = p.v("c")
        s = self.carries.take("ch")
        self.carries.park()  # (the sums below change C)
        p.mov(self.c_hbar, s, comment="Hbar_lo's carry, for U_hi and the top bytes")
        self.ext = self.zero  # what the Hbar chain adds above its last signed addend
        if self.folds:
            p.add(s, self.carries.take("cl"), comment="c + the carry of L's chain over U_lo")
            p.add(s, self.signs["cl"],
                  comment="+ f_L (-1 or 0): U_lo's overflow joins c at U_hi[0]")
            if self.mid:
                x = p.v("s_e")
                p.pop(x)
                p.add(s, x, comment="+ s_e, the children's middle values at U_hi[0]")
            self.s0 = s
        else:
            self.carries.seed("ch", s)
        # the last TOP_KEPT bytes in one chunk (split only where values fold in), whose H_hi
        # the top bytes take from registers
        starts = sorted({*range(0, self.kept_hi_from, self.w_high), *self.folds,
                         self.kept_hi_from} - {k})
        for j, end in zip(starts, starts[1:] + [k]):
            self.high_chunk(j, end)
        return self.ext

    def high_chunk(self, j: int, end: int) -> None:
        """U_hi's bytes j..end: Hbar_lo += H_hi, the Hbar chain's carry (at U_hi[0] and where the
        children's values land, a signed addend), -/+ M_hi."""
        k, n, near = self.k, end - j, self.near
        self.reach("Y", 2 * k + j, (3 * k if near else 2 * k) + j + n)
        if not near:
            self.reach("Z", 3 * k + j, 3 * k + j + n)
        kept = self.kept[j:end]
        u = kept + self.load("Y", n - len(kept), "Hbar_lo", j + len(kept),
                             self.at("Y", 2 * k + j + len(kept)))
        h_hi = self.lazy(self.hp_high, "H", k + j, self.at(self.hp_high, 3 * k + j))

        def middle() -> None:
            if j in self.folds:
                self.ext = self.fold_deferred_tops(u, self.ext, j)
            elif j == 0 and self.folds:
                self.ext = self.add_signed(u, self.s0)
            else:
                self.chain("ch", u, self.ext, False)

        if j >= self.kept_hi_from:
            # H_hi's chain goes last and stores each byte of U at once, so H_hi's next byte,
            # kept for the top bytes, can take the register U's byte leaves
            def store(q: int, x: V) -> None:
                self.store("Y", [x], "U", k + j + q, self.at("Y", 2 * k + j + q))

            self.run_chains({"cm": partial(self.m_chain, u, k + j, False), "ch": middle,
                             "cu": partial(self.chain, "cu", u, partial(self.kept_for_top, h_hi),
                                           False, then=store)}, leaders=())
            return
        # The chains are independent here; the middle one stays in the middle, so either end
        # can go first in the next chunk.
        ends = {"cu": partial(self.chain, "cu", u, h_hi, False),
                "cm": partial(self.m_chain, u, k + j, False)}
        first, last = ("cm", "cu") if self.carries.in_c == "cm" else ("cu", "cm")
        self.run_chains({first: ends[first], "ch": middle, last: ends[last]})
        self.store("Y", u, "U", k + j, self.at("Y", 2 * k + j))

    def kept_for_top(self, load, q: int) -> V:
        """load(q), kept for the top bytes."""
        v = load(q)
        self.kept_hi.append(v)
        return v

    def fold_deferred_tops(self, u: list, ext: V, j: int) -> V:
        """The children's quarters are short at U_hi[j] by s = d_L - d_M + d_H (multiplication:
        -/+ d_M; at 3k/4 from their second values, H's only at the top level), summed by the
        prologue and popped here: s and the chain's pending sign byte ext join the Hbar chain as
        one signed addend; returns its sign byte, which the chain carries on."""
        p = self.p
        s = self.carries.take("ch")
        self.carries.park()
        p.comment(f"the children's top quarters are short at U_hi[{j}]: + s")
        x = p.v("s")
        p.pop(x)
        p.add(s, x)
        if ext is not self.zero:
            p.add(s, ext, comment="the chain's pending sign (-1 or 0)")
        return self.add_signed(u, s)

    def add_signed(self, u: list, s: V) -> V:
        """u += s, a small signed value, sign-extended: the Hbar chain goes on from there, its
        carry in C; returns the sign byte, which the chain carries on."""
        p = self.p
        self.carries.park()
        ext = p.v("sign")
        self.sign_byte(ext, s, "its sign byte")
        self.carries.enter("ch", fresh=True)
        p.add(u[0], s)
        for x in u[1:]:
            p.adc(x, ext)
        return ext

    def top_carry(self, ext: V) -> tuple[V, V]:
        """(d, f) for the top bytes: d = c + the chains' carries (and M's sign extension), f
        its sign byte."""
        p, t = self.p, self.t
        p.phase(f"top bytes: H_hi + (d, f) ({self.k} bytes)")
        d, f = self.c_hbar, p.v("f")  # its last use: d builds on it
        self.carries.add_all([(d, "cu"), (d, "ch")])
        if self.mid:
            x = p.v("e_H")
            p.pop(x)
            p.add(d, x, comment="+ e_H: H's middle value lands at the top bytes too")
        self.carries.add_to(*self.m_carry_term(d, "cm"))  # d = c + U's carries -/+ M's carry
        if ext is self.zero and t is None and not self.mid:
            p.sbc(f, f, comment="f = sign of d (-1..3): the last addition's borrow")
        else:
            if t is not None:
                p.add(d, t, comment="+ M's sign extension")
            if ext is not self.zero:
                p.add(d, ext, comment="the signed addend goes on into the top bytes")
            self.sign_byte(f, d, "f = sign of d (d is -2..4)")
        return d, f

    def m_carry_term(self, acc: V, name: str) -> tuple:
        """ParkedCarries.add_to's arguments for acc -/+= the last carry of chain `name`, which
        adds or subtracts M (its borrow or carry leaves C as a subtraction's or an addition's
        would): in a signed arm's copies, or a subtraction for squaring."""
        if self.arm:
            return acc, name, "add", self.p.signed
        return acc, name, "sub" if self.t is None else "add"

    def top(self, d: V, f: V, defer: bool) -> None:
        """R[3k..4k) = H_hi + (d, f), switching at byte k/2 (and 3k/4) to d_H + the sign byte so
        far (popped: H's deferred values), or (d, f) and H's d left to the caller, Z on the top
        bytes (from Y if it is there)."""
        p, k = self.p, self.k
        if defer:
            emit_top_deferred(p, d, f)
            p.comment("Z onto the top bytes, not yet rippled")
            if self.pos["Y"] == 3 * k:
                p.movw(30, 28)
                self.pos["Z"] = 3 * k
            else:
                self.move("Z", 3 * k)
            if self.folds:
                d_h, f_h = p.v("dH"), p.v("fH")
                p.pop(d_h)
                self.sign_byte(f_h, d_h, "its sign byte")
                p.pair_out(d_h, f_h, 22, comment="H's (d, f), unrippled at the top bytes' byte k/2")
            return
        addends = [(d, f)]
        for _ in self.folds:
            e, g = p.v("e"), p.v("g")
            p.pop(e)
            p.add(e, addends[-1][1], comment="e = d_H + the sign byte so far (-1 or 0)")
            self.sign_byte(g, e, "its sign byte")
            addends.append((e, g))
        bounds = [0, *self.folds, k]
        kept_from = self.kept_hi_from  # H_hi's bytes from there on are in registers
        for i, (value, sign) in enumerate(addends):
            lo, hi = bounds[i], bounds[i + 1]
            held = self.kept_hi[max(lo - kept_from, 0):max(hi - kept_from, 0)]
            emit_ripple_mem(p, "Y", hi - lo, sign, first_src=value, carry_in=bool(i),
                            name="H_hi", first=lo, held=held)

    def both_halves(self) -> tuple[V, V, V]:
        """Interleaved (see level_combine): chunk by chunk, Hbar_lo = H_lo + L_1 in registers,
        U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k)) and U_hi = Hbar_lo + H_hi -/+ M_hi (to
        R[2k..3k)), each chunk's Hbar_lo used by both and never stored.  Y stays on R (L_0 and
        L_1 by displacement), Z on H (H_lo, H_hi), X on M, which time-shares it between M_lo
        and M_hi: the other's place waits in r25:r24 and MOVW swaps them, leaving C alone.
        Returns the top bytes' (d, f) and e, what U_hi[0] lacks."""
        p, k = self.p, self.k
        p.movw(30, 24, comment="Z -> H")
        add_const(p, 30, 2 * k)
        p.movw(28, 24, comment="Y -> L")
        p.movw(24, 26)
        add_const(p, 24, k)
        p.comment("r25:r24 -> M_hi")
        self.pos = {"Y": 0, "Z": 2 * k}
        p.phase(f"interleaved: Hbar_lo = H_lo + L_1, U_lo = L_0 + Hbar_lo -/+ M_lo, "
                f"U_hi = Hbar_lo + H_hi -/+ M_hi ({k} bytes)")
        bounds = [0, *self.folds, k]
        starts = [j for i, (lo, hi) in enumerate(pairwise(bounds))
                  for j in range(lo, hi, self.w_high if i else self.w)]
        for j, end in zip(starts, starts[1:] + [k]):
            self.both_chunk(j, end)
        return self.both_carries()

    def both_chunk(self, j: int, end: int) -> None:
        """Bytes j..end of U_lo and U_hi."""
        p, k, n, first = self.p, self.k, end - j, j == 0
        folded = self.folds and j >= self.folds[0]
        hb = self.load("Z", n, "H", j, j)
        self.chain("ch", hb, self.lazy("Y", "L_1", j, k + j), first)
        u = self.load("Y", n, "L_0", j, j)
        ops = {"cu": partial(self.chain, "cu", u, hb, first),
               "cm": partial(self.m_chain, u, j, first)}
        if folded:
            ops["cl"] = partial(self.l_chain, u, j)
        self.run_chains(ops)
        self.store("Y", u, "U", j, k + j)
        p.movw(0, 26)
        p.movw(26, 24, comment="X -> M_hi")
        ops = {"cv": partial(self.chain, "cv", hb, self.lazy("Z", "H", k + j, k + j), first),
               "cn": partial(self.m_chain, hb, k + j, first, "cn")}
        if folded:
            ops["cs"] = partial(self.s_chain, hb, j)
        self.run_chains(ops, leaders=tuple(ops))
        self.store("Z", hb, "U", k + j, j)
        p.movw(24, 26)
        p.movw(26, 0, comment="X -> M_lo")

    def both_carries(self) -> tuple[V, V, V]:
        """e = Hbar_lo's carry + U_lo's chains' (and L's chain's sign byte), for U_hi[0]; d =
        U_hi's chains' carries + Hbar_lo's again (Hbar_hi = H_hi + it is never formed) (+ M's
        sign extension, the values' sign byte), f its sign byte, for the top bytes."""
        p, t = self.p, self.t
        p.phase("the middle value e and the top bytes' (d, f)")
        c = self.carries
        e, d = c.take("ch"), p.v("d")  # Hbar_lo's carry joins both
        p.mov(d, e)
        folds = [(e, "cl"), (d, "cs")] if self.folds else []
        c.add_all([(e, "cu"), (d, "cv"), self.m_carry_term(e, "cm"), self.m_carry_term(d, "cn"),
                   *folds])
        if t is not None:
            p.add(d, t, comment="+ M's sign extension")
        for acc, name in folds:
            p.add(acc, self.signs[name])
        f = p.v("f")
        self.sign_byte(f, d, "f = sign of d")
        return d, f, e
