"""The hybrid method on the ARM7TDMI (Gura et al., seed 001 section 3, with d = 2): product
scanning over 2x2 blocks of words.  A block loads two words of each operand (LDM) and makes
four products; the accumulator spans the block's four columns, and carries out of its second
and third... words are not rippled but caught, as seed 001 describes after Scott et al.: one
carry-catcher register counts, with ADDCS (one cycle, no branch), carries into the next three
columns in three of its bytes, which the super-column's end adds back: the counts for columns
+2 and +3 into the words there, while the count for column +4 (with the carry out of the
word below it) is shifted down to be the next super-column's count for its column +2, so that
word starts empty.  A byte never overflows: per super-column of B <= 32 blocks it counts at most
2B carries (column +3), or B plus the B + 1 handed down (column +2).

Registers: 3 pointers, 2 + 2 operand words, 2 product, 4 accumulator and the catcher."""

from __future__ import annotations

from ...program.arm import ArmProgram
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import EMPTY, VALUE, Pointer

A_REGS, B_REGS, LO, HI, CATCHER = (3, 4), (5, 6), 7, 8, 14
ACC = (9, 10, 11, 12)


class Columns:
    """Four accumulator words (positions 2K..2K+3 of super-column K) and the catcher."""

    def __init__(self, prog: ArmProgram) -> None:
        self.prog, self.regs, self.state = prog, list(ACC), [EMPTY] * 4

    def add_product(self, a: int, b: int, o: int) -> None:
        """Words o, o+1 += a*b; a carry out of word o+1 is caught for column o+2."""
        prog, w = self.prog, self.regs
        if self.state[o] == EMPTY and self.state[o + 1] == EMPTY:
            prog.umull(w[o], w[o + 1], a, b, "a*b")
        elif self.state[o + 1] == EMPTY:
            prog.umull(LO, w[o + 1], a, b, "a*b")
            prog.alu("adds", w[o], w[o], LO)
            prog.alu_imm("adc", w[o + 1], w[o + 1], 0, "a high word takes a carry")
        elif self.state[o] == EMPTY:
            prog.umull(w[o], HI, a, b, "a*b")
            prog.alu("adds", w[o + 1], w[o + 1], HI)
            prog.add_if_carry(CATCHER, 1 << (8 * o), f"catch column +{o + 2}")
        else:
            prog.umull(LO, HI, a, b, "a*b")
            prog.alu("adds", w[o], w[o], LO)
            prog.alu("adcs", w[o + 1], w[o + 1], HI)
            prog.add_if_carry(CATCHER, 1 << (8 * o), f"catch column +{o + 2}")
        self.state[o] = self.state[o + 1] = VALUE

    def next_super_column(self, r: Pointer, k: int) -> None:
        """Store words 2K, 2K+1; add the caught carries to the words above; move up two."""
        w = self.regs
        _store(r, 2 * k, w[:2])
        self.fold_catches(last=False)
        self.regs = w[2:] + w[:2]
        self.state = [VALUE, VALUE, EMPTY, EMPTY]

    def fold_catches(self, last: bool) -> None:
        """Words 2 and 3 += the carries caught for them; unless last, the carry out of word 3
        is caught for column +4 too, and the catcher moves down two columns: its count for
        column +4 becomes the next super-column's count for its column +2, so the word there
        starts empty (a plain UMULL fills it)."""
        prog, w = self.prog, self.regs
        prog.alu_imm("and", LO, CATCHER, 0xFF, "carries caught for column +2")
        prog.alu("adds", w[2], w[2], LO)
        prog.alu_imm("and", HI, CATCHER, 0xFF00, "for column +3")
        prog.alu("adc" if last else "adcs", w[3], w[3], f"r{HI}, lsr #8")
        if not last:
            prog.add_if_carry(CATCHER, 1 << 16, "catch column +4")
            prog.mov(CATCHER, f"r{CATCHER}, lsr #16", "column +4 is the next one's +2")


def _store(r: Pointer, word: int, regs: list[int]) -> None:
    if regs == sorted(regs):
        r.store(word, regs, then=word + len(regs))
    else:
        for t, reg in enumerate(regs):
            r.store(word + t, [reg], then=word + t + 1)


def hybrid_mul(n: int) -> ArmKernel:
    prog, m = ArmProgram(), n // 2
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    cols = Columns(prog)
    prog.mov_imm(CATCHER, 0, "the carry catcher")
    columns = [_block_order(k, m) for k in range(2 * m - 1)]
    blocks = [(i, k - i) for k, order in enumerate(columns) for i in order]
    # A column's first block shares a or b with the last one: that operand stays in registers
    a_loads = _loads([i for i, _ in blocks])
    b_loads = _loads([j for _, j in blocks])
    at = 0
    for k, order in enumerate(columns):
        prog.phase(f"super-column {k}: words {2 * k}..{2 * k + 3}")
        for _ in order:
            for pointer, loads, regs in ((a, a_loads, A_REGS), (b, b_loads, B_REGS)):
                if at in loads:
                    pointer.load(2 * loads[at][0], list(regs), then=2 * loads[at][1])
            for x, y, o in ((1, 1, 2), (0, 0, 0), (0, 1, 1), (1, 0, 1)):
                cols.add_product(A_REGS[x], B_REGS[y], o)
            at += 1
        if k < 2 * m - 2:
            cols.next_super_column(r, k)
    cols.fold_catches(last=True)
    _store(r, 2 * n - 4, cols.regs)
    return ArmKernel(prog, (f"{n * n} products in {m * m} blocks of 2x2",))


def _block_order(k: int, m: int) -> list[int]:
    """Super-column k's blocks by the index of their a words; the directions alternate, so a
    column's first block shares a or b with the one before it."""
    blocks = list(range(max(0, k - m + 1), min(k, m - 1) + 1))
    return blocks if k % 2 == 0 else blocks[::-1]


def _loads(words: list[int]) -> dict[int, tuple[int, int]]:
    """Block index -> (the operand's word pair to load there, the pair loaded next) for the
    blocks whose pair differs from the block before's."""
    at = [t for t, w in enumerate(words) if t == 0 or w != words[t - 1]]
    return {t: (words[t], words[at[q + 1]] if q + 1 < len(at) else words[t])
            for q, t in enumerate(at)}
