"""Operand scanning (row-wise schoolbook) multiplication, fully unrolled: row i adds a[i]*b to the
partial result in memory while b's bytes stay cached in registers."""

from __future__ import annotations

from ..blocks.operand_cache import OperandCache
from ..blocks.pointers import PointerWindow
from ..program.program import Program
from ..regalloc.pool import RegPool
from ..target.avr.abi import ALLOCATION_ORDER
from ..target.avr.isa import Mem
from .kernel import Kernel


def operand_scanning_mul(n: int) -> Kernel:
    """Row i adds a[i]*b to the partial result in memory; b bytes stay cached in registers."""
    p = Program()
    pool = RegPool(ALLOCATION_ORDER)
    ai, carry, t, zero = pool.take(4)
    plan = [("b", j) for _ in range(n) for j in range(n)]
    cache = OperandCache(p, pool.free, {"b": PointerWindow(p, "Y")}, plan, free_pointers=False)
    rw = PointerWindow(p, "Z")
    p.phase(f"operand scanning {n}x{n} bytes: row i adds a[i]*b at r[i..]")
    p.clr(zero)
    for i in range(n):
        p.ld(ai, Mem("X", "+"), comment=f"a[{i}]")
        for j in range(n):
            rb = cache.get(("b", j))
            p.mul(ai, rb, comment=f"a[{i}]*b[{j}]")
            if i:
                rw.load(t, i + j, comment=f"r[{i + j}]")
                p.add(0, t)
                p.adc(1, zero)
            if j:
                p.add(0, carry)
                p.adc(1, zero)
            rw.store(i + j, 0)
            p.mov(carry, 1)
        rw.store(i + n, carry)
    return Kernel(p, {"a": 26, "b": 28, "r": 30}, [f"{cache.loads} operand loads"])


def operand_scanning_mul_runtime() -> Kernel:
    """The smallest multiplication: row-wise schoolbook in two nested loops, one routine for every
    operand length from 1 to 255 bytes, given at run time in r18 (len's high byte, r19, is
    ignored; len 0 returns at once).  r is cleared first; row i then adds a[i]*b at r[i..i+n]
    and stores its carry at r[i+n], which no earlier row has reached.  The loops count the length
    only: for one length, every input takes the same cycles and traces."""
    p = Program()
    n, zero, rows, cols, ai, carry, t, bj = 18, 19, 22, 23, 24, 25, 16, 17
    x, b_base = 26, 20  # X walks r; b's base stays in r20:r21 (where avr-gcc passes it)
    done, clear, row, col = (p.new_label(h) for h in ("done", "clear", "row", "col"))
    p.clr(zero, comment="len's high byte is ignored: r19 becomes the zero register")
    p.tst(n)
    p.breq(done)
    p.phase("clear r[0..2n)")
    p.mov(cols, n)
    p.label(clear)
    p.st(Mem("X", "+"), zero)
    p.st(Mem("X", "+"), zero)
    p.dec(cols)
    p.brne(clear)
    _rewind_x(p, n, zero, times=2)
    p.phase("row i: r[i..i+n] += a[i] * b")
    p.mov(rows, n)
    p.label(row)
    p.ld(ai, Mem("Z", "+"), comment="a[i]")
    p.movw(28, b_base, comment="Y = b")
    p.clr(carry)
    p.mov(cols, n)
    p.label(col)
    p.ld(bj, Mem("Y", "+"), comment="b[j]")
    p.ld(t, Mem("X"), comment="r[i+j]")
    p.mul(ai, bj)
    p.add(0, t)
    p.adc(1, zero)
    p.add(0, carry)
    p.adc(1, zero)
    p.st(Mem("X", "+"), 0)
    p.mov(carry, 1)
    p.dec(cols)
    p.brne(col)
    p.st(Mem("X"), carry, comment="r[i+n] = the row's carry")
    _rewind_x(p, n, zero)
    p.adiw(x, 1, comment="X = r + i + 1")
    p.dec(rows)
    p.brne(row)
    p.label(done)
    return Kernel(p, {"r": x, "a": 30}, ["operand length at run time: 1 to 255 bytes"])


def _rewind_x(p: Program, n: int, zero: int, times: int = 1) -> None:
    """X -= times * n, n a register."""
    for _ in range(times):
        p.sub(26, n, comment="X -= len")
        p.sbc(27, zero)
