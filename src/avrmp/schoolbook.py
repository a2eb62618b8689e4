"""Quadratic multiplication and squaring: operand scanning and product scanning, fully unrolled.

Operand bytes live in an `OperandCache` (Belady eviction over the known access order), so small
operands are loaded exactly once and large ones reload as little as the register budget allows.
"""

from __future__ import annotations

from .blocks import PRODUCT_MAX, Accumulator, OperandCache
from .kernel import ALLOCATION_ORDER, Kernel, RegPool
from .program import Mem, PointerWindow, Program
from .spec import Spec

ST_X_INC = Mem("X", "+")


def _columns(n: int) -> list[list[tuple[int, int]]]:
    """Product-scanning order: column k holds the pairs (i, k - i); alternate columns run backwards
    so that the operand bytes at the end of one column start the next (they are still cached)."""
    cols = []
    for k in range(2 * n - 1):
        pairs = [(i, k - i) for i in range(max(0, k - n + 1), min(k, n - 1) + 1)]
        cols.append(pairs[::-1] if k % 2 else pairs)
    return cols


def _store_column(p: Program, acc: Accumulator, k: int) -> None:
    acc.ensure(0)
    p.st(ST_X_INC, acc.regs[0], comment=f"r[{k}]")
    acc.shift_out()


def product_scanning_mul(spec: Spec) -> Kernel:
    n = spec.operand_bytes
    p = Program()
    pool = RegPool(ALLOCATION_ORDER)
    c0 = pool.take_pair()
    acc_regs = [c0, c0 + 1, pool.take_one()]
    zero = pool.take_one()
    cols = _columns(n)
    plan = [key for col in cols for i, j in col for key in (("a", i), ("b", j))]
    windows = {"a": PointerWindow(p, "Y"), "b": PointerWindow(p, "Z")}
    cache = OperandCache(p, pool.free, windows, plan)
    p.phase(f"product scanning {n}x{n} bytes: column k sums a[i]*b[k-i]")
    p.clr(zero)
    acc = Accumulator(p, acc_regs, zero)
    for k, col in enumerate(cols):
        for i, j in col:
            ra, rb = cache.pair(("a", i), ("b", j))
            p.mul(ra, rb, comment=f"a[{i}]*b[{j}]")
            acc.add_product()
        _store_column(p, acc, k)
    _store_column(p, acc, 2 * n - 1)
    return Kernel(p, {"r": 26, "a": 28, "b": 30}, [f"{cache.loads} operand loads"])


def product_scanning_sqr(spec: Spec) -> Kernel:
    """Each cross product a[i]*a[j], i < j, once; the column's cross sum is doubled, then the
    carry from the previous column and the square a[k/2]^2 are added."""
    n = spec.operand_bytes
    p = Program()
    pool = RegPool(ALLOCATION_ORDER + [28, 29])
    regs6 = pool.take(6)
    zero = pool.take_one()
    schedule = []
    for k, col in enumerate(_columns(n)):
        cross = [(i, j) for i, j in col if i < j]
        schedule.append((k, cross, k // 2 if k % 2 == 0 else None))
    plan = []
    for _, cross, sq in schedule:
        for i, j in cross:
            plan += [("a", i), ("a", j)]
        if sq is not None:
            plan.append(("a", sq))
    cache = OperandCache(p, pool.free, {"a": PointerWindow(p, "Z")}, plan)
    p.phase(f"product-scanning squaring {n} bytes: column k = carry + 2*sum a[i]*a[j] + a[k/2]^2")
    p.clr(zero)
    acc = Accumulator(p, regs6[0:3], zero)
    spare = regs6[3:6]
    for k, cross, sq in schedule:
        col = Accumulator(p, spare, zero)
        for i, j in cross:
            ri, rj = cache.pair(("a", i), ("a", j))
            p.mul(ri, rj, comment=f"a[{i}]*a[{j}]")
            col.add_product()
        if cross:
            col.double()
        if sq is not None:
            r = cache.get(("a", sq))
            p.mul(r, r, comment=f"a[{sq}]^2")
            col.add_product()
        carry = [reg for i, reg in enumerate(acc.regs) if acc.bound >> (8 * i) and acc.valid[i]]
        if carry:
            col.add(carry[0], carry[1] if len(carry) > 1 else None, acc.bound, comment="carry in")
        spare = acc.regs
        acc = col
        _store_column(p, acc, k)
    _store_column(p, acc, 2 * n - 1)
    return Kernel(p, {"r": 26, "a": 30}, [f"{cache.loads} operand loads"])


def operand_scanning_mul(spec: Spec) -> Kernel:
    """Row i adds a[i]*b to the partial result in memory; b bytes stay cached in registers."""
    n = spec.operand_bytes
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


# Products are bounded by PRODUCT_MAX; re-exported for kernels that reason about bounds.
__all__ = ["PRODUCT_MAX", "operand_scanning_mul", "product_scanning_mul", "product_scanning_sqr"]
