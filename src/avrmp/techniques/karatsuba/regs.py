"""Products in registers by Karatsuba: a * b (+ an addend) over byte strings already in
(virtual) registers, short ones by the row-wise block or product scanning, longer ones by one more
Karatsuba level in registers."""

from __future__ import annotations

from ...blocks.arith import emit_abs_diff, emit_copy
from ...blocks.products import emit_product, emit_product_rows
from ...regalloc.vprogram import V, VProgram
from .middle import emit_low_half, emit_u_and_top

# Products up to this many bytes use the row-wise block by default; longer ones are tried both ways
# (its MOVW temporaries need free register pairs, which long products may not leave).
ROWS_UPTO = 5


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
    if not nested(m, karatsuba_from) or len(b) != m:
        block = emit_product_rows if min(m, len(b)) <= rows_upto else emit_product
        return block(p, a, b, zero, addend, zero_hi)
    k = (m + 1) // 2
    h = m - k
    opts = {"karatsuba_from": karatsuba_from, "zero_hi": zero_hi, "rows_upto": rows_upto,
            "fold_e1": fold_e1, "t_flag": t_flag}
    p.phase(f"in registers: {m}x{m} bytes by Karatsuba")
    L = emit_mul_regs(p, a[:k], b[:k], zero, variant, (), **opts)
    a, b = [emit_copy(p, a[:k]) + a[k:], emit_copy(p, b[:k]) + b[k:]]  # the differences go in place
    assert len(L) == 2 * k
    addend = list(addend) or None
    fold = fold_e1 and addend is not None and len(addend) > k
    carry_e = emit_low_half(p, L[:k], addend, 0, False, zero, fold_e1=fold)
    low = addend[:k] if addend else L[:k]  # without an addend U is built over a copy of L_0
    mask_a = emit_abs_diff(p, a[:k], a[k:], zero)
    mask_b = emit_abs_diff(p, b[:k], b[k:], zero)
    p.eor(mask_a, mask_b)
    t = mask_a
    t_in_flag = (variant == "branched" or t_flag) and not nested(k, karatsuba_from)
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


def nested(m: int, karatsuba_from: int) -> bool:
    """Whether emit_mul_regs takes another Karatsuba level for an m-byte product."""
    return bool(karatsuba_from) and m >= karatsuba_from
