"""Product scanning (Comba) on the ARM7TDMI: column by column, both operand words of every
product loaded (2n^2 loads, as seed 001 counts the method), three registers of accumulator.

Loads come in groups of up to three words per operand (LDM: n+2 cycles for n words, against 3
per LDR), the columns alternate direction so that write-back leaves each pointer where the next
group starts, and result words are stored as their columns finish (STR post-indexed)."""

from __future__ import annotations

from ...program.arm import ArmProgram
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Accumulator, Pointer, chunks

GROUP = 3  # operand words per load: 3 + 3 registers, beside 3 pointers, 3 accumulator, 2 product
ACC, LO, HI = (3, 4, 5), 6, 7
A_REGS, B_REGS = (8, 9, 10), (11, 12, 14)


def column_groups(n: int, k: int) -> list[list[int]]:
    """The i of column k's products a_i * b_(k-i), grouped for loading; odd columns run
    downwards."""
    first, last = max(0, k - n + 1), min(k, n - 1)
    rows = list(range(first, last + 1))
    return [g if k % 2 == 0 else g[::-1] for g in chunks(rows if k % 2 == 0 else rows[::-1],
                                                          GROUP)]


def product_scanning_mul(n: int) -> ArmKernel:
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    acc = Accumulator(prog, ACC, LO, HI)
    plan = [(k, g) for k in range(2 * n - 1) for g in column_groups(n, k)]
    for step, (k, rows) in enumerate(plan):
        if step == 0 or plan[step - 1][0] != k:
            prog.phase(f"column {k}")
        nxt = plan[step + 1][1] if step + 1 < len(plan) else None
        nk = plan[step + 1][0] if nxt else 0
        lo_i = min(rows)
        a.load(lo_i, A_REGS[:len(rows)], then=min(nxt) if nxt else None)
        b.load(k - max(rows), B_REGS[:len(rows)], then=nk - max(nxt) if nxt else None)
        for i in rows:
            acc.mac(A_REGS[i - lo_i], B_REGS[len(rows) - 1 - (i - lo_i)],
                    last=k == 2 * n - 2)
        if nxt is None or nk != k:
            r.store(k, [acc.shift()], then=k + 1)
    r.store(2 * n - 1, [acc.low])
    return ArmKernel(prog, (f"{n * n} products, {2 * n * n} operand words loaded",))
