"""Operand caching on the ARM7TDMI with each word of b taken across all the block's cached
words of a: step j adds b_j * a[i0..i0+e-1] to R[i0+j..i0+j+e-1] in one carry chain, so a
block needs one carry register instead of one per row, which makes room for e = 4 (3 pointers,
4 words of a, 4 window words, the carry, b_j and a zero: 14).

A step's chain starts with an empty carry (MOV and UMLAL: 8 cycles) and every further product
is the 9-cycle row step (ADDS, ADC from the zero, UMLAL); the chain's carry out is the word
R[i0+j+e], new in the window.  The blocks before left their partial result in R[i0..i0+n-1]:
each such word is added at the chain's start, where the carry register is still free, and the
word leaves the window final right after.  A block ends with no carries to add: its top words
are the window.  Registers a block leaves spare (a short block, the last one, which needs the
a pointer no more, and one that pushes the a pointer for its duration) bring b and the
partial words in LDM groups.

Constant time (consttime.py): each b_j is the forced multiplier (one mask a step) and every
product is corrected; the mask and x take two registers, so blocks hold three words of a
(E_CONSTTIME), and the partial words come through the carry register, where the corrected row
step adds them as it adds a carry."""

from __future__ import annotations

from ...program.arm import ArmProgram
from . import consttime as ct
from .kernel import A_PTR, B_PTR, FREE, RESULT
from .words import Pointer, row_step

E = 4
E_CONSTTIME = 3  # the forced multiplier's mask and the correction x take two registers
POOL, ZERO = FREE[:-1], FREE[-1]  # the zero is r14 (lr): the highest, never in an LDM list
MASK, X = POOL[-2:]  # constant time only


def build_chained(n: int, blocks: tuple[int, ...], consttime: bool = False,
                  spill_a: bool = False) -> ArmProgram:
    """The body for rows taken in blocks of these sizes (adding up to n, none above E, or
    E_CONSTTIME with consttime: every multiplier b_j forced to 4 steps, see consttime.py).
    spill_a: every block but the last pushes the a pointer once it has its words of a (and
    the next block pops it), lending its register to b's LDM groups as the last block does."""
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    prog.mov_imm(ZERO, 0, "the carries' source, in every block")
    i0 = 0
    for k, rows in enumerate(blocks):
        prog.phase(f"rows {i0}..{i0 + rows - 1}: a[{i0}..] cached, each b_j times all of "
                   "them in one carry chain")
        if k and spill_a:
            prog.pop([A_PTR])
        last = k + 1 == len(blocks)
        _Block(prog, b, r, n, i0, rows, last, consttime, spill_a and not last).run(a)
        i0 += rows
    return prog


def _group_sizes(n: int, extra: int, partial: bool) -> tuple[int, int]:
    """The LDM group sizes of b and of the partial words, given `extra` registers beyond b's
    own (partial words without a group of 2 or more come through the carry register): the
    split with the fewest loads."""
    def loads(split: tuple[int, int]) -> int:
        gb, gp = split
        return -(-n // gb) + (-(-n // gp) if partial else 0)
    splits = [(1 + sb, extra - sb if partial and extra - sb >= 2 else 1)
              for sb in range(extra + 1)]
    return min(splits, key=lambda s: (loads(s), -s[0]))


class _Block:
    """One block: its registers, its steps and its top words."""

    def __init__(self, prog: ArmProgram, b: Pointer, r: Pointer, n: int, i0: int, rows: int,
                 last: bool, consttime: bool, spill_a: bool) -> None:
        self.prog, self.b, self.r, self.n, self.i0, self.rows = prog, b, r, n, i0, rows
        self.partial, self.consttime, self.spill_a = i0 > 0, consttime, spill_a
        pool = POOL[:-2] if consttime else POOL
        self.a_regs = list(pool[:rows])
        regs = sorted(pool[rows:] + ((A_PTR,) if last or spill_a else ()))
        # partial words come through the carry register in constant time: its row step adds
        # them as it adds a carry (a word of its own would need a step of its own)
        gb, gp = _group_sizes(n, len(regs) - (rows + 1) - 1, self.partial and not consttime)
        self.b_regs, regs = regs[:gb], regs[gb:]
        self.p_regs, regs = (regs[:gp], regs[gp:]) if gp > 1 else ([], regs)
        self.free = regs  # the window and the chain's carry (rows + 1 of them at least)

    def run(self, a: Pointer) -> None:
        n, i0, rows = self.n, self.i0, self.rows
        a.load(i0, self.a_regs, then=i0 + rows, comment=f"a[{i0}..{i0 + rows - 1}]")
        if self.spill_a:
            self.prog.push([A_PTR])
        window: list[int] = []
        free = list(self.free)
        for j in range(n):
            bj = self._b_word(j)
            p = self._partial_word(j, free)
            window = self._step(j, bj, p, window, free)
        self._store_top(window)

    def _b_word(self, j: int) -> int:
        gb = len(self.b_regs)
        if j % gb == 0:
            count = min(gb, self.n - j)
            then = j + count if j + count < self.n else 0
            self.b.load(j, self.b_regs[:count], then=then,
                        comment=", ".join(f"b[{k}]" for k in range(j, j + count)))
        return self.b_regs[j % gb]

    def _partial_word(self, j: int, free: list[int]) -> int | None:
        """The register holding R[i0+j] of the blocks before (None in the first block)."""
        if not self.partial:
            return None
        at = self.i0 + j
        gp = len(self.p_regs)
        if gp == 0:
            self.r.load(at, [free[0]], then=at, comment=f"R[{at}] so far")
            return free[0]
        if j % gp == 0:
            count = min(gp, self.n - j)
            self.r.load(at, self.p_regs[:count], then=at,
                        comment=f"R[{at}..{at + count - 1}] so far")
        return self.p_regs[j % gp]

    def _step(self, j: int, bj: int, p: int | None, window: list[int],
              free: list[int]) -> list[int]:
        """R[i0+j..] += a * b_j: one carry chain over the cached words, then R[i0+j] is
        stored final.  window: the registers of R[i0+j..i0+j+rows-1] (empty at j = 0);
        returns the next step's."""
        if self.consttime:
            ct.force_multiplier(self.prog, bj, MASK)
        if j == 0:
            window, carry = self._first_step(bj, p, free)
        else:
            carry, word = _take(free, p), window[0]
            if p is not None and p != carry:  # R so far in a register of its own
                assert not self.consttime, "constant time: partial words come as carries"
                self.prog.alu("adds", word, word, p, "+ R so far")
                self.prog.alu_imm("adc", carry, ZERO, 0)
                self.prog.umlal(word, carry, self.a_regs[0], bj, "R + a*b")
            else:  # R so far in the carry's register: the row step adds it as a carry
                self._mac(word, carry, 0, bj, fresh=False, first=p is None)
            for t in range(1, self.rows):
                self._mac(window[t], carry, t, bj, fresh=False, first=False)
        at = self.i0 + j
        self.r.store(at, [window[0]], then=at + 1, comment=f"R[{at}] done")
        free.append(window[0])
        return window[1:] + [carry]

    def _first_step(self, b0: int, p: int | None, free: list[int]) -> tuple[list[int], int]:
        """Step 0: every window word is new (the partial word R[i0] added to the first);
        returns the window and the carry's register."""
        word = _take(free, p)
        carry = free.pop(0)
        self._mac(word, carry, 0, b0, fresh=p != word, first=True)
        if p is not None and p != word:
            self.prog.alu("adds", word, word, p, "+ R so far")
            self.prog.alu_imm("adc", carry, carry, 0)
        window = [word]
        for t in range(1, self.rows):  # c + a*b into an empty word: the carry becomes the word
            high = free.pop(0)
            self._mac(carry, high, t, b0, fresh=False, first=True)
            window.append(carry)
            carry = high
        return window, carry

    def _mac(self, word: int, carry: int, t: int, bj: int, fresh: bool, first: bool) -> None:
        """(carry:word) = word + carry + a[i0+t] * b_j, the row step's cases (words.row_step);
        constant time: b_j is the forced multiplier and the product is corrected (consttime).
        Never fresh after the first product: a fresh row step would lend ZERO to the high word."""
        assert first or not fresh
        if self.consttime:
            ct.row_step(self.prog, word, carry, bj, self.a_regs[t], MASK, X, ZERO, fresh, first)
        else:
            row_step(self.prog, word, carry, self.a_regs[t], bj, ZERO, fresh, first)

    def _store_top(self, window: list[int]) -> None:
        """R[i0+n..i0+n+rows-1]: the window after the last step, in ascending STM runs."""
        self.r.store_runs(self.i0 + self.n, window, then=self.i0 + self.rows,
                          comment="the block's top words")


def _take(free: list[int], p: int | None) -> int:
    """A free register: the one the partial word came in, if it came through one."""
    if p is not None and p in free:
        free.remove(p)
        return p
    return free.pop(0)
