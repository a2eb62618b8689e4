"""The middle of one Karatsuba level in registers: with k = ceil(m/2),

    U = (L_0 | Hbar_lo) + Hbar -/+ M,  then the top bytes Hbar_hi + the carries and borrow,

M added or subtracted by its sign t: branch-free by masking ((M xor t) + (t & 1)), branched in a
signed arm (an adding and a subtracting copy, NOP-balanced).  Where M is already signed (the
product of the signed differences, blocks.arith.emit_signed_fix) it is added, and t is its sign
extension.  Also the low half L_0 (+ the parent's addend, refined Karatsuba) that precedes it.
"""

from __future__ import annotations

from ...blocks.arith import emit_add_chain, emit_copy, emit_ripple
from ...blocks.pointers import load_disp, store_disp
from ...regalloc.vprogram import V, VProgram


def emit_mask(p: VProgram, t: V, zero: V, t_in_flag: bool, now: list[V] = ()) -> V:
    """Branch-free: the mask 0xFF when M is to be subtracted (t = 0x00), 0x00 when added, with
    C = 1 in the first case, the carry-in of (M xor mask) + 1 = -M.  It comes from the T flag
    (t_in_flag: CLR, BLD, SUBI; a register in r16..r31) or from t's register (COM, CP);
    returns it.  The bytes `now` are masked at once (EOR leaves C alone)."""
    if t_in_flag:
        t = p.v("t")
        p.clr(t)
        p.bld(t, 0)
        p.subi(t, 1, comment="t = 0xFF now means: subtract M; C = 1 then")
    else:
        p.com(t, comment="t = 0xFF now means: subtract M")
        p.cp(zero, t, comment="C = 1 when t = 0xFF")
    for x in now:
        p.eor(x, t)
    return t


def emit_signed_add(p: VProgram, u: list[V], m: list[V], t: V, zero: V, variant: str,
                    d: V, t_in_flag: bool = False, m_signed: bool = False) -> V:
    """u -= (-1)^t m, t the 0x00/0xFF mask of sign(A_l - A_h) xor sign(B_l - B_h); branched code
    tests the T flag (copied from t here unless t_in_flag: already there); m may be shorter than
    u.  Then merge the carry or borrow and the sign extension into the pair (d, f):
    d += carry - borrow, f = its sign byte.  Before the call d holds the carries already
    collected.  Returns f.  With t_in_flag, branch-free code rebuilds the mask from T (t's
    register was free meanwhile: three cycles instead of a spill and a reload).  m_signed
    (branch-free): m is signed already, t its sign extension: u += m, no mask."""
    if variant == "branchfree":
        if not m_signed:
            t = emit_mask(p, t, zero, t_in_flag)  # (m xor t) + C = -m when t = 0xFF
        for i, ui in enumerate(u):
            if i < len(m) and not m_signed:
                p.eor(m[i], t)  # just before its ADC: a reloaded byte needs a register briefly
            p.emit("add" if i == 0 and m_signed else "adc", ui, m[i] if i < len(m) else t)
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
                d: V, t_in_flag: bool, negated: bool, m_signed: bool = False) -> None:
    """u -= (-1)^t m (emit_signed_add), then top += the merged carry and borrow (emit_ripple).

    negated (branched, d = -carry from emit_u): the top bytes join the signed arm, where d is
    already the right operand: the subtracting copy takes top - d - borrow with d its own sign
    extension; the adding copy first negates d and takes top + d + carry.  Three cycles less
    than merging (d, f) before the ripple, and the NEG balances the RJMP."""
    if not negated:
        f = emit_signed_add(p, u, m, t, zero, variant, d, t_in_flag, m_signed)
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
                      t: V, zero: V, t_in_flag: bool, keep_low: bool,
                      m_signed: bool = False) -> list[V]:
    """Branch-free without an addend: U = (L_0 | Hbar_lo) + Hbar + (M xor mask) + 1 and the top
    bytes, with the mask made first.  Its carry-in (the +1) then enters U's first chain, whose
    carry goes straight into d = mask + carry (sign byte f = mask + that carry, in the mask's
    register, so M is masked before), and the second chain's carry enters the top bytes with d:
    one cycle less than emit_u + emit_signed_add (no separate capture of U's carry).  m_signed:
    M is signed already and t its sign extension (no mask, no carry-in).  Returns U."""
    if not m_signed:
        t = emit_mask(p, t, zero, t_in_flag, now=M)
    d = p.v("d")  # CLR and LDD leave C alone
    p.clr(d)
    u, _ = emit_u(p, L, Hb, m, None, None, keep_low, zero, c_in=not m_signed, c_out=True)
    p.adc(d, t, comment="d = mask + carry")
    p.adc(t, zero, comment="f = sign of d")
    p.phase(f"U += M{'' if m_signed else ' xor mask'}; top bytes += (d, f) + carry")
    emit_add_chain(p, u, M, zero)
    for j, x in enumerate(top):
        p.adc(x, d if j == 0 else t)
    return u


def emit_u_and_top(p: VProgram, L: list[V], Hb: list[V], M: list[V], m: int, carry_e: V | None,
                   addend, keep_low: bool, zero: V, variant: str, t: V, t_in_flag: bool,
                   folded: bool = False, m_signed: bool = False) -> list[V]:
    """U = (L_0 | Hbar_lo) + Hbar -/+ M (emit_u's arguments) and the top bytes Hbar_hi plus the
    carries and borrow, in place; returns U.  Without an addend, U's single carry allows the
    cheaper forms: emit_u_branchfree, or (branched) emit_middle's negated carry.  m_signed
    (branch-free): M is signed already, t its sign extension."""
    k = (m + 1) // 2
    top = Hb[k : 2 * (m - k)]
    assert len(top) == 2 * m - 3 * k
    plain = addend is None and bool(top)
    if variant == "branchfree" and plain:
        return emit_u_branchfree(p, L, Hb, M, top, m, t, zero, t_in_flag, keep_low, m_signed)
    u, d = emit_u(p, L, Hb, m, carry_e, addend, keep_low, zero, folded=folded, negated=plain)
    p.phase("U -/+= M, then the top bytes Hbar_hi + carry -/+ borrow")
    emit_middle(p, u, M, top, t, zero, variant, d, t_in_flag, negated=plain, m_signed=m_signed)
    return u




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
            store_disp(p, "Z", out_off, l0, "r")
        return None
    p.phase("R_0 = L_0 + E_0" + (", X_1 = L_0 + E_1" if fold_e1 else "") + " (the parent's addend)")
    e0 = addend[:k] if isinstance(addend, list) else load_disp(p, "Z", addend, k, "e")
    emit_add_chain(p, e0, l0, zero)
    if fold_e1:
        n_e1 = (len(addend) if isinstance(addend, list) else 2 * k) - k
        e1 = addend[k:] if isinstance(addend, list) else load_disp(p, "Z", addend + k, n_e1, "e")
        for i, x in enumerate(l0):
            p.adc(x, e1[i] if i < len(e1) else zero)
    carry_e = p.v("ce")
    p.clr(carry_e)
    p.rol(carry_e)
    if store:
        store_disp(p, "Z", out_off, e0, "r")
    return carry_e


def emit_u(p: VProgram, L: list[V], Hb: list[V], m: int, carry_e: V | None, addend,
           keep_low: bool, zero: V, folded: bool = False,
           negated: bool = False, c_in: bool = False,
           c_out: bool = False) -> tuple[list[V], V | None]:
    """U = (L_0 | Hbar_lo) + Hbar (+ E_1 and the carry of L_0 + E_0 with an addend), built in
    place over L_0 and Hbar_lo (over a copy of L_0 when keep_low: L_0 is still needed).
    folded: L_0's registers already hold L_0 + E_1 and carry_e belongs at U's byte k.
    Returns U and d, the register collecting U's carries; negated (no addend: one carry): d
    holds minus the carry, 0x00 or 0xFF, its own sign extension (see emit_middle).  c_in (no
    addend): C holds a carry-in for U's byte 0; c_out (no addend): U's carry is left in C (d is
    None)."""
    k = (m + 1) // 2
    p.phase("U = (L_0 | Hbar_lo) + Hbar")
    low = emit_copy(p, L[:k]) if keep_low else L[:k]
    u = low + Hb[:k]
    carry_in = carry_e is not None and not folded
    if carry_in:
        p.lsr(carry_e, comment="C = carry of L_0 + E_0")
    emit_add_chain(p, u, Hb[: 2 * k], zero, carry_in=carry_in or c_in)
    if c_out:
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
        e1 = addend[k:] if isinstance(addend, list) else load_disp(p, "Z", addend + k, m - k, "e")
        emit_add_chain(p, u, e1, zero)
        p.adc(d, zero)
    return u, d
