"""Hybrid multiplication (Gura, Patel, Wander, Eberle and Chang Shantz, CHES 2004), fully unrolled.

The operands are cut into blocks of d bytes (the last block may be shorter when n mod d != 0).
The outer structure is product scanning over blocks: column block K sums the d x d block products
A_I * B_J with I + J = K in a (2d+1)-byte register accumulator, then stores its low d bytes.  Inside
a block product the order is operand scanning: one byte b_j at a time multiplies the whole cached
block A_I (`mul_row`, d MULs into d+1 temporaries with no carry chain across a MUL), and the row is
added into the accumulator at offset j with a single carry chain.

Loads: each block product needs A_I (d bytes) and B_J (d bytes), about 2n^2/d in all; the operand
cache keeps whatever else fits (a block shared by consecutive block products is not reloaded).
"""

from __future__ import annotations

from collections.abc import Callable

from ..blocks.accumulator import WideAccumulator
from ..blocks.operand_cache import OperandCache
from ..blocks.pointers import PointerWindow
from ..blocks.products import mul_row, row_order
from ..errors import AvrmpError
from ..program.program import Program
from ..regalloc.pool import RegPool
from ..target.avr.abi import ALLOCATION_ORDER
from ..target.avr.isa import Mem
from .kernel import Kernel

# Registers the kernel body may use besides r0:r1 and the three pointers X, Y, Z.
BUDGET = len(ALLOCATION_ORDER)


def registers_needed(d: int) -> int:
    """zero + row temporaries (d+1) + accumulator (2d+1) + cached block A_I (d) + one byte of b."""
    return 1 + (d + 1) + (2 * d + 1) + d + 1


def max_d() -> int:
    """The largest d whose block A_I and one byte of b stay in registers (no reloads in a row)."""
    return max(d for d in range(1, BUDGET) if registers_needed(d) <= BUDGET)


def hard_max_d() -> int:
    """The largest d that can run at all: the cache may shrink to two registers (a[i] and b_j),
    reloading A_I bytes inside a row."""
    return max(d for d in range(1, BUDGET) if 1 + (d + 1) + (2 * d + 1) + 2 <= BUDGET)


def _blocks(n: int, d: int) -> list[tuple[int, int]]:
    """(first byte, length) of each block; only the last one may be short."""
    return [(s, min(d, n - s)) for s in range(0, n, d)]


def _row_fetcher(
    cache: OperandCache, key_b: tuple[str, int], sa: int
) -> tuple[int, Callable[[int], int]]:
    """The register of b_j, and the a_i lookup `mul_row` calls for one row.  The plan repeats b_j
    before every a_i (so the cache never evicts it mid-row); those repeats are hits in the same
    register."""
    rb = cache.next(key_b)
    calls = 0

    def get_a(i: int) -> int:
        nonlocal calls
        if calls and cache.next(key_b) != rb:
            raise AssertionError("b_j left its register inside a row")
        calls += 1
        return cache.next(("a", sa + i))

    return rb, get_a


def hybrid_mul(n: int, d: int | None = None) -> Kernel:
    """n-byte operands in blocks of d bytes (default: max_d(), or n if smaller)."""
    given = d
    d = d if d is not None else min(max_d(), n)
    if not 1 <= d <= hard_max_d():
        raise AvrmpError(
            f"--d {given}: hybrid needs d between 1 and {hard_max_d()} (the accumulator, row "
            f"temporaries and cache must fit in {BUDGET} registers); default is {max_d()}"
        )
    d = min(d, n)
    blocks = _blocks(n, d)
    m = len(blocks)

    p = Program()
    pool = RegPool(ALLOCATION_ORDER)
    zero = pool.take_one()
    # Row temporaries: pairs aligned so that even products move in with one MOVW.
    t: list[int] = []
    while len(t) < d + 1:
        lo = pool.take_pair()
        t += [lo, lo + 1]
    pool.give(*t[d + 1 :])
    t = t[: d + 1]
    acc_regs = pool.take(2 * d + 1)

    # Block products of column block K, alternating direction so that the block at the end of one
    # column block starts the next (the cache still holds it).
    schedule: list[tuple[int, list[tuple[int, int]]]] = []
    for k in range(2 * m - 1):
        pairs = [(i, k - i) for i in range(max(0, k - m + 1), min(k, m - 1) + 1)]
        schedule.append((k, pairs if k % 2 == 0 else pairs[::-1]))
    plan: list[tuple[str, int]] = []
    for _, pairs in schedule:
        for bi, bj in pairs:
            (sa, la), (sb, lb) = blocks[bi], blocks[bj]
            for j in range(lb):
                # b_j before each a_i: the cache must keep b_j for the whole row.
                for i in row_order(la):
                    plan += [("b", sb + j), ("a", sa + i)]
    windows = {"a": PointerWindow(p, "Y"), "b": PointerWindow(p, "Z")}
    cache = OperandCache(p, pool.free, windows, plan)

    p.phase(f"hybrid {n}x{n} bytes, d={d}: column block K sums A_I*B_J (I+J=K), row by row")
    p.clr(zero)
    acc = WideAccumulator(p, acc_regs, zero)
    stored = 0
    for k, pairs in schedule:
        for bi, bj in pairs:
            (sa, la), (sb, lb) = blocks[bi], blocks[bj]
            p.phase(f"block a[{sa}..{sa + la - 1}] * b[{sb}..{sb + lb - 1}] into column block {k}")
            row_max = ((1 << (8 * la)) - 1) * 0xFF
            for j in range(lb):
                key_b = ("b", sb + j)
                rb, get_a = _row_fetcher(cache, key_b, sa)
                mul_row(p, la, get_a, rb, t[: la + 1], zero,
                        names=(f"a[{sa}..]", f"b[{sb + j}]"))
                acc.add_at(sb + j - k * d + sa, t[: la + 1], row_max,
                           comment=f"acc += row a[{sa}..]*b[{sb + j}]")
        # The column block is complete: its low d bytes are final (all of them after the last).
        last = k == 2 * m - 2
        count = 2 * n - stored if last else d
        for _ in range(count):
            acc.ensure(0)
            p.st(Mem("X", "+"), acc.regs[0], comment=f"r[{stored}]")
            acc.shift_out()
            stored += 1
    return Kernel(p, {"r": 26, "a": 28, "b": 30}, [f"d={d}", f"{cache.loads} operand loads"])
