"""Multiprecision addition and subtraction: n-byte operands, (n+1)-byte result.

The top result byte is the carry (0 or 1) for addition and the borrow as a sign byte (0x00 or 0xFF)
for subtraction, so r is the two's-complement value a - b in n+1 bytes.
"""

from __future__ import annotations

from ..program.program import Program
from ..target.avr.isa import Mem
from .kernel import Kernel


def add_sub(n: int, op: str) -> Kernel:
    """r = a + b (op "add") or a - b (op "sub")."""
    first, rest = ("add", "adc") if op == "add" else ("sub", "sbc")
    p = Program()
    ta, tb = 18, 19
    p.phase(f"r = a {'+' if op == 'add' else '-'} b, {n} bytes, carry rippled byte by byte")
    for j in range(n):
        p.ld(ta, Mem("Y", "+"), comment=f"a[{j}]")
        p.ld(tb, Mem("Z", "+"), comment=f"b[{j}]")
        p.emit(first if j == 0 else rest, ta, tb)
        p.st(Mem("X", "+"), ta, comment=f"r[{j}]")
    p.phase("top byte: carry (add) or borrow as 0x00/0xFF (sub)")
    if op == "add":
        p.clr(ta)
        p.adc(ta, ta)
    else:
        p.sbc(ta, ta)
    p.st(Mem("X"), ta, comment=f"r[{n}]")
    return Kernel(p, {"r": 26, "a": 28, "b": 30})
