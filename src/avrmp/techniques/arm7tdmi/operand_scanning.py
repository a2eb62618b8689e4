"""Operand scanning (row-wise schoolbook) on the ARM7TDMI: for each word a_i, the row
R[i..i+n] += a_i * B, the partial result R kept in the result buffer (loaded and stored back in
LDM/STM groups of four words, as are the words of b).

A step costs 9 cycles: t = R[i+j] + c + a_i*b_j needs no 3-word accumulator, because R + c
< 2^33 leaves room for one product in 64 bits: ADDS folds c into R, ADC takes the carry into
c's register (from a register kept at zero), and UMLAL adds the product to the pair.

The constant-time variant forces each row's multiplier a_i (consttime.py) and corrects every
product: 12 cycles a step, two registers more (the mask and x), so groups of three."""

from __future__ import annotations

from ...program.arm import ArmProgram
from . import consttime as ct
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Pointer, chunks, row_step

A_REG, CARRY, ZERO = 3, 4, 5  # ZERO holds the high product words in row 0, zero after it
B_REGS, R_REGS = (6, 7, 8, 9), (10, 11, 12, 14)
# The constant-time variant: groups of three, beside the mask and x.
CT_B_REGS, CT_R_REGS, CT_MASK, CT_X = (6, 7, 8), (10, 11, 12), 9, 14


def operand_scanning_mul(n: int, consttime: bool = False) -> ArmKernel:
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    b_regs, r_regs = (CT_B_REGS, CT_R_REGS) if consttime else (B_REGS, R_REGS)
    for i in range(n):
        prog.phase(f"row {i}: R[{i}..{i + n}] += a[{i}] * b")
        if i == 1:
            prog.mov_imm(ZERO, 0, "the carry's source from now on")
        a.load(i, [A_REG], comment=f"a[{i}]")
        if consttime:
            ct.force_multiplier(prog, A_REG, CT_MASK)
        for js in chunks(range(n), len(b_regs)):
            b.load(js[0], b_regs[:len(js)], then=js[-1] + 1 if js[-1] + 1 < n else 0)
            words = r_regs[:len(js)]
            if i:
                r.load(i + js[0], words)
            for w, bj, j in zip(words, b_regs, js):
                _step(prog, w, bj, i == 0, j == 0, consttime)
            r.store(i + js[0], words, then=i + js[-1] + 1)
        r.store(i + n, [CARRY], then=i + 1, comment=f"R[{i + n}]: the row's top word")
    notes = [f"{n * n} products; the partial result lives in the result buffer"]
    if consttime:
        notes.append("constant time: every multiplier a_i | 2^31 (4 steps), each product "
                     "corrected by (b & mask) * 2^31")
    return ArmKernel(prog, tuple(notes))


def _step(prog: ArmProgram, word: int, bj: int, fresh: bool, first: bool,
          consttime: bool) -> None:
    """One step of a row; in row 0 (fresh) R is empty and ZERO is lent to the high words."""
    if consttime:
        ct.row_step(prog, word, CARRY, A_REG, bj, CT_MASK, CT_X, ZERO, fresh, first)
    else:
        row_step(prog, word, CARRY, A_REG, bj, ZERO, fresh, first)
