"""Operand caching on the ARM7TDMI (seed 001, section 3, with e = 3): the rows of a come in
blocks of at most e words held in registers while b streams past once per block, so b is loaded
about n^2/e times instead of n^2.  Within a block each of its rows keeps its own carry, and every
step is the 9-cycle row step of operand scanning (R + c + a*b fits 64 bits: UMLAL); the
partial result of the blocks before enters the window one word a step and leaves it final.

Registers: 3 pointers, e words of a, e carries, e window words, b_j and a zero: 3e + 5 = 14.
A block of fewer rows, and the last block (which needs the a pointer no more), lend their
spare registers to b, which LDM then brings several words at a time; the generator tries the
block orders that differ in where the short blocks go and keeps the fastest."""

from __future__ import annotations

from ...program.arm import ArmProgram
from .kernel import A_PTR, B_PTR, RESULT, ArmKernel
from .words import Pointer, row_step

E = 3
A_REGS, CARRIES, WINDOW = (3, 4, 5), (6, 7, 8), [9, 10, 11]
B_REG, ZERO = 12, 14


def operand_caching_mul(n: int) -> ArmKernel:
    """The fastest block order (by the timing model's static count, which equals the trace's
    at m = 4) among block_orders."""
    builds = {blocks: build_order(n, blocks) for blocks in block_orders(n)}
    blocks = min(builds, key=lambda b: builds[b].static_cycles())
    note = f"{n * n} products; rows in blocks of {'+'.join(map(str, blocks))}, b once per block"
    return ArmKernel(builds[blocks], (note,))


def block_orders(n: int) -> list[tuple[int, ...]]:
    """Row blocks of E after one or two first blocks of 1..E rows, with an optional last block
    of 1..E: the short blocks go where spare registers pay (b in LDM groups)."""
    orders = set()
    for head in [(f,) for f in range(1, E + 1)] + [(f, g) for f in range(1, E + 1)
                                                   for g in range(1, E + 1)]:
        for last in range(E + 1):
            middle = n - sum(head) - last
            if middle >= 0 and middle % E == 0:
                orders.add((*head, *[E] * (middle // E), *([last] if last else [])))
    return sorted(orders)


def build_order(n: int, blocks: tuple[int, ...]) -> ArmProgram:
    """The body for rows taken in blocks of these sizes (they add up to n, none above E)."""
    prog = ArmProgram()
    a, b, r = Pointer(prog, A_PTR), Pointer(prog, B_PTR), Pointer(prog, RESULT)
    prog.mov_imm(ZERO, 0, "the carries' source")
    i0 = 0
    for rows in blocks:
        prog.phase(f"rows {i0}..{i0 + rows - 1}: a[{i0}..] cached, b streams past")
        a.load(i0, list(A_REGS[:rows]), then=i0 + rows)
        _block(prog, i0, rows, b, r, n, last=i0 + rows == n)
        i0 += rows
    return prog


def _b_words(n: int, rows: int, last: bool) -> list[list[tuple[int, int]]]:
    """Per load, the (j, register) of the b words it brings: b_j's register and the ones the
    block does not use (the a pointer's too in the last block), in ascending order for LDM."""
    spare = list(A_REGS[rows:]) + list(CARRIES[rows:]) + WINDOW[rows:]
    regs = sorted(spare + [B_REG] + ([A_PTR] if last else []))
    return [list(zip(range(j, min(j + len(regs), n)), regs)) for j in range(0, n, len(regs))]


def _block(prog: ArmProgram, i0: int, rows: int, b: Pointer, r: Pointer, n: int,
           last: bool) -> None:
    """R[i0..i0+n+rows-1] += a[i0..i0+rows-1] * b: step j multiplies b_j by every cached word;
    row t's step j works on R[i0+j+t], window[t], with its carry in carries[t]."""
    window, carries = WINDOW[:rows], list(CARRIES[:rows])
    loads = _b_words(n, rows, last)
    for k, words in enumerate(loads):
        after = loads[k + 1][0][0] if k + 1 < len(loads) else 0
        b.load(words[0][0], [reg for _, reg in words], then=after,
               comment=", ".join(f"b[{j}]" for j, _ in words))
        for j, bj in words:
            _step(prog, i0, j, rows, bj, window, carries, r, n)
    _flush(prog, i0, rows, window, carries, r, n)


def _step(prog: ArmProgram, i0: int, j: int, rows: int, bj: int, window: list[int],
          carries: list[int], r: Pointer, n: int) -> None:
    """Every cached row times b_j; R[i0+j] leaves the window final."""
    # Words entering the window: those below R[i0+n] hold the blocks' before partial result
    entering = range(rows) if j == 0 else [rows - 1]
    fresh = [t for t in entering if i0 == 0 or i0 + j + t >= i0 + n]
    partial = [t for t in entering if t not in fresh]
    if partial:
        r.load(i0 + j + partial[0], sorted(window[t] for t in partial),
               comment="partial result")
    for t in range(rows):
        if t in fresh and j > 0:  # (c:R) = c + a*b: UMLAL on the carry, the roles swap
            prog.mov_imm(window[t], 0)
            prog.umlal(carries[t], window[t], A_REGS[t], bj, "c + a*b: R and c swap registers")
            window[t], carries[t] = carries[t], window[t]
        else:
            row_step(prog, window[t], carries[t], A_REGS[t], bj, ZERO, fresh=t in fresh,
                     first=j == 0)
    r.store(i0 + j, [window[0]], then=i0 + j + 1, comment=f"R[{i0 + j}] done")
    window[:] = window[1:] + window[:1]


def _flush(prog: ArmProgram, i0: int, rows: int, window: list[int], carries: list[int],
           r: Pointer, n: int) -> None:
    """The rows' carries are their top words, R[i0+n+t]; the window still holds
    R[i0+n..i0+n+rows-2]: one carry chain adds them and the block's words are stored."""
    prog.phase(f"rows {i0}..: carries into R[{i0 + n}..{i0 + n + rows - 1}]")
    words = [window[t] for t in range(rows - 1)] + [carries[rows - 1]]
    for t in range(rows - 1):
        prog.alu("adds" if t == 0 else "adcs", window[t], window[t], carries[t])
    if rows > 1:
        prog.alu_imm("adc", carries[rows - 1], carries[rows - 1], 0, "no carry out: the "
                     "block's product fits")
    runs = ascending_runs(words)  # STM needs registers ascending with the words
    start = i0 + n
    for k, run in enumerate(runs):
        r.store(start, run, then=start + len(run) if k + 1 < len(runs) else i0 + rows)
        start += len(run)


def ascending_runs(regs: list[int]) -> list[list[int]]:
    """regs cut into the fewest consecutive runs whose registers ascend."""
    runs: list[list[int]] = []
    for reg in regs:
        if runs and runs[-1][-1] < reg:
            runs[-1].append(reg)
        else:
            runs.append([reg])
    return runs
