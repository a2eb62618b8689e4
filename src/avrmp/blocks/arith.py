"""Carry chains, differences (plain, absolute and multiplied as signed) and conditional negation over
byte strings in registers."""

from __future__ import annotations

from collections.abc import Sequence

from ..target.avr.isa import Mem


def emit_abs_diff(p, x: Sequence, y, zero) -> object:
    """x := |x - y| in place (emit_diff's arguments); returns a register holding the sign mask,
    0xFF when x < y and 0x00 otherwise.

    Constant time: the subtraction's borrow becomes the mask (SBC m, m), and (d XOR m) - m negates
    d exactly when m = 0xFF, without NEG and without a branch.
    """
    mask = emit_diff(p, x, y, zero)
    emit_cond_negate(p, x, mask)
    return mask


def emit_diff(p, x: Sequence, y, zero) -> object:
    """x := x - y in place, modulo 2^(8 len(x)) (y may be shorter: missing bytes count as zero; or
    a function giving y's byte i, called just before it is needed, so loads interleave with the
    subtraction); returns a register holding the borrow as a mask, 0xFF when x < y: the signed
    difference is x - 2^(8 len(x)) then."""
    emit_sub_chain(p, x, y, zero)
    mask = p.v("sign")
    p.sbc(mask, mask)
    return mask


def emit_signed_fix(p, hi: Sequence, x: Sequence, y: Sequence, sx, sy, zero) -> object:
    """The product x * y of two k-byte differences taken modulo 2^(8k) (emit_diff) made the
    product of the signed differences (x - [sx] 2^(8k)) (y - [sy] 2^(8k)), sx and sy their borrow
    masks: hi, the product's high k bytes, -= (sx & y) + (sy & x), and 2^(16k) is added when
    both borrowed.  Returns the product's sign extension, 0x00 or 0xFF (it fits in 2k bytes and
    a sign), in sx's register; x, y and sy are consumed.  4k + 4 cycles and no branch, against
    the 6k + 5 of two absolute differences, their sign and a conditional negation of the
    product."""
    for yi in y:
        p.and_(yi, sx)
    for xi in x:
        p.and_(xi, sy)
    p.and_(sx, sy)
    p.neg(sx, comment="1 when both differences borrowed")
    emit_add_chain(p, y, x, zero)
    p.sbc(sx, zero)
    emit_sub_chain(p, hi, y, zero)
    p.sbc(sx, zero, comment="the signed product's sign extension")
    return sx


def emit_cond_negate(p, x: Sequence, mask) -> None:
    """x := -x if mask = 0xFF, x if mask = 0x00 (two's complement over len(x) bytes)."""
    for xi in x:
        p.eor(xi, mask)
    for i, xi in enumerate(x):
        p.emit("sub" if i == 0 else "sbc", xi, mask)


def emit_sub_chain(p, dst: Sequence, src, zero) -> None:
    """dst -= src over len(dst) bytes, the borrow left in C (src may be shorter: the borrow
    ripples on through zero; or a function giving src's byte i, called just before it is
    needed)."""
    get = src if callable(src) else (lambda i: src[i] if i < len(src) else None)
    for i, d in enumerate(dst):
        si = get(i)
        p.emit("sub" if i == 0 else "sbc", d, zero if si is None else si)


def emit_add_chain(p, dst: Sequence, src: Sequence, zero, carry_in: bool = False) -> None:
    """dst += src over len(dst) bytes (src may be shorter; the carry ripples on through zero)."""
    for i, d in enumerate(dst):
        first = i == 0 and not carry_in
        p.emit("add" if first else "adc", d, src[i] if i < len(src) else zero)


def emit_ripple_mem(p, ptr: str, n: int, src, first_src=None, carry_in: bool = False,
                    name: str = "R", first: int = 0, held: Sequence = ()) -> None:
    """The n bytes at ptr += src (one register for every byte, first_src for byte 0) in one
    carry chain, byte by byte: LD, ADC, ST with post-increment, which leave the carry alone, so
    nothing is parked and no pointer is adjusted (ptr ends n bytes further on).  first: the
    index of the first byte, for the comments; held: registers that hold the last len(held)
    bytes already (no LD)."""
    for q in range(n):
        if q >= n - len(held):
            v = held[q - n + len(held)]
        else:
            v = p.v("h")
            p.ld(v, Mem(ptr), comment=f"{name}[{first + q}]")
        op = "adc" if q or carry_in else "add"
        p.emit(op, v, first_src if q == 0 and first_src is not None else src)
        p.st(Mem(ptr, "+"), v)



def emit_ripple(p, h: Sequence, d, f) -> None:
    """h += d sign-extended by f (a small signed value in (d, f): a merged carry and borrow)."""
    for i, hi in enumerate(h):
        p.emit("add" if i == 0 else "adc", hi, d if i == 0 else f)


def emit_copy(p, vs: Sequence) -> list:
    """Fresh virtual registers holding the same bytes (MOVW for pairs where the allocator can)."""
    out = [p.v("cp") for _ in vs]
    for i in range(0, len(vs) - 1, 2):
        p.copy_pair(out[i], out[i + 1], vs[i], vs[i + 1])
    if len(vs) % 2:
        p.mov(out[-1], vs[-1])
    return out
