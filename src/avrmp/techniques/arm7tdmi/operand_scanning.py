"""Operand scanning (row-wise schoolbook) on the ARM7TDMI: for each word a_i, the row
R[i..i+n] += a_i * B, the partial result R kept in the result buffer (loaded and stored back in
LDM/STM groups of four words, as are the words of b).

A step costs 9 cycles: t = R[i+j] + c + a_i*b_j needs no 3-word accumulator, because R + c
< 2^33 leaves room for one product in 64 bits: ADDS folds c into R, ADC takes the carry into
c's register (from a register kept at zero), and UMLAL adds the product to the pair."""

from __future__ import annotations

from ...program.arm import ArmProgram
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Pointer, chunks, row_step

GROUP = 4
A_REG, CARRY, ZERO = 3, 4, 5  # ZERO holds the high product words in row 0, zero after it
B_REGS, R_REGS = (6, 7, 8, 9), (10, 11, 12, 14)


def operand_scanning_mul(n: int) -> ArmKernel:
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    for i in range(n):
        prog.phase(f"row {i}: R[{i}..{i + n}] += a[{i}] * b")
        if i == 1:
            prog.mov_imm(ZERO, 0, "the carry's source from now on")
        a.load(i, [A_REG], comment=f"a[{i}]")
        for group in chunks(range(n), GROUP):
            _group(prog, i, group, b, r, n)
        r.store(i + n, [CARRY], then=i + 1, comment=f"R[{i + n}]: the row's top word")
    return ArmKernel(prog, (f"{n * n} products; the partial result lives in the result buffer",))


def _group(prog: ArmProgram, i: int, js: list[int], b: Pointer, r: Pointer, n: int) -> None:
    """The steps j in js of row i: b words and partial words loaded together, stored back."""
    g, words = len(js), R_REGS[:len(js)]
    b.load(js[0], B_REGS[:g], then=js[-1] + 1 if js[-1] + 1 < n else 0)
    if i:
        r.load(i + js[0], words)
    for w, bj, j in zip(words, B_REGS, js):  # row 0: R is empty, ZERO is cleared after it
        row_step(prog, w, CARRY, A_REG, bj, ZERO, fresh=i == 0, first=j == 0, keep_zero=False)
    r.store(i + js[0], words, then=i + js[-1] + 1)
