"""Operand caching (Hutter and Wenger, seed 001 section 3.4 and Appendix A) and consecutive operand
caching (Seo and Kim), fully unrolled.

Geometry.  With r = floor(n/e), let S_p be the square of partial products a[pe..n) x b[0..n-pe).
The squares nest, S_r (the paper's initialisation block b_init, empty when e divides n) inside
S_{r-1} inside ... S_0 (the whole product).  Row p adds the L-shaped difference S_p \\ S_{p+1}:
the block a[pe..pe+e) against b[0..n-pe) (parts 1 and 2, the a block stays cached while b slides)
and a[(p+1)e..n) against the b block b[n-(p+1)e..n-pe) (parts 3 and 4, that b block stays cached
while a slides).  Each row is product scanning with a 3-byte accumulator over its columns
pe .. 2n-pe-1: the columns S_{p+1} already wrote (parts 2 and 3) are loaded and added, the others
(parts 1 and 4, and the row's top byte) are stored fresh.  The value of S_p fits its 2(n-pe) result
bytes, so no carry ever leaves a row.

The operand cache (Belady eviction over the known access order) plays the role of the paper's
register sets R_A and R_B: with 2e registers it reloads exactly what Appendix A reloads, or less.
Consecutive operand caching gives the cache every free register and lets it span rows, so bytes
loaded at the end of one row (and the b[0..e) every row's part 1 needs) are not loaded again.
"""

from __future__ import annotations

from .blocks import Accumulator, OperandCache, move_pointer
from .errors import AvrmpError
from .kernel import ALLOCATION_ORDER, Kernel, RegPool
from .program import Mem, PointerWindow, Program
from .spec import Spec

# Registers left for operand bytes once the zero register and the 3-byte accumulator are taken
# (r0:r1 hold products; X, Y, Z point at r, a, b).
CACHE_BUDGET = len(ALLOCATION_ORDER) - 4
ST_X_INC = Mem("X", "+")


def max_e() -> int:
    """The largest e whose 2e operand bytes all fit in registers (10 on AVR, as in the paper)."""
    return CACHE_BUDGET // 2


def rows(n: int, e: int) -> list[tuple[int, tuple[int, int] | None]]:
    """The rows in processing order: (offset pe of S_p, offset of S_{p+1} or None for b_init)."""
    r = n // e
    out: list[tuple[int, tuple[int, int] | None]] = []
    prev: int | None = None
    for p in range(r, -1, -1):
        off = p * e
        if off >= n:  # S_r is empty when e divides n: no initialisation block
            continue
        out.append((off, None if prev is None else (prev, n - prev)))
        prev = off
    return out


def row_columns(n: int, off: int, prev: tuple[int, int] | None) -> list[list[tuple[int, int]]]:
    """Partial products (i, j) of S_off \\ S_prev, by column k = off .. 2n-off-2.  Alternate columns
    run in opposite directions so that the operand pair ending one column starts the next."""
    m = n - off
    cols: list[list[tuple[int, int]]] = []
    for k in range(off, 2 * n - off - 1):
        pairs = [
            (i, k - i)
            for i in range(max(off, k - m + 1), min(k, n - 1) + 1)
            if prev is None or not (i >= prev[0] and k - i < prev[1])
        ]
        cols.append(pairs if k % 2 == 0 else pairs[::-1])
    return cols


def _build(spec: Spec, e: int, consecutive: bool) -> Kernel:
    n = spec.operand_bytes
    e = min(e, n)
    p = Program()
    pool = RegPool(ALLOCATION_ORDER)
    c0 = pool.take_pair()
    acc_regs = [c0, c0 + 1, pool.take_one()]
    zero = pool.take_one()
    schedule = [(off, prev, row_columns(n, off, prev)) for off, prev in rows(n, e)]
    plan = [
        key for _, _, cols in schedule for col in cols for i, j in col for key in (("a", i), ("b", j))
    ]
    windows = {"a": PointerWindow(p, "Y"), "b": PointerWindow(p, "Z")}
    # Operand caching proper: the paper's 2e registers (R_A, R_B).  Consecutive: all of them.
    regs = pool.free if consecutive else pool.free[: 2 * e]
    cache = OperandCache(p, regs, windows, plan)

    name = "consecutive operand caching" if consecutive else "operand caching"
    p.phase(f"{name} {n}x{n} bytes, e={e}: {len(schedule)} rows, S_p = a[pe..n) x b[0..n-pe)")
    p.clr(zero)
    x_at = 0  # byte of r that X points at
    for off, prev, cols in schedule:
        if prev is None:
            what = f"initialisation block a[{off}..{n - 1}] x b[0..{n - off - 1}]"
        else:
            what = f"row p={off // e}: a[{off}..{off + e - 1}] x b, a[{prev[0]}..] x b block"
        p.phase(f"{what}, columns {off}..{2 * n - off - 1}")
        move_pointer(p, "X", off - x_at, comment=f"X -> r[{off}]")
        x_at = off
        # Columns S_prev wrote (prev[0] .. 2n-prev[0]-1) hold partial sums: load and add them.
        mem = range(prev[0], 2 * n - prev[0]) if prev else range(0)
        acc = Accumulator(p, acc_regs, zero)
        for k, col in enumerate(cols, start=off):
            if k in mem:
                p.ld(0, Mem("X"), comment=f"r[{k}] (partial)")
                acc.add(0, None, 0xFF, comment="acc += r[k]")
            for i, j in col:
                ra = cache.next(("a", i))
                rb = cache.next(("b", j))
                p.mul(ra, rb, comment=f"a[{i}]*b[{j}]")
                acc.add_product()
            acc.ensure(0)
            p.st(ST_X_INC, acc.regs[0], comment=f"r[{k}]")
            acc.shift_out()
        # The row's top byte: S_p fits in 2(n-pe) bytes, so the accumulator holds one byte here.
        acc.ensure(0)
        p.st(ST_X_INC, acc.regs[0], comment=f"r[{2 * n - off - 1}]")
        acc_regs = acc.regs
        x_at = 2 * n - off
    notes = [f"e={e}", f"{len(schedule)} rows", f"{cache.loads} operand loads"]
    if not consecutive and 2 * e > len(regs):
        notes.append(f"e={e} exceeds the {len(regs)} cache registers: operands are reloaded")
    return Kernel(p, {"r": 26, "a": 28, "b": 30}, notes)


def _check_e(spec: Spec) -> None:
    if spec.e is not None and not 1 <= spec.e <= 256:
        raise AvrmpError(f"--e {spec.e}: operand caching needs e between 1 and 256")


def operand_caching_mul(spec: Spec) -> Kernel:
    _check_e(spec)
    return _build(spec, spec.e if spec.e is not None else max_e(), consecutive=False)


def consecutive_operand_caching_mul(spec: Spec) -> Kernel:
    _check_e(spec)
    if spec.e is not None:
        return _build(spec, spec.e, consecutive=True)
    # The best row height depends on n (how the rows tile it): try the ones near the register
    # budget and keep the fastest by the cost model (straight-line code: the model is exact).
    best: Kernel | None = None
    best_cycles = 0
    for e in range(max(1, max_e() - 3), max_e() + 4):
        k = _build(spec, e, consecutive=True)
        cycles = k.body.static_cycles() or 0
        if best is None or cycles < best_cycles:
            best, best_cycles = k, cycles
    assert best is not None
    return best
