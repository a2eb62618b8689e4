"""Subtractive, refined Karatsuba multiplication (seed 000), as a generator for any operand size.

Structure.  With k = ceil(m/2), A = A_l + 2^8k A_h and B likewise,

    L = A_l B_l,  H = A_h B_h,  M = |A_l - A_h| |B_l - B_h|,  t = sign(A_l - A_h) xor sign(B_l - B_h)
    AB = L_0 + 2^8k U + 2^24k Hbar_hi,   Hbar = H + L_1,   U = (L_0 | Hbar_lo) + Hbar -/+ M

(refined Karatsuba: Hbar is accumulated on the fly while H is computed, so L_1 is added once).

* The **base** block is one Karatsuba level entirely in (virtual) registers, its three half-size
  products by product scanning.  Operand A comes through Y (LDD), B through X (LD X+), the result
  goes out through Z (STD); the allocator in vreg.py spills and reloads when registers run out.
* A **memory level** splits an even n into three children that are bases or memory levels.  The L
  child writes L; the H child adds L_1 into its product (Hbar, fused); the M child reads its
  operands as absolute differences computed in registers and finishes by combining U into the
  parent's result itself, so M never goes to memory.  When a child is itself a memory level its
  operands |A_l - A_h| are materialised in a stack frame.

Variants: branch-free code adds (M xor t) + (t & 1); branched code runs M's chain in a signed arm
(vreg.VProgram.arm_begin: an ADD and a SUB copy, NOP-balanced, so timing is still constant).  The sign of U's carry/borrow and t are merged into one
(d, f) register pair that ripples into the top bytes.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from .blocks import emit_abs_diff, emit_add_chain, emit_product, emit_product_rows
from .errors import AvrmpError
from .isa import Instr
from .kernel import ARG_REGS, Kernel
from .program import Label, Mem, Program
from .spec import Spec
from .vreg import AllocationError, V, VProgram, allocate

BASE_POOL = list(range(2, 26))
# Products up to this many bytes use the row-wise block by default; longer ones are tried both ways
# (its MOVW temporaries need free register pairs, which long products may not leave).
ROWS_UPTO = 5
MAX_BASE = 16  # largest base size whose LDD displacements and registers stay manageable
MIN_DEFAULT_BASE = 5  # smallest base the default level choice considers
CLEAN_BIAS = (0, 30, 60)  # eviction preferences tried per block (vreg.allocate's clean_bias)
REFINE = 8  # allocations of a block's cheapest forms retried with defragmentation


@dataclass(frozen=True)
class Src:
    """Operand bytes for a base: through its pointer from offset `off`, or (absdiff) the absolute
    difference of the m bytes at `off` and the m bytes following them, or (regs) values a block
    before it left in registers (their memory copies let the allocator drop them for free)."""

    off: int = 0
    absdiff: bool = False
    regs: tuple = ()


@dataclass(frozen=True)
class NodeAddend:
    """A two-level node whose result, at Z+r_off, gets an addend E of its own size at Z+e_off
    (the parent's L_1: refined Karatsuba one level up); see emit_node_addend."""

    e_off: int
    r_off: int


def _load_y(p: VProgram, off: int, idx: range, name: str) -> list[V]:
    out = []
    for i in idx:
        v = p.v(name)
        p.ldd(v, Mem("Y", disp=off + i), comment=f"{name}[{i}]")
        out.append(v)
    return out


def _load_x(p: VProgram, count: int, name: str, first: int) -> list[V]:
    out = []
    for i in range(count):
        v = p.v(name)
        p.ld(v, Mem("X", "+"), comment=f"{name}[{first + i}]")
        out.append(v)
    return out


def _load_z(p: VProgram, off: int, count: int, name: str) -> list[V]:
    out = []
    for i in range(count):
        v = p.v(name)
        p.ldd(v, Mem("Z", disp=off + i), comment=f"{name}[{i}]")
        out.append(v)
    return out


def _store_z(p: VProgram, off: int, vals: list[V], name: str) -> None:
    for i, v in enumerate(vals):
        p.std(Mem("Z", disp=off + i), v, comment=f"{name}[{off + i}]")


def emit_mask(p: VProgram, m: list[V], t: V, zero: V, t_in_flag: bool) -> V:
    """Branch-free: m := m xor mask, the mask 0xFF when M is to be subtracted (t = 0x00), 0x00
    when added, with C = 1 in the first case, the carry-in of (M xor mask) + 1 = -M (EOR leaves
    C alone).  The mask comes from the T flag (t_in_flag: CLR, BLD, SUBI; a register in
    r16..r31) or from t's register (COM, CP); returns it."""
    if t_in_flag:
        t = p.v("t")
        p.clr(t)
        p.bld(t, 0)
        p.subi(t, 1, comment="t = 0xFF now means: subtract M; C = 1 then")
    else:
        p.com(t, comment="t = 0xFF now means: subtract M")
        p.cp(zero, t, comment="C = 1 when t = 0xFF")
    for mi in m:
        p.eor(mi, t)
    return t


def emit_signed_add(p: VProgram, u: list[V], m: list[V], t: V, zero: V, variant: str,
                    d: V, t_in_flag: bool = False) -> V:
    """u -= (-1)^t m, t the 0x00/0xFF mask of sign(A_l - A_h) xor sign(B_l - B_h); branched code
    tests the T flag (copied from t here unless t_in_flag: already there); m may be shorter than
    u.  Then merge the carry or borrow and the sign extension into the pair (d, f):
    d += carry - borrow, f = its sign byte.  Before the call d holds the carries already
    collected.  Returns f.  With t_in_flag, branch-free code rebuilds the mask from T (t's
    register was free meanwhile: three cycles instead of a spill and a reload)."""
    if variant == "branchfree":
        t = emit_mask(p, m, t, zero, t_in_flag)  # (m xor t) + C = -m when t = 0xFF
        for i, ui in enumerate(u):
            p.adc(ui, m[i] if i < len(m) else t)
        p.adc(d, t, comment="d = carries + sign extension")
        p.adc(t, zero, comment="f = sign of d")
        return t
    if not t_in_flag:
        p.bst(t, 0, comment="T = t")
    f = p.v("f")
    p.arm_begin()
    for i, ui in enumerate(u):
        p.signed("add" if i == 0 else "adc", ui, m[i] if i < len(m) else zero)
    p.signed("adc", d, zero)
    p.sbc(f, f)
    p.arm_end()
    return f


def emit_middle(p: VProgram, u: list[V], m: list[V], top: list[V], t: V, zero: V, variant: str,
                d: V, t_in_flag: bool, negated: bool) -> None:
    """u -= (-1)^t m (emit_signed_add), then top += the merged carry and borrow (emit_ripple).

    negated (branched, d = -carry from emit_u): the top bytes join the signed arm, where d is
    already the right operand: the subtracting copy takes top - d - borrow with d its own sign
    extension; the adding copy first negates d and takes top + d + carry.  Three cycles less
    than merging (d, f) before the ripple, and the NEG balances the RJMP."""
    if not negated:
        f = emit_signed_add(p, u, m, t, zero, variant, d, t_in_flag)
        if top:
            emit_ripple(p, top, d, f)
        return
    assert variant == "branched"
    if not t_in_flag:
        p.bst(t, 0, comment="T = t")
    p.arm_begin()
    p.arm_pair(("neg", d), (), comment="d = +carry")
    for i, ui in enumerate(u):
        p.signed("add" if i == 0 else "adc", ui, m[i] if i < len(m) else zero)
    for j, x in enumerate(top):
        p.arm_pair(("adc", x, d if j == 0 else zero), ("sbc", x, d))
    p.arm_end()


def emit_u_branchfree(p: VProgram, L: list[V], Hb: list[V], M: list[V], top: list[V], m: int,
                      t: V, zero: V, t_in_flag: bool, keep_low: bool) -> list[V]:
    """Branch-free without an addend: U = (L_0 | Hbar_lo) + Hbar + (M xor mask) + 1 and the top
    bytes, with the mask made first.  Its carry-in (the +1) then enters U's first chain, whose
    carry goes straight into d = mask + carry (sign byte f = mask + that carry, in the mask's
    register), and the second chain's carry enters the top bytes with d: one cycle less than
    emit_u + emit_signed_add (no separate capture of U's carry).  Returns U."""
    t = emit_mask(p, M, t, zero, t_in_flag)
    d = p.v("d")  # CLR and LDD leave C alone
    p.clr(d)
    u, _ = emit_u(p, L, Hb, m, None, None, keep_low, zero, c_in=True)
    p.adc(d, t, comment="d = mask + carry")
    p.adc(t, zero, comment="f = sign of d")
    p.phase("U += M xor mask; top bytes += (d, f) + carry")
    emit_add_chain(p, u, M, zero)
    for j, x in enumerate(top):
        p.adc(x, d if j == 0 else t)
    return u


def emit_u_and_top(p: VProgram, L: list[V], Hb: list[V], M: list[V], m: int, carry_e: V | None,
                   addend, keep_low: bool, zero: V, variant: str, t: V, t_in_flag: bool,
                   folded: bool = False) -> list[V]:
    """U = (L_0 | Hbar_lo) + Hbar -/+ M (emit_u's arguments) and the top bytes Hbar_hi plus the
    carries and borrow, in place; returns U.  Without an addend, U's single carry allows the
    cheaper forms: emit_u_branchfree, or (branched) emit_middle's negated carry."""
    k = (m + 1) // 2
    top = Hb[k : 2 * (m - k)]
    assert len(top) == 2 * m - 3 * k
    plain = addend is None and bool(top)
    if variant == "branchfree" and plain:
        return emit_u_branchfree(p, L, Hb, M, top, m, t, zero, t_in_flag, keep_low)
    u, d = emit_u(p, L, Hb, m, carry_e, addend, keep_low, zero, folded=folded, negated=plain)
    p.phase("U -/+= M, then the top bytes Hbar_hi + carry -/+ borrow")
    emit_middle(p, u, M, top, t, zero, variant, d, t_in_flag, negated=plain)
    return u


def emit_ripple(p: VProgram, h: list[V], d: V, f: V) -> None:
    """h += d sign-extended by f (the merged carry/borrow of the middle part)."""
    for i, hi in enumerate(h):
        p.emit("add" if i == 0 else "adc", hi, d if i == 0 else f)


def emit_mul_regs(p: VProgram, a: list[V], b: list[V], zero: V, variant: str,
                  addend: list[V] = (), karatsuba_from: int = 0, zero_hi: V | None = None,
                  rows_upto: int = ROWS_UPTO, fold_e1: bool = False,
                  t_flag: bool = False) -> list[V]:
    """a * b + addend for register-resident byte strings, a and b left intact (the addend's
    registers are consumed).  Short products use the row-wise block (up to rows_upto bytes) or
    product scanning; long ones one more Karatsuba level, all in (virtual) registers, so no memory
    traffic beyond what the allocator spills.  karatsuba_from: the shortest product that takes
    another Karatsuba level (0: none); fold_e1: see emit_low_half."""
    m = len(a)
    if not _nested(m, karatsuba_from) or len(b) != m:
        block = emit_product_rows if min(m, len(b)) <= rows_upto else emit_product
        return block(p, a, b, zero, addend, zero_hi)
    k = (m + 1) // 2
    h = m - k
    opts = {"karatsuba_from": karatsuba_from, "zero_hi": zero_hi, "rows_upto": rows_upto,
            "fold_e1": fold_e1, "t_flag": t_flag}
    p.phase(f"in registers: {m}x{m} bytes by Karatsuba")
    L = emit_mul_regs(p, a[:k], b[:k], zero, variant, (), **opts)
    a, b = [_copy(p, a[:k]) + a[k:], _copy(p, b[:k]) + b[k:]]  # the differences go in place
    assert len(L) == 2 * k
    addend = list(addend) or None
    fold = fold_e1 and addend is not None and len(addend) > k
    carry_e = emit_low_half(p, L[:k], addend, 0, False, zero, fold_e1=fold)
    low = addend[:k] if addend else L[:k]  # without an addend U is built over a copy of L_0
    mask_a = emit_abs_diff(p, a[:k], a[k:], zero)
    mask_b = emit_abs_diff(p, b[:k], b[k:], zero)
    p.eor(mask_a, mask_b)
    t = mask_a
    t_in_flag = (variant == "branched" or t_flag) and not _nested(k, karatsuba_from)
    if t_in_flag:  # early, to free t's register (an inner Karatsuba level would clobber T)
        p.bst(t, 0, comment="T = t")
    Hb = emit_mul_regs(p, a[k:], b[k:], zero, variant, L[k:], **opts)
    M = emit_mul_regs(p, a[:k], b[:k], zero, variant, (), **opts)
    u = emit_u_and_top(p, L, Hb, M, m, carry_e, addend, addend is None, zero, variant, t,
                       t_in_flag, folded=fold)
    return low + u + Hb[k : 2 * h]


def emit_zero(p: VProgram, pair: bool) -> tuple[V, V | None]:
    """A cleared zero register, and with `pair` a second one beside it in an aligned pair (one
    MOVW from it clears two accumulator tops).  Returns (zero, zero_hi or None)."""
    zero, zero_hi = p.v("zero"), None
    if pair:
        zero_hi = p.v("zero")
        p.clr_pair(zero, zero_hi)
    else:
        p.clr(zero)
    return zero, zero_hi


def _nested(m: int, karatsuba_from: int) -> bool:
    """Whether emit_mul_regs takes another Karatsuba level for an m-byte product."""
    return bool(karatsuba_from) and m >= karatsuba_from


def _copy(p: VProgram, vs: list[V]) -> list[V]:
    """Fresh registers holding the same bytes (MOVW for pairs where the allocator can)."""
    out = [p.v("cp") for _ in vs]
    for i in range(0, len(vs) - 1, 2):
        p.copy_pair(out[i], out[i + 1], vs[i], vs[i + 1])
    if len(vs) % 2:
        p.mov(out[-1], vs[-1])
    return out


def _free_y(p: VProgram, scratch: int, scratch_off: int | None = None) -> None:
    """The operands are loaded: Y either points at the frame's scratch bytes (for spills; they
    start scratch_off bytes above SP+1) or joins the register pool."""
    if scratch:
        p.comment("Y is free now: point it at the frame's scratch bytes for spills")
        p.in_(28, 0x3D)
        p.in_(29, 0x3E)
        off = SCRATCH_OFF if scratch_off is None else scratch_off
        p.lend(Mem("Y", disp=1 + off + i) for i in range(scratch))
    else:
        p.release(28, 29)


def emit_low_half(p: VProgram, l0: list[V], addend, out_off: int, store: bool | None,
                  zero: V, fold_e1: bool = False) -> V | None:
    """The result's low k bytes: L_0, or L_0 + E_0 when the parent hands down an addend (its bytes
    at Z+addend, or registers).  Stored at Z+out_off unless `store` is false (the parent's M keeps
    them).  Returns the register parking the carry of L_0 + E_0 (None without an addend).

    fold_e1: E_1 is added now too, in the same carry chain: L_0's registers then hold
    X_1 = L_0 + E_1 (U's first operand instead of L_0), so no byte of E stays live through the
    products; the returned carry then belongs at U's byte k (see emit_u)."""
    k = len(l0)
    if addend is None:
        if store:
            p.phase("store L_0")
            _store_z(p, out_off, l0, "r")
        return None
    p.phase("R_0 = L_0 + E_0" + (", X_1 = L_0 + E_1" if fold_e1 else "") + " (the parent's addend)")
    e0 = addend[:k] if isinstance(addend, list) else _load_z(p, addend, k, "e")
    emit_add_chain(p, e0, l0, zero)
    if fold_e1:
        n_e1 = (len(addend) if isinstance(addend, list) else 2 * k) - k
        e1 = addend[k:] if isinstance(addend, list) else _load_z(p, addend + k, n_e1, "e")
        for i, x in enumerate(l0):
            p.adc(x, e1[i] if i < len(e1) else zero)
    carry_e = p.v("ce")
    p.clr(carry_e)
    p.rol(carry_e)
    if store:
        _store_z(p, out_off, e0, "r")
    return carry_e


def emit_u(p: VProgram, L: list[V], Hb: list[V], m: int, carry_e: V | None, addend,
           keep_low: bool, zero: V, folded: bool = False,
           negated: bool = False, c_in: bool = False) -> tuple[list[V], V | None]:
    """U = (L_0 | Hbar_lo) + Hbar (+ E_1 and the carry of L_0 + E_0 with an addend), built in
    place over L_0 and Hbar_lo (over a copy of L_0 when keep_low: L_0 is still needed).
    folded: L_0's registers already hold L_0 + E_1 and carry_e belongs at U's byte k.
    Returns U and d, the register collecting U's carries; negated (no addend: one carry): d
    holds minus the carry, 0x00 or 0xFF, its own sign extension (see emit_middle).  c_in (no
    addend): C holds a carry-in for U's byte 0, and U's carry is left in C (d is None)."""
    k = (m + 1) // 2
    p.phase("U = (L_0 | Hbar_lo) + Hbar")
    low = _copy(p, L[:k]) if keep_low else L[:k]
    u = low + Hb[:k]
    carry_in = carry_e is not None and not folded
    if carry_in:
        p.lsr(carry_e, comment="C = carry of L_0 + E_0")
    emit_add_chain(p, u, Hb[: 2 * k], zero, carry_in=carry_in or c_in)
    if c_in:
        assert addend is None and carry_e is None
        return u, None
    d = p.v("d")
    if negated:
        assert addend is None and carry_e is None
        p.sbc(d, d, comment="d = -carry")
        return u, d
    p.clr(d)
    p.rol(d)
    if folded and carry_e is not None:
        p.lsr(carry_e, comment="C = carry of X_1 = L_0 + E_1, at U's byte k")
        for x in u[k:]:
            p.adc(x, zero)
        p.adc(d, zero)
    if addend is not None and not folded:
        p.phase("U += E_1")
        e1 = addend[k:] if isinstance(addend, list) else _load_z(p, addend + k, m - k, "e")
        emit_add_chain(p, u, e1, zero)
        p.adc(d, zero)
    return u, d


def emit_base(
    p: VProgram,
    m: int,
    a: Src,
    b: Src,
    variant: str,
    out_off: int = 0,
    addend: int | list[V] | None = None,
    parent: bool = False,
    scratch: int = 0,
    karatsuba_from: int = 0,
    keep_high: bool = False,
    free_pointers: bool = True,
    pair_zero: bool = False,
    rows_upto: int | tuple[int, int, int] = ROWS_UPTO,
    fold_e1: bool = False,
    scratch_off: int | None = None,
    t_flag: bool = False,
    node: NodeAddend | None = None,
    combine_w: int = 4,
    combine_keep_c: bool = True,
    premask: bool = False,
    outer: OuterCombine | None = None,
    y_early: bool = False,
    push_z: bool = False,
    swap_m: bool = False,
    diff_early: bool = False,
    push_xy: bool = False,
    node_l0_kept: bool = False,
) -> list[V] | None:
    """One Karatsuba level in registers for m-byte operands (see module docstring).

    addend: add m bytes to the product (the parent's L_1, refined Karatsuba): the bytes at
    Z+addend, or registers.  parent: instead of storing the product, finish the parent's
    combination (this base is the parent's M; the parent's result is at Z+0 and its k is m).
    keep_high: store only the product's low m bytes and return the high m in registers (they are
    the parent's L_1, the next base's addend).  free_pointers: give X and Y to the allocator once
    the operands are loaded (else X is left at b+m and Y at a).  scratch: bytes of the stack
    frame lent for spills, starting scratch_off bytes above SP+1 (default: after the saved entry
    pointers of a full frame).  node: this base belongs to a two-level node with an addend; with
    keep_high it is the node's first base and folds the addend in (emit_node_addend), with parent
    it finishes that node's combination.  combine_w: the chunk width of a parent's combination
    (wider chunks park carries less often but keep more bytes live); combine_keep_c: its last
    carry stays in C for the top bytes instead of being parked (Combination keep_c).  premask
    (branch-free parent): XOR the product with the parent's t before the combination and keep t
    in the T flag, so the combination needs no mask register.  y_early: Y is given up (or pointed
    at the scratch) between A_h's loads and B_h's, so B_h's last bytes need not push values
    out.  push_z (only where _owns_z): Z is pushed during Hbar and M, two more registers for
    the products, four cycles each way (spills then have no room in the result buffer).
    swap_m: M's rows run over |B_l - B_h| instead of |A_l - A_h| (which bytes die first).
    diff_early: |A_l - A_h| is taken before B_h is loaded, so A_h's bytes (clean copies of the
    operand, each needed once more in its Hbar row) are the first to make room for B_h.
    push_xy (with keep_high and not free_pointers): X and Y wait on the stack from the last
    operand loads to the end, so the next base finds them where it needs them and this one has
    four more registers.  node_l0_kept (a node's first base): L_0 stays in registers for the
    node's addend instead of being stored and loaded back."""
    assert not push_xy or (keep_high and not free_pointers and not a.absdiff and not b.absdiff)
    k = (m + 1) // 2
    h = m - k
    zero, zero_hi = emit_zero(p, pair_zero)
    # rows_upto may differ per product (L, Hbar, M): L runs with the most free registers.
    rows_l, rows_h, rows_m = rows_upto if isinstance(rows_upto, tuple) else (rows_upto,) * 3
    inner = {"karatsuba_from": karatsuba_from, "zero_hi": zero_hi, "fold_e1": fold_e1,
             "t_flag": t_flag}

    p.phase(f"operands ({m} bytes each)")
    parent_t = None
    if a.absdiff:  # |A1 - A2| for the parent's M: both halves through Y
        a_all = _load_y(p, a.off, range(m), "a")
        mask_a = emit_abs_diff(
            p, a_all, lambda i: _load_y(p, a.off + m, range(i, i + 1), "a'")[0], zero
        )
    if b.absdiff:  # through X+: the first m bytes, then the second m bytes in order
        b_all = _load_x(p, m, "b", 0)
        mask_b = emit_abs_diff(p, b_all, lambda i: _load_x(p, 1, "b'", m + i)[0], zero)
    if a.absdiff and b.absdiff:
        p.eor(mask_a, mask_b, comment="the parent's t")
        parent_t = mask_a
    if b.absdiff and free_pointers:
        p.release(26, 27)
    if a.absdiff and free_pointers:
        _free_y(p, scratch, scratch_off)
    a_lo = a_all[:k] if a.absdiff else list(a.regs[:k]) or _load_y(p, a.off, range(k), "a")
    b_lo = b_all[:k] if b.absdiff else list(b.regs[:k]) or _load_x(p, k, "b", 0)

    p.phase(f"L = A_l * B_l ({k}x{k} bytes)")
    L = emit_mul_regs(p, a_lo, b_lo, zero, variant, (), rows_upto=rows_l, **inner)
    assert len(L) == 2 * k
    l0_kept = node_l0_kept and keep_high and node is not None
    carry_e = emit_low_half(p, L[:k], addend, out_off, not parent and not l0_kept, zero,
                            fold_e1=fold_e1)

    a_hi = a_all[k:] if a.absdiff else list(a.regs[k:]) or _load_y(p, a.off, range(k, m), "a")
    if push_xy:
        p.push_pointer("Y")
    if diff_early:
        p.phase("|A_l - A_h|")
        mask_al = emit_abs_diff(p, a_lo, a_hi, zero)
    free_y = not a.absdiff and free_pointers
    if free_y and y_early:
        _free_y(p, scratch, scratch_off)
    b_hi = b_all[k:] if b.absdiff else list(b.regs[k:]) or _load_x(p, h, "b", k)
    if not b.absdiff and free_pointers:
        p.release(26, 27)
    if push_xy:
        p.comment("the operand pointers wait on the stack for the next base")
        p.push_pointer("X")
    if free_y and not y_early:
        _free_y(p, scratch, scratch_off)
    p.phase("|B_l - B_h|, t" if diff_early else "|A_l - A_h|, |B_l - B_h|, t")
    if not diff_early:
        mask_al = emit_abs_diff(p, a_lo, a_hi, zero)
    mask_bl = emit_abs_diff(p, b_lo, b_hi, zero)
    p.eor(mask_al, mask_bl)
    t = mask_al
    t_in_flag = (variant == "branched" or t_flag) and not _nested(k, karatsuba_from)
    if t_in_flag:  # early, to free t's register (an inner Karatsuba level would clobber T)
        p.bst(t, 0, comment="T = t")

    assert not push_z or _owns_z(parent, node, addend)
    if push_z:
        p.comment("the result pointer waits on the stack: Z's registers join the products")
        p.push_pointer("Z")

    p.phase(f"Hbar = A_h * B_h + L_1 ({h}x{h} bytes)")
    Hb = emit_mul_regs(p, a_hi, b_hi, zero, variant, L[k:], rows_upto=rows_h, **inner)

    p.phase(f"M = |A_l - A_h| * |B_l - B_h| ({k}x{k} bytes)")
    M = emit_mul_regs(p, *((b_lo, a_lo) if swap_m else (a_lo, b_lo)), zero, variant, (),
                      rows_upto=rows_m, **inner)
    if push_z:
        p.pop_pointer("Z")

    u = emit_u_and_top(p, L, Hb, M, m, carry_e, addend, parent or l0_kept, zero, variant, t,
                       t_in_flag, folded=fold_e1 and addend is not None)
    top = Hb[k : 2 * h]
    product = L[:k] + u + top
    if keep_high:
        if node is not None:  # unless kept, U was built over L_0: it comes back from memory
            low = L[:k] if l0_kept else _load_z(p, out_off, k, "l")
            emit_node_addend(p, low + u[: m - k], node.e_off, out_off, zero)
        else:
            _store_z(p, out_off + k, u[: m - k], "r")
        if push_xy:
            p.pop_pointer("X")
            p.pop_pointer("Y")
        return (u + top)[m - k :]
    if not parent:
        _store_z(p, out_off + k, u + top, "r")
        return None
    at = {} if node is None else {"r_off": node.r_off, "x_lo": m,
                                  "carry_k": Mem("Z", disp=node.e_off)}
    if outer is not None and not scratch:
        raise AssertionError("feeding the outer combination needs Y on the frame")
    if variant == "branchfree" and premask:
        # The product is masked now and t goes to the T flag: one register less in the
        # combination, where M, the chunk and both parked carries are live.
        p.com(parent_t, comment="t = 0xFF now means: subtract M")
        for v in product:
            p.eor(v, parent_t)
        p.bst(parent_t, 0, comment="T = t")
        parent_t = None
    if outer is None:
        emit_combine(p, m, lambda i: product[i], parent_t, zero, variant, w=combine_w,
                     keep_c=combine_keep_c, **at)
    else:
        emit_fused_combine(p, m, product, parent_t, zero, variant, combine_w, outer)
    return None


@dataclass(frozen=True)
class Prelude:
    """Code opening a two-level node's first block that forms its first base's operands there:
    the block starts with X on b and Y on a, and emit(vp) leaves Y on the node's A and X on its
    B + k/2 (where the Hbar base's B starts) and returns the first base's Srcs."""

    a: Loc
    b: Loc
    emit: Callable[[VProgram], tuple[Src, Src]]


@dataclass(frozen=True)
class OuterCombine:
    """The combination one level up, to be fed with this node's result byte by byte (see
    emit_fused_combine): that level's half size k, its result at the entry pointer r plus r_off,
    its t at frame byte t_slot (from SP+1)."""

    k: int
    r_off: int
    t_slot: int


def emit_fused_combine(p: VProgram, m: int, product: list[V], t: V | None, zero: V,
                       variant: str, w: int, outer: OuterCombine) -> None:
    """A node's combination whose result bytes go straight into the combination one level up
    instead of memory: the node is that level's M child, so M never goes to the frame and back.
    Y (on the frame) fetches the outer t and the result pointer, then points at the outer result;
    Z stays on the node's result (its L_0 and Hbar).  Branched, the outer combination is the
    signed arm and the node's own M is masked; branch-free, both are masked (the node's may come
    premasked, t in the T flag)."""
    p.phase("this node's result feeds the combination one level up")
    t_o = p.v("to")
    p.ldd(t_o, Mem("Y", disp=1 + outer.t_slot), comment="the outer level's t")
    p.ldd(0, Mem("Y", disp=1 + ARG_SLOT["r"]), comment="Y = the outer result")
    p.ldd(29, Mem("Y", disp=2 + ARG_SLOT["r"]))
    p.mov(28, 0)
    if outer.r_off:
        p.adiw(28, outer.r_off)
    branched = variant == "branched"
    up = Combination(p, outer.k, t_o, zero, "signed" if branched else "mask", w, ptr="Y")
    inner = Combination(p, m, t, zero, "mask" if t is not None else "premasked", w,
                        out=up.feed)
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


class Combination:
    """A parent's combination U = (L_0 | Hbar_lo) + Hbar - (-1)^t M over R, reached through a
    pointer (Z or Y) at R+r_off: L_0 at R[0..k), Hbar at R[2k..4k); U goes to R[k..3k) and
    Hbar_hi + (d, f) to R[3k..4k), or each result byte i (k <= i < 4k) to out(i, reg).  M's bytes
    arrive in order through feed(i, reg); they are taken in chunks of w bytes, the two carry
    chains' carries parked in registers in between (ROL saves, LSR restores), so only M's pending
    bytes and one chunk are live at a time.

    sign says how M's sign is applied: "branch" (t is tested in the T flag: the whole combination
    is a signed arm, added or subtracted, with no masking), "signed" (the same inside an arm the
    caller has opened), "mask" (t is the 0x00/0xFF mask: (M xor t) + (t & 1)) or "premasked" (M's
    bytes come XORed already and t is in the T flag).  A node with an addend (see
    emit_node_addend) hands over X_1 = L_0 + E_1 in place of L_0 at R[x_lo..x_lo+k) and a carry
    byte (0 or 1) at carry_k that belongs at U's byte k: a third chain adds it there and joins the
    others' carries.  keep_c: the last chunk's carry stays in C for the top bytes when only
    stores come in between (one ROL and one ADD fewer)."""

    def __init__(self, p: VProgram, k: int, t: V | None, zero: V, sign: str, w: int = 4,
                 ptr: str = "Z", r_off: int = 0, x_lo: int = 0, carry_k: Mem | None = None,
                 out=None, keep_c: bool = True) -> None:
        self.p, self.k, self.t, self.zero, self.sign, self.w = p, k, t, zero, sign, w
        self.ptr, self.r_off, self.x_lo, self.carry_k, self.out = ptr, r_off, x_lo, carry_k, out
        self.keep_c = keep_c
        self.pending: list[tuple[int, V]] = []
        # Hbar_lo[i] is y_i and later x_{k+i}; Hbar_hi[i] is y_{k+i} and later a top byte: each
        # is loaded once (the allocator reloads it for free if it must make room).
        self.hbar: dict[int, V] = {}

    def start(self) -> None:
        p = self.p
        p.phase(f"combine: U = (L_0 | Hbar_lo) + Hbar -/+ M, {2 * self.k} bytes in chunks of "
                f"{self.w}")
        self.c1, self.c2 = p.v("c1"), p.v("c2")
        p.clr(self.c1)
        p.clr(self.c2)
        self.c3 = None
        if self.carry_k is not None:
            self.c3 = p.v("c3")
            p.ldd(self.c3, self.carry_k, comment="carry of the node's addend, at U's byte k")
        if self.sign == "branch":
            p.bst(self.t, 0, comment="T = t: add M")
            p.arm_begin()
        elif self.sign == "premasked":
            p.bld(self.c2, 0, comment="C of M's chain starts as t (M came masked, T = t)")
        elif self.sign == "mask":
            p.com(self.t, comment="t = 0xFF now means: subtract M")

    def _load(self, off: int, name: str) -> V:
        if off in self.hbar:
            return self.hbar.pop(off)
        v = self.p.v(name)
        self.p.ldd(v, Mem(self.ptr, disp=self.r_off + off), comment=f"{name}[{off}]")
        if 2 * self.k <= off < 4 * self.k:
            self.hbar[off] = v
        return v

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
        p, k, zero = self.p, self.k, self.zero
        idx = [i for i, _ in self.pending]
        ms = [m for _, m in self.pending]
        self.pending = []
        first = idx[0] == 0
        u = [self._load(self.x_lo + i if i < k else k + i, "x") for i in idx]
        if not first:
            p.lsr(self.c1)
        for n, i in enumerate(idx):
            p.emit("add" if first and not n else "adc", u[n], self._load(2 * k + i, "hb"))
        p.rol(self.c1)
        if self.c3 is not None and idx[-1] >= k:
            p.lsr(self.c3)
            for n, i in enumerate(idx):
                if i >= k:
                    p.adc(u[n], zero)
            p.rol(self.c3)
        if self.sign == "mask":
            for mv in ms:
                p.eor(mv, self.t)
        if not first or self.sign == "premasked":
            p.lsr(self.c2)
        elif self.sign == "mask":
            p.cp(zero, self.t, comment="C = t: (M xor t) + t = -M when t = 0xFF")
        signed = self.sign in ("branch", "signed")
        for n in range(len(idx)):
            op = "add" if first and not n and signed else "adc"
            if signed:
                p.signed(op, u[n], ms[n])
            else:
                p.adc(u[n], ms[n])
        # The last chunk's carry can stay in C until finish() when only stores (which keep the
        # flags) come in between.
        self.c2_in_c = (self.keep_c and idx[-1] == 2 * k - 1 and self.out is None
                        and self.c3 is None)
        if not self.c2_in_c:
            p.rol(self.c2)
        for n, i in enumerate(idx):
            self._emit(k + i, u[n])

    def finish(self) -> None:
        p, k, zero = self.p, self.k, self.zero
        p.phase("top bytes: Hbar_hi + (d, f)")
        c1, c2 = self.c1, self.c2
        if self.c3 is not None:
            p.add(c1, self.c3, comment="the third chain's carry joins the first's")

        def join_c2() -> None:
            """c1 += the second chain's carry (a borrow in a signed arm's subtracting copy), still
            in C or parked in c2."""
            emit = p.signed if self.sign in ("branch", "signed") else p.emit
            if self.c2_in_c:
                emit("adc", c1, zero, comment="+ the last carry, still in C")
            else:
                emit("add", c1, c2)

        if self.sign in ("branch", "signed"):
            f = p.v("f")
            join_c2()
            p.sbc(f, f, comment="f = sign of d")
            if self.sign == "branch":
                p.arm_end()
        elif self.sign == "premasked":
            f = p.v("f")
            p.clr(f)  # CLR and BLD keep C
            p.bld(f, 0, comment="T = 1: M was subtracted")
            join_c2()
            p.sub(c1, f, comment="d = carries - T")
            p.sbc(f, f, comment="f = sign of d")
        else:
            f = self.t
            join_c2()
            p.add(c1, f, comment="d = carries + sign extension")
            p.adc(f, zero, comment="f = sign of d")
        top = [self._load(3 * k + i, "hb") for i in range(k)]
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
        e = _load_z(p, e_off + i, 1, "e")[0]
        p.emit("adc" if i else "add", e, x)
        p.std(Mem("Z", disp=out_off + i), e, comment=f"r[{i}]")
    for i, x in enumerate(low):
        e = _load_z(p, e_off + m + i, 1, "e")[0]
        p.adc(x, e)
    ce = p.v("ce")
    p.clr(ce)
    p.rol(ce)
    _store_z(p, out_off + m, low, "x")
    p.std(Mem("Z", disp=e_off), ce, comment="carry of X_1, for U's byte k")


# --- memory levels -------------------------------------------------------------------------------

PTR_LO = {"X": 26, "Y": 28, "Z": 30}
ARG_SLOT = {"r": 0, "a": 2, "b": 4}  # where the entry pointers are kept in the frame
SCRATCH_OFF, SCRATCH = 6, 40  # frame bytes lent to base blocks for spills
SMALL_FRAME_SCRATCH = (0, 2, 4, 8, 16)  # spill room tried for two levels without a full frame


@dataclass(frozen=True)
class Loc:
    """An address: `off` bytes past argument pointer r/a/b, or past the frame base."""

    base: str
    off: int = 0

    def __add__(self, delta: int) -> Loc:
        return Loc(self.base, self.off + delta)


class Frame:
    """Stack frame of a multi-level routine: the three entry pointers, then temporaries handed out
    and returned in stack order."""

    def __init__(self, origin: int = 0) -> None:
        self.origin = origin  # bytes above SP+1 where the frame starts (see frame_reader)
        self.top = self.size = origin + SCRATCH_OFF + SCRATCH

    def alloc(self, nbytes: int) -> Loc:
        loc = Loc("frame", self.top)
        self.top += nbytes
        self.size = max(self.size, self.top)
        return loc

    def free(self, loc: Loc) -> None:
        self.top = loc.off


def _add_const(p: Program, lo: int, value: int) -> None:
    """The register pair at lo += value (mod 2^16): ADIW for a small positive value on an ADIW pair,
    else SUBI/SBCI (r16..r31)."""
    value &= 0xFFFF
    if not value:
        return
    if lo in (24, 26, 28, 30) and value <= 63:
        p.adiw(lo, value)
    elif lo >= 16:
        neg = (-value) & 0xFFFF
        p.subi(lo, neg & 0xFF)
        p.sbci(lo + 1, neg >> 8)
    else:
        raise AssertionError("pointer arithmetic needs r16..r31")


def set_pointers(p: Program, entry: bool = False, z_at: Loc | None = None, origin: int = 0,
                 **locs: Loc) -> None:
    """Point X/Y/Z at the given locations, reading saved argument pointers through a pointer set
    to SP (Z, or Y when Z already points where it should: z_at is where Z points now); at the
    routine's entry (entry true) the argument pointers are still where avr-gcc passed them, and a
    MOVW each suffices.  origin: the frame starts that many bytes above SP+1 (a frame reserved by
    a caller, see frame_reader)."""
    if entry and all(loc.base in ARG_REGS for loc in locs.values()):
        for ptr, loc in locs.items():
            p.movw(PTR_LO[ptr], ARG_REGS[loc.base], comment=f"{ptr} = {loc.base}")
            _add_const(p, PTR_LO[ptr], loc.off)
        return
    z_delta = None  # Z already points near its target: move it instead of reloading it
    near = "Z" in locs and z_at is not None and locs["Z"].base == z_at.base \
        and abs(locs["Z"].off - z_at.off) <= 63
    if near and len(locs) == 1:
        _add_const(p, 30, (locs["Z"].off - z_at.off) & 0xFFFF)
        return
    if near and "Y" in locs:
        z_delta = locs["Z"].off - z_at.off
        locs = {k: v for k, v in locs.items() if k != "Z"}
        reader = "Y"
    else:
        reader = "Z"
    rlo = PTR_LO[reader]
    shift = frame_reader(p, rlo, origin)
    order = [r for r in ("X", "Y", "Z") if r in locs and r != reader]
    order += [reader] if reader in locs else []
    for ptr in order:
        loc, lo = locs[ptr], PTR_LO[ptr]
        if loc.base == "frame":
            if ptr != reader:
                p.movw(lo, rlo)
            _add_const(p, lo, 1 + shift - origin + loc.off)  # frame offsets include the origin
            continue
        slot = 1 + shift + ARG_SLOT[loc.base]
        if ptr == reader:
            p.ldd(0, Mem(reader, disp=slot))
            p.ldd(lo + 1, Mem(reader, disp=slot + 1))
            p.mov(lo, 0)
        else:
            p.ldd(lo, Mem(reader, disp=slot))
            p.ldd(lo + 1, Mem(reader, disp=slot + 1))
        _add_const(p, lo, loc.off)
    if z_delta is not None:
        _add_const(p, 30, z_delta & 0xFFFF)


def frame_reader(p: Program, lo: int, origin: int = 0) -> int:
    """The pair at lo = SP, plus the frame's origin when its pointer slots would otherwise lie
    beyond LDD's reach; returns the displacement still to add (the frame is at pair+1+that)."""
    p.in_(lo, 0x3D, comment="SP: the frame is above it")
    p.in_(lo + 1, 0x3E)
    return frame_shift(p, lo, origin)


def frame_shift(p: Program, lo: int, origin: int) -> int:
    """The pair at lo holds SP: move it to the frame if the pointer slots are out of LDD's reach;
    returns the displacement still to add (see frame_reader)."""
    if 1 + origin + SCRATCH_OFF <= 63:
        return origin
    _add_const(p, lo, origin)
    return 0


def _run_block(p: Program, vp: VProgram, spill: list[Mem]) -> None:
    allocate(vp, BASE_POOL, p, spill_slots=spill)


def _run_base(p: Program, spill: list[Mem], variant: str, *args, labels: Program | None = None,
              **kw) -> None:
    scratch = kw.pop("scratch", 0)
    parent = bool(kw.get("parent"))
    _run_best(p, spill, variant, scratch, args[0],
              lambda vp, v, **opts: emit_base(vp, *args, variant=v, **opts, **kw), labels,
              addend=kw.get("addend") is not None, parent=parent,
              keep_scratch=kw.get("outer") is not None,
              own_z=_owns_z(parent, kw.get("node"), kw.get("addend")))


def _owns_z(parent: bool, node: NodeAddend | None, addend) -> bool:
    """Whether a base uses Z only for its own result, so Z may be pushed during its products:
    not for a parent's combination, a node's addend or an addend in memory."""
    return not parent and node is None and not isinstance(addend, int)


def _run_best(p: Program, spill: list[Mem], variant: str, scratch: int, m: int, emit,
              labels: Program | None = None, addend: bool = True, parent: bool = False,
              keep_scratch: bool = False, own_z: bool = False,
              pointers_wait: bool = False, node_first: bool = False) -> None:
    """Emit a block in its cheapest form; emit(vp, variant, **options) takes emit_base's options.
    Tried: spilling into the frame's scratch or not, an extra Karatsuba level inside the register
    products of 7 bytes and more or not, the row-wise block for products longer than ROWS_UPTO
    bytes or product scanning for them, with an addend adding the parent's E_1 early (fold_e1:
    fewer live registers, a longer carry ripple) or late, (branch-free) parking t in the T flag
    or in a register (t_flag), and for a parent base the chunk width of its combination
    (combine_w), whether its last carry stays in C (combine_keep_c: one cycle, but the
    allocation differs) and (branch-free) masking M before it (premask), and where Z is the block's own result pointer, freeing Y early
    (y_early), pushing Z during the products (push_z) and M's row operand (swap_m), taking
    |A_l - A_h| before or after B_h's loads (diff_early), and for the first base of a joint
    L/Hbar block pushing X and Y (push_xy), for a node's first base keeping L_0 in registers
    for the node's addend (node_l0_kept); each is allocated with every eviction preference
    (CLEAN_BIAS), the cheapest REFINE allocations that split a MOVW also with values moved to
    free register pairs (vreg._defragment); a branched block that cannot be allocated falls
    back to branch-free arithmetic (still constant time)."""
    best = None
    # Small bases are cheap to generate: there product scanning is tried for the 4- and 5-byte
    # products too (the row-wise block's MOVW temporaries may not find free pairs).
    rows = [ROWS_UPTO] + ([3] if m <= 2 * ROWS_UPTO else [])
    if m in (11, 12):  # 6-byte products: row-wise wins where pairs are free (the L product)
        rows += [(6, ROWS_UPTO, ROWS_UPTO), 6, (6, ROWS_UPTO, 6)]
    for v in (variant, "branchfree") if variant == "branched" else (variant,):
        bf = v == "branchfree"
        # (A zero register pair and an inner Karatsuba level for products under 7 bytes never
        # won at any size, so they are not tried.)
        options = {
            "scratch": [scratch] if keep_scratch else sorted({scratch, 0}),
            "karatsuba_from": [0] + ([(m + 1) // 2] if (m + 1) // 2 >= 7 else []),
            "rows_upto": rows,
            "fold_e1": (False, True) if addend else (False,),
            "t_flag": (False, True) if bf else (False,),
            "combine_w": (2, 4, 8) if parent else (4,),
            "combine_keep_c": (True, False) if parent else (True,),
            "premask": (False, True) if parent and bf else (False,),
            # Where Z is the block's own result pointer (own_z): freeing Y before B_h's loads,
            # pushing Z during the products, M's rows over the other operand.
            "y_early": (False, True) if own_z else (False,),
            "push_z": (False, True) if own_z else (False,),
            "swap_m": (False, True) if own_z else (False,),
            "diff_early": (False, True),
        } | ({"push_xy": (False, True)} if pointers_wait else {}) \
          | ({"node_l0_kept": (False, True)} if node_first else {})
        # Every form is allocated with each eviction preference; the REFINE cheapest forms that
        # had to split a MOVW are then tried with defragmentation too (it moves a few cycles,
        # rarely the ranking, and trying it everywhere would take most of the generation time).
        forms = []
        for values in itertools.product(*options.values()):
            opts = dict(zip(options, values))
            if opts["y_early"] and opts["scratch"]:
                continue  # Y then holds the frame pointer either way: no register to gain
            vp = VProgram()
            emit(vp, v, **opts)
            cheapest = None
            for bias in CLEAN_BIAS:
                stats: dict = {}
                found = _allocate_trial(vp, spill, labels or p, False, stats, bias)
                if found is not None and (cheapest is None or found[0] < cheapest[0]):
                    cheapest = found
                if stats.get("split_pairs"):
                    forms.append((found[0] if found else 10**9, len(forms), vp, bias))
            if cheapest is not None and (best is None or cheapest[0] < best[0]):
                best = cheapest
        for _, _, vp, bias in sorted(forms)[:REFINE]:
            found = _allocate_trial(vp, spill, labels or p, True, {}, bias)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            break
    if best is None:
        raise AllocationError("no register allocation found for the base block")
    p.extend(best[1])


def _allocate_trial(vp: VProgram, spill: list[Mem], labels: Program, defragment: bool,
                    stats: dict, bias: int) -> tuple[int, Program] | None:
    """(cycles, code) of one allocation of vp, or None where it does not allocate."""
    trial = Program()
    try:
        allocate(vp, BASE_POOL, trial, spill_slots=spill, labels_from=labels,
                 defragment=defragment, stats=stats, clean_bias=bias)
    except AllocationError:
        return None
    return _nominal_cycles(trial), trial


def _nominal_cycles(p: Program) -> int:
    """Cycles along the path that takes no conditional branch (a NOP-balanced branch costs the
    same either way)."""
    where = {item.name: k for k, item in enumerate(p.items) if isinstance(item, Label)}
    total, k = 0, 0
    while k < len(p.items):
        item = p.items[k]
        k += 1
        if isinstance(item, Instr):
            total += item.cycles() or 1
            if item.mnemonic == "rjmp":
                k = where[item.operands[0]]
    return total


def _z_slots(lo: int, hi: int) -> list[Mem]:
    return [Mem("Z", disp=j) for j in range(lo, hi)]


def emit_mul_node(
    p: Program, n: int, levels: int, a: Loc, b: Loc, out: Loc, frame: Frame, variant: str,
    addend: Loc | None = None, entry: bool = False, z_at: Loc | None = None,
    outer: OuterCombine | None = None, prelude: Prelude | None = None,
) -> Loc | None:
    """out[0..2n) = a[0..n) * b[0..n) with `levels` Karatsuba levels (1 = a base in registers),
    plus the n bytes at `addend` (two levels only: see emit_node_addend), which lie below out
    within 63 - 2n bytes and are free once added.  entry: this node starts the routine (the
    argument pointers are still in their registers); z_at: where Z points before the node;
    outer (two levels): the node's result feeds the parent's combination (emit_fused_combine)
    instead of going to out; prelude (two levels): the node's first block starts with it (see
    Prelude).  Returns where Z points after it."""
    k = n // 2
    node = None
    if addend is not None:
        if levels != 2 or addend.base != out.base or not 0 < out.off - addend.off <= 63 - 2 * n:
            raise AssertionError("a node addend needs two levels and a result just above it")
        node = NodeAddend(e_off=0, r_off=out.off - addend.off)
    if levels == 1:
        set_pointers(p, entry, z_at=z_at, X=b, Y=a, Z=out)
        _run_base(p, _z_slots((n + 1) // 2, 2 * n), variant, n, Src(), Src(), scratch=SCRATCH)
        return out
    p.comment(f"=== {8 * n}-bit Karatsuba level ({levels} levels): L = A_l * B_l ===")
    if levels == 2:
        z_at = _emit_l_and_h(p, k, a, b, out, variant, node=node, entry=entry, z_at=z_at,
                             prelude=prelude)
    else:
        z_at = emit_mul_node(p, k, levels - 1, a, b, out, frame, variant, entry=entry,
                             z_at=z_at)
        p.comment(f"=== {8 * n}-bit level: Hbar = A_h * B_h + L_1 ===")
        if levels == 3:  # the H child takes L_1 as its addend
            z_at = emit_mul_node(p, k, 2, a + k, b + k, out + 2 * k, frame, variant,
                                 addend=out + k, z_at=z_at)
        else:
            z_at = emit_mul_node(p, k, levels - 1, a + k, b + k, out + 2 * k, frame, variant,
                                 z_at=z_at)
            set_pointers(p, z_at=z_at, Z=out + k)
            vp = VProgram()
            emit_mem_add_l1(vp, k)
            _run_block(p, vp, [])
            z_at = out + k
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h| * |B_l - B_h|, combine ===")
    if levels == 2:
        # Spill room: U's low half until the combination writes it; with an addend that is where
        # X_1 waits, and the consumed addend (after its carry byte) is free instead.
        spill = _z_slots(1, node.r_off) if node else _z_slots(k, 2 * k)
        set_pointers(p, z_at=z_at, X=b, Y=a, Z=addend or out)
        _run_base(p, spill, variant, k, Src(absdiff=True), Src(absdiff=True), parent=True,
                  scratch=SCRATCH, node=node, outer=outer)
        return addend or out
    # The M child is a memory level too: |A_l - A_h|, |B_l - B_h| and t go to the frame.
    if levels == 3 and out.base == "r":
        # The M child feeds this combination directly, and its first block starts with the
        # differences: its first base takes their low halves from the registers.  Frame: t, M's
        # L and Hbar, |A_l - A_h|, |B_l - B_h|, all within reach of Z on L.
        assert 4 * k <= 64, "the differences must lie within STD's reach of Z"
        t_slot = frame.alloc(1)
        prod = frame.alloc(2 * k)
        diffs = frame.alloc(2 * k)

        def differences(vp: VProgram) -> tuple[Src, Src]:
            da, db, t = emit_mem_absdiffs(vp, k, at=2 * k)
            vp.movw(28, 30)
            vp.st(Mem("Y", "-"), t, comment="t, just below M's L")
            vp.adiw(28, 1 + 2 * k, comment="Y -> |A_l - A_h|")
            vp.movw(26, 30)
            vp.adiw(26, 3 * k + k // 2, comment="X -> where the Hbar base's B starts")
            return Src(regs=tuple(da[: k // 2])), Src(regs=tuple(db[: k // 2]))

        emit_mul_node(p, k, 2, diffs, diffs + k, prod, frame, variant, z_at=z_at,
                      outer=OuterCombine(k=k, r_off=out.off, t_slot=t_slot.off),
                      prelude=Prelude(a, b, differences))
        frame.free(t_slot)
        return None
    diffs = frame.alloc(1 + 2 * k)
    set_pointers(p, z_at=z_at, X=b, Y=a, Z=diffs)
    vp = VProgram()
    _, _, t = emit_mem_absdiffs(vp, k)
    vp.std(Mem("Z", disp=0), t, comment="t")
    _run_block(p, vp, [])
    prod = frame.alloc(2 * k)
    z_at = emit_mul_node(p, k, levels - 1, diffs + 1, diffs + 1 + k, prod, frame, variant,
                         z_at=diffs)
    set_pointers(p, z_at=z_at, Y=diffs, Z=out)
    vp = VProgram()
    emit_mem_combine(vp, k, m_off=prod.off - diffs.off, variant=variant)
    _run_block(p, vp, [])
    frame.free(diffs)
    return out


def _emit_l_and_h(p: Program, k: int, a: Loc, b: Loc, out: Loc, variant: str,
                  framed: bool = True, scratch: int = 0, node: NodeAddend | None = None,
                  entry: bool = False, z_at: Loc | None = None,
                  prelude: Prelude | None = None) -> Loc | None:
    """L = A_l B_l and Hbar = A_h B_h + L_1 by two bases: either as separate blocks (L_1 goes
    through memory), or as one block that hands L_1 over in registers; the cheaper wins.
    Without a full frame (framed false) X, Y and Z already point at b, a and out, only the joint
    block is possible (the pointers cannot be reloaded), and `scratch` bytes at SP+1 are lent.
    With a node addend (node) Z points at it, out lies node.r_off bytes above, and the joint
    block folds it in.  prelude: the joint block starts with it and takes the first base's
    operands from it (see Prelude).  Returns where Z points afterwards (None: unknown)."""
    r = node.r_off if node else 0

    def both(vp: VProgram, v: str, scratch: int, push_xy: bool, **opts) -> None:
        srcs = prelude.emit(vp) if prelude else (Src(), Src())
        l1 = emit_base(vp, k, *srcs, v, out_off=r, keep_high=True, free_pointers=False,
                       node=node, push_xy=push_xy, **opts)
        vp.comment(f"=== {16 * k}-bit level: Hbar = A_h * B_h + L_1, L_1 still in registers ===")
        vp.adiw(28, k, comment="Y -> A_h; X already points at B_h")
        emit_base(vp, k, Src(), Src(), v, out_off=r + 2 * k, addend=l1, scratch=scratch,
                  scratch_off=None if framed else 0, **opts)

    joint = Program()
    try:
        if framed:
            x_at, y_at = (prelude.b, prelude.a) if prelude else (b, a)
            set_pointers(joint, entry, z_at=z_at, X=x_at, Y=y_at, Z=out + -r)
        _run_best(joint, _z_slots(r + (k + 1) // 2, r + 4 * k), variant,
                  SCRATCH if framed else scratch, k, both, labels=p, pointers_wait=True,
                  node_first=node is not None)
    except AllocationError:
        if not framed or node or prelude:
            raise
        joint = None
    if not framed or node or prelude:
        p.extend(joint)
        return out + -r if framed else None
    separate = Program()
    set_pointers(separate, entry, z_at=z_at, X=b, Y=a, Z=out)
    _run_base(separate, _z_slots((k + 1) // 2, 2 * k), variant, k, Src(), Src(), scratch=SCRATCH,
              labels=p)
    separate.comment(f"=== {16 * k}-bit level: Hbar = A_h * B_h + L_1 ===")
    set_pointers(separate, z_at=out, X=b + k, Y=a + k, Z=out + k)
    _run_base(separate, _z_slots(k + (k + 1) // 2, 3 * k), variant, k, Src(), Src(),
              out_off=k, addend=0, scratch=SCRATCH, labels=p)
    best = separate if joint is None or _nominal_cycles(separate) <= _nominal_cycles(joint) else joint
    p.extend(best)
    return out + k if best is separate else out


def emit_mem_add_l1(p: VProgram, k: int, w: int = 8) -> None:
    """Hbar = H + L_1 in memory: Z points at L_1, H follows at Z+k (2k bytes)."""
    p.phase(f"Hbar = H + L_1 in memory ({k} bytes, carry rippled through H's top half)")
    zero = p.v("zero")
    p.clr(zero)
    for j in range(0, 2 * k, w):
        cols = range(j, min(j + w, 2 * k))
        hs = _load_z(p, k + j, len(cols), "h")
        for hv, col in zip(hs, cols):
            lv = _load_z(p, col, 1, "l")[0] if col < k else zero
            p.emit("adc" if col else "add", hv, lv)
        _store_z(p, k + j, hs, "h")


def emit_mem_absdiffs(p: VProgram, k: int, at: int = 1) -> tuple[list[V], list[V], V]:
    """Z[at..at+k) = |A_l - A_h| (A through Y), Z[at+k..at+2k) = |B_l - B_h| (B through X+).
    Returns both differences, still in registers, and t."""
    p.phase(f"|A_l - A_h|, |B_l - B_h| and t ({k} bytes each) into the frame")
    # Both halves have k bytes: emit_abs_diff never needs a zero register.
    x = _load_y(p, 0, range(k), "a")
    mask_a = emit_abs_diff(p, x, lambda i: _load_y(p, k, range(i, i + 1), "a'")[0], None)
    _store_z(p, at, x, "d")
    y = _load_x(p, k, "b", 0)
    mask_b = emit_abs_diff(p, y, lambda i: _load_x(p, 1, "b'", k + i)[0], None)
    _store_z(p, at + k, y, "d")
    p.eor(mask_a, mask_b, comment="t")
    return x, y, mask_a


def emit_mem_combine(p: VProgram, k: int, m_off: int, variant: str) -> None:
    """The combination with t at Y+0 and M at Y+m_off (2k bytes, in the frame); R through Z."""
    zero, t = p.v("zero"), p.v("t")
    p.clr(zero)
    p.ldd(t, Mem("Y", disp=0), comment="t")
    p.adiw(28, m_off, comment="Y -> M")
    emit_combine(p, k, lambda i: _load_y(p, 0, range(i, i + 1), "m")[0], t, zero, variant)


# --- the kernel ---------------------------------------------------------------------------------


def _level_options(n: int) -> list[int]:
    opts = []
    for levels in range(1, 6):
        m = n >> (levels - 1)
        if n % (1 << (levels - 1)) or m < 2:
            break
        if m <= MAX_BASE and (levels == 1 or m >= 3):
            opts.append(levels)
    return opts


def padded_mul(n: int, n_pad: int, inner: Kernel) -> Kernel:
    """n-byte operands through a routine for n_pad > n bytes: the operands are copied into the
    stack frame with zero bytes on top, the inner routine multiplies the copies into the frame,
    and the low 2n bytes of its result are copied out.  For sizes no Karatsuba split fits."""
    from .abi import _argument_moves

    a_off, b_off, r_off = 2, 2 + n_pad, 2 + 2 * n_pad  # after the saved result pointer
    size = r_off + 2 * n_pad
    p = Program()
    p.phase(f"frame: {n}-byte operands padded to {n_pad} bytes, and the padded product")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    _add_const(p, 28, (-size) & 0xFFFF)
    _set_sp_atomic(p)
    p.std(Mem("Y", disp=1), 24, comment="save pointer r")
    p.std(Mem("Y", disp=2), 25)
    p.movw(26, 28)
    _add_const(p, 26, 1 + a_off)
    for src, name in ((22, "a"), (20, "b")):
        p.phase(f"copy {name} and zero its top {n_pad - n} byte(s)")
        p.movw(30, src)
        for _ in range(n):
            p.ld(0, Mem("Z", "+"))
            p.st(Mem("X", "+"), 0)
        for _ in range(n - n_pad, 0):
            p.st(Mem("X", "+"), 1, comment="r1 is zero on entry")
    p.movw(24, 28)
    _add_const(p, 24, 1 + r_off)
    for lo, off in ((22, a_off), (20, b_off)):
        p.movw(26, 28)
        _add_const(p, 26, 1 + off)
        p.movw(lo, 26)
    _argument_moves(p, inner.args)
    p.comment(f"=== the {8 * n_pad}-bit routine on the padded copies ===")
    p.extend(inner.body)
    p.phase(f"copy the low {2 * n} bytes of the product out")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    p.ldd(26, Mem("Y", disp=1))
    p.ldd(27, Mem("Y", disp=2))
    p.movw(30, 28)
    _add_const(p, 30, 1 + r_off)
    for _ in range(2 * n):
        p.ld(0, Mem("Z", "+"))
        p.st(Mem("X", "+"), 0)
    p.phase("release the frame")
    _add_const(p, 28, size)
    _set_sp_atomic(p)
    return Kernel(p, {}, [f"operands padded from {n} to {n_pad} bytes", *inner.notes])


def karatsuba_mul(spec: Spec) -> Kernel:
    n = spec.operand_bytes
    options = _level_options(n)
    if spec.levels is not None and spec.levels not in options:
        raise AvrmpError(
            f"--levels {spec.levels}: {spec.bits}-bit Karatsuba supports levels "
            f"{', '.join(map(str, options)) or 'none'} (each memory level halves an even size; "
            f"the base in registers takes 2..{MAX_BASE} bytes)"
        )
    if spec.levels is not None:
        return _build(n, spec.levels, spec.variant)
    # Default: the fastest structure (a NOP-balanced branch costs the same either way, so the
    # straight-path count is exact for both variants).  Bases under MIN_DEFAULT_BASE bytes are
    # only built on request: their levels' overhead outweighs what they save, and building them
    # takes most of the generation time.
    candidates = [lv for lv in options if n >> (lv - 1) >= MIN_DEFAULT_BASE] or options
    return min((_build(n, lv, spec.variant) for lv in candidates),
               key=lambda kern: _nominal_cycles(kern.body))


@functools.cache
def _build(n: int, levels: int, variant: str) -> Kernel:
    """The cheaper of the possible layouts: a 1-level routine may run without a stack frame
    (spilling only into the result buffer) or with one (more spill room)."""
    options = []
    if levels == 1:
        try:
            p = Program()
            _run_base(p, _z_slots((n + 1) // 2, 2 * n), variant, n, Src(), Src())
            options.append(Kernel(p, {"a": 28, "b": 26, "r": 30},
                                  [f"1 level of Karatsuba, base {n} bytes, no stack frame"]))
        except AllocationError:
            pass
    if levels == 2:
        small = _least(SMALL_FRAME_SCRATCH, lambda scratch: _build_small_frame(n, variant, scratch))
        if small is not None:
            options.append(small)
    try:
        options.append(_build_framed(n, levels, variant))
    except AllocationError:
        if not options:
            raise
    return min(options, key=lambda k: _nominal_cycles(k.body))


def _least(sizes: tuple[int, ...], build):
    """build(size) for the least size that allocates (None if none does), by bisection: a size
    that allocates means every larger one does too."""
    lo, hi, found = 0, len(sizes) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        try:
            found = build(sizes[mid])
            hi = mid - 1
        except AllocationError:
            lo = mid + 1
    return found


def _build_small_frame(n: int, variant: str, scratch: int) -> Kernel:
    """Two levels with a small frame: the operand pointers are pushed for the M child and
    `scratch` more bytes are pushed as spill room (instead of a full frame that saves all three
    pointers and reloads them through Z); Z keeps pointing at the result throughout."""
    k = n // 2
    p = Program()
    # The M child first: it needs the most spill room, so a failing size fails cheaply.
    m_child = Program()
    _run_base(m_child, _z_slots(k, 2 * k), variant, k, Src(absdiff=True), Src(absdiff=True),
              parent=True, scratch=scratch, scratch_off=0, labels=p)
    p.phase(f"save the operand pointers for the M child; {scratch} bytes of spill room")
    for r in (26, 27, 28, 29):
        p.push(r)
    if scratch <= 4:
        for _ in range(scratch):
            p.push(0, comment="reserve")
    elif scratch:
        p.in_(24, 0x3D)
        p.in_(25, 0x3E)
        _add_const(p, 24, -scratch & 0xFFFF)
        _set_sp_atomic(p, 24)
    p.comment(f"=== {8 * n}-bit Karatsuba level (2 levels): L = A_l * B_l ===")
    _emit_l_and_h(p, k, Loc("a"), Loc("b"), Loc("r"), variant, framed=False, scratch=scratch)
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h| * |B_l - B_h|, combine ===")
    if scratch:
        p.in_(28, 0x3D)
        p.in_(29, 0x3E)
        p.ldd(26, Mem("Y", disp=scratch + 4), comment="X = b")
        p.ldd(27, Mem("Y", disp=scratch + 3))
        p.ldd(0, Mem("Y", disp=scratch + 2), comment="Y = a")
        p.ldd(29, Mem("Y", disp=scratch + 1))
        p.mov(28, 0)
    else:
        for r in (29, 28, 27, 26):
            p.pop(r)
    p.extend(m_child)
    if scratch:
        p.phase("release the frame")
        p.in_(28, 0x3D)
        p.in_(29, 0x3E)
        _add_const(p, 28, scratch + 4)
        _set_sp_atomic(p)
    frame = f"{scratch + 4} bytes of stack" if scratch else "4 bytes pushed"
    return Kernel(p, {"a": 28, "b": 26, "r": 30},
                  [f"2 levels of Karatsuba, base {k} bytes, small frame ({frame})"])


def _build_framed(n: int, levels: int, variant: str) -> Kernel:
    p = Program()
    frame = Frame()
    body = Program()
    emit_mul_node(body, n, levels, Loc("a"), Loc("b"), Loc("r"), frame, variant, entry=True)
    size = frame.size
    p.phase(f"stack frame: entry pointers and {size - 6} bytes of temporaries")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    _add_const(p, 28, (-size) & 0xFFFF)
    _set_sp_atomic(p)
    for name, lo in (("r", 24), ("a", 22), ("b", 20)):
        p.std(Mem("Y", disp=1 + ARG_SLOT[name]), lo, comment=f"save pointer {name}")
        p.std(Mem("Y", disp=2 + ARG_SLOT[name]), lo + 1)
    p.extend(body)
    p.phase("release the stack frame")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    _add_const(p, 28, size)
    _set_sp_atomic(p)
    bases = n >> (levels - 1)
    return Kernel(p, {}, [f"{levels} levels of Karatsuba, base {bases} bytes, frame {size} bytes"])


def _set_sp_atomic(p: Program, lo: int = 28) -> None:
    """SP = the register pair at lo (default Y), safe against interrupts: the I flag is restored
    by the OUT to SREG, and the AVR runs one more instruction (the OUT to SPL) before it takes an
    interrupt."""
    p.in_(0, 0x3F, comment="SREG")
    p.cli()
    p.out(0x3E, lo + 1, comment="SPH")
    p.out(0x3F, 0, comment="SREG (I flag back)")
    p.out(0x3D, lo, comment="SPL")
