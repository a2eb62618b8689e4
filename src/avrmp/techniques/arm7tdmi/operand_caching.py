"""Operand caching on the ARM7TDMI (seed 001, section 3, with e = 3): the rows of a come in
blocks of e words held in registers while b streams past once per block, so b is loaded
n^2/e times instead of n^2.  Within a block each of the e rows keeps its own carry, and every
step is the 9-cycle row step of operand scanning (R + c + a*b fits 64 bits: UMLAL); the
partial result of the blocks before enters the window one word a step and leaves it final.

Registers: 3 pointers, e words of a, e carries, e window words, b_j and a zero: 3e + 5 = 14."""

from __future__ import annotations

from ...program.arm import ArmProgram
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Pointer, row_step

E = 3
A_REGS, CARRIES, WINDOW = (3, 4, 5), (6, 7, 8), [9, 10, 11]
B_REG, ZERO = 12, 14


def operand_caching_mul(n: int) -> ArmKernel:
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    prog.mov_imm(ZERO, 0, "the carries' source")
    for i0 in range(0, n, E):
        rows = min(E, n - i0)
        prog.phase(f"rows {i0}..{i0 + rows - 1}: a[{i0}..] cached, b streams past")
        a.load(i0, list(A_REGS[:rows]), then=i0 + rows)
        _block(prog, i0, rows, b, r, n)
    return ArmKernel(prog, (f"{n * n} products, b loaded once per block of {E} rows",))


def _block(prog: ArmProgram, i0: int, rows: int, b: Pointer, r: Pointer, n: int) -> None:
    """R[i0..i0+n+rows-1] += a[i0..i0+rows-1] * b: step j multiplies b_j by every cached word;
    row t's step j works on R[i0+j+t], window[t]."""
    window = WINDOW[:rows]
    for j in range(n):
        b.load(j, [B_REG], then=j + 1 if j + 1 < n else 0, comment=f"b[{j}]")
        # Words entering the window: those below R[i0+n] hold the blocks' before partial result
        entering = range(rows) if j == 0 else [rows - 1]
        fresh = [t for t in entering if i0 == 0 or i0 + j + t >= i0 + n]
        partial = [t for t in entering if t not in fresh]
        if partial:
            r.load(i0 + j + partial[0], sorted(window[t] for t in partial),
                   comment="partial result")
        for t in range(rows):
            row_step(prog, window[t], CARRIES[t], A_REGS[t], B_REG, ZERO, fresh=t in fresh,
                     first=j == 0)
        r.store(i0 + j, [window[0]], then=i0 + j + 1, comment=f"R[{i0 + j}] done")
        window[:] = window[1:] + window[:1]
    _flush(prog, i0, rows, window, r, n)


def _flush(prog: ArmProgram, i0: int, rows: int, window: list[int], r: Pointer, n: int) -> None:
    """The rows' carries are their top words, R[i0+n+t]; the window still holds
    R[i0+n..i0+n+rows-2]: one carry chain adds them and the block's words are stored."""
    prog.phase(f"rows {i0}..: carries into R[{i0 + n}..{i0 + n + rows - 1}]")
    words = [window[t] for t in range(rows - 1)] + [CARRIES[rows - 1]]
    for t in range(rows - 1):
        prog.alu("adds" if t == 0 else "adcs", window[t], window[t], CARRIES[t])
    if rows > 1:
        prog.alu_imm("adc", CARRIES[rows - 1], CARRIES[rows - 1], 0, "no carry out: the "
                     "block's product fits")
    for t, w in enumerate(words):
        r.store(i0 + n + t, [w], then=i0 + n + t + 1 if t + 1 < rows else i0 + E)
