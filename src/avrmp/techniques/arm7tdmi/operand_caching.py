"""Operand caching on the ARM7TDMI (seed 001, section 3, with e = 3): the rows of a come in
blocks of at most e words held in registers while b streams past once per block, so b is loaded
about n^2/e times instead of n^2.  Within a block each of its rows keeps its own carry, and every
step is the 9-cycle row step of operand scanning (R + c + a*b fits 64 bits: UMLAL); the
partial result of the blocks before enters the window one word a step and leaves it final.

Registers: 3 pointers, e words of a, e carries, e window words, b_j and a zero: 3e + 5 = 14.
A block of fewer rows, and the last block (which needs the a pointer no more), lend their
spare registers to b, which LDM then brings several words at a time; or a short first block
keeps in them the words the second block starts on, which are then neither stored nor loaded.
The generator tries the block orders that differ in where the short blocks go, each with and
without that hand-over, and the other block form (operand_caching_chain: one carry chain per
word of b, e = 4), and keeps the fastest."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ...program.arm import ArmProgram
from . import operand_caching_chain as chain
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Pointer, ascending_runs, row_step

E = 3
A_REGS, CARRIES, WINDOW = (3, 4, 5), (6, 7, 8), [9, 10, 11]
B_REG, ZERO = 12, 14
DATA = (*A_REGS, *CARRIES, *WINDOW)  # what a block's a, carries and window are taken from


FORM_NOTES = {
    "rows": "",
    "hand-over": "; the first block keeps the words the second starts on in registers",
    "chain": "; each b_j times all of a block's words in one carry chain",
    "chain, a spilled": "; each b_j times all of a block's words in one carry chain; the a "
                        "pointer waits on the stack during a block, its register takes b",
}


def operand_caching_mul(n: int, consttime: bool = False) -> ArmKernel:
    """The fastest build (by the timing model's static count, which equals the trace's at m = 4)
    over the two block forms: rows with a carry each (block_orders, each with and without the
    hand-over, see build_order) and one carry chain per word of b (operand_caching_chain, each
    with and without the a pointer spilled).
    consttime: the chain form only, each b_j forced to take 4 multiplier steps (consttime.py)."""
    builds = {} if consttime else {
        (blocks, "hand-over" if handover else "rows"): build_order(n, blocks, handover)
        for blocks in block_orders(n)
        for handover in ((False, True) if len(blocks) > 1 and blocks[0] < E else (False,))}
    e = chain.E_CONSTTIME if consttime else chain.E
    builds |= {(blocks, "chain, a spilled" if spill else "chain"):
               chain.build_chained(n, blocks, consttime, spill)
               for blocks in block_orders(n, e)
               for spill in ((False, True) if len(blocks) > 1 else (False,))}
    best = min(builds, key=lambda key: builds[key].static_cycles())
    blocks, form = best
    notes = [f"{n * n} products; rows in blocks of {'+'.join(map(str, blocks))}, b once per block"
             + FORM_NOTES[form]]
    if consttime:
        notes.append("constant time: every multiplier b_j | 2^31 (4 steps), each product "
                     "corrected by (a & mask) * 2^31")
    return ArmKernel(builds[best], tuple(notes))


def block_orders(n: int, e: int = E) -> list[tuple[int, ...]]:
    """Row blocks of e after one or two first blocks of 1..e rows, with an optional last block
    of 1..e: the short blocks go where spare registers pay (b in LDM groups)."""
    orders = set()
    for head in [(f,) for f in range(1, e + 1)] + [(f, g) for f in range(1, e + 1)
                                                   for g in range(1, e + 1)]:
        for last in range(e + 1):
            middle = n - sum(head) - last
            if middle >= 0 and middle % e == 0:
                orders.add((*head, *[e] * (middle // e), *([last] if last else [])))
    return sorted(orders)


@dataclass(frozen=True)
class BlockRegs:
    """A block's registers: its words of a (ascending, for LDM), the rows' carries, the window
    and the data registers it leaves spare."""

    a: tuple[int, ...]
    carries: tuple[int, ...]
    window: tuple[int, ...]

    @property
    def spare(self) -> list[int]:
        return [r for r in DATA if r not in self.a + self.carries + self.window]


def block_regs(rows: int, held: list[int] | None) -> BlockRegs:
    """The usual registers, or, when the block before handed words over (held), the window
    where those words are and a and the carries in the registers left."""
    if held is None:
        return BlockRegs(A_REGS[:rows], CARRIES[:rows], tuple(WINDOW[:rows]))
    free = [r for r in DATA if r not in held]
    return BlockRegs(tuple(free[:rows]), tuple(free[rows:2 * rows]), tuple(held))


def build_order(n: int, blocks: tuple[int, ...], handover: bool = False) -> ArmProgram:
    """The body for rows taken in blocks of these sizes (they add up to n, none above E).
    handover: the first block keeps the words the second one starts on in its spare registers
    instead of storing them (the second loads none of them, and takes a and its carries in the
    registers left); the first block's b then comes in one LDM up to the step where the first
    of those words leaves the window, and one word at a time after it."""
    prog = ArmProgram()
    a = Pointer(prog, A_PTR)
    walk = _Walk(prog, Pointer(prog, B_PTR), Pointer(prog, RESULT), n)
    i0, held = 0, None
    for k, rows in enumerate(blocks):
        prog.phase(f"rows {i0}..{i0 + rows - 1}: a[{i0}..] cached, b streams past")
        if held is not None:  # the first block lent this register to b (see _Steps)
            prog.mov_imm(ZERO, 0, "the carries' source")
        regs = block_regs(rows, held)
        a.load(i0, list(regs.a), then=i0 + rows)
        nxt = blocks[k + 1] if k + 1 < len(blocks) else 0
        hold = nxt if handover and k == 0 and len(regs.spare) >= nxt and rows + nxt <= n else 0
        held = _block(walk, i0, rows, regs, hold, received=held is not None) or None
        i0 += rows
    return prog


def _b_groups(words: range, regs: list[int]) -> list[list[tuple[int, int]]]:
    """b's words in LDM groups, one register each (ascending with the words)."""
    regs = sorted(regs)
    return [list(zip(range(j, min(j + len(regs), words.stop)), regs))
            for j in range(words.start, words.stop, len(regs))]


@dataclass(frozen=True)
class _Walk:
    """What every block of one build shares: the program, the b and result pointers and the
    operand words."""

    prog: ArmProgram
    b: Pointer
    r: Pointer
    n: int


def _block(walk: _Walk, i0: int, rows: int, regs: BlockRegs, hold: int,
           received: bool) -> list[int]:
    """R[i0..i0+n+rows-1] += a[i0..i0+rows-1] * b: step j multiplies b_j by every cached word;
    row t's step j works on R[i0+j+t], window[t], with its carry in carries[t].  received: the
    block's first rows words are in its window already; hold: keep the words
    R[i0+rows..i0+rows+hold-1] in registers (returned in word order) instead of storing them."""
    n, last = walk.n, i0 + rows == walk.n
    window, carries = list(regs.window), list(regs.carries)
    steps = _Steps(walk, i0, rows, regs.a, hold, received, regs.spare[:hold])
    # Per load, the (j, register) of the b words it brings: b_j's register and the spare ones
    # (the a pointer's in the last block, the zero register's in the first).  Spare registers
    # that take held words' places are free until step `rows`, when the first held word leaves.
    others = regs.spare[hold:] + [B_REG] + ([A_PTR] if last else []) + ([ZERO] if i0 == 0 else [])
    head = min(rows + 1, n) if hold else 0
    loads = (_b_groups(range(head), regs.spare[:rows] + [B_REG])
             + _b_groups(range(head, n), others))
    for k, words in enumerate(loads):
        after = loads[k + 1][0][0] if k + 1 < len(loads) else 0
        walk.b.load(words[0][0], [reg for _, reg in words], then=after,
                    comment=", ".join(f"b[{j}]" for j, _ in words))
        for j, bj in words:
            steps.step(j, bj, window, carries)
    _flush(walk, i0, rows, window, carries)
    return steps.held


class _Steps:
    """A block's steps: every cached row times b_j; R[i0+j] then leaves the window final,
    stored, or kept in its register for the next block (a spare register takes its place)."""

    def __init__(self, walk: _Walk, i0: int, rows: int, a_regs: tuple[int, ...], hold: int,
                 received: bool, spare: list[int]) -> None:
        self.prog, self.r, self.n = walk.prog, walk.r, walk.n
        self.i0, self.rows, self.a_regs = i0, rows, a_regs
        self.hold_words = range(i0 + rows, i0 + rows + hold)
        self.in_window = range(i0, i0 + rows) if received else range(0)
        self.spare, self.held = list(spare), []
        # A later block's step 0 loads its partial words with one LDM; R[i0+rows], which
        # enters at step 1, comes with it in the zero register (the highest, as LDM needs),
        # and the register R[i0] leaves at step 0 becomes the zero (the block's carries need
        # none before step 1)
        self.extra, self.zero = i0 > 0 and not received, ZERO

    def step(self, j: int, bj: int, window: list[int], carries: list[int]) -> None:
        prog, i0, rows = self.prog, self.i0, self.rows
        # Words entering the window: those below R[i0+n] hold the blocks' before partial result
        entering = range(rows) if j == 0 else [rows - 1]
        fresh = [t for t in entering if i0 == 0 or i0 + j + t >= i0 + self.n]
        partial = [t for t in entering if t not in fresh and i0 + j + t not in self.in_window]
        if j == 1 and self.extra:  # R[i0+rows] is in the zero register already
            self.zero, window[rows - 1] = window[rows - 1], ZERO
            prog.mov_imm(self.zero, 0, "the carries' source")
            partial = []
        if partial:
            extra = [ZERO] if j == 0 and self.extra else []
            self.r.load(i0 + j + partial[0], sorted(window[t] for t in partial) + extra,
                        comment="partial result")
        # The first block's last row takes a fresh word every step: cleared first, that
        # register is the zero the other rows' carries come from (ZERO is lent to b there)
        zero = window[rows - 1] if i0 == 0 else self.zero
        if i0 == 0 and j > 0:
            prog.mov_imm(zero, 0)
        for t in range(rows):
            a = self.a_regs[t]
            if t in fresh and j > 0:  # (c:R) = c + a*b: UMLAL on the carry, the roles swap
                if i0 != 0:
                    prog.mov_imm(window[t], 0)
                prog.umlal(carries[t], window[t], a, bj, "c + a*b: R and c swap registers")
                window[t], carries[t] = carries[t], window[t]
            else:
                row_step(prog, window[t], carries[t], a, bj, zero, fresh=t in fresh,
                         first=j == 0)
        if i0 + j in self.hold_words:
            self.held.append(window[0])
            window[:] = window[1:] + [self.spare.pop(0)]
            return
        self.r.store(i0 + j, [window[0]], then=i0 + j + 1, comment=f"R[{i0 + j}] done")
        window[:] = window[1:] + window[:1]


def _flush(walk: _Walk, i0: int, rows: int, window: list[int], carries: list[int]) -> None:
    """The rows' carries are their top words, R[i0+n+t]; the window still holds
    R[i0+n..i0+n+rows-2]: one carry chain adds them and the block's words are stored."""
    prog, n = walk.prog, walk.n
    prog.phase(f"rows {i0}..: carries into R[{i0 + n}..{i0 + n + rows - 1}]")
    # Each sum may go to either register it reads (the last also to the register the last
    # step's word left): the choice with the fewest STM runs (registers ascending) is taken
    options = [(window[t], carries[t]) for t in range(rows - 1)]
    options.append((carries[rows - 1], window[rows - 1]) if rows > 1 else (carries[0],))
    words = min((list(c) for c in product(*options)), key=lambda c: len(ascending_runs(c)))
    for t in range(rows - 1):
        prog.alu("adds" if t == 0 else "adcs", words[t], window[t], carries[t])
    if rows > 1:
        prog.alu_imm("adc", words[-1], carries[rows - 1], 0, "no carry out: the block's "
                     "product fits")
    walk.r.store_runs(i0 + n, words, then=i0 + rows)
