"""The shared pieces of the ARM7TDMI techniques: a pointer walking over words with LDR/LDM and
STR/STM (choosing the addressing mode that needs no pointer arithmetic), and the three-register
column accumulator with its multiply-accumulate step."""

from __future__ import annotations

from collections.abc import Sequence

from ...program.arm import ArmProgram

# LDM/STM modes: (where the pointer must be, where write-back leaves it) for g words from start.
MODES = {
    "ia": lambda s, g: (s, s + g),
    "ib": lambda s, g: (s - 1, s + g - 1),
    "da": lambda s, g: (s + g - 1, s - 1),
    "db": lambda s, g: (s + g, s),
}


class Pointer:
    """A base register over an array of words; `at` is the word it points to now."""

    def __init__(self, prog: ArmProgram, reg: int, at: int = 0) -> None:
        self.prog, self.reg, self.at = prog, reg, at

    def load(self, start: int, regs: Sequence[int], then: int | None = None,
             comment: str = "") -> None:
        """Words start.. into regs (ascending register numbers); `then`: where the next
        transfer through this pointer starts (the mode leaving the pointer nearest wins)."""
        self._transfer(True, start, regs, then, comment)

    def store(self, start: int, regs: Sequence[int], then: int | None = None,
              comment: str = "") -> None:
        self._transfer(False, start, regs, then, comment)

    def store_runs(self, start: int, regs: Sequence[int], then: int, comment: str = "") -> None:
        """Words start.. from regs in word order: one STM per run of ascending registers
        (ascending_runs), the last leaving the pointer nearest `then`."""
        runs = ascending_runs(list(regs))
        for k, run in enumerate(runs):
            after = then if k + 1 == len(runs) else start + len(run)
            self.store(start, run, then=after, comment=comment)
            start += len(run)

    def _transfer(self, load: bool, start: int, regs: Sequence[int], then: int | None,
                  comment: str) -> None:
        if sorted(regs) != list(regs):
            raise ValueError("internal: block transfer registers must ascend with the words")
        if len(regs) == 1:
            self._single(load, start, regs[0], then, comment)
            return
        g = len(regs)
        fits = [(mode, new) for mode, f in MODES.items() for need, new in [f(start, g)]
                if need == self.at]
        if not fits:
            self.move_to(start)
            fits = [("ia", start + g)]
        goal = self.at if then is None else then
        mode, new = min(fits, key=lambda f: (abs(f[1] - goal) > 0, abs(f[1] - goal)))
        writeback = new != self.at and abs(new - goal) < abs(self.at - goal)
        self.prog.block(load, mode, self.reg, regs, writeback, comment)
        self.at = new if writeback else self.at

    def _single(self, load: bool, start: int, reg: int, then: int | None, comment: str) -> None:
        """LDR/STR; post-indexed when that leaves the pointer where the next transfer starts."""
        post = start == self.at and then is not None and then != self.at
        step = 4 * (then - self.at) if post else None
        emit = self.prog.ldr if load else self.prog.str_
        emit(reg, self.reg, 4 * (start - self.at), post=step, comment=comment)
        self.at = then if post else self.at

    def move_to(self, word: int) -> None:
        if word != self.at:
            delta = 4 * (word - self.at)
            self.prog.alu_imm("add" if delta > 0 else "sub", self.reg, self.reg, abs(delta))
            self.at = word


def row_step(prog: ArmProgram, word: int, carry: int, a: int, b: int, zero: int, fresh: bool,
             first: bool) -> None:
    """(carry:word) = word + carry + a*b in 9 cycles: word + carry < 2^33 leaves room for one
    product in UMLAL's 64 bits, ADDS folds the carry in and ADC moves its carry into the carry's
    register from `zero`, a register holding 0.  fresh: the word holds nothing yet (zero lends
    its register to the high word: the caller clears it before it serves as zero again);
    first: the carry is empty."""
    if fresh and first:
        prog.umull(word, carry, a, b, "a*b")
    elif fresh:
        prog.umull(word, zero, a, b, "a*b, the high word in the zero register")
        prog.alu("adds", word, word, carry, "+ c")
        prog.alu_imm("adc", carry, zero, 0, "c: the high word and the carry")
    elif first:
        prog.mov_imm(carry, 0)
        prog.umlal(word, carry, a, b, "R + a*b")
    else:
        prog.alu("adds", word, word, carry, "R + c")
        prog.alu_imm("adc", carry, zero, 0, "c = the carry")
        prog.umlal(word, carry, a, b, "R + c + a*b: below 2^64")


EMPTY, VALUE = "empty", "value"  # empty: counts as zero, whatever the register holds


class Accumulator:
    """Three registers (c0, c1, c2) holding a column's sum and its carries, rotated when a
    column is done; the product registers lo, hi are scratch between steps.  A register that
    is empty holds no part of the sum: it is written, not added to, or zeroed first."""

    def __init__(self, prog: ArmProgram, regs: Sequence[int], lo: int, hi: int) -> None:
        self.prog, self.regs, self.lo, self.hi = prog, list(regs), lo, hi
        self.state = [EMPTY, EMPTY, EMPTY]

    def _zero(self, index: int) -> None:
        if self.state[index] == EMPTY:
            self.prog.mov_imm(self.regs[index], 0)
            self.state[index] = VALUE

    def mac(self, a: int, b: int, last: bool = False) -> None:
        """(c2:c1:c0) += a * b.  last: the product's final step, where (c1:c0) + a*b < 2^64
        is known (the top two words of the whole product), so UMLAL does it in one."""
        c0, c1, c2 = self.regs
        if self.state[:2] == [EMPTY, EMPTY]:
            self.prog.umull(c0, c1, a, b, "a*b")
        elif last and self.state[1] == VALUE:
            self._zero(0)
            self.prog.umlal(c0, c1, a, b, "a*b; the top two words: cannot overflow")
        else:
            self._zero(0)
            if self.state[1] == VALUE:
                self._zero(2)
            self.prog.umull(self.lo, self.hi, a, b, "a*b")
            self.prog.alu("adds", c0, c0, self.lo)
            if self.state[1] == EMPTY:  # hi + carry: at most 2^32 - 1, no carry out
                self.prog.alu_imm("adc", c1, self.hi, 0)
            else:
                self.prog.alu("adcs", c1, c1, self.hi)
                self.prog.alu_imm("adc", c2, c2, 0)
        self.state[0] = self.state[1] = VALUE

    def shift(self) -> int:
        """The finished low word's register; the accumulator moves up one word."""
        done = self.regs[0]
        self.regs = self.regs[1:] + [done]
        self.state = self.state[1:] + [EMPTY]
        return done

    @property
    def low(self) -> int:
        return self.regs[0]


def chunks(items: Sequence[int], most: int) -> list[list[int]]:
    """items in ceil(len/most) runs as even as can be."""
    count = -(-len(items) // most)
    size, extra = divmod(len(items), count)
    out, at = [], 0
    for c in range(count):
        step = size + (c < extra)
        out.append(list(items[at:at + step]))
        at += step
    return out


def ascending_runs(regs: list[int]) -> list[list[int]]:
    """regs cut into the fewest consecutive runs whose registers ascend."""
    runs: list[list[int]] = []
    for reg in regs:
        if runs and runs[-1][-1] < reg:
            runs[-1].append(reg)
        else:
            runs.append([reg])
    return runs
