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
