"""The squaring base: one Karatsuba level (or a plain product-scanning square) in registers, and
the combination of a parent's products for squaring (SqrCombine).

With k = ceil(m/2) and A = A_l + 2^8k A_h:

    L = A_l^2,  H = A_h^2,  M = |A_l - A_h|^2  (always subtracted: (A_l - A_h)^2 >= 0)
    A^2 = L_0 + 2^8k U + 2^24k Hbar_hi,   Hbar = H + L_1,   U = (L_0 | Hbar_lo) + Hbar - M

so squaring needs no t, no conditional negation of M and only one absolute difference (whose sign
is thrown away).  A comes through Y (LDD), the result goes out through Z (STD); X is not used.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...blocks.arith import emit_abs_diff, emit_ripple
from ...blocks.pointers import load_disp, store_disp
from ...blocks.square import emit_square
from ...regalloc.vprogram import V, VProgram
from .combine import HbarLoads, emit_top_deferred
from .frame import free_y
from .middle import emit_low_half, emit_u
from .regs import emit_zero


def emit_sqr_base(
    p: VProgram,
    m: int,
    src_off: int = 0,
    out_off: int = 0,
    addend_off: int | None = None,
    parent: bool = False,
    absdiff: bool = False,
    scratch: int = 0,
    plain: bool = False,
    w: int = 2,
    pair_zero: bool = False,
    keep_y: bool = False,
    scratch_off: int | None = None,
    defer_top: bool = False,
    joint: bool = False,
    w_h: int | None = None,
    w_c: int = 4,
    whole: bool = False,
    diff_over_h: bool = False,
) -> None:
    """A square in registers for m-byte operands, A through Y from src_off.

    plain: no Karatsuba level (one product-scanning square).  absdiff: the operand is
    |A[0..m) - A[m..2m)| (the parent's M).  addend_off: add the m bytes at Z+addend_off (the parent's
    L_1, refined Karatsuba); the result is stored at Z+out_off.  parent: finish the parent's
    combination instead of storing (this is the parent's M; the parent's k is m, R at Z+0).
    w, pair_zero: emit_square's chunk width, and a zero register pair (MOVW clears two
    accumulator tops at once) instead of a single zero register.  keep_y: Y stays on the operand
    (evicted operand bytes reload through it) instead of being lent or released.  scratch_off:
    where the frame's scratch starts above SP+1 (see frame.free_y).  defer_top: a parent
    leaves its top bytes to its caller (SqrCombine).  joint (plain): a parent's L and Hbar in one
    block, L = A_l^2 and Hbar = A_h^2 + L_1 (A_h m bytes above A_l, Hbar 2m bytes above L), L_1
    kept in registers from one square to the next instead of stored and loaded again; w_h: Hbar's
    chunk width (by default w); whole (with joint): the parent's M = |A_l - A_h|^2 and its
    combination follow in the same block, A_h's bytes taken from Hbar's square (the allocator
    reloads those it had to evict); diff_over_h: the difference is taken in A_h's registers (A_l
    loaded a byte at a time) instead of in a fresh load of A_l (A_h's registers only read).
    w_c: a parent's combination's chunk width (SqrCombine)."""
    base = SqrBase(p, m, src_off, scratch, scratch_off, keep_y)
    base.zero, base.zero_hi = emit_zero(p, pair_zero)
    base.w = w
    if joint:
        high = base.l_and_hbar(out_off, w if w_h is None else w_h)
        if whole:
            base.m_and_combine(high, diff_over_h, w_c, defer_top)
        return
    p.phase(f"operand ({m} bytes)")
    a_all = base.operand_absdiff() if absdiff else None
    if plain:
        # with Y kept on the operand, each byte is loaded when the square first needs it
        a = a_all or (LazyDisp(p, "Y", src_off, m, "a") if keep_y
                      else load_disp(p, "Y", src_off, m, "a"))
        if not absdiff:
            base.give_up_y()
        e = LazyDisp(p, "Z", addend_off, m, "e") if addend_off is not None else ()
        p.phase(f"A^2 ({m} bytes, product-scanning squaring)")
        if parent:  # the combination runs as M's bytes are final
            p.comment("the parent's combination is interleaved, chunk by chunk")
            combine = SqrCombine(p, m, base.zero, w=w_c, defer=defer_top)
            base.square(a, e, sink=lambda i, r: combine.push(r), lend_tail=True)
        else:  # each result byte goes out as soon as it is final
            base.square(a, e, sink=lambda i, r: store_disp(p, "Z", out_off + i, [r], "r"),
                        lend_tail=True)
        return
    product = base.karatsuba(a_all, addend_off, out_off, parent)
    if parent:
        combine = SqrCombine(p, m, base.zero, w=w_c, defer=defer_top)
        for v in product:
            combine.push(v)


class SqrBase:
    """The steps of emit_sqr_base: its operand, its squares, its Karatsuba level."""

    def __init__(self, p: VProgram, m: int, src_off: int, scratch: int,
                 scratch_off: int | None, keep_y: bool) -> None:
        self.p, self.m, self.src_off = p, m, src_off
        self.scratch, self.scratch_off, self.keep_y = scratch, scratch_off, keep_y
        p.release(26, 27)  # X is not used: one operand comes through Y

    def give_up_y(self) -> None:
        """Y is lent for spills or released, unless it stays on the operand."""
        if not self.keep_y:
            free_y(self.p, self.scratch, self.scratch_off)

    def square(self, x, addend=(), sink=None, lend_tail: bool = False,
               w: int | None = None) -> list:
        """x^2 (+ addend) by emit_square, in chunks of w bytes (by default the base's)."""
        return emit_square(self.p, x, self.zero, addend=addend, zero_hi=self.zero_hi,
                           w=self.w if w is None else w, sink=sink, lend_tail=lend_tail)

    def l_and_hbar(self, out_off: int, w_h: int) -> LazyDisp:
        """L = A_l^2, L_0 stored, L_1 left in registers; Hbar = A_h^2 + L_1, stored.  Both
        operands are loaded as the squares first need their bytes: Y stays on A until A_h's
        last byte is in.  Returns A_h's bytes (still in registers, or reloadable through Y)."""
        p, m, off = self.p, self.m, self.src_off
        p.phase(f"L = A_l^2 ({m} bytes, product-scanning squaring), L_1 kept in registers")
        low = LazyDisp(p, "Y", off, m, "a")

        def store_l0(i: int, r: V) -> None:
            if i < m:
                store_disp(p, "Z", out_off + i, [r], "r")

        L = self.square(low, sink=store_l0)
        p.phase(f"Hbar = A_h^2 + L_1 ({m} bytes, product-scanning squaring)")
        high = LazyDisp(p, "Y", off + m, m, "a'")
        self.square(high, L[m:], lend_tail=True, w=w_h,
                    sink=lambda i, r: store_disp(p, "Z", out_off + 2 * m + i, [r], "r"))
        return high

    def m_and_combine(self, high: LazyDisp, over_h: bool, w_c: int, defer_top: bool) -> None:
        """After l_and_hbar (high: A_h's bytes): M = |A_l - A_h|^2, fed to the parent's
        combination; the difference in A_h's registers (over_h) or in A_l's, loaded again."""
        p, m, off = self.p, self.m, self.src_off
        p.phase(f"|A_l - A_h| ({m} bytes), A_h's bytes still in registers")
        if over_h:  # |A_h - A_l|, A_l's bytes loaded one at a time
            x, y = list(high), lambda i: load_disp(p, "Y", off + i, 1, "a", first=i)[0]
        else:  # A_h's registers only read
            x, y = load_disp(p, "Y", off, m, "a"), high.__getitem__
        emit_abs_diff(p, x, y, self.zero)
        p.reclaim(0, 1)  # lent since Hbar's last MUL (lend_tail)
        self.give_up_y()
        p.phase(f"M = |A_l - A_h|^2 ({m} bytes, product-scanning squaring)")
        combine = SqrCombine(p, m, self.zero, w=w_c, defer=defer_top)
        self.square(x, (), sink=lambda i, r: combine.push(r), lend_tail=True)

    def operand_absdiff(self) -> list:
        """|A[0..m) - A[m..2m)|, the parent's M's operand."""
        p, m, off = self.p, self.m, self.src_off
        a_all = load_disp(p, "Y", off, m, "a")
        emit_abs_diff(p, a_all, lambda i: load_disp(p, "Y", off + m + i, 1, "a'", first=i)[0],
                      self.zero)
        self.give_up_y()
        return a_all

    def karatsuba(self, a_all: list | None, addend_off: int | None, out_off: int,
                  parent: bool) -> list:
        """One Karatsuba level: L, Hbar = H + L_1, M = |A_l - A_h|^2, U = ... - M and the top
        bytes; stored at Z+out_off unless this is a parent's M (returns the product)."""
        p, m, zero, off = self.p, self.m, self.zero, self.src_off
        k = (m + 1) // 2
        h = m - k
        a_lo = a_all[:k] if a_all else load_disp(p, "Y", off, k, "a")
        p.phase(f"L = A_l^2 ({k} bytes)")
        L = self.square(a_lo)
        assert len(L) == 2 * k
        carry_e = emit_low_half(p, L[:k], addend_off, out_off, not parent, zero)
        a_hi = a_all[k:] if a_all else load_disp(p, "Y", off + k, m - k, "a", first=k)
        p.phase(f"Hbar = A_h^2 + L_1 ({h} bytes)")
        Hb = self.square(a_hi, L[k:])
        p.phase("|A_l - A_h| (its sign is not needed)")
        emit_abs_diff(p, a_lo, a_hi, zero)
        if not a_all:  # only now: until here evicted operand bytes reload through Y
            self.give_up_y()
        p.phase(f"M = |A_l - A_h|^2 ({k} bytes)")
        M = self.square(a_lo)
        u, d = emit_u(p, L, Hb, m, carry_e, addend_off, parent, zero)
        p.phase("U -= M; merge carry and borrow into (d, f)")
        for i, ui in enumerate(u):
            p.emit("sub" if i == 0 else "sbc", ui, M[i] if i < len(M) else zero)
        f = p.v("f")
        p.sbc(d, zero)
        p.sbc(f, f)
        top = Hb[k : 2 * h]
        if top:
            p.phase("top bytes: Hbar_hi + (d, f)")
            emit_ripple(p, top, d, f)
        if not parent:
            store_disp(p, "Z", out_off + k, u + top, "r")
        return L[:k] + u + top


class LazyDisp(Sequence):
    """count bytes at ptr+off (Y or Z), each loaded when first indexed (so an addend's or an
    operand's bytes are loaded just before emit_square needs them, not all at the start)."""

    def __init__(self, p: VProgram, ptr: str, off: int, count: int, name: str) -> None:
        self.p, self.ptr, self.off, self.count, self.name = p, ptr, off, count, name
        self.regs: dict[int, V] = {}

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if not 0 <= i < self.count:
            raise IndexError(i)
        if i not in self.regs:
            self.regs[i] = load_disp(self.p, self.ptr, self.off + i, 1, self.name, first=i)[0]
        return self.regs[i]


class SqrCombine:
    """A parent's combination for squaring, R through Z (displacements up to 4k - 1): L_0 at
    R[0..k), Hbar at R[2k..4k).  U = (L_0 | Hbar_lo) + Hbar - M goes to R[k..3k), Hbar_hi + (d, f)
    to R[3k..4k).  M's bytes are pushed in order, so the combination can run chunk by chunk (w
    bytes) while M is still being computed, and no byte of M waits in a register.  Two carry
    chains per chunk, both carries parked in one register: the addition's in bit 0 (LSR restores,
    ROL saves), the subtraction's in bit 7 (LSL restores, ROR saves).

    defer: the routine is a subroutine of a large squaring, whose caller finishes the top bytes
    (emit_top_deferred): they are left as Hbar_hi, (d, f) returned in r24:r25, Z on R."""

    def __init__(self, p: VProgram, k: int, zero: V, w: int = 4, defer: bool = False) -> None:
        self.p, self.k, self.zero, self.w, self.defer = p, k, zero, w, defer
        self.cc = p.v("cc")
        p.clr(self.cc)
        self.j = 0  # U's next byte
        self.ms: list[V] = []  # M's bytes pushed but not yet combined
        self.hbar = HbarLoads(p, k)

    def push(self, m: V) -> None:
        self.ms.append(m)
        if len(self.ms) == self.w or self.j + len(self.ms) == 2 * self.k:
            self._chunk()

    def _chunk(self) -> None:
        p, k, j, cc = self.p, self.k, self.j, self.cc
        idx = range(j, j + len(self.ms))
        last = idx[-1] == 2 * k - 1
        p.comment(f"combine: U[{j}..{idx[-1]}] = (L_0 | Hbar_lo) + Hbar - M")
        u = [self.hbar.load(i if i < k else k + i, "x") for i in idx]
        if j:
            p.lsr(cc, comment="C = the addition's carry (bit 0)")
        for n, i in enumerate(idx):
            y = self.hbar.load(2 * k + i, "hb")
            p.emit("adc" if j or n else "add", u[n], y)
        p.rol(cc, comment="park it")
        p.lsl(cc, comment="C = the subtraction's borrow (bit 7)")
        for n, m in enumerate(self.ms):
            p.emit("sbc" if j or n else "sub", u[n], m)
        if not last:
            p.ror(cc, comment="park it")
        store_disp(p, "Z", k + j, u, "r")
        self.j, self.ms = idx[-1] + 1, []
        if last:
            self._top()

    def _top(self) -> None:
        """C = U's last borrow, cc = its last carry << 1: (d, f) = carry - borrow, sign-extended,
        rippled into Hbar_hi."""
        p, k, d = self.p, self.k, self.cc
        p.phase("top bytes: Hbar_hi + (d, f)")
        f = p.v("f")
        p.sbc(f, f, comment="f = -borrow")
        p.lsr(d, comment="d = carry")
        p.add(d, f, comment="(d, f) = carry - borrow")
        p.adc(f, self.zero)
        if self.defer:
            emit_top_deferred(p, d, f)  # Z stays on R
            return
        top = [self.hbar.load(3 * k + i, "hb") for i in range(k)]
        emit_ripple(p, top, d, f)
        store_disp(p, "Z", 3 * k, top, "r")
